"""MuJoCo tasks stepped by ``mj_step`` directly give gymnasium's own step, bit for bit."""

import functools

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install blackbox-es[gym])")
pytest.importorskip("mujoco", reason="MuJoCo is not installed (pip install blackbox-es[mujoco])")

from blackbox.problems.gym import mujoco_slots  # noqa: E402
from blackbox.problems.gym.environment import make_gym_env  # noqa: E402
from blackbox.problems.gym.mujoco_slots import MujocoSlots, direct_task  # noqa: E402
from blackbox.problems.gym.problem import GymProblem  # noqa: E402

# (id, gymnasium options): the defaults, and every option the direct step reads set otherwise
CASES = [
    pytest.param("HalfCheetah-v5", {}, id="HalfCheetah"),
    pytest.param("HalfCheetah-v5", {"forward_reward_weight": 2.0, "ctrl_cost_weight": 0.3,
                                    "exclude_current_positions_from_observation": False}, id="HalfCheetah-options"),
    pytest.param("Hopper-v5", {}, id="Hopper"),
    pytest.param("Hopper-v5", {"healthy_reward": 2.0, "terminate_when_unhealthy": False,
                               "healthy_state_range": (-5.0, 5.0), "healthy_z_range": (0.9, 1.5),
                               "healthy_angle_range": (-0.1, 0.3), "ctrl_cost_weight": 0.01,
                               "exclude_current_positions_from_observation": False}, id="Hopper-options"),
    pytest.param("Walker2d-v5", {}, id="Walker2d"),
    pytest.param("Walker2d-v5", {"healthy_z_range": (1.0, 1.5), "healthy_reward": 0.5}, id="Walker2d-options"),
    pytest.param("Swimmer-v5", {}, id="Swimmer"),
    pytest.param("Swimmer-v5", {"exclude_current_positions_from_observation": False}, id="Swimmer-options"),
    pytest.param("Ant-v5", {}, id="Ant"),
    pytest.param("Ant-v5", {"include_cfrc_ext_in_observation": False, "main_body": "torso",
                            "contact_force_range": (-0.5, 0.5), "contact_cost_weight": 1e-2,
                            "healthy_z_range": (0.3, 0.9)}, id="Ant-options"),
    pytest.param("Humanoid-v5", {}, id="Humanoid"),
    pytest.param("Humanoid-v5", {"include_cinert_in_observation": False, "include_cvel_in_observation": False,
                                 "contact_cost_range": (-np.inf, 1e-3), "contact_cost_weight": 1e-3,
                                 "healthy_z_range": (1.1, 1.6)}, id="Humanoid-options"),
]


