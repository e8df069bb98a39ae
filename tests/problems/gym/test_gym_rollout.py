"""Batched rollouts return exactly what one-by-one evaluation returns, on every supported task."""

import importlib.util
import json
import warnings

import numpy as np
import pytest

from tests.helpers.extras import import_or_skip

gym = pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install blackbox-es[gym])")

from blackbox.problems.gym.problem import GymProblem  # noqa: E402
from blackbox.problems.gym.rollout import episode_seeds  # noqa: E402
from blackbox.problems.gym.slots import CartPoleSlots  # noqa: E402

HAS_BOX2D = importlib.util.find_spec("Box2D") is not None
HAS_MUJOCO = importlib.util.find_spec("mujoco") is not None
needs_box2d = pytest.mark.skipif(not HAS_BOX2D, reason="Box2D is not installed (pip install blackbox-es[box2d])")
needs_mujoco = pytest.mark.skipif(not HAS_MUJOCO, reason="MuJoCo is not installed (pip install blackbox-es[mujoco])")

# (environment, options): short episodes keep the suite fast; options cover every code path.
TASKS = [
    pytest.param("CartPole-v1", {}, id="CartPole"),
    pytest.param("CartPole-v1", {"vectorized": False, "episodes": 2}, id="CartPole-gym-slots"),
    pytest.param("Acrobot-v1", {"max_episode_steps": 40, "action_noise": 0.5}, id="Acrobot"),
    pytest.param("MountainCarContinuous-v0", {"max_episode_steps": 40, "bins": 7}, id="MountainCarContinuous"),
    pytest.param("Pendulum-v1", {"max_episode_steps": 40, "obs_norm": True, "obs_norm_prob": 0.5}, id="Pendulum"),
    pytest.param("LunarLander-v3", {"max_episode_steps": 60, "episodes": 2}, id="LunarLander", marks=needs_box2d),
    pytest.param("Hopper-v5", {"max_episode_steps": 30, "obs_norm": True, "obs_norm_prob": 1.0}, id="Hopper",
                 marks=needs_mujoco),
    pytest.param("HalfCheetah-v5", {"max_episode_steps": 20, "action_noise": 0.1}, id="HalfCheetah",
                 marks=needs_mujoco),
    pytest.param("Walker2d-v5", {"max_episode_steps": 20, "bins": 5}, id="Walker2d", marks=needs_mujoco),
    pytest.param("Humanoid-v5", {"max_episode_steps": 10, "obs_norm": True, "obs_norm_prob": 1.0},
                 id="Humanoid", marks=needs_mujoco),
]


def population(problem, n, seed=0, scale=0.3):
    rng = np.random.default_rng(seed)
    center = problem.initial_params(rng)
    return center + scale * rng.standard_normal((n, problem.dim))


@pytest.mark.parametrize("env,options", TASKS)
def test_batched_equals_one_by_one(env, options):
    batched = GymProblem(env, slots=3, **options)  # 3 slots for 7 rows: slots are handed on
    single = GymProblem(env, batched=False, **options)
    params = population(batched, 7)
    seeds = np.random.default_rng(1).integers(0, 2**32, 7)
    seeds[3] = seeds[2]  # a mirrored pair shares its seed
    a, b = batched.evaluate(params, seeds), single.evaluate(params, seeds)
    np.testing.assert_array_equal(a.fitness, b.fitness)
    np.testing.assert_array_equal(a.steps, b.steps)
    assert a.info.keys() == b.info.keys()
    for key in a.info:
        np.testing.assert_array_equal(a.info[key], b.info[key])
    assert np.all(np.isfinite(a.fitness)) and np.all(a.steps >= options.get("episodes", 1))
    limit = options.get("max_episode_steps", 500) * options.get("episodes", 1)
    assert np.all(a.steps <= limit)
    # and whatever the number of slots, or how the rows are split
    wide = GymProblem(env, slots=64, **options).evaluate(params, seeds)
    np.testing.assert_array_equal(wide.fitness, a.fitness)
    halves = [batched.evaluate(params[:4], seeds[:4]), batched.evaluate(params[4:], seeds[4:])]
    np.testing.assert_array_equal(np.concatenate([h.fitness for h in halves]), a.fitness)


