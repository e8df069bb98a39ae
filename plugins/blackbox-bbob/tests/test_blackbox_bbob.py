"""blackbox-bbob: the conformance kit on BBOB functions, values against COCO, and clear errors."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("blackbox_bbob", reason="needs the blackbox-bbob plugin: pip install -e plugins/blackbox-bbob")

import cocoex
from blackbox_bbob import BBOB, FUNCTIONS

import blackbox as bb
from blackbox.testing import Subject, parametrize_with_checks


@parametrize_with_checks([
    Subject("bbob"),
    Subject("bbob:rastrigin-rotated,dim=5"),
    Subject("bbob", function=24, dim=2, instance=7),
    Subject("bbob:function=20,dim=40,instance=15"),
    Subject("bbob:f7,dim=3"),
])
def test_conformance(check):
    check()


def test_entry_point_and_provenance():
    entry = bb.registry.problems.entry("bbob")
    assert entry.distribution == "blackbox-bbob" and entry.value == "blackbox_bbob.problem:BBOB"


@pytest.mark.parametrize("function", range(1, 25))
def test_fitness_is_negated_distance_to_f_opt_and_zero_at_the_optimum(function):
    for dim, instance in ((2, 1), (10, 4), (40, 2)):
        problem = bb.make_problem("bbob", function=function, dim=dim, instance=instance)
        coco = cocoex.Suite("bbob", f"instances: {instance}", f"function_indices: {function} dimensions: {dim}")
        reference = coco.get_problem_by_function_dimension_instance(function, dim, instance)
        x = np.random.default_rng(function).uniform(-5, 5, (3, dim))
        f = np.array([reference(row) for row in x])
        np.testing.assert_array_equal(problem.evaluate(x, np.zeros(3, dtype=np.int64)).fitness, -(f - problem.f_opt))
        at_optimum = problem.evaluate(problem.x_opt[None, :], np.zeros(1, dtype=np.int64)).fitness[0]
        assert abs(at_optimum) <= 1e-8 * max(1.0, abs(problem.f_opt)), (function, dim, at_optimum)
        assert np.all(problem.evaluate(x, np.zeros(3, dtype=np.int64)).fitness <= 1e-8)


def test_functions_by_name_and_number():
    assert bb.make_problem("bbob:rosenbrock,dim=4").function == 8
    assert bb.make_problem("bbob:f21,dim=4").function_name == "gallagher-101"
    assert bb.make_problem("bbob", function="Lunacek").function == 24
    assert len(FUNCTIONS) == 24


@pytest.mark.parametrize("spec,message", [
    ("bbob:function=0", "bbob function must be 1..24 (or a name such as 'rastrigin'), got 0"),
    ("bbob:25", "bbob function must be 1..24"),
    ("bbob:function=spere", "bbob has no function 'spere'. Did you mean 'sphere'?"),
    ("bbob:function=1.5", "bbob function must be an integer, got 1.5"),
    ("bbob:dim=1", "bbob dim must be in [2, 40], the dimensions BBOB is defined for"),
    ("bbob:dim=41", "got 41"),
    ("bbob:instance=0", "bbob instance must be in [1, 2147483647], got 0"),
    ("bbob:instance=4294967296", "got 4294967296"),
    ("bbob:dimension=10", "problem 'bbob' has no option 'dimension'"),
])
def test_bad_function_dim_or_instance_is_a_config_error(spec, message):
    with pytest.raises(bb.ConfigError) as info:
        bb.make_problem(spec)
    assert message in str(info.value)


def test_wrong_row_length_is_refused():
    with pytest.raises(bb.ConfigError, match="takes rows of 3 values, got shape"):
        BBOB(1, 3).evaluate(np.zeros((2, 4)), np.zeros(2, dtype=np.int64))


def test_initial_params_follow_cocos_restart_proposal():
    problem = BBOB(1, 40)
    x = np.concatenate([problem.initial_params(np.random.default_rng(s)) for s in range(200)])
    assert np.all(np.abs(x) <= 5) and abs(np.mean(np.abs(x)) - 5 / 3) < 0.05  # E|x| of the triangle


def test_an_es_solves_the_sphere_and_runs_from_the_command_line(tmp_path):
    problem = bb.make_problem("bbob:sphere,dim=4,instance=2")
    x0 = problem.initial_params(np.random.default_rng(0))
    strategy = bb.make_strategy("openai-es", dim=4, seed=0, x0=x0, lr=0.05, sigma=0.05)
    start = problem.evaluate(x0[None, :], np.zeros(1, dtype=np.int64)).fitness[0]
    result = bb.optimize(strategy, problem, generations=300, seed=0)
    assert start < -10 and result.center_fitness > -1e-3
    done = subprocess.run([sys.executable, "-m", "blackbox", "run", "--problem", "bbob:function=8,dim=4",
                           "--strategy", "openai-es", "--generations", "5", "--quiet", "--json",
                           "--out", str(tmp_path / "run")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "function = 8" in (tmp_path / "run" / "config.toml").read_text()
    bad = subprocess.run([sys.executable, "-m", "blackbox", "run", "--problem", "bbob:function=30",
                          "--generations", "1", "--quiet", "--out", str(tmp_path / "bad")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "bbob function must be 1..24" in bad.stderr  # no COCO fatal error
    listed = subprocess.run([sys.executable, "-m", "blackbox", "list", "problems", "--json"],
                            capture_output=True, text=True, check=True)
    row = next(r for r in json.loads(listed.stdout) if r["name"] == "bbob")
    assert row["distribution"] == "blackbox-bbob" and row["status"] == "ok"
