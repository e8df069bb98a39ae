"""Smoke test of benchmarks/jax_tasks.py on tiny settings: every contender runs and the tables render."""

from __future__ import annotations

import importlib
import sys

import pytest

from tests.helpers import ROOT
from tests.helpers.extras import requires

pytestmark = requires("jax")


@pytest.fixture(scope="module")
def jax_tasks():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        yield importlib.import_module("jax_tasks")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_contenders_run_and_the_table_counts_unsolved_runs(jax_tasks):
    pytest.importorskip("evosax", reason="needs evosax (the bench extra)")
    tiny = jax_tasks.Task("CartPole-v1", goal=1e9, popsize=8, sigma=0.1, lr=0.1, episodes=1, shared=False,
                          generations=2)
    ours = jax_tasks.run_blackbox(tiny, "openai-es", 0, "gymnax:CartPole-v1,hidden=[16]", "blackbox openai-es")
    peer = jax_tasks.run_evosax(tiny, "Open_ES", 0)
    assert ours.generations is None and peer.generations is None  # an unreachable goal: not solved
    assert ours.steps > 0 and peer.steps == 2 * 8 * 500  # evosax scans every episode to its end
    lines = jax_tasks.table([ours, peer])
    assert lines[2].startswith("| CartPole-v1 | blackbox openai-es | 0/1 | - |")
    assert lines[3].startswith("| CartPole-v1 | evosax Open_ES | 0/1 | - |")


def test_overhead_times_the_generation_and_the_compiled_call(jax_tasks):
    measured = jax_tasks.overhead(popsize=16, generations=2)
    assert 0 < measured["call_wall"] and 0 < measured["generation_wall"]


@pytest.mark.slow
def test_brax_throughput_times_whole_generations(jax_tasks):
    """One hopper compile (minutes on a loaded CPU): slow."""
    pytest.importorskip("brax", reason="needs the jax extra (pip install 'blackbox-es[jax]'): brax is not installed")
    rows = jax_tasks.brax_throughput(popsize=4, episode_length=5, generations=1, gym=False)
    assert [r["contender"] for r in rows] == ["brax hopper (spring, one compiled call)"]
    assert rows[0]["steps_per_cpu_s"] > 0 and rows[0]["first_wall"] > rows[0]["wall"]
