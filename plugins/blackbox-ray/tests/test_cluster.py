"""The Ray executor on a simulated cluster (``ray.cluster_utils.Cluster``: a head without CPUs and
three one-CPU nodes): bit-identical to serial with mirrored pairs split across nodes, one driver call
per node a generation, no loop over refs per completion; a node lost mid-generation with no spare CPU
and a node that joins mid-run leave the results unchanged."""

from __future__ import annotations

import os
import tempfile
import threading
import time

import numpy as np
import pytest

pytest.importorskip("blackbox_ray", reason="needs the blackbox-ray plugin: pip install -e plugins/blackbox-ray")
ray = pytest.importorskip("ray")
from blackbox_ray import RayExecutor  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402
from ray_problems import Slow, Stateful  # noqa: E402

import blackbox as bb  # noqa: E402

STORE = 80 * 2**20


def comparable(records):
    return [{k: v for k, v in r.as_dict().items() if k not in ("time", "generation_time")} for r in records]


def run(executor, problem, generations=4, popsize=24, callbacks=()):
    # a moving optimum (x = 0.5) and state folded from every row: a wrong row or a wrong sum shows
    strategy = bb.make_strategy("openai-es", dim=problem.dim, popsize=popsize, sigma=0.1, seed=7)
    return bb.optimize(strategy, problem, executor, generations=generations, seed=11, callbacks=callbacks)


def assert_same(result, reference):
    assert comparable(result.records) == comparable(reference.records)
    assert np.array_equal(result.center, reference.center)


@pytest.fixture(scope="module")
def cluster():
    if ray.is_initialized():
        ray.shutdown()
    os.environ["RAY_TMPDIR"] = tempfile.mkdtemp(prefix="bb-ray-", dir="/tmp")
    made = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "object_store_memory": STORE,
                                                           "include_dashboard": False})
    nodes = [made.add_node(num_cpus=1, object_store_memory=STORE) for _ in range(3)]
    made.wait_for_nodes()
    ray.init(address=made.address, logging_level="ERROR")
    try:
        yield made, nodes
    finally:
        ray.shutdown()
        made.shutdown()  # removes only the nodes it started (never `ray stop --force`)


def test_three_nodes_bit_identical_one_call_per_node_and_no_ref_loop(cluster, monkeypatch):
    reference = run("serial", Stateful(6), popsize=300)
    executor = RayExecutor()
    in_generation, waits = [], []
    evaluate, wait = RayExecutor.evaluate, ray.wait

    def watched_evaluate(self, *args, **kwargs):
        in_generation.append(True)
        try:
            return evaluate(self, *args, **kwargs)
        finally:
            in_generation.pop()

    def watched_wait(refs, *args, **kwargs):
        if in_generation:
            waits.append(len(refs))
        return wait(refs, *args, **kwargs)

    monkeypatch.setattr(RayExecutor, "evaluate", watched_evaluate)
    monkeypatch.setattr(ray, "wait", watched_wait)
    result = run(executor, Stateful(6), popsize=300)  # 150 pairs: 3 shares cut mid-pair, 3 blocks
    assert executor.nodes == 3 and executor.workers == 3
    executor.close()
    assert_same(result, reference)
    assert waits == []  # completions come by callback: no ray.wait over the refs in flight
    stats = executor.stats
    assert stats.node_calls == 3 * stats.generations  # messages a generation == nodes
    assert stats.node_reductions == stats.generations and stats.driver_reductions == 0


def test_large_vectors_travel_down_and_up_the_tree_in_chunks(cluster, monkeypatch):
    """dim 150,000: the bundle crosses the tree in 64 KiB chunks (patched here), and the sums of
    pgpe (linear and squared: 300,000 integers) go up it in ten 256 KiB chunks."""
    import blackbox_ray.executor

    monkeypatch.setattr(blackbox_ray.executor, "BUNDLE_CHUNK", 2**16)

    def pgpe(executor):
        strategy = bb.make_strategy("pgpe", dim=150_000, popsize=200, seed=3)
        return bb.optimize(strategy, Stateful(150_000), executor, generations=2, seed=5)

    reference = pgpe("serial")
    executor = RayExecutor()
    result = pgpe(executor)
    executor.close()
    assert_same(result, reference)
    assert executor.stats.node_reductions == 2 and executor.stats.broadcast_bytes > 2 * 2**20


def test_pipelined_generations_overlap_on_the_nodes_with_the_same_bits(cluster):
    """Generation g+1 starts on the nodes before g is collected; every node runs both at once."""

    def pipelined(executor):
        strategy = bb.make_strategy("openai-es", dim=6, popsize=60, sigma=0.1, seed=7)
        return bb.optimize(strategy, Slow(6, 0.01), executor, generations=5, seed=11, pipelined=True)

    reference = pipelined("serial")
    executor = RayExecutor()
    result = pipelined(executor)
    executor.close()
    assert_same(result, reference)
    assert executor.stats.generations == 6  # the sixth was handed over before the run stopped
    assert executor.stats.node_reductions == 5


@pytest.mark.reliability_long
def test_a_node_lost_mid_generation_with_no_spare_cpu(cluster):
    made, nodes = cluster
    reference = run("serial", Slow(6, 0.05), generations=6)
    executor = RayExecutor()
    box = {}

    def target():
        box["result"] = run(executor, Slow(6, 0.05), generations=6)

    worker = threading.Thread(target=target, daemon=True)
    started = time.monotonic()
    worker.start()
    while executor.stats.generations < 3:  # in generation 3 (8 rows a node, 0.4 s)
        time.sleep(0.01)
    time.sleep(0.15)
    victim = nodes.pop()
    made.remove_node(victim)
    worker.join(timeout=60)
    assert not worker.is_alive(), "the run waited for a node that cannot come back"
    elapsed = time.monotonic() - started
    assert elapsed < 30
    assert_same(box["result"], reference)
    assert executor.stats.nodes_lost == 1 and executor.stats.rounds > executor.stats.generations
    assert executor.nodes == 2
    executor.close()


@pytest.mark.reliability_long
def test_a_node_that_joins_mid_run_is_used(cluster):
    made, nodes = cluster
    reference = run("serial", Slow(6, 0.03), generations=20)
    executor = RayExecutor()
    calls = []

    def watch(record):
        calls.append(executor.stats.node_calls)
        if record.generation == 2:  # the run pauses while a node joins the cluster
            nodes.append(made.add_node(num_cpus=1, object_store_memory=STORE))

    result = run(executor, Slow(6, 0.03), generations=20, callbacks=[watch])
    assert_same(result, reference)
    per_generation = np.diff([0, *calls])
    assert executor.stats.nodes_joined == 1 and executor.nodes == len(nodes)
    assert per_generation[0] == len(nodes) - 1 and per_generation[-1] == len(nodes)  # used once ready
    executor.close()


def test_the_address_probe_accepts_a_running_cluster_quickly(cluster):
    from blackbox_ray.checks import probe_address

    made, _ = cluster
    started = time.monotonic()
    probe_address(made.address)  # TCP, HTTP/2 and the GCS's cluster id: no error
    assert time.monotonic() - started < 10.0
