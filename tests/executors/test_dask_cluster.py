"""The futures executor on a Dask LocalCluster of worker processes: identical to serial, also when a
worker process is SIGKILLed mid-run (Dask reschedules its task; its nanny restarts it)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import blackbox as bb
from tests.helpers.executor_problems import KillOnce, Stateful

distributed = pytest.importorskip("distributed")


def comparable(records):
    return [{k: v for k, v in r.as_dict().items() if k not in ("time", "generation_time")} for r in records]


def run(executor, problem, generations=4):
    strategy = bb.make_strategy("openai-es", dim=problem.dim, popsize=20, sigma=0.1, seed=7)
    return bb.optimize(strategy, problem, executor, generations=generations, seed=11)


def test_dask_process_cluster_survives_a_killed_worker_bit_for_bit(tmp_path):
    reference = run("serial", Stateful(6))
    marker = tmp_path / "killed"
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=50) as cluster, distributed.Client(cluster) as client:
        pids = set(client.run(os.getpid).values())
        executor = bb.FuturesExecutor(client.get_executor(), workers=3)
        result = run(executor, KillOnce(6, str(marker)))
        victim = int(marker.read_text())
        assert victim in pids  # a Dask worker process died mid-run ...
        client.wait_for_workers(3, timeout=60)
        assert victim not in set(client.run(os.getpid).values())  # ... and was replaced
    assert comparable(result.records) == comparable(reference.records)
    assert np.array_equal(result.center, reference.center)
