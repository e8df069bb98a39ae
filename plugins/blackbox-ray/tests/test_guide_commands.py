"""docs/cluster.md's "Start Ray" commands, run as written on this machine: the token, the head, a
worker node (token authentication on, as Ray 2.60 turns it on once a token exists); then a driver
with the token trains on the cluster bit-identically to serial, and a driver without it is refused
in one line.

What differs from a real cluster, and only that: ``HEAD_IP`` is 127.0.0.1 and the port a free one
(6379 may be taken on a shared machine), each ``ray start`` also gets ``--node-ip-address=127.0.0.1``
(loopback only), a free ``--dashboard-agent-listen-port`` (two nodes on one machine) and ``--block``
(so that this test owns, and ends, every process it starts), and
HOME and RAY_TMPDIR are temporary folders (the token never touches the user's ~/.ray)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("blackbox_ray", reason="needs the blackbox-ray plugin: pip install -e plugins/blackbox-ray")
pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "cluster.md"


def guide_commands() -> list[str]:
    """The commands of the bash blocks of the guide's "By hand" part, comments dropped."""
    text = GUIDE.read_text()
    part = text[text.index("**By hand.**"):text.index("**An existing cluster.**")]
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", part, flags=re.S):
        for line in block.splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                commands.append(line)
    return commands


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def end(process: subprocess.Popen) -> None:
    """Stop a ``ray start --block`` and every process under it (by pid: only what this test started)."""
    try:
        tree = [psutil.Process(process.pid), *psutil.Process(process.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        tree = []
    for proc in tree:
        try:
            proc.send_signal(signal.SIGTERM)
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(tree, timeout=10)
    for proc in alive:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=10)


DRIVER = textwrap.dedent("""
    import sys
    import numpy as np
    import blackbox as bb
    from blackbox_ray import RayExecutor
    from blackbox.errors import WorkerError

    def run(executor):
        strategy = bb.make_strategy("openai-es", dim=4, popsize=20, sigma=0.1, seed=7)
        return bb.optimize(strategy, bb.make_problem("sphere", dim=4), executor, generations=3, seed=11)

    try:
        on_cluster = run(RayExecutor(address=sys.argv[1], node_timeout=90))
    except WorkerError as exc:
        print("refused:", exc)
        raise SystemExit(3)
    print("same:", np.array_equal(on_cluster.center, run("serial").center))
""")


@pytest.mark.reliability_long  # a frozen or freshly started cluster: long; CI runs -m reliability_long
def test_the_guides_commands_start_a_cluster_with_token_authentication(tmp_path):
    commands = guide_commands()
    assert [c.split()[:3] for c in commands] == [["ray", "get-auth-token", "--generate"],
                                                  ["ray", "start", "--head"],
                                                  ["RAY_AUTH_MODE=token", "ray", "start"]]
    port = free_port()
    home, other = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    other.mkdir()
    # as a fresh shell has it: no auth settings, and not the localhost-only flag that a local Ray started
    # earlier in this process sets (with it, `ray start --address` refuses to join)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RAY_AUTH") and k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    ray_tmp = tempfile.mkdtemp(prefix="bbr-", dir="/tmp")  # short: Ray's socket paths have at most 107 bytes
    env.update(HOME=str(home), RAY_TMPDIR=ray_tmp, PATH=f"{Path(sys.executable).parent}:{env['PATH']}",
               RAY_USAGE_STATS_ENABLED="0")
    driver_env = {**env, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}  # the driver's 127.0.0.1 stays 127.0.0.1
    started: list[subprocess.Popen] = []
    try:
        for command in commands:
            command = command.replace("HEAD_IP", "127.0.0.1").replace("6379", str(port))
            if "ray start" in command:
                log = open(tmp_path / f"start-{len(started)}.log", "w")  # noqa: SIM115 - kept open for the process
                # a node of its own on this machine: loopback, and a free port for its dashboard agent
                # (two nodes, or another user's Ray, on one machine would both take the default 52365)
                local = f"--node-ip-address=127.0.0.1 --dashboard-agent-listen-port={free_port()} --block"
                started.append(subprocess.Popen(f"{command} {local}", shell=True,
                                                env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path))
                if len(started) == 1:  # the head: wait until its GCS answers (bounded)
                    deadline = time.monotonic() + 90
                    while time.monotonic() < deadline and "Ray runtime started" not in (
                            tmp_path / "start-0.log").read_text():
                        assert started[0].poll() is None, (tmp_path / "start-0.log").read_text()
                        time.sleep(0.2)
            else:
                subprocess.run(command, shell=True, env=env, check=True, timeout=120, cwd=tmp_path)
        assert (home / ".ray" / "auth_token").is_file()
        address = f"127.0.0.1:{port}"
        with_token = subprocess.run([sys.executable, "-c", DRIVER, address], env=driver_env, capture_output=True,
                                    text=True, timeout=300)
        logs = "".join((tmp_path / f"start-{i}.log").read_text()[-2000:] for i in range(len(started)))
        assert with_token.returncode == 0 and "same: True" in with_token.stdout, (
            with_token.stdout + with_token.stderr[-3000:] + logs)
        without = subprocess.run([sys.executable, "-c", DRIVER, address], env={**driver_env, "HOME": str(other)},
                                 capture_output=True, text=True, timeout=120)
        assert without.returncode == 3, without.stdout + without.stderr[-3000:]
        assert without.stdout.strip() == (
            f"refused: the Ray cluster at address {address!r} refused this process's authentication token; copy the "
            f"cluster's token (`ray get-auth-token` on the head) to ~/.ray/auth_token here, or set RAY_AUTH_TOKEN "
            f"(see docs/cluster.md, Token authentication)")
    finally:
        for process in reversed(started):
            end(process)
        shutil.rmtree(ray_tmp, ignore_errors=True)
