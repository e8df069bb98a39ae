"""Bad input to the Ray executor gets one line naming it: an unreachable address, a node whose
versions or arithmetic differ from the driver's, a node that cannot import the problem's module;
a node whose CPU kernels differ is named in a warning."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import numpy as np
import pytest

pytest.importorskip("blackbox_ray", reason="needs the blackbox-ray plugin: pip install -e plugins/blackbox-ray")

import ray  # noqa: E402
from blackbox_ray import RayExecutor  # noqa: E402
from blackbox_ray.checks import MixedKernelsWarning, check_node, driver_facts  # noqa: E402

import blackbox as bb  # noqa: E402
from blackbox.core.simd import has_avx2_fma  # noqa: E402
from blackbox.errors import ConfigError, WorkerError  # noqa: E402


def test_an_address_that_cannot_be_reached_is_named():
    executor = RayExecutor(address="127.0.0.1:1")
    with pytest.raises(WorkerError) as info:
        executor.start(bb.make_problem("sphere", dim=3))
    assert str(info.value) == (
        "cannot reach a Ray cluster at address '127.0.0.1:1' (ConnectionRefusedError: [Errno 111] Connection "
        "refused); start one with `ray start --head` on that machine, or pass the address it printed"
    )
    assert not ray.is_initialized()


@pytest.fixture(params=["http", "silent"])
def other_server(request):
    """A TCP server on 127.0.0.1 that is not Ray: it answers HTTP/1.1, or accepts and says nothing."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    stop, held = threading.Event(), []

    def serve():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            held.append(conn)
            if request.param == "http":
                with contextlib.suppress(OSError):
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.getsockname()[1]}", request.param
    stop.set()
    thread.join(timeout=5)
    for conn in held:
        conn.close()
    server.close()


def test_an_address_where_another_server_listens_is_refused_in_one_line_within_10_s(other_server, capfd):
    address, _ = other_server
    executor = RayExecutor(address=address)
    started = time.monotonic()
    with pytest.raises(WorkerError) as info:
        executor.start(bb.make_problem("sphere", dim=3))
    took = time.monotonic() - started
    why = "it did not answer an HTTP/2 (gRPC) handshake"  # an HTTP/1.1 reply, or none within 3 s
    assert str(info.value) == (
        f"no Ray cluster answers at address {address!r}: a server listens there, but {why}; pass the address "
        f"`ray start --head` printed (its GCS port, 6379 unless --port was given)"
    )
    assert took < 10.0
    assert not ray.is_initialized()
    out, err = capfd.readouterr()
    assert out == "" and err == ""  # none of Ray's log lines


@pytest.mark.parametrize("bound", [0, -1, 0.5, 7200, float("nan"), "ten"])
def test_a_heartbeat_outside_its_range_is_refused_in_one_line(bound):
    with pytest.raises(ConfigError) as info:
        RayExecutor(heartbeat=bound)
    assert str(info.value) == (
        f"heartbeat={bound!r}: the seconds an aggregator may stay silent before it is declared lost must be "
        f"from 1 to 3600 (default 10; see docs/cluster.md, Frozen nodes)"
    )
    assert RayExecutor(heartbeat=1).heartbeat == 1.0 and RayExecutor().heartbeat == 10.0


def test_a_node_with_other_versions_or_arithmetic_is_refused_by_name():
    mine = driver_facts()
    node = {**mine, "node": "3f2a9c1b" + "0" * 48, "host": "node-7", "numpy": "2.3.0"}
    with pytest.raises(WorkerError) as info:
        check_node(node, mine)
    assert str(info.value) == (
        f"Ray node 3f2a9c1b (host node-7) has blackbox {mine['blackbox']} and numpy 2.3.0, the driver blackbox "
        f"{mine['blackbox']} and numpy {mine['numpy']}: bit-identical results need the same versions on every "
        f"node; install the driver's versions there"
    )
    with pytest.raises(WorkerError, match=r"^Ray node 3f2a9c1b \(host node-7\) computes other bits than the "
                                             r"driver in an arithmetic probe"):
        check_node({**node, "numpy": mine["numpy"], "probe": "0" * 16}, mine)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_node({**node, "numpy": mine["numpy"]}, mine)  # the same facts: accepted, without a warning


MIXED = ("Ray node 3f2a9c1b (host node-7) rounds numpy's tanh/exp or BLAS products otherwise than the driver "
         "({}): a policy's returns may differ in the last bit, so this run is not bit-identical to one on the "
         "driver's machine; for that, pin the kernels in the environment of the driver and of `ray start` on "
         "every node (OPENBLAS_CORETYPE=Haswell, and NPY_DISABLE_CPU_FEATURES with the AVX-512 targets; see "
         "docs/cluster.md), or use nodes of one CPU kind")


