"""Frame skip and frame stack for any task, the project's own environments through the gym problem."""

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install blackbox-es[gym])")

import blackbox as bb  # noqa: E402
from blackbox.problems.gym.problem import GymProblem  # noqa: E402
from blackbox.problems.gym.wrappers import RepeatAction  # noqa: E402


class Counter(gym.Env):
    """Observation: the step count; reward: the action + 1; ends after 10 steps."""

    observation_space = gym.spaces.Box(0, 100, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([0], dtype=np.float32), {}

    def step(self, action):
        self.t += 1
        return np.array([self.t], dtype=np.float32), float(action) + 1.0, self.t >= 10, False, {}


def test_repeat_action_sums_rewards_and_stops_at_the_end():
    env = RepeatAction(Counter(), 4)
    env.reset(seed=0)
    obs, reward, terminated, _, _ = env.step(1)
    assert obs[0] == 4 and reward == 8.0 and not terminated
    env.step(0)
    obs, reward, terminated, _, _ = env.step(0)  # steps 9 and 10, then the episode ends
    assert obs[0] == 10 and reward == 2.0 and terminated


@pytest.mark.parametrize("skip", [1, 2, 4, 8])
def test_frame_skip_keeps_the_horizon_and_divides_the_decisions(skip):
    problem = GymProblem("CartPole-v1", frame_skip=skip, hidden=[8])
    assert problem.step_limit == -(-500 // skip) and problem.vectorized == (skip == 1)
    params = problem.initial_params(np.random.default_rng(0))[None].repeat(3, axis=0)
    result = problem.evaluate(params, np.arange(3))
    # every reward is 1 per simulator step: the return counts simulator steps, `steps` decisions
    assert np.all(result.fitness <= 500) and np.all(result.steps <= -(-result.fitness // skip))
    assert np.all(result.steps >= result.fitness / skip)
    single = GymProblem("CartPole-v1", frame_skip=skip, hidden=[8], batched=False)
    np.testing.assert_array_equal(single.evaluate(params, np.arange(3)).fitness, result.fitness)


def test_frame_skip_with_a_factory_and_an_explicit_limit():
    problem = GymProblem(Counter, frame_skip=3, max_episode_steps=7)
    assert problem.step_limit == 3
    result = problem.evaluate(np.zeros((1, problem.dim)), [0])
    assert result.steps[0] == 3  # the engine stops after ceil(7 / 3) decisions (9 steps of the factory's env)
    assert GymProblem(Counter, frame_skip=3, max_episode_steps=30).evaluate(
        np.zeros((1, problem.dim)), [0]).steps[0] == 4  # the environment ends first, after 10 steps


def test_frame_stack_stacks_observations():
    problem = GymProblem("CartPole-v1", frame_stack=3, hidden=[8])
    assert problem.observation_space.shape == (3, 4) and problem.obs_size == 12
    assert problem.describe()["frame_stack"] == 3 and not problem.vectorized
    result = problem.evaluate(np.zeros((2, problem.dim)), [0, 1])
    assert np.all(result.steps > 0)


def test_wrapper_options_are_checked():
    with pytest.raises(bb.ConfigError, match="frame_skip must be >= 1, got 0"):
        GymProblem("CartPole-v1", frame_skip=0)
    with pytest.raises(bb.ConfigError, match="atari=true applies Atari preprocessing, but 'CartPole-v1' is not an "
                                             "ALE environment"):
        GymProblem("CartPole-v1", atari=True)
    with pytest.raises(bb.ConfigError, match="env_kwargs must be a table"):
        GymProblem("CartPole-v1", env_kwargs=[1])


@pytest.mark.parametrize("env", ["blackbox/CyclicMDP-v0", "blackbox.problems.gym.envs:blackbox/CyclicMDP-v0"])
def test_cyclic_mdp_through_the_gym_problem(env):
    problem = bb.make_problem(f"gym:{env},policy=linear", env_kwargs={"state_dependent": True})
    assert problem.dim == 3 * 3 + 3 and problem.max_episode_steps == 1000
    # a policy that reads its state: logits W x with W[a, s] = 1 where a = (0 - s) mod 3
    w = np.zeros((3, 3))
    for s in range(3):
        w[(-s) % 3, s] = 1.0
    solved = np.concatenate([w.reshape(-1), np.zeros(3)])
    always_zero = np.concatenate([np.zeros(9), [1.0, 0.0, 0.0]])
    result = problem.evaluate(np.stack([solved, always_zero]), [0, 1])
    assert result.fitness[0] == 1000 and result.fitness[1] < 2


def _chain(env) -> list[str]:
    names = []
    while hasattr(env, "env"):
        names.append(type(env).__name__)
        env = env.env
    return names


@pytest.mark.parametrize("limit", [None, 37])
def test_unchecked_environments_keep_the_time_limit_and_every_reward(limit):
    from blackbox.problems.gym.environment import make_gym_env

    checked = make_gym_env("Pendulum-v1", limit)
    unchecked = make_gym_env("Pendulum-v1", limit, checked=False)
    assert _chain(checked) == ["TimeLimit", "OrderEnforcing", "PassiveEnvChecker"]
    assert _chain(unchecked) == ["TimeLimit"]
    horizon = limit or 200
    for episode in range(2):  # the step counter starts again at each reset
        a, _ = checked.reset(seed=episode)
        b, _ = unchecked.reset(seed=episode)
        np.testing.assert_array_equal(a, b)
        for t in range(1, horizon + 1):
            action = np.array([np.sin(t)], dtype=np.float32)
            a, ra, terma, trunca, _ = checked.step(action)
            b, rb, termb, truncb, _ = unchecked.step(action)
            np.testing.assert_array_equal(a, b)
            assert (ra, terma, trunca) == (rb, termb, truncb)
            assert truncb == (t == horizon)


def test_the_problem_steps_unchecked_environments_and_scores_as_before():
    problem = bb.make_problem("gym:Pendulum-v1,hidden=[8],max_episode_steps=37")
    env = problem._engine().slots.make_env()
    assert _chain(env) == ["TimeLimit"]
    params = np.random.default_rng(0).standard_normal((3, problem.dim))
    result = problem.evaluate(params, np.arange(3))
    np.testing.assert_array_equal(result.steps, [37, 37, 37])
    reference = bb.make_problem("gym:Pendulum-v1,hidden=[8],max_episode_steps=37")
    checked = reference.make_env()
    returns = []
    for row in range(3):  # the plain loop on a checked environment, member by member
        batch = reference.policy.batch(1)
        batch.load(0, params[row])
        from blackbox.problems.gym.rollout import rollout_episode
        from blackbox.problems.gym.slots import flatten_observation

        returns.append(rollout_episode(checked, flatten_observation(reference.observation_space), batch,
                                       reference.adapter, row, 10**6)[0])
    np.testing.assert_array_equal(result.fitness, returns)


@pytest.mark.skipif(not __import__("importlib").util.find_spec("mujoco"), reason="needs mujoco")
def test_making_half_cheetah_prints_no_mujoco_warning_and_writes_no_log(capfd, tmp_path, monkeypatch):
    import warnings

    import mujoco

    from blackbox.problems.gym.environment import make_gym_env

    monkeypatch.chdir(tmp_path)
    before = mujoco.get_mju_user_warning()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for checked in (True, False):
            make_gym_env("HalfCheetah-v5", checked=checked).close()
    out, err = capfd.readouterr()
    assert "settotalmass" not in out + err and "WARNING" not in out + err
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()
    assert mujoco.get_mju_user_warning() is before  # MuJoCo's process-wide handler is put back


@pytest.mark.skipif(not __import__("importlib").util.find_spec("mujoco"), reason="needs mujoco")
def test_other_mujoco_warnings_still_reach_the_user():
    from blackbox.problems.gym.environment import _quiet_mujoco

    quiet = _quiet_mujoco("HalfCheetah-v5")
    with pytest.warns(RuntimeWarning, match="^MuJoCo: something else$"):
        with quiet:
            quiet._warning("compiler attribute 'settotalmass' is deprecated and will be removed")
            quiet._warning("something else")


def test_a_missing_extra_gets_one_fix(monkeypatch):
    """gymnasium's DependencyNotInstalled names its own install command (gymnasium[box2d]); the
    error names one fix, the blackbox-es extra, and not gymnasium's."""
    import gymnasium as gym

    from blackbox.errors import ConfigError
    from blackbox.problems.gym.environment import make_gym_env

    def missing(*args, **kwargs):
        raise gym.error.DependencyNotInstalled('Box2D is not installed, you can install it by run `pip install swig` '
                                               'followed by `pip install "gymnasium[box2d]"`')

    monkeypatch.setattr(gym, "make", missing)
    with pytest.raises(ConfigError) as info:
        make_gym_env("LunarLander-v3")
    assert str(info.value) == ("environment 'LunarLander-v3' needs the box2d extra, which is not installed: "
                               'pip install "blackbox-es[box2d]"')
