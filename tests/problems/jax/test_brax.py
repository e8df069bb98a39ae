"""The brax problem: one compiled call per generation (a lax.scan of episode_length steps), done-masking,
seeds, the compact population on the device, errors. Compiles are slow (tens of seconds even for tiny
episodes), so the default tests share one problem on inverted_pendulum, Brax's smallest system, on the
spring backend (the cheapest), with 12-step episodes; a run that learns is behind the slow marker."""

from __future__ import annotations

import numpy as np
import pytest

import blackbox as bb
from blackbox.errors import ConfigError
from tests.helpers.extras import requires

pytestmark = requires("jax", "jax", "brax")

SPEC = "brax:inverted_pendulum,policy=linear,episode_length=12,episodes=2,obs_norm=true"


@pytest.fixture(scope="module")
def pendulum():
    return bb.make_problem(SPEC)


def population(problem, popsize=8, seed=0, sigma=2.0):
    es = bb.make_strategy("openai-es", dim=problem.dim, popsize=popsize, sigma=sigma, seed=seed)
    return es.ask()


def test_same_seeds_same_returns_and_returns_count_until_the_first_done(pendulum):
    pop = population(pendulum)
    a = pendulum.evaluate_population(pop, np.arange(8))
    b = pendulum.evaluate_population(pop, np.arange(8))
    assert a.fitness.tobytes() == b.fitness.tobytes() and a.steps.tolist() == b.steps.tolist()
    # inverted_pendulum pays 1 per step while the pole stands: the return is the episode's length,
    # and a pole that fell before the 12th step stops counting (Brax's bare env keeps stepping);
    # the fitness is the mean of 2 episodes, the steps their sum
    assert (a.fitness * 2).tolist() == a.steps.astype(float).tolist()
    assert max(a.steps) <= 24 and min(a.steps) < 24
    assert a.info["nan_returns"].tolist() == [0] * 8
    # the observation statistics count the observations acted on: one per counted step
    assert a.info["obs_count"].sum(axis=1).tolist() == a.steps.astype(float).tolist()


def test_compact_and_dense_rows_give_the_same_bits(pendulum):
    pop = population(pendulum, seed=1)
    compact = pendulum.evaluate_population(pop, np.arange(8) + 7)
    dense = pendulum.evaluate(pop.dense(np.float32), np.arange(8) + 7)
    assert compact.fitness.tobytes() == dense.fitness.tobytes()


def test_a_run_is_bit_identical_twice(pendulum):
    """Through the driver: observation statistics folded between generations, the same bits twice."""
    first = bb.optimize("openai-es:popsize=8,sigma=0.5", pendulum, "serial", max_generations=2, seed=0)
    assert pendulum.count > 0
    pendulum.load_state_dict({"obs_count": 0.0, "obs_mean": np.zeros(4), "obs_m2": np.zeros(4)})
    again = bb.optimize("openai-es:popsize=8,sigma=0.5", pendulum, "serial", max_generations=2, seed=0)
    assert first.center.tobytes() == again.center.tobytes()
    assert [(r.mean, r.best, r.steps) for r in first.records] == [(r.mean, r.best, r.steps) for r in again.records]


def test_reward_shift_moves_the_training_fitness_never_the_score():
    """``reward_shift`` is added to every counted reward of a training episode (host-side: the shifted
    problem shares the compiled generation); ``score`` and the observation statistics are the task's own,
    and the goal check screens at the shifted bar of a whole episode. Two fresh problems: the module's
    shared one has folded other tests' observation statistics."""
    from blackbox.problems.jax.batched import shared_programs

    pendulum, shifted = bb.make_problem(SPEC), bb.make_problem(SPEC + ",reward_shift=-0.5")
    pop = population(pendulum)
    plain = pendulum.evaluate_population(pop, np.arange(8))
    programs = shared_programs()
    moved = shifted.evaluate_population(pop, np.arange(8))
    assert shared_programs() == programs  # the shift is applied on the host: no program of its own
    # inverted_pendulum pays 1 a step: the shifted fitness is half the return, computed as the problem says
    assert moved.fitness.tolist() == (plain.fitness + -0.5 * (plain.steps / 2)).tolist() == (plain.fitness / 2).tolist()
    assert moved.steps.tolist() == plain.steps.tolist()
    assert moved.info["obs_mean"].tobytes() == plain.info["obs_mean"].tobytes()
    row = pop.params[0]
    assert shifted.score(row, episodes=3).tolist() == pendulum.score(row, episodes=3).tolist()
    assert shifted.training_goal(10.0) == 10.0 - 0.5 * 12 and pendulum.training_goal(10.0) == 10.0
    assert shifted.describe()["reward_shift"] == -0.5 and "reward_shift" not in pendulum.describe()


def test_describe_names_backend_and_length(pendulum):
    assert pendulum.describe() | {"device": "-"} == {
        "name": "brax", "env": "inverted_pendulum", "backend": "spring", "dim": 5, "policy": "linear 4->1",
        "actions": "tanh into [-1, 1]^1", "episodes": 2, "episode_length": 12, "obs_norm": True, "device": "-"}


