"""The cyclic MDP: registration, dynamics, the 1,000-step cap, and that ES learns it."""

import subprocess
import sys

import numpy as np
import pytest

from tests.helpers.extras import reason

gym = pytest.importorskip("gymnasium", reason=reason("gym", "gymnasium"))

import blackbox as bb  # noqa: E402
from blackbox.problems.gym.envs import CYCLIC_MDP_ID, CyclicMDP  # noqa: E402
from blackbox.problems.gym.envs.cyclic_mdp import CLOCKWISE, COUNTER_CLOCKWISE, STAY  # noqa: E402


def test_registered_on_import_with_the_cap():
    spec = gym.spec(CYCLIC_MDP_ID)
    assert spec.max_episode_steps == 1000 and spec.reward_threshold == 1000.0
    env = gym.make(CYCLIC_MDP_ID)
    assert isinstance(env.unwrapped, CyclicMDP)
    assert env.observation_space.shape == (3,) and env.action_space.n == 3


def test_module_colon_id_imports_and_registers_in_a_fresh_process():
    code = ("import gymnasium as gym; env = gym.make('blackbox.problems.gym.envs:blackbox/CyclicMDP-v0'); "
            "print(type(env.unwrapped).__name__, env.spec.max_episode_steps)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["CyclicMDP", "1000"]


def test_importing_twice_does_not_warn(recwarn):
    import importlib

    import blackbox.problems.gym.envs

    importlib.reload(blackbox.problems.gym.envs)
    assert not [w for w in recwarn if "Overriding environment" in str(w.message)]


def test_passes_gymnasiums_env_checker():
    from gymnasium.utils.env_checker import check_env

    check_env(gym.make(CYCLIC_MDP_ID, render_mode="ansi").unwrapped)
    check_env(gym.make(CYCLIC_MDP_ID, state_dependent=True).unwrapped, skip_render_check=True)


def test_clockwise_earns_one_and_moves_on_around_the_cycle():
    env = CyclicMDP()
    obs, info = env.reset(seed=3)
    s = info["state"]
    np.testing.assert_array_equal(obs, np.eye(3, dtype=np.float32)[s])
    for k in range(7):
        obs, reward, terminated, truncated, info = env.step(CLOCKWISE)
        assert (reward, terminated, truncated) == (1.0, False, False)
        assert info["state"] == (s + k + 1) % 3
        np.testing.assert_array_equal(obs, np.eye(3, dtype=np.float32)[info["state"]])


@pytest.mark.parametrize("action", [COUNTER_CLOCKWISE, STAY])
def test_any_other_action_ends_the_episode_with_minus_one(action):
    env = CyclicMDP()
    _, info = env.reset(seed=0)
    _, reward, terminated, truncated, after = env.step(action)
    assert (reward, terminated, truncated) == (-1.0, True, False)
    assert after["state"] == info["state"]


def test_start_state_comes_from_the_seed():
    env = CyclicMDP()
    starts = [env.reset(seed=seed)[1]["state"] for seed in range(60)]
    assert set(starts) == {0, 1, 2}
    assert starts == [CyclicMDP().reset(seed=seed)[1]["state"] for seed in range(60)]


def test_capped_at_1000_steps_with_return_1000():
    env = gym.make(CYCLIC_MDP_ID)
    env.reset(seed=0)
    total, steps, terminated, truncated = 0.0, 0, False, False
    while not (terminated or truncated):
        _, reward, terminated, truncated, _ = env.step(CLOCKWISE)
        total += reward
        steps += 1
    assert (total, steps, terminated, truncated) == (1000.0, 1000, False, True)


def test_k_correct_steps_then_a_mistake_returns_k_minus_1():
    env = gym.make(CYCLIC_MDP_ID)
    env.reset(seed=1)
    rewards = [env.step(CLOCKWISE)[1] for _ in range(5)] + [env.step(STAY)[1]]
    assert sum(rewards) == 4.0


def test_state_dependent_actions():
    env = CyclicMDP(state_dependent=True)
    assert [env.clockwise_action(s) for s in range(3)] == [0, 2, 1]
    _, info = env.reset(seed=2)
    for _ in range(6):
        _, reward, terminated, _, _ = env.step(env.clockwise_action())
        assert reward == 1.0 and not terminated
    wrong = (env.clockwise_action() + 1) % 3
    assert env.step(wrong)[1:3] == (-1.0, True)


def test_bad_action_and_render_mode():
    env = CyclicMDP()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action must be 0, 1 or 2, got 3"):
        env.step(3)
    with pytest.raises(ValueError, match="render_mode must be None or 'ansi', got 'human'"):
        CyclicMDP(render_mode="human")
    env = CyclicMDP(render_mode="ansi")
    env.reset(seed=0)
    assert env.render().count("[") == 1


class LinearCyclicPolicy(bb.Problem):
    """A tiny stand-in for the gym problem: argmax of a 3x3 linear map of the one-hot state."""

    name = "cyclic-linear"
    dim = 9

    def __init__(self, cap):
        self.cap = cap

    def evaluate(self, params, seeds):
        env = gym.make(CYCLIC_MDP_ID, state_dependent=True, max_episode_steps=self.cap)
        fitness, steps = np.zeros(len(params)), np.zeros(len(params), dtype=np.int64)
        for i, (w, seed) in enumerate(zip(params, seeds)):
            obs, _ = env.reset(seed=int(seed))
            done = False
            while not done:
                obs, reward, terminated, truncated, _ = env.step(int(np.argmax(w.reshape(3, 3) @ obs)))
                fitness[i] += reward
                steps[i] += 1
                done = terminated or truncated
        return bb.EvalResult(fitness=fitness, steps=steps)

    def initial_params(self, rng):
        return rng.standard_normal(9) * 0.1


@pytest.mark.parametrize("name,options", [("openai-es", {"sigma": 0.1, "lr": 0.05, "popsize": 16}),
                                          ("cma-es", {"sigma": 0.5})])
def test_es_learns_the_state_dependent_cycle(name, options):
    problem = LinearCyclicPolicy(cap=50)
    x0 = problem.initial_params(np.random.default_rng(0))
    strategy = bb.make_strategy(name, dim=9, x0=x0, seed=0, **options)
    result = bb.optimize(strategy, problem, generations=60, target=50.0)
    assert result.best_fitness == 50.0
    assert problem.evaluate(result.best_params[None], np.array([123])).fitness[0] == 50.0
