"""Slow and frozen nodes on a simulated cluster (``ray.cluster_utils.Cluster``: a head without CPUs
and three one-CPU nodes): a node whose processes are stopped (SIGSTOP, a hung VM) is declared lost
by the executor's heartbeat, its rows are redone on the others and its late reply is dropped; the
run stays bit-identical to serial."""

from __future__ import annotations

import os
import signal
import tempfile
import time

import numpy as np
import pytest

pytest.importorskip("blackbox_ray", reason="needs the blackbox-ray plugin: pip install -e plugins/blackbox-ray")
ray = pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")
from blackbox_ray import RayExecutor  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402
from ray_problems import Slow, SlowerUnder  # noqa: E402

import blackbox as bb  # noqa: E402

STORE = 80 * 2**20


def comparable(records):
    return [{k: v for k, v in r.as_dict().items() if k not in ("time", "generation_time")} for r in records]


def run(executor, problem, generations=6, popsize=24, callbacks=()):
    strategy = bb.make_strategy("openai-es", dim=problem.dim, popsize=popsize, sigma=0.1, seed=7)
    return bb.optimize(strategy, problem, executor, generations=generations, seed=11, callbacks=callbacks)


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


def node_processes(node) -> list:
    """The processes of one simulated node: its raylet and everything under it (workers, the
    aggregator and its pool), and the node's other daemons."""
    found = {}
    for _, process in node.live_processes():
        try:
            root = psutil.Process(process.pid)
            for proc in [root, *root.children(recursive=True)]:
                found[proc.pid] = proc
        except psutil.NoSuchProcess:
            continue
    return list(found.values())


def signal_all(processes, sig) -> None:
    for proc in processes:
        try:
            proc.send_signal(sig)
        except psutil.NoSuchProcess:
            pass


def raylet_pid(node) -> int:
    return next(process.pid for kind, process in node.live_processes() if kind == "raylet")


def test_finished_nodes_take_a_slow_nodes_queued_rows_to_the_last_row(cluster):
    """One node 5x slower: the others, done with their own rows, borrow its queued rows until none
    is left (1-CPU nodes: before this, a node stopped stealing once it had its own results)."""
    _, nodes = cluster
    slow = raylet_pid(nodes[0])
    reference = run("serial", SlowerUnder(6, 0.01, slow), generations=3, popsize=60)
    executor = RayExecutor()
    try:
        result = run(executor, SlowerUnder(6, 0.01, slow), generations=3, popsize=60)
    finally:
        executor.close()
    assert comparable(result.records) == comparable(reference.records)
    assert np.array_equal(result.center, reference.center)
    assert executor.stats.rows_lent > 0  # the slow node's queued rows ran elsewhere
    assert executor.stats.rounds == executor.stats.generations and executor.stats.nodes_lost == 0


@pytest.mark.reliability_long  # a frozen or freshly started cluster: long; CI runs -m reliability_long
def test_a_frozen_node_is_fenced_within_the_heartbeat_and_the_run_stays_bit_identical(cluster):
    _, nodes = cluster
    reference = run("serial", Slow(6, 0.02))
    executor = RayExecutor(heartbeat=3.0)
    frozen: list = []
    ends: dict[int, float] = {}

    def watch(record):
        ends[record.generation] = time.monotonic()
        if record.generation == 2:  # generation 3 starts with one node's processes stopped
            frozen.extend(node_processes(nodes[1]))
            signal_all(frozen, signal.SIGSTOP)
        if record.generation == 4:
            signal_all(frozen, signal.SIGCONT)

    try:
        result = run(executor, Slow(6, 0.02), callbacks=[watch])
        deadline = time.monotonic() + 60  # the woken node's reply is dropped and counted
        while executor.stats.late_replies < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        signal_all(frozen, signal.SIGCONT)
        executor.close()
    assert frozen, "found no processes of the node to stop"
    assert comparable(result.records) == comparable(reference.records)
    assert np.array_equal(result.center, reference.center)
    stats = executor.stats
    assert stats.nodes_fenced >= 1 and stats.nodes_lost >= stats.nodes_fenced
    assert stats.rounds > stats.generations  # the frozen node's rows were redone
    assert stats.late_replies >= 1  # it woke up and replied: dropped, never mixed in
    assert ends[3] - ends[2] < 30  # the heartbeat (3 s) bounds the stall, not Ray's health check
