"""Bad input to the Ray executor gets one line naming it: an unreachable address, a node whose
versions or arithmetic differ from the driver's, a node that cannot import the problem's module."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

pytest.importorskip("blackbox_ray", reason="needs the blackbox-ray plugin: pip install -e plugins/blackbox-ray")

import ray  # noqa: E402
from blackbox_ray import RayExecutor  # noqa: E402
from blackbox_ray.checks import check_node, driver_facts  # noqa: E402

import blackbox as bb  # noqa: E402
from blackbox.errors import WorkerError  # noqa: E402


def test_an_address_that_cannot_be_reached_is_named():
    executor = RayExecutor(address="127.0.0.1:1")
    with pytest.raises(WorkerError) as info:
        executor.start(bb.make_problem("sphere", dim=3))
    assert str(info.value) == (
        "cannot reach a Ray cluster at address '127.0.0.1:1' (ConnectionRefusedError: [Errno 111] Connection "
        "refused); start one with `ray start --head` on that machine, or pass the address it printed"
    )
    assert not ray.is_initialized()


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
    check_node({**node, "numpy": mine["numpy"]}, mine)  # the same facts: accepted


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
