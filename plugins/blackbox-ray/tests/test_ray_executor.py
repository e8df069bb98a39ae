"""The Ray executor on a local Ray with 2 CPUs: identical to serial, actors replaced, errors named."""

from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("blackbox_ray", reason="needs the blackbox-ray plugin: pip install -e plugins/blackbox-ray")

import ray
from blackbox_ray import RayExecutor
from ray_problems import FailsOnMark, KillOnce, Stateful

import blackbox as bb


def comparable(records):
    return [{k: v for k, v in r.as_dict().items() if k not in ("time", "generation_time")} for r in records]


def strategy(name: str, dim: int):
    if name == "ga":
        return bb.make_strategy("ga", dim=dim, popsize=15, seed=7)
    return bb.make_strategy("openai-es", dim=dim, popsize=20, sigma=0.1, seed=7)


def run(name: str, executor, problem=None, generations: int = 4):
    problem = problem or Stateful(6)
    return bb.optimize(strategy(name, problem.dim), problem, executor, generations=generations, seed=11)


def assert_same(result, ref):
    assert comparable(result.records) == comparable(ref.records)
    assert np.array_equal(result.center, ref.center)


def test_registered_by_entry_point_and_spec():
    executor = bb.make_executor("ray:num_cpus=2,chunks_per_actor=3")
    assert isinstance(executor, RayExecutor) and executor.num_cpus == 2 and executor.chunks_per_actor == 3
    with pytest.raises(bb.ConfigError, match="num_cpus=2 only applies to a local Ray"):
        bb.make_executor("ray:address=auto,num_cpus=2")


def test_starts_a_local_ray_on_localhost_and_shuts_it_down():
    assert not ray.is_initialized()
    reference = run("openai-es", "serial", generations=2)
    executor = bb.make_executor("ray:num_cpus=2")
    result = bb.optimize(strategy("openai-es", 6), Stateful(6), executor, generations=2, seed=11)
    assert ray.util.get_node_ip_address() == "127.0.0.1"
    assert executor.nodes == 1 and executor.workers == 2  # one node's aggregator, both CPUs in its pool
    executor.close()
    assert not ray.is_initialized()  # the executor started Ray, so it stops it
    assert_same(result, reference)


@pytest.fixture(scope="module")
def local_ray():
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # listen on 127.0.0.1
    ray.init(num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()


@pytest.mark.parametrize("name", ["openai-es", "ga"])
def test_matches_serial_bit_for_bit(local_ray, name):
    reference = run(name, "serial")
    with RayExecutor() as executor:
        result = run(name, executor)
        assert executor.workers == 2
        # once per worker process that got rows, never per task (4 generations); which of the two get
        # rows depends on when each finished starting: one may take them all (as in test_executors)
        assert 1 <= executor.stats.problem_loads <= 2
        assert executor.stats.broadcast_reads <= 2 * 4  # once per worker process per generation
    assert_same(result, reference)


def test_killed_actor_is_replaced_and_rows_rerun(local_ray, tmp_path):
    reference = run("openai-es", "serial")
    marker = tmp_path / "killed"
    with RayExecutor() as executor:
        result = run("openai-es", executor, KillOnce(6, str(marker)))
        assert executor.stats.worker_failures == 1 and executor.stats.resubmitted >= 1
    assert marker.exists()
    assert_same(result, reference)


def test_evaluation_error_names_row_seed_and_cause(local_ray):
    params = np.zeros((10, 3))
    params[6, 0] = 99.0
    with RayExecutor() as executor:
        executor.start(FailsOnMark())
        with pytest.raises(bb.errors.EvaluationError) as info:
            executor.evaluate(bb.Population.from_dense(params), np.arange(100, 110))
    assert (info.value.row, info.value.seed) == (6, 106)
    assert str(info.value) == "evaluation of row 6 (seed 106) failed: ValueError: parameter 0 is the forbidden value 99.0"
    assert isinstance(info.value.__cause__, ValueError)


def test_pipelined_runs_match_serial_bit_for_bit(local_ray):
    def pipelined(executor):
        strategy = bb.make_strategy("pgpe", dim=6, popsize=40, seed=7)
        return bb.optimize(strategy, Stateful(6), executor, generations=4, seed=11, pipelined=True)

    reference = pipelined("serial")
    with RayExecutor() as executor:
        result = pipelined(executor)
        assert executor.stats.node_reductions == 4
    assert_same(result, reference)
