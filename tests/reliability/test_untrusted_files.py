"""Untrusted files: loading a checkpoint or a config never unpickles or executes anything; a crafted
checkpoint is refused with a clear error. Services listen on localhost only."""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import blackbox as bb
from blackbox.cli import main
from blackbox.config.run import load_toml, read_run_config, resolve_run_config
from blackbox.driver.loop import Run
from blackbox.errors import CheckpointError
from blackbox.store import checkpoint as ck
from tests.helpers.extras import import_or_skip
from tests.reliability.fault_problems import Faulty
from tests.reliability.helpers import alive, cmdline, descendants, note

COUNTS = {"crafted": 0}


def teardown_module(module):
    note("crafted checkpoints and configs", inputs=COUNTS["crafted"], refused=COUNTS["crafted"], executed=0)


class Trap:
    """Unpickling it writes a file: proof that something was unpickled."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (Path(self.marker), "unpickled!"))


@pytest.fixture
def checkpoint(tmp_path):
    problem = Faulty(dim=4)
    strategy = bb.make_strategy("openai-es", dim=4, popsize=10, seed=0)
    run = Run(strategy, problem, bb.make_executor("serial"), 0)
    bb.optimize(strategy, problem, run.executor, generations=3, run=run)
    return ck.save_checkpoint(tmp_path / "checkpoints", run, config={"seed": 0})


def arrays_of(path: Path) -> dict:
    with np.load(path / "arrays.npz", allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def npy_members(path: Path) -> dict[str, bytes]:
    """The checkpoint's arrays as the .npy members of a zip, ready to be tampered with."""
    members = {}
    for key, value in arrays_of(path).items():
        buffer = io.BytesIO()
        np.save(buffer, value)
        members[key + ".npy"] = buffer.getvalue()
    return members


def forge(path: Path, payload: bytes, meta_change=None) -> None:
    """Replace arrays.npz and make state.json's manifest (size, sha256) and its own checksum agree, as
    an attacker would."""
    (path / "arrays.npz").write_bytes(payload)
    meta = json.loads((path / "state.json").read_text())
    meta["arrays"].update(bytes=len(payload), sha256=hashlib.sha256(payload).hexdigest())
    if meta_change:
        meta_change(meta)
    (path / "state.json").write_bytes(ck.seal_state_json(json.dumps(meta)))


def npz_bytes(arrays: dict, allow_pickle=True) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def assert_refused(path: Path, message: str, marker: Path | None = None) -> None:
    COUNTS["crafted"] += 1
    with pytest.raises(CheckpointError, match=message):
        ck.load_checkpoint(path)
    if marker is not None:
        assert not marker.exists(), "something was unpickled"


def zip_with(members: dict[str, bytes], compress=zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compress) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


# -- arrays.npz ----------------------------------------------------------------------------------
def test_an_object_array_with_a_pickle_trap_is_refused_unpickled(checkpoint, tmp_path):
    marker = tmp_path / "trap"
    arrays = arrays_of(checkpoint)
    arrays["strategy/center"] = np.array([Trap(str(marker))], dtype=object)
    forge(checkpoint, npz_bytes(arrays))
    assert_refused(checkpoint, "holds pickled objects; refusing to load it", marker)


def test_a_member_that_is_a_raw_pickle_stream_is_refused(checkpoint, tmp_path):
    marker = tmp_path / "trap"
    members = npy_members(checkpoint)
    members["strategy/center.npy"] = pickle.dumps(Trap(str(marker)))  # not .npy: numpy would hand back bytes
    forge(checkpoint, zip_with(members))
    assert_refused(checkpoint, "member 'strategy/center' is not a .npy array; refusing it", marker)


@pytest.mark.parametrize("kind", ["pickle", "npy-object"])
def test_arrays_npz_replaced_by_a_pickle_or_a_single_npy_is_refused(checkpoint, tmp_path, kind):
    marker = tmp_path / "trap"
    if kind == "pickle":
        payload, message = pickle.dumps({"strategy/center": Trap(str(marker))}), "pickled objects; refusing"
    else:
        buffer = io.BytesIO()
        np.save(buffer, np.array([Trap(str(marker))], dtype=object), allow_pickle=True)
        payload, message = buffer.getvalue(), "pickled objects; refusing"
    forge(checkpoint, payload)
    assert_refused(checkpoint, message, marker)


def test_a_zip_bomb_is_refused_before_it_is_unpacked(checkpoint):
    members = npy_members(checkpoint)
    buffer = io.BytesIO()
    np.save(buffer, np.zeros(2**26))  # 512 MB of zeros, a few hundred kB compressed
    members["padding.npy"] = buffer.getvalue()
    forge(checkpoint, zip_with(members, zipfile.ZIP_DEFLATED))
    assert_refused(checkpoint, r"would unpack to \d+ bytes from a \d+-byte file; refusing it")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_fifo_instead_of_a_file_is_refused_without_blocking(checkpoint):
    (checkpoint / "arrays.npz").unlink()
    os.mkfifo(checkpoint / "arrays.npz")
    assert_refused(checkpoint, "arrays.npz is not a regular file")


