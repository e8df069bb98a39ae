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


@pytest.mark.slow  # over 8 s: the default run stays under 10 minutes; CI runs -m slow
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


def test_traffic_counts_the_table_once_the_compact_population_and_the_read_back(jax_tasks):
    """The first generation uploads the noise table, later ones only the compact population, keys and normalizer;
    every generation reads back its five small result arrays whole (on the CPU backend with np.asarray)."""
    import blackbox as bb

    measured = jax_tasks.traffic("gymnax:CartPole-v1,hidden=[16]", 64, generations=2)
    table_bytes = bb.make_strategy("openai-es", dim=114, popsize=64).table.data.nbytes  # the strategy's table
    assert measured["first_up"] > table_bytes > 1000 * measured["up"] > 0
    assert measured["up"] < measured["dense_up"] == 4 * 64 * 114
    # returns, lengths, observation counts (64 x 1 each, 4 bytes) and means, m2s (64 x 1 x 4 floats)
    assert measured["down"] == 64 * (4 + 4 + 4 + 16 + 16)


@pytest.mark.slow
def test_brax_throughput_times_whole_generations(jax_tasks):
    """One hopper compile (minutes on a loaded CPU): slow."""
    pytest.importorskip("brax", reason="needs the jax extra (pip install 'blackbox-es[jax]'): brax is not installed")
    rows = jax_tasks.brax_throughput(popsize=4, episode_length=5, generations=1, gym=False)
    assert [r["contender"] for r in rows] == ["brax hopper (spring, one compiled call)"]
    assert rows[0]["steps_per_cpu_s"] > 0 and rows[0]["first_wall"] > rows[0]["wall"]


def test_torch_layout_gives_torch_linear_layers_the_same_policy(jax_tasks):
    """The EvoTorch contender starts from blackbox's start vector: same outputs for the same observation."""
    import numpy as np

    sizes = (5, 3, 2)
    row = np.random.default_rng(0).standard_normal(5 * 3 + 3 + 3 * 2 + 2)
    obs = np.random.default_rng(1).standard_normal(5)
    ours, at = obs, 0  # blackbox's MLP: x @ (in, out) kernel + bias, tanh between layers
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        ours = ours @ row[at: at + a * b].reshape(a, b) + row[at + a * b: at + a * b + b]
        ours, at = (np.tanh(ours) if i == 0 else ours), at + a * b + b
    torch_row = jax_tasks.torch_layout(row, sizes)
    theirs, at = obs, 0  # torch's nn.Linear: (out, in) weight @ x + bias
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        theirs = torch_row[at: at + a * b].reshape(b, a) @ theirs + torch_row[at + a * b: at + a * b + b]
        theirs, at = (np.tanh(theirs) if i == 0 else theirs), at + a * b + b
    assert np.array_equal(ours, theirs)


def _fake_python(tmp_path, body: str) -> str:
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    return str(script)


def test_evotorch_row_reads_the_peers_json_line(jax_tasks, tmp_path):
    result = ('{"first_wall": 20.0, "wall": 2.0, "cpu": 1.0, "steps": 6000, "dim": 584, "restored": ["jax.tree_map"],'
              ' "versions": {"evotorch": "0.6.1", "torch": "2.13.0", "brax": "0.14.2", "jax": "0.10.2"}}')
    python = _fake_python(tmp_path, f"echo 'a log line'\necho '{result}'")
    row = jax_tasks.evotorch_row(python, {"env": "ant", "generations": 3})
    assert row["contender"] == "EvoTorch 0.6.1 VecGymNE brax::ant (torch 2.13.0; JAX names restored: jax.tree_map)"
    assert row["steps_per_wall_s"] == 1000.0 and row["steps_per_cpu_s"] == 2000.0
    lines = jax_tasks.evotorch_table([row], popsize=64, episode_length=1000)
    assert lines[2].startswith("| EvoTorch 0.6.1 VecGymNE brax::ant (torch 2.13.0; JAX names restored: jax.tree_map)"
                               " | 20.0 | 2.00 | 1.00 | 1,000 | 2,000 | ")


def test_evotorch_row_records_the_error_of_a_peer_that_does_not_run(jax_tasks, tmp_path):
    python = _fake_python(tmp_path, "echo 'Traceback ...' >&2\n"
                                    "echo \"AttributeError: module 'jax' has no attribute 'tree_map'\" >&2\nexit 1")
    row = jax_tasks.evotorch_row(python, {"env": "ant", "generations": 3})
    assert row["error"] == "AttributeError: module 'jax' has no attribute 'tree_map'"
    lines = jax_tasks.evotorch_table([row], popsize=64, episode_length=1000)
    assert lines[2].startswith("| EvoTorch VecGymNE brax::ant | does not run: "
                               "`AttributeError: module 'jax' has no attribute 'tree_map'` | | | | | ")


def test_unroll_profile_times_each_unroll_on_the_same_populations(jax_tasks):
    rows = jax_tasks.unroll_profile(unrolls=(1, 3), popsize=8, generations=2)
    assert [r["unroll"] for r in rows] == [1, 3]
    assert all(r["cpu_ms"] > 0 for r in rows)
    assert rows[1]["passes"] == rows[0]["passes"] / 3 and rows[0]["stepped"] >= rows[0]["counted"] > 0