def _maker(env_id, options):
    return functools.partial(make_gym_env, env_id, None, options, None, checked=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("env_id,options", CASES)
def test_the_direct_step_is_gymnasiums_bit_for_bit(env_id, options, dtype):
    make = _maker(env_id, options)
    task = direct_task(make)
    assert task is not None
    n, seed = 3, 100
    slots = MujocoSlots(make, n, task)
    references = [make() for _ in range(n)]
    rng = np.random.default_rng(7)
    obs = np.zeros((n, slots.obs_size))
    for s in range(n):
        expected, _ = references[s].reset(seed=s)
        assert slots.reset(s, s).tobytes() == expected.tobytes()
    nu = references[0].action_space.shape[0]
    high = references[0].action_space.high
    compared = ended = 0
    for t in range(120):
        actions = (rng.uniform(-1.3, 1.3, (n, nu)) * high).astype(dtype)  # some beyond the bounds
        rewards, terminated, truncated = slots.step(actions, n, obs)
        assert truncated is None
        for s in range(n):
            expected, reward, done, _, _ = references[s].unwrapped.step(actions[s])
            assert obs[s].tobytes() == expected.tobytes(), (t, s)
            assert np.float64(rewards[s]).tobytes() == np.float64(reward).tobytes(), (t, s, rewards[s], reward)
            assert bool(terminated[s]) == bool(done), (t, s)
            compared += 1
        for s in np.flatnonzero(terminated).tolist():
            ended += 1
            seed += 1
            slots.reset(s, seed)
            references[s].reset(seed=seed)
        if t % 40 == 20:  # the engine moves a running episode into a finished slot
            slots.move(2, 0)
            references[0], references[2] = references[2], references[0]
            seed += 1
            expected, _ = references[2].reset(seed=seed)
            assert slots.reset(2, seed).tobytes() == expected.tobytes()
    assert compared == 360
    if env_id.startswith(("Hopper", "Walker2d", "Humanoid")) and options.get("terminate_when_unhealthy", True):
        assert ended > 0  # random actions topple them: the termination path was compared too
    slots.close()
    for env in references:
        env.close()


@pytest.mark.parametrize("env_id,options", [
    pytest.param("HalfCheetah-v5", {"hidden": [16], "obs_norm": True, "obs_norm_prob": 1.0, "episodes": 2},
                 id="HalfCheetah-mlp-obsnorm"),
    pytest.param("Hopper-v5", {"policy": "linear", "reward_shift": -1.0, "action_bounds": "clip"}, id="Hopper-linear"),
    pytest.param("Ant-v5", {"policy": "linear", "max_episode_steps": 50, "obs_norm": True, "obs_norm_prob": 1.0},
                 id="Ant-linear"),
])
def test_a_problem_gives_the_same_results_with_and_without_the_direct_step(env_id, options):
    params = np.random.default_rng(3).normal(0.0, 0.3, (6, GymProblem(env_id, direct=False, **options).dim))
    seeds = np.arange(6, dtype=np.int64) + 40
    results = {}
    for direct in (True, False):
        problem = GymProblem(env_id, direct=direct, slots=4, **options)
        assert problem.direct is direct and problem.describe()["direct"] is direct
        results[direct] = problem.evaluate(params, seeds)
        problem.close()
    fast, slow = results[True], results[False]
    assert fast.fitness.tobytes() == slow.fitness.tobytes()
    assert np.array_equal(fast.steps, slow.steps)
    assert sorted(fast.info) == sorted(slow.info)
    for key in fast.info:
        assert np.asarray(fast.info[key]).tobytes() == np.asarray(slow.info[key]).tobytes(), key


def test_what_is_not_a_plain_supported_task_is_stepped_by_gymnasium():
    assert GymProblem("Hopper-v5", policy="linear").direct
    assert not GymProblem("Hopper-v5", policy="linear", batched=False).direct  # the one-by-one reference engine
    assert not GymProblem("InvertedPendulum-v5", policy="linear").direct  # no direct step for it
    assert not GymProblem("Hopper-v5", policy="linear", frame_skip=2).direct  # the problem repeats actions
    assert not GymProblem(lambda: gym.make("Hopper-v5"), policy="linear").direct  # a factory: anything inside
    wrapped = functools.partial(lambda: gym.wrappers.ClipAction(make_gym_env("Hopper-v5", checked=False)))
    assert direct_task(wrapped) is None  # a wrapper that changes the step


def test_a_gymnasium_whose_step_differs_is_stepped_by_gymnasium(monkeypatch):
    """The start-up check: where the formulas do not give gymnasium's bits (another release changed
    a reward, say), the task falls back to gymnasium's step."""
    make = _maker("HalfCheetah-v5", None)
    assert direct_task(make) is mujoco_slots.HalfCheetah
    original = mujoco_slots.HalfCheetah.finish

    def off_by_one_ulp(self, qpos, qvel, extra, before, after, actions, obs, rewards, terminated):
        original(self, qpos, qvel, extra, before, after, actions, obs, rewards, terminated)
        rewards[:] = np.nextafter(rewards, np.inf)

    monkeypatch.setattr(mujoco_slots.HalfCheetah, "finish", off_by_one_ulp)
    assert direct_task(make) is None
    assert not GymProblem("HalfCheetah-v5", policy="linear").direct


def test_the_registry_names_the_tasks_with_a_direct_step_without_making_them():
    assert mujoco_slots.registered_task("Walker2d-v5") is mujoco_slots.Walker2d
    assert mujoco_slots.registered_task("Walker2d-v4") is None  # v4's step has other formulas
    assert mujoco_slots.registered_task("CartPole-v1") is None
    assert mujoco_slots.registered_task("NoSuchTask-v0") is None