def test_a_node_with_other_cpu_kernels_is_admitted_with_a_warning_naming_it():
    mine = driver_facts()
    node = {**mine, "node": "3f2a9c1b" + "0" * 48, "host": "node-7", "kernels": "0" * 16}
    with pytest.warns(MixedKernelsWarning) as caught:
        check_node({**node, "simd": "X86_V3"}, {**mine, "simd": "X86_V3 X86_V4"})
    assert [str(w.message) for w in caught] == [
        MIXED.format("numpy's SIMD targets X86_V3 against the driver's X86_V3 X86_V4")]
    with pytest.warns(MixedKernelsWarning) as caught:
        check_node(node, mine)
    assert [str(w.message) for w in caught] == [MIXED.format("other BLAS kernels")]


def _kernels_with(env: dict[str, str]) -> str:
    code = "from blackbox_ray.checks import _kernels; print(_kernels())"
    return subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, check=True,
                          capture_output=True, text=True).stdout.strip()


needs_avx2 = pytest.mark.skipif(not has_avx2_fma(), reason="forces OpenBLAS core types of x86-64 CPUs with AVX2 and FMA")


@needs_avx2
def test_the_kernel_fingerprint_tells_blas_kernels_apart_and_repeats():
    haswell = _kernels_with({"OPENBLAS_CORETYPE": "Haswell"})
    assert haswell == _kernels_with({"OPENBLAS_CORETYPE": "Haswell"})
    assert haswell != _kernels_with({"OPENBLAS_CORETYPE": "SandyBridge"})  # AVX without FMA: other last bits


@pytest.fixture
def local_ray():
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # listen on 127.0.0.1
    ray.init(num_cpus=1, include_dashboard=False, logging_level="ERROR")
    yield
    ray.shutdown()


def test_a_node_that_cannot_import_the_problems_module_is_named(local_ray, tmp_path, monkeypatch):
    (tmp_path / "driver_only_problems.py").write_text(textwrap.dedent("""
        import numpy as np
        import blackbox as bb

        class Local(bb.Problem):
            dim = 3

            def evaluate(self, params, seeds):
                return bb.EvalResult(np.zeros(len(params)), np.zeros(len(params), dtype=np.int64))
    """))
    monkeypatch.syspath_prepend(str(tmp_path))  # the driver can import it; the nodes cannot
    from driver_only_problems import Local

    executor = RayExecutor(node_timeout=60)
    try:
        with pytest.raises(WorkerError) as info:
            executor.start(Local())
    finally:
        executor.close()
        sys.modules.pop("driver_only_problems", None)
    node = ray.get_runtime_context().get_node_id() if ray.is_initialized() else ""
    assert str(info.value).startswith(f"Ray node {node[:8]} (host ")
    assert str(info.value).endswith(
        ") cannot import module 'driver_only_problems' of the problem; install it on every node, or register "
        "the module with cloudpickle.register_pickle_by_value(module) so that it travels with the problem"
    )


@needs_avx2
def test_a_run_warns_of_a_node_whose_blas_kernels_differ():
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    ray.init(num_cpus=1, include_dashboard=False, logging_level="ERROR",
             runtime_env={"env_vars": {"OPENBLAS_CORETYPE": "SandyBridge"}})  # the node's processes only
    try:
        executor = RayExecutor(node_timeout=60)
        try:
            with pytest.warns(MixedKernelsWarning) as caught:
                executor.start(bb.make_problem("sphere", dim=3))
            fitness = executor.evaluate(bb.Population.from_dense(np.eye(3)), np.arange(3))
        finally:
            executor.close()
        node = ray.get_runtime_context().get_node_id()
    finally:
        ray.shutdown()
    assert len(caught) == 1 and str(caught[0].message).startswith(f"Ray node {node[:8]} (host ")
    assert ") rounds numpy's tanh/exp or BLAS products otherwise than the driver (other BLAS kernels)" in str(
        caught[0].message)
    assert np.array_equal(fitness.fitness, -np.ones(3))  # admitted: the run goes on


def test_a_population_smaller_than_the_cluster_is_warned_of_in_one_line():
    from blackbox_ray import ClusterSizeWarning

    executor = RayExecutor(num_cpus=4, node_timeout=60)
    try:
        with pytest.warns(ClusterSizeWarning) as caught:
            bb.optimize(bb.make_strategy("openai-es", dim=3, popsize=2, seed=1), bb.make_problem("sphere", dim=3),
                        executor, generations=2, seed=0)
    finally:
        executor.close()
    assert [str(w.message) for w in caught] == [  # once a run
        "a generation of 3 rows (popsize 2 and the center) leaves 1 of the cluster's 4 cores idle; scale the "
        "strategy to the cluster with popsize >= 3 (docs/cluster.md, Populations sized to the cluster)"]