def test_one_by_one_reference_is_a_plain_gymnasium_loop():
    """The reference path agrees with a hand-written loop over gymnasium.make with the MLP in torch."""
    torch = import_or_skip("torch", "torch")
    problem = GymProblem("CartPole-v1", batched=False)
    params = population(problem, 3, scale=0.5)
    seeds = np.array([11, 12, 13])
    result = problem.evaluate(params, seeds)
    for row in range(3):
        net = problem.policy.to_torch(params[row])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            env = gym.make("CartPole-v1")
        obs, _ = env.reset(seed=int(seeds[row]))
        total, done = 0.0, False
        while not done:
            with torch.no_grad():
                logits = net(torch.as_tensor(obs))
            obs, reward, terminated, truncated, _ = env.step(int(torch.argmax(logits)))
            total += reward
            done = terminated or truncated
        # float32 numpy and torch may round a near-tie differently: allow 1 step of 500
        assert abs(total - result.fitness[row]) <= 1


def test_cartpole_replica_matches_gymnasium_bit_for_bit():
    rng = np.random.default_rng(0)
    slots = CartPoleSlots(8)
    obs = np.zeros((8, 4), dtype=np.float32)
    envs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(8):
            envs.append(gym.make("CartPole-v1").unwrapped)
    seeds = rng.integers(0, 2**32, 96)
    checked = 0
    for start in range(0, 96, 8):
        live = 8
        for s in range(8):
            first, _ = envs[s].reset(seed=int(seeds[start + s]))
            np.testing.assert_array_equal(slots.reset(s, int(seeds[start + s])), first)
        order = list(range(8))  # which gymnasium env each slot mirrors
        for _ in range(500):
            # a biased random walk keeps some poles up for long
            actions = (rng.random(live) < 0.5 + 0.3 * np.sign(obs[:live, 2] + obs[:live, 3])).astype(np.int64)
            _, terminated, _ = slots.step(actions, live, obs)
            for s in range(live):
                want, _, term, _, _ = envs[order[s]].step(int(actions[s]))
                np.testing.assert_array_equal(obs[s], want)
                assert bool(terminated[s]) == term
                checked += 1
            # retire finished slots the way the engine does: the last live slot moves in
            for s in sorted(np.flatnonzero(terminated).tolist(), reverse=True):
                live -= 1
                if s != live:
                    slots.move(live, s)
                    obs[s] = obs[live]
                    order[s] = order[live]
            if not live:
                break
    assert checked > 1000


def test_episode_seeds_start_with_the_row_seed_and_differ():
    table = episode_seeds(np.array([5, 5, 7]), 3)
    assert table.shape == (3, 3) and list(table[:, 0]) == [5, 5, 7]
    assert np.array_equal(table[0], table[1]) and len(set(table[0])) == 3
    assert not np.array_equal(table[0, 1:], table[2, 1:])


def test_rewards_are_summed_over_episodes_and_steps_counted():
    problem = GymProblem("CartPole-v1", episodes=3)
    params = population(problem, 4)
    result = problem.evaluate(params, np.arange(4))
    rollouts = problem.rollouts(params, episode_seeds(np.arange(4), 3))
    np.testing.assert_array_equal(result.fitness, rollouts.returns.mean(axis=1))
    np.testing.assert_array_equal(result.steps, rollouts.lengths.sum(axis=1))
    # CartPole pays 1 per step: returns are episode lengths
    np.testing.assert_array_equal(rollouts.returns, rollouts.lengths)


def _run(slots, executor: str):
    import blackbox as bb

    result = bb.optimize("openai-es:popsize=8,sigma=0.1", f"gym:Pendulum-v1,hidden=[8],obs_norm=true,obs_norm_prob=0.5,"
                         f"slots={slots},episodes=2", executor, generations=2, seed=3)
    from tests.golden.cases import record_rows

    return record_rows(result.records), result.center