# -- state.json ----------------------------------------------------------------------------------
def edit_state(path: Path, change) -> None:
    """Change state.json and seal it again (its checksum agrees), as an attacker would."""
    meta = json.loads((path / "state.json").read_text())
    change(meta)
    (path / "state.json").write_bytes(ck.seal_state_json(json.dumps(meta)))


TRICKS = {
    "float-code": (lambda m: m["state"]["strategy"].update(sigma={"$float": "__import__('os').system('true')"}),
                   "is corrupt: ValueError"),
    "config-float-code": (lambda m: m.update(config={"x": {"$float": "exec('1')"}}), "is corrupt: ValueError"),
    "array-elsewhere": (lambda m: m["state"]["strategy"].update(center={"$array": "../../etc/passwd"}),
                        "arrays.npz has no array '../../etc/passwd' that state.json refers to"),
    "manifest-not-table": (lambda m: m.update(arrays=["arrays.npz"]), "its arrays entry is not a table"),
    "version-bool": (lambda m: m.update(format_version=True), "has format version True"),
    "generation-text": (lambda m: m.update(generation="12; rm -rf /"), "is corrupt: ValueError"),
    "state-list": (lambda m: m.update(state=[1, 2]), "is corrupt: TypeError"),
    "not-a-checkpoint": (lambda m: m.update(format="pickle"), "state.json is not a blackbox checkpoint"),
}


@pytest.mark.parametrize("trick", list(TRICKS))
def test_state_json_tricks_are_refused(checkpoint, trick):
    change, message = TRICKS[trick]
    edit_state(checkpoint, change)
    assert_refused(checkpoint, message)


