"""Workers killed at random moments: loky processes and Ray actors SIGKILLed from a separate thread
at times drawn from a seeded RNG; the run completes with the same records (minus timings) and the
same final center as an undisturbed serial run."""

from __future__ import annotations

import os
import signal
import threading

import numpy as np
import pytest

import blackbox as bb
from blackbox.executors.loky import LokyExecutor
from tests.helpers.extras import import_or_skip
from tests.reliability.fault_problems import Faulty
from tests.reliability.helpers import (
    alive,
    assert_same_result,
    cmdline,
    descendants,
    loky_workers,
    note,
    wait_gone,
)


def optimize(executor, generations=20, delay=0.0, seed=3):
    problem = Faulty(dim=6, delay=delay)
    strategy = bb.make_strategy("openai-es", dim=6, popsize=16, sigma=0.1, seed=seed)
    return bb.optimize(strategy, problem, executor, generations=generations, seed=seed)


class Killer(threading.Thread):
    """SIGKILLs one of ``find()``'s processes after each pause drawn from ``rng``, ``kills`` times."""

    def __init__(self, find, rng: np.random.Generator, kills: int, pause=(0.05, 0.4)):
        super().__init__(daemon=True)
        self.find, self.rng, self.kills, self.pause = find, rng, kills, pause
        self.landed: list[int] = []
        self.done = threading.Event()

    def run(self) -> None:
        while len(self.landed) < self.kills and not self.done.is_set():
            if self.done.wait(float(self.rng.uniform(*self.pause))):
                return
            victims = self.find()
            if not victims:
                continue
            victim = victims[int(self.rng.integers(len(victims)))]
            if alive(victim):
                try:
                    os.kill(victim, signal.SIGKILL)
                except ProcessLookupError:
                    continue
                self.landed.append(victim)

    def stop(self) -> None:
        self.done.set()
        self.join(timeout=30)


def run_with_killer(make_executor, find, kills: int, rng_seed: int, delay: float):
    killer = Killer(find, np.random.default_rng(rng_seed), kills)
    with make_executor() as executor:
        killer.start()
        try:
            result = optimize(executor, delay=delay)
        finally:
            killer.stop()
        stats = executor.stats.copy()
    return result, killer.landed, stats


@pytest.fixture(scope="module")
def reference():
    return optimize("serial")


@pytest.mark.parametrize("rng_seed", [0])
def test_loky_workers_killed_at_random_moments(reference, rng_seed):
    result, landed, stats = run_with_killer(
        lambda: LokyExecutor(workers=2, max_retries=10), loky_workers, kills=4, rng_seed=rng_seed, delay=0.05)
    assert len(landed) == 4 and not [p for p in landed if alive(p)]
    assert stats.worker_failures >= 1 and stats.resubmitted >= 1
    assert_same_result(result, reference)
    note("loky workers killed at random moments", faults=len(landed), runs=1, identical=1,
         rows_rerun=stats.resubmitted)


@pytest.mark.reliability_long
@pytest.mark.parametrize("rng_seed", range(1, 6))
def test_loky_workers_killed_at_random_moments_long(reference, rng_seed):
    result, landed, stats = run_with_killer(
        lambda: LokyExecutor(workers=2, max_retries=20), loky_workers, kills=8, rng_seed=rng_seed, delay=0.03)
    assert len(landed) == 8
    assert_same_result(result, reference)
    note("loky workers killed at random moments", faults=len(landed), runs=1, identical=1,
         rows_rerun=stats.resubmitted)


# -- Ray ------------------------------------------------------------------------------------------
def ray_actors() -> list[int]:
    """Live actor processes of this process's own local Ray (never another user's)."""
    return sorted(p for p in descendants(os.getpid()) if cmdline(p).startswith("ray::NodeAggregator") and alive(p))


@pytest.fixture(scope="module")
def local_ray():
    ray = import_or_skip("blackbox-ray", "ray")
    import_or_skip("blackbox-ray", "blackbox_ray")
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # listen on 127.0.0.1
    ray.init(num_cpus=2, include_dashboard=False)
    yield ray
    ray.shutdown()


def _ray_run(local_ray, reference, kills, rng_seed, max_retries):
    from blackbox_ray import RayExecutor

    result, landed, stats = run_with_killer(
        lambda: RayExecutor(max_retries=max_retries), ray_actors, kills=kills, rng_seed=rng_seed, delay=0.05)
    assert len(landed) == kills
    assert wait_gone(landed) == []
    assert stats.worker_failures >= 1
    assert_same_result(result, reference)
    note("Ray actors killed at random moments", faults=len(landed), runs=1, identical=1,
         rows_rerun=stats.resubmitted)


@pytest.mark.reliability_long  # a local Ray takes seconds to start; the plugin's tests kill an actor by default
@pytest.mark.parametrize("rng_seed", range(4))
def test_ray_actors_killed_at_random_moments(local_ray, reference, rng_seed):
    _ray_run(local_ray, reference, kills=5, rng_seed=rng_seed, max_retries=20)


def test_the_killer_really_kills():
    """The tool itself: a sleeping child found by ``find`` dies."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    killer = Killer(lambda: [child.pid] if alive(child.pid) else [], np.random.default_rng(0), kills=1)
    killer.start()
    killer.join(timeout=10)
    assert killer.landed == [child.pid] and child.wait(timeout=10) == -signal.SIGKILL
