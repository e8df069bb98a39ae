"""What a node must share with the driver for bit-identical results, and the one-line refusals.

Bit-identity across nodes needs the same blackbox and numpy (the reduction's and the rows'
arithmetic) and the same IEEE behaviour of the CPU (no flush-to-zero): every aggregator reports its
versions and an arithmetic probe (a reduction's hash and a subnormal product) when it starts, and
the driver refuses a node whose facts differ from its own.

The kernels a CPU selects (numpy's vectorized ``tanh`` and ``exp``, OpenBLAS's matrix products) can
round the last bit of a policy's output differently on another instruction set. That changes the
returns, not the sums, so a node whose kernels differ is admitted with a ``MixedKernelsWarning``
that says how to pin them.
"""

from __future__ import annotations

import hashlib
import sys
import time
import warnings
from typing import Any

import numpy as np

import blackbox
from blackbox.core.simd import numpy_simd_targets
from blackbox.errors import ConfigError, WorkerError

__all__ = ["node_facts", "driver_facts", "check_node", "unreachable", "not_ray", "probe_address", "PROBE_SECONDS", "MixedKernelsWarning",
           "check_heartbeat", "HEARTBEAT_MIN", "HEARTBEAT_MAX"]


class MixedKernelsWarning(UserWarning):
    """A node's CPU kernels round policies' outputs differently from the driver's: the run goes on,
    but is not bit-identical to the same run on the driver's machine."""


def _probe() -> str:
    """A fingerprint of this process's float arithmetic: a fixed reduction and a subnormal product."""
    from blackbox.core.noise import NoiseTable
    from blackbox.core.population import Population
    from blackbox.core.reduce import block_sums

    table = NoiseTable.get(2**16, seed=1)
    rng = np.random.default_rng(0)
    offsets = np.repeat(rng.integers(0, table.size - 64, size=100), 2)
    signs = np.tile(np.array([1, -1], dtype=np.int8), 100)
    population = Population.compact(table, np.zeros(64), offsets, signs, 0.1)
    linear, squares = block_sums(population, rng.standard_normal(200), rng.random(200))
    if squares is None:  # block_sums gives the squared sums whenever square coefficients are given
        raise RuntimeError("the arithmetic probe got no squared sums from block_sums")
    tiny = np.float32(2.0**-126) * np.float32(0.5)  # 0 under flush-to-zero
    return hashlib.blake2b(linear.tobytes() + squares.tobytes() + tiny.tobytes(), digest_size=8).hexdigest()


def _kernels() -> str:
    """A fingerprint of the CPU-selected kernels policies use: numpy's ``tanh`` and ``exp``, and BLAS products."""
    rng = np.random.default_rng(7)  # PCG64 and random() are integer arithmetic: the same inputs on every CPU
    x = rng.random(1031) * 8.0 - 4.0
    a = rng.random((67, 131)) - 0.5
    outputs = (np.tanh(x), np.exp(x), a @ a.T, a @ x[:131], np.tanh(a.astype(np.float32)) @ np.float32(x[:131]))
    return hashlib.blake2b(b"".join(np.ascontiguousarray(o).tobytes() for o in outputs), digest_size=8).hexdigest()


def node_facts() -> dict[str, Any]:
    """This process's versions and arithmetic probe, and the Ray node it runs on."""
    import ray

    return {"node": ray.get_runtime_context().get_node_id(), **driver_facts()}


def driver_facts() -> dict[str, Any]:
    return {"blackbox": blackbox.__version__, "numpy": np.__version__,
            "python": ".".join(map(str, sys.version_info[:3])), "probe": _probe(), "kernels": _kernels(),
            "simd": " ".join(numpy_simd_targets()) or "none"}


def check_node(facts: dict[str, Any], mine: dict[str, Any]) -> None:
    """Refuse a node whose versions or arithmetic differ from the driver's, or that cannot load the problem;
    warn of one whose CPU kernels differ."""
    where = f"Ray node {facts['node'][:8]} (host {facts.get('host', '?')})"
    if facts.get("problem_error"):
        raise WorkerError(
            f"{where} {facts['problem_error']}; install it on every node, or register the module with "
            f"cloudpickle.register_pickle_by_value(module) so that it travels with the problem"
        )
    if (facts["blackbox"], facts["numpy"]) != (mine["blackbox"], mine["numpy"]):
        raise WorkerError(
            f"{where} has blackbox {facts['blackbox']} and numpy {facts['numpy']}, the driver blackbox "
            f"{mine['blackbox']} and numpy {mine['numpy']}: bit-identical results need the same versions "
            f"on every node; install the driver's versions there"
        )
    if facts["probe"] != mine["probe"]:
        raise WorkerError(
            f"{where} computes other bits than the driver in an arithmetic probe (a flush-to-zero mode, "
            f"or another numpy build); run every node on the driver's software image"
        )
    if facts.get("kernels") != mine["kernels"]:
        simd = (f"numpy's SIMD targets {facts.get('simd')} against the driver's {mine['simd']}"
                if facts.get("simd") != mine["simd"] else "other BLAS kernels")
        warnings.warn(
            f"{where} rounds numpy's tanh/exp or BLAS products otherwise than the driver ({simd}): a policy's "
            f"returns may differ in the last bit, so this run is not bit-identical to one on the driver's "
            f"machine; for that, pin the kernels in the environment of the driver and of `ray start` on every "
            f"node (OPENBLAS_CORETYPE=Haswell, and NPY_DISABLE_CPU_FEATURES with the AVX-512 targets; see "
            f"docs/cluster.md), or use nodes of one CPU kind",
            MixedKernelsWarning, stacklevel=2)