# -- bad input ----------------------------------------------------------------------------------
def test_a_policy_with_the_wrong_output_shape_names_both_shapes():
    from blackbox.problems.jax.brax import BraxProblem
    from blackbox.problems.jax.policies import MLPPolicy

    with pytest.raises(ConfigError) as info:
        BraxProblem("inverted_pendulum", policy=MLPPolicy((4, 3)))
    assert str(info.value) == ("the policy's output for one observation has shape (3,), but the action space "
                               "Box(-1, 1, (1,)) of brax 'inverted_pendulum' needs shape (1,) (tanh into [-1, 1]^1)")


def test_unknown_environment_names_close_ones():
    with pytest.raises(ConfigError) as info:
        bb.make_problem("brax:half_cheetah")
    assert str(info.value) == "unknown Brax environment 'half_cheetah'; close names: halfcheetah"


def test_unknown_backend_lists_them():
    with pytest.raises(ConfigError) as info:
        bb.make_problem("brax:hopper,backend=mujoco")
    assert str(info.value) == ("unknown Brax backend 'mujoco'; expected one of spring, positional, generalized, "
                               "mjx")


def test_episode_length_must_be_positive():
    from blackbox.problems.jax.brax import BraxProblem

    for bad in (0, -5):
        with pytest.raises(ConfigError) as info:
            BraxProblem("hopper", episode_length=bad)
        assert str(info.value) == f"episode_length must be >= 1, got {bad}"


def test_missing_brax_names_the_extra(monkeypatch):
    import sys

    from blackbox.problems.jax.brax import BraxProblem

    monkeypatch.setitem(sys.modules, "brax", None)
    monkeypatch.setitem(sys.modules, "brax.envs", None)
    with pytest.raises(ConfigError) as info:
        BraxProblem("hopper")
    assert str(info.value) == 'the brax problem needs Brax, which is not installed: pip install "blackbox-es[jax]"'


def test_presets_have_a_goal_and_a_budget():
    from blackbox.problems.jax.brax import BraxProblem

    for env, strategy in (("ant", "openai-es"), ("humanoid", "openai-es"), ("hopper", "ars")):
        assert BraxProblem.recommended_strategy(env) == strategy
        preset = BraxProblem.recommended(env, strategy=strategy)
        assert "goal" in preset["run"] and "max_time" in preset["run"]
        assert preset["strategy"]["popsize"] > 0
    assert BraxProblem.recommended_strategy("swimmer") is None
    # hopper's ARS preset runs the linear policy of Mania et al. 2018; OpenAI-ES keeps the MLP
    assert BraxProblem.recommended("hopper", strategy="ars")["problem"] == {"obs_norm": True, "policy": "linear"}
    assert BraxProblem.recommended("hopper", strategy="openai-es")["problem"] == {"obs_norm": True}


def test_the_mujoco_ports_have_the_goals_of_their_gymnasium_tasks():
    """Brax's ant, hopper and humanoid are ports of Gymnasium's MuJoCo tasks (their reward terms and
    1000-step episodes): their goals are the standard bars the gym presets use, never lower ones."""
    from blackbox.problems.gym.presets import ARS_GOALS
    from blackbox.problems.jax.brax import BraxProblem

    for env, task in (("ant", "Ant-v5"), ("hopper", "Hopper-v5"), ("humanoid", "Humanoid-v5")):
        for strategy in ("openai-es", "ars"):
            assert BraxProblem.recommended(env, strategy=strategy)["run"]["goal"] == ARS_GOALS[task], (env, strategy)


# -- slow: executors, learning ------------------------------------------------------------------
@pytest.mark.slow
def test_loky_workers_give_the_serial_bits():
    """Each worker compiles its own half of the rows; observation statistics synced between generations."""
    serial = bb.optimize("openai-es:popsize=8,sigma=0.5", bb.make_problem(SPEC), "serial", max_generations=3, seed=0)
    with bb.make_executor("loky:workers=2") as executor:
        loky = bb.optimize("openai-es:popsize=8,sigma=0.5", bb.make_problem(SPEC), executor, max_generations=3,
                           seed=0)
    assert loky.center.tobytes() == serial.center.tobytes()
    assert [(r.mean, r.best, r.steps) for r in loky.records] == [(r.mean, r.best, r.steps) for r in serial.records]


@pytest.mark.slow
def test_openai_es_raises_the_return_on_inverted_pendulum():
    problem = bb.make_problem("brax:inverted_pendulum,policy=linear,episode_length=100")
    result = bb.optimize("openai-es:popsize=32,sigma=0.1,lr=0.1", problem, "serial", max_generations=15, seed=0)
    assert result.records[-1].mean > result.records[0].mean + 10


@pytest.mark.slow
def test_blackbox_run_on_hopper_from_the_command_line(tmp_path):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "blackbox", "run", "--problem", "brax:hopper,episode_length=20",
                          "--generations", "2", "--set", "popsize=8", "--seed", "0"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=900)
    assert out.returncode == 0, out.stderr


def test_brax_notices_that_say_nothing_about_a_run_are_left_out():
    # MJX prints "Failed to import warp" at import (its optional GPU backend) and Brax warns at each
    # environment made that its pipelines are unmaintained: neither reaches a user's terminal
    import subprocess
    import sys

    code = ("import warnings; warnings.simplefilter('always')\n"
            "from blackbox.problems.jax.runtime import import_brax\n"
            "import_brax().get_environment('inverted_pendulum', backend='spring')\n"
            "print('made')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "made\n"
    assert "Failed to import" not in done.stderr and "not actively being maintained" not in done.stderr
    assert "JAXopt is no longer maintained" not in done.stderr