def test_deeply_nested_state_json_is_refused(checkpoint):
    text = (checkpoint / "state.json").read_text()
    (checkpoint / "state.json").write_text(text[:-1] + ', "deep": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert_refused(checkpoint, "nested too deeply|is corrupt")


# -- a checkpoint that loads but does not fit the run --------------------------------------------
@pytest.fixture
def run_dir(tmp_path):
    from blackbox.registry.plugins import problems
    from tests.reliability.fault_problems import register

    register()
    out = tmp_path / "run"
    args = ["run", "--strategy", "openai-es:popsize=10", "--problem", "faulty:dim=4", "--generations", "4",
            "--checkpoint-every", "2", "--no-plot", "--quiet", "--out", str(out)]
    assert main(args) == 0
    yield out
    problems.unregister("faulty")


STATE_TAMPERING = {
    "center-shape": (lambda s, a: a.update({"strategy/center": np.zeros(7)}),
                     "state_dict/center has shape \\(7,\\), expected \\(4,\\)"),
    "center-nan": (lambda s, a: a.update({"strategy/center": np.full(4, np.nan)}), "state_dict center is not finite"),
    "adam-moment-shape": (lambda s, a: a.update({"strategy/optimizer/m": np.zeros((2, 2))}),
                          "state_dict/optimizer/m has shape \\(2, 2\\), expected \\(4,\\)"),
    "sigma-text": (lambda s, a: s["state"]["strategy"].update(sigma="0.1"), "state_dict/sigma must be a number, got '0.1'"),
    "rng-garbage": (lambda s, a: s["state"]["strategy"]["rng"].update(bit_generator="os.system"), "does not fit this run"),
    "problem-state-shape": (lambda s, a: a.update({"problem/mean": np.zeros(5)}),
                            "problem state/mean has shape \\(5,\\), expected \\(2,\\)"),
    "run-best-shape": (lambda s, a: a.update({"run/best_params": np.zeros(3)}),
                       "run state/best_params has shape \\(3,\\), expected \\(4,\\)"),
    "run-missing-seed": (lambda s, a: s["state"]["run"].pop("seed"), "does not fit this run: KeyError"),
}


@pytest.mark.parametrize("how", list(STATE_TAMPERING))
def test_a_tampered_state_that_loads_is_refused_by_resume_with_a_clear_error(run_dir, how, capsys):
    path = run_dir / "checkpoints" / "gen-000004"
    change, message = STATE_TAMPERING[how]
    meta = json.loads((path / "state.json").read_text())
    arrays = arrays_of(path)
    change(meta, arrays)
    (path / "state.json").write_bytes(ck.seal_state_json(json.dumps(meta)))
    forge(path, npz_bytes(arrays))
    COUNTS["crafted"] += 1
    capsys.readouterr()
    assert main(["resume", str(run_dir), "--checkpoint", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"blackbox resume: error: cannot resume {run_dir} from gen-000004: " in err, err
    assert "Traceback" not in err
    import re

    assert re.search(message, err), err


# -- configs -------------------------------------------------------------------------------------
EVIL_MODULE = """
from pathlib import Path
Path({marker!r}).write_text("imported!")

def make(in_size, out_size):
    raise RuntimeError("called")
"""


def test_loading_and_resolving_a_config_imports_nothing_it_names(tmp_path, monkeypatch):
    """A config (or a checkpoint's config) may name an import path, such as a custom policy; reading,
    checking and resolving it imports nothing. Only building the problem for a run imports it, as
    naming a plugin does (RELIABILITY.md: treat a run config from elsewhere like code)."""
    marker = tmp_path / "imported"
    (tmp_path / "evil_policy.py").write_text(EVIL_MODULE.format(marker=str(marker)))
    monkeypatch.syspath_prepend(str(tmp_path))
    config = tmp_path / "config.toml"
    config.write_text('[problem]\nname = "gym"\nenv = "evil_policy:Evil-v0"\npolicy = "evil_policy:make"\n'
                      '[stop]\ngenerations = 1\n')
    resolved = resolve_run_config(read_run_config(load_toml(config)))
    assert resolved.problem.options["policy"] == "evil_policy:make"
    assert not marker.exists() and "evil_policy" not in sys.modules
    # The same config inside a checkpoint's state.json: loading the checkpoint imports nothing either.
    problem = Faulty(dim=4)
    strategy = bb.make_strategy("openai-es", dim=4, popsize=10, seed=0)
    run = Run(strategy, problem, bb.make_executor("serial"), 0)
    bb.optimize(strategy, problem, run.executor, generations=1, run=run)
    saved = ck.save_checkpoint(tmp_path / "checkpoints", run, config=resolved.to_dict())
    loaded = ck.load_checkpoint(saved)
    assert loaded.config["problem"]["policy"] == "evil_policy:make"
    assert not marker.exists() and "evil_policy" not in sys.modules
    COUNTS["crafted"] += 2


def test_a_spec_cannot_name_an_arbitrary_callable():
    for spec in ("os:system", "builtins.eval", "subprocess:call"):
        with pytest.raises(bb.ConfigError):
            bb.make_problem(spec)
        with pytest.raises(bb.ConfigError):
            bb.make_strategy(spec, dim=2)
    COUNTS["crafted"] += 6


# -- listening sockets -----------------------------------------------------------------------------
def listening_sockets(pids) -> list[tuple[int, str, str]]:
    """``(pid, command, address:port)`` of every listening TCP socket held by ``pids``."""
    table = {}
    for name in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{name}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                table[fields[9]] = decode_address(fields[1])
    found = []
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:[") and link[8:-1] in table:
                found.append((pid, cmdline(pid)[:60], table[link[8:-1]]))
    return found


def decode_address(text: str) -> str:
    """``0100007F:1F90`` -> ``127.0.0.1:8080``; IPv6 (and IPv4-mapped) addresses likewise."""
    import ipaddress

    host, port = text.split(":")
    raw = bytes.fromhex(host)
    if len(raw) == 4:
        address = ipaddress.IPv4Address(raw[::-1])
    else:
        address = ipaddress.IPv6Address(b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
        if address.ipv4_mapped:
            address = address.ipv4_mapped
    return f"{address}:{int(port, 16)}"


def is_loopback(address: str) -> bool:
    import ipaddress

    return ipaddress.ip_address(address.rsplit(":", 1)[0].strip("[]")).is_loopback


def test_decode_address():
    assert decode_address("0100007F:1F90") == "127.0.0.1:8080"
    assert decode_address("00000000:0016") == "0.0.0.0:22"
    assert decode_address("0000000000000000FFFF00000100007F:ABEB") == "127.0.0.1:44011"
    assert decode_address("00000000000000000000000001000000:0050") == "::1:80"
    assert is_loopback("127.0.0.1:8080") and is_loopback("::1:80") and not is_loopback("0.0.0.0:22")


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs /proc/net")
def test_loky_listens_on_no_port():
    with bb.LokyExecutor(workers=2) as executor:
        bb.optimize(bb.make_strategy("openai-es", dim=3, popsize=8, seed=0), bb.make_problem("sphere", dim=3),
                    executor, generations=2)
        pids = {os.getpid(), *descendants(os.getpid())}
        assert listening_sockets(pids) == []
    note("listening services (loky)", services_checked=0, non_loopback=0)


@pytest.mark.reliability_long  # a local Ray takes seconds to start
@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs /proc/net")
def test_a_local_ray_started_by_the_executor_listens_on_localhost_only():
    ray = import_or_skip("blackbox-ray", "ray")
    import_or_skip("blackbox-ray", "blackbox_ray")
    assert not ray.is_initialized()
    executor = bb.make_executor("ray:num_cpus=2")
    try:
        executor.start(bb.make_problem("sphere", dim=3))
        executor.actor_pids()  # the actors are up
        session = os.path.basename(ray._private.worker._global_node.get_session_dir_path())
        pids = {os.getpid(), *descendants(os.getpid())}
        pids |= {int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and session in cmdline(int(p.name))}
        sockets = listening_sockets(p for p in pids if alive(p))
    finally:
        executor.close()
    assert len(sockets) >= 3  # the GCS, the raylet, the actors' workers: really measured
    assert [s for s in sockets if not is_loopback(s[2])] == []
    note("listening services (local Ray)", services_checked=len(sockets), non_loopback=0)