def test_same_seed_same_bits_for_every_group_size_and_executor():
    want_rows, want_center = _run(1, "serial")
    # the forced group sizes of benchmarks/rollout_cost.py's sweep (1, 2, 4, 8, 16, 65) among them
    for slots, executor in [(2, "serial"), (3, "serial"), (4, "serial"), (8, "serial"), (16, "serial"),
                            ("auto", "serial"), (64, "serial"), (65, "serial"), ("auto", "loky:workers=2"),
                            (2, "loky:workers=2")]:
        rows, center = _run(slots, executor)
        np.testing.assert_array_equal(center, want_center)
        assert json.dumps(rows, sort_keys=True, default=str) == json.dumps(want_rows, sort_keys=True, default=str), \
            (slots, executor)


def test_the_measured_group_size_is_a_power_of_two_within_bounds_and_can_be_set():
    from blackbox.problems.gym.groups import MAX_GROUP, MIN_GROUP

    measured = GymProblem("Pendulum-v1", hidden=[8])
    measured.evaluate(np.zeros((2, measured.dim)), np.arange(2))
    size = measured.group_size
    assert MIN_GROUP == 8 and MIN_GROUP <= size <= MAX_GROUP and (size & (size - 1) == 0 or size == MAX_GROUP)
    fixed = GymProblem("Pendulum-v1", hidden=[8], slots=5)
    fixed.evaluate(np.zeros((2, fixed.dim)), np.arange(2))
    assert fixed.group_size == 5


def test_the_measured_group_keeps_the_slots_weights_within_the_cache_budget():
    from blackbox.problems.gym.groups import SLOT_CACHE_BYTES, cache_group_limit

    assert SLOT_CACHE_BYTES == 256 * 1024
    assert [cache_group_limit(d) for d in (5702, 108, 32768, 32769, 159505, 10**7)] == [8, 512, 2, 1, 1, 1]
    # Pendulum's steps are cheap, so the timing alone would take a large group; the MLP 64-64's
    # 4,481 float32 weights a slot (17.9 KB) allow 8 slots
    problem = GymProblem("Pendulum-v1")
    problem.evaluate(np.zeros((2, problem.dim)), np.arange(2))
    assert problem.dim == 4481 and problem.group_size == 8  # MIN_GROUP, and the cache budget's limit
    wide = GymProblem("Pendulum-v1", hidden=[128, 128])  # 17,153 weights a slot (68.6 KB): 3 fit, so 2
    wide.evaluate(np.zeros((2, wide.dim)), np.arange(2))
    assert cache_group_limit(wide.dim) == 2 and wide.group_size == 2  # below MIN_GROUP where the cache says so
    fixed = GymProblem("Pendulum-v1", slots=64)  # a group set by hand is taken as it is
    fixed.evaluate(np.zeros((2, fixed.dim)), np.arange(2))
    assert fixed.group_size == 64


def test_weights_on_another_device_are_not_held_to_the_cpus_cache_budget():
    from types import SimpleNamespace

    from blackbox.problems.gym.groups import MAX_GROUP, weights_group_limit

    dim = 159_505  # Humanoid's MLP 256x256: one slot's float32 weights fill the CPU budget
    assert weights_group_limit(SimpleNamespace(dim=dim)) == 1  # numpy policy
    assert weights_group_limit(SimpleNamespace(dim=dim, device=None)) == 1
    assert weights_group_limit(SimpleNamespace(dim=dim, device="cpu")) == 1  # torch on the CPU
    assert weights_group_limit(SimpleNamespace(dim=dim, device="cuda:0")) == MAX_GROUP
    assert weights_group_limit(SimpleNamespace(dim=108, device="cpu")) == 512


@pytest.mark.parametrize("bad", [0, -3, 2.5, "many", True])
def test_a_bad_group_size_is_one_line_naming_it(bad):
    from blackbox.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        GymProblem("Pendulum-v1", slots=bad)
    assert str(info.value) == (f"slots must be a positive integer (environments stepped side by side) or 'auto' "
                               f"(measured per task and machine), got {bad!r}")