#: Seconds a probe of a cluster's address may take in all (TCP, HTTP/2, the GCS's cluster id).
PROBE_SECONDS = 9.0

_GCS_PROBE = """
import sys
try:  # as ray.init does: token authentication on where a token exists (Ray 2.60)
    from ray._private.authentication.authentication_token_setup import maybe_enable_token_auth_if_token_available
except ImportError:
    pass
else:
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
from ray._raylet import InnerGcsClient
InnerGcsClient.standalone(sys.argv[1], None, int(float(sys.argv[2]) * 1000))
"""


#: The heartbeat bound's accepted range, in seconds. Below 1 s a loaded node's event loop can miss a
#: ping without being frozen; above an hour the bound no longer bounds anything useful.
HEARTBEAT_MIN, HEARTBEAT_MAX = 1.0, 3600.0


def check_heartbeat(value: Any) -> float:
    """The heartbeat bound in seconds, or one ConfigError line naming the accepted range."""
    try:
        seconds = float(value)
        ok = not isinstance(value, bool) and HEARTBEAT_MIN <= seconds <= HEARTBEAT_MAX
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ConfigError(
            f"heartbeat={value!r}: the seconds an aggregator may stay silent before it is declared lost must be "
            f"from {HEARTBEAT_MIN:g} to {HEARTBEAT_MAX:g} (default 10; see docs/cluster.md, Frozen nodes)"
        )
    return seconds


def probe_address(address: str, timeout: float = PROBE_SECONDS) -> None:
    """Refuse, in one line and within ``timeout`` seconds, an address where no Ray cluster answers
    (``ray.init`` would retry for minutes, then print Ray's log lines).

    ``host:port`` must accept a connection, answer an HTTP/2 handshake (gRPC) and then give its
    cluster id to a GCS client (run in a child process, killed at the deadline, its log lines kept
    out of sight); ``ray://host:port`` is checked up to the handshake. ``auto`` and other forms are
    left to Ray."""
    import socket
    import subprocess

    deadline = time.monotonic() + timeout
    client = address.startswith("ray://")
    text = address[len("ray://"):] if client else address
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        sock = socket.create_connection((host.strip("[]"), int(port)), timeout=min(3.0, timeout / 3))
    except OSError as exc:
        raise unreachable(address, exc) from None
    with sock:
        if not _speaks_http2(sock, min(3.0, max(0.1, deadline - time.monotonic()))):
            raise not_ray(address, "it did not answer an HTTP/2 (gRPC) handshake")
    if client:
        return
    left = max(1.0, deadline - time.monotonic())
    try:
        done = subprocess.run([sys.executable, "-c", _GCS_PROBE, text, f"{left:.3f}"], capture_output=True,
                              text=True, timeout=left, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise not_ray(address, f"no Ray GCS gave its cluster id within {timeout:g} s") from None
    if done.returncode == 0:
        return
    if "nauthenticated" in done.stderr or "AuthToken" in done.stderr or "uthentication" in done.stderr:
        raise WorkerError(
            f"the Ray cluster at address {address!r} refused this process's authentication token; copy the "
            f"cluster's token (`ray get-auth-token` on the head) to ~/.ray/auth_token here, or set RAY_AUTH_TOKEN "
            f"(see docs/cluster.md, Token authentication)"
        )
    raise not_ray(address, "no Ray GCS gave its cluster id")


def _speaks_http2(sock, timeout: float) -> bool:
    """Send HTTP/2's client preface and an empty SETTINGS frame; a gRPC server answers with SETTINGS."""
    sock.settimeout(timeout)
    try:
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        head = b""
        while len(head) < 9:
            got = sock.recv(9 - len(head))
            if not got:
                return False
            head += got
    except OSError:
        return False
    return head[3] == 0x04  # frame type SETTINGS


def unreachable(address: str, error: BaseException) -> WorkerError:
    return WorkerError(
        f"cannot reach a Ray cluster at address {address!r} ({type(error).__name__}: {error}); start one "
        f"with `ray start --head` on that machine, or pass the address it printed"
    )


def not_ray(address: str, why: str) -> WorkerError:
    return WorkerError(
        f"no Ray cluster answers at address {address!r}: a server listens there, but {why}; pass the address "
        f"`ray start --head` printed (its GCS port, 6379 unless --port was given)"
    )
