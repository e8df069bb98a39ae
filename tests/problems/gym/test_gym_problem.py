"""The gym problem: training, bad input, observation normalization and its state, seeds, pickling."""

import importlib.util
import pickle
import warnings

import cloudpickle
import numpy as np
import pytest

from tests.helpers.extras import import_or_skip

gym = pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install blackbox-es[gym])")

import blackbox as bb  # noqa: E402
from blackbox.core.population import Population  # noqa: E402
from blackbox.driver.stop import ConfirmGoal  # noqa: E402
from blackbox.executors.serial import SerialExecutor  # noqa: E402
from blackbox.problems.gym.obs_norm import RunningStats, combine_moments, episode_moments, sampled_rows  # noqa: E402
from blackbox.problems.gym.presets import recommended  # noqa: E402
from blackbox.problems.gym.problem import GymProblem  # noqa: E402

HAS_BOX2D = importlib.util.find_spec("Box2D") is not None
HAS_MUJOCO = importlib.util.find_spec("mujoco") is not None


class Toy(gym.Env):
    """Observation (t, seed % 7); reward = action; 10 steps; can raise or return NaN on request."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, fail_seed=None, nan_step=None, action_space=None):
        self.fail_seed, self.nan_step = fail_seed, nan_step
        if action_space is not None:
            self.action_space = action_space

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.seed_ = 0, seed
        return np.array([0, seed % 7], dtype=np.float32), {}

    def step(self, action):
        self.t += 1
        if self.seed_ == self.fail_seed and self.t == 3:
            raise RuntimeError("the simulator diverged")
        reward = float("nan") if self.t == self.nan_step else float(action)
        return np.array([self.t, self.seed_ % 7], dtype=np.float32), reward, self.t >= 10, False, {}


def toy(**kwargs):
    return lambda: Toy(**kwargs)


# -- training ---------------------------------------------------------------------------------

def test_cartpole_is_solved_with_the_preset():
    preset = recommended("CartPole-v1", "openai-es")
    problem = bb.make_problem("gym:CartPole-v1")
    es = bb.make_strategy("openai-es", dim=problem.dim, x0=problem.initial_params(np.random.default_rng(0)),
                          seed=0, **preset["strategy"])
    confirm = ConfirmGoal(475, 20)
    result = bb.optimize(es, problem, generations=60, seed=0, stop=[confirm])
    assert confirm.summary()["solved"], confirm.checks
    assert result.stop_reason.startswith("center's mean over 20 fresh episodes")
    assert np.mean(problem.score(result.center, 20, seed=123)) >= 475 - 25  # other fresh episodes agree


SMOKE = [
    ("CartPole-v1", {}), ("Acrobot-v1", {"max_episode_steps": 50}),
    ("MountainCarContinuous-v0", {"max_episode_steps": 50}), ("Pendulum-v1", {"max_episode_steps": 50}),
    pytest.param("LunarLander-v3", {"max_episode_steps": 50},
                 marks=pytest.mark.skipif(not HAS_BOX2D, reason="Box2D is not installed")),
    *[pytest.param(env, {"max_episode_steps": 20, "obs_norm": True, "obs_norm_prob": 0.5},
                   marks=pytest.mark.skipif(not HAS_MUJOCO, reason="MuJoCo is not installed"))
      for env in ("Hopper-v5", "HalfCheetah-v5", "Walker2d-v5", "Humanoid-v5")],
]


@pytest.mark.parametrize("env,options", SMOKE)
def test_every_task_trains_a_few_generations(env, options):
    problem = GymProblem(env, **options)
    es = bb.make_strategy("openai-es", dim=problem.dim, x0=problem.initial_params(np.random.default_rng(0)),
                          seed=0, popsize=4)
    result = bb.optimize(es, problem, generations=2, seed=0)
    assert result.generations == 2 and result.evaluations == 10
    assert result.steps == sum(r.steps for r in result.records[-1:]) and result.steps >= 10
    assert all(np.isfinite(r.best) and r.center is not None for r in result.records)
    if options.get("obs_norm"):
        assert problem.state_dict()["obs_count"] > 0


def test_same_seed_same_run_and_chunking_does_not_matter():
    def train(executor):
        problem = GymProblem("Pendulum-v1", max_episode_steps=30, obs_norm=True, obs_norm_prob=0.3)
        es = bb.make_strategy("openai-es", dim=problem.dim, x0=problem.initial_params(np.random.default_rng(1)),
                              seed=1, popsize=10)
        result = bb.optimize(es, problem, executor, generations=3, seed=1)
        return result, problem.state_dict()

    (a, sa), (b, sb) = train(SerialExecutor()), train(SerialExecutor(batch_size=3))
    np.testing.assert_array_equal(a.center, b.center)
    assert a.steps == b.steps and sa["obs_count"] == sb["obs_count"] > 0
    np.testing.assert_array_equal(sa["obs_mean"], sb["obs_mean"])
    np.testing.assert_array_equal(sa["obs_m2"], sb["obs_m2"])


# -- bad input -------------------------------------------------------------------------------

def test_unknown_environment_suggests_the_closest_id():
    with pytest.raises(bb.ConfigError, match=r"unknown Gymnasium environment 'CartPol-v1'\. Did you mean 'CartPole-v1'\?"):
        GymProblem("CartPol-v1")
    with pytest.raises(bb.ConfigError, match="unknown Gymnasium environment 'CartPole-v7'"):
        bb.make_problem("gym:CartPole-v7")


def test_policy_output_must_fit_the_action_space():
    torch = import_or_skip("torch", "torch")
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    with pytest.raises(bb.ConfigError) as info:
        GymProblem("CartPole-v1", policy=net)
    assert str(info.value) == (
        "the policy's output for one observation has shape (3,), but the action space Discrete(2) of "
        "environment 'CartPole-v1' needs 2 values (argmax over 2 actions); make the last layer output 2"
    )
    with pytest.raises(bb.ConfigError, match=r"the policy fails on one observation of environment 'CartPole-v1' "
                                             r"\(4 values\): RuntimeError: "):
        GymProblem("CartPole-v1", policy=torch.nn.Linear(3, 2))  # wrong input size fails at the probe


def test_parameter_vector_of_the_wrong_length():
    problem = GymProblem("CartPole-v1", policy="linear")
    assert problem.dim == 4 * 2 + 2
    with pytest.raises(bb.ConfigError) as info:
        problem.evaluate(np.zeros((2, 11)), np.arange(2))
    assert str(info.value) == ("gym problem 'CartPole-v1' takes parameter vectors of length 10 "
                               "(linear 4->2), got 11 (params of shape (2, 11))")
    with pytest.raises(bb.ConfigError, match="takes parameter vectors of length 10"):
        problem.score(np.zeros(9))


def test_environment_that_raises_names_row_and_seed():
    problem = GymProblem(toy(fail_seed=1234), max_episode_steps=20)
    executor = SerialExecutor()
    executor.start(problem)
    seeds = np.array([7, 8, 1234, 9])
    with pytest.raises(bb.errors.EvaluationError) as info:
        executor.evaluate(Population.from_dense(np.zeros((4, problem.dim))), seeds)
    assert info.value.row == 2 and info.value.seed == 1234
    assert str(info.value) == "evaluation of row 2 (seed 1234) failed: RuntimeError: the simulator diverged"
    # the problem recovers: environments are made again for the next evaluation
    assert problem.evaluate(np.zeros((2, problem.dim)), np.array([1, 2])).steps.tolist() == [10, 10]


def test_nonfinite_reward_is_an_error():
    problem = GymProblem(toy(nan_step=4), max_episode_steps=20)
    executor = SerialExecutor()
    executor.start(problem)
    with pytest.raises(bb.errors.EvaluationError) as info:
        executor.evaluate(Population.from_dense(np.zeros((3, problem.dim))), np.array([5, 6, 7]))
    assert str(info.value) == (
        "evaluation of row 0 (seed 5) failed: ValueError: environment '<lambda>' returned a non-finite "
        "reward (nan) at step 4 of the episode reset with seed 5; rewards must be finite numbers "
        "(clip or fix them in the environment)"
    )
    single = GymProblem(toy(nan_step=4), max_episode_steps=20, batched=False)
    with pytest.raises(ValueError, match=r"non-finite reward \(nan\) at step 4"):
        single.evaluate(np.zeros((1, single.dim)), np.array([5]))


def test_environment_without_time_limit_needs_max_episode_steps():
    with pytest.raises(bb.ConfigError, match="has no time limit, so an episode might never end; pass max_episode_steps=N"):
        GymProblem(toy())


def test_unusable_spaces_and_options():
    with pytest.raises(bb.ConfigError, match=r"bins=5 discretizes continuous actions, but environment 'CartPole-v1' has Discrete\(2\)"):
        GymProblem("CartPole-v1", bins=5)
    tuple_space = gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Discrete(3)))
    with pytest.raises(bb.ConfigError, match="which a policy cannot produce; supported: Discrete, MultiDiscrete"):
        GymProblem(lambda: Toy(action_space=tuple_space), max_episode_steps=5)
    with pytest.raises(bb.ConfigError, match="obs_norm_prob must be <= 1.0, got 2.0"):
        GymProblem("CartPole-v1", obs_norm_prob=2.0)
    with pytest.raises(bb.ConfigError, match="episodes must be >= 1, got 0"):
        bb.make_problem("gym:CartPole-v1,episodes=0")
    with pytest.raises(bb.ConfigError, match="policy must be one of 'mlp', 'linear', 'cnn', 'nature-cnn', got 'mpl'. Did you mean 'mlp'"):
        GymProblem("CartPole-v1", policy="mpl")
    with pytest.raises(bb.errors.UnknownNameError, match="has no option 'episode'. Did you mean 'episodes'"):
        bb.make_problem("gym:CartPole-v1,episode=2")


# -- observation normalization ---------------------------------------------------------------

def test_sampled_rows_depend_on_the_seed_alone():
    seeds = np.random.default_rng(0).integers(0, 2**32, 2000)
    chosen = sampled_rows(seeds, 0.1)
    assert 120 < chosen.sum() < 280
    order = np.random.default_rng(1).permutation(2000)
    np.testing.assert_array_equal(sampled_rows(seeds[order], 0.1), chosen[order])
    assert sampled_rows(seeds[:5], 1.0).all() and not sampled_rows(seeds[:5], 0.0).any()


def test_running_stats_equal_numpy_over_all_observations():
    rng = np.random.default_rng(0)
    chunks = [rng.normal(3.0, 2.0, (n, 3)) for n in (5, 1, 17, 40)]
    stats = RunningStats(3)
    moments = [episode_moments(c) for c in chunks]
    stats.fold_rows(np.array([m[0] for m in moments] + [0.0]), np.array([m[1] for m in moments] + [np.zeros(3)]),
                    np.array([m[2] for m in moments] + [np.zeros(3)]))
    everything = np.concatenate(chunks)
    assert stats.count == len(everything)
    np.testing.assert_allclose(stats.mean, everything.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(stats.std, everything.std(axis=0), rtol=1e-12)
    total = combine_moments(moments[0], (0.0, np.zeros(3), np.zeros(3)))
    assert total is moments[0]
    fresh = RunningStats(3)
    np.testing.assert_array_equal(fresh.std, np.ones(3))  # nothing seen yet: std 1
    fresh.load_state_dict(stats.state_dict())
    np.testing.assert_array_equal(fresh.std, stats.std)
    with pytest.raises(bb.StateError, match="observation statistics are for 3 features, but this problem's observations have 4"):
        RunningStats(4).load_state_dict(stats.state_dict())


def test_normalization_state_travels_and_clips():
    problem = GymProblem("Pendulum-v1", max_episode_steps=20, obs_norm=True, obs_norm_prob=1.0, obs_clip=0.5)
    params = problem.initial_params(np.random.default_rng(0))[None].repeat(3, axis=0)
    result = problem.evaluate(params, np.arange(3))
    np.testing.assert_array_equal(result.info["obs_count"], [20, 20, 20])
    problem.observe(result)
    state = problem.state_dict()
    assert state["obs_count"] == 60
    worker = pickle.loads(pickle.dumps(GymProblem("Pendulum-v1", max_episode_steps=20, obs_norm=True,
                                                  obs_norm_prob=1.0, obs_clip=0.5)))
    before = worker.evaluate(params, np.arange(3)).fitness
    worker.load_state_dict(state)
    np.testing.assert_array_equal(worker.evaluate(params, np.arange(3)).fitness,
                                  problem.evaluate(params, np.arange(3)).fitness)
    assert not np.array_equal(before, problem.evaluate(params, np.arange(3)).fitness)
    normalizer = problem.stats.normalizer(problem.config.obs_norm.clip)
    z = normalizer(np.array([[1e6, -1e6, 0.0]]))
    assert z.dtype == np.float32 and z[0, 0] == 0.5 and z[0, 1] == -0.5


def test_no_state_without_normalization():
    problem = GymProblem("CartPole-v1")
    assert problem.state_dict() == {}
    assert problem.evaluate(np.zeros((1, problem.dim)), np.array([0])).info == {}


# -- seeds, pickling, describe -----------------------------------------------------------------

def test_reset_seeds_come_from_the_driver():
    problem = GymProblem("CartPole-v1")
    params = problem.initial_params(np.random.default_rng(0)) + np.zeros((4, problem.dim))
    a = problem.evaluate(params, np.array([1, 1, 2, 3]))
    assert a.fitness[0] == a.fitness[1]  # same parameters, same seed
    b = problem.evaluate(params, np.array([1, 1, 2, 3]))
    np.testing.assert_array_equal(a.fitness, b.fitness)
    many = problem.evaluate(params[:1].repeat(30, axis=0), np.arange(30))
    assert len(set(many.fitness)) > 1  # different seeds, different starts


def test_problem_pickles_small_and_builds_environments_lazily():
    problem = GymProblem("CartPole-v1")
    problem.evaluate(np.zeros((2, problem.dim)), np.arange(2))
    payload = cloudpickle.dumps(problem)
    assert len(payload) < 20_000
    clone = pickle.loads(payload)
    assert clone._runtime is None
    params = problem.initial_params(np.random.default_rng(0))[None]
    np.testing.assert_array_equal(clone.evaluate(params, [3]).fitness, problem.evaluate(params, [3]).fitness)
    factory_problem = GymProblem(toy(), max_episode_steps=12)
    assert cloudpickle.loads(cloudpickle.dumps(factory_problem)).evaluate(
        np.zeros((1, factory_problem.dim)), [0]).steps[0] == 10


def test_describe_and_registry():
    problem = bb.make_problem("gym:CartPole-v1,policy=linear,episodes=2")
    summary = problem.describe()
    assert summary["env"] == "CartPole-v1" and summary["policy"] == "linear 4->2" and summary["episodes"] == 2
    assert summary["vectorized"] is True and GymProblem("Acrobot-v1").vectorized is False


def test_play_records_frames():
    problem = GymProblem("CartPole-v1", max_episode_steps=15)
    frames: list = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ret, steps = problem.play(problem.initial_params(np.random.default_rng(0)), seed=4,
                                  render_mode="rgb_array", frames=frames)
    assert len(frames) == steps + 1 and frames[0].shape == (400, 600, 3)
    assert ret == problem.score(problem.initial_params(np.random.default_rng(0)), 1, seed=4)[0]


# -- training rewards shifted (ARS's survival-bonus removal) ----------------------------------

def test_reward_shift_changes_the_training_fitness_only():
    plain = GymProblem(toy(), max_episode_steps=10)
    shifted = GymProblem(toy(), max_episode_steps=10, reward_shift=-1.0)
    params = np.repeat(plain.initial_params(np.random.default_rng(0))[None], 3, axis=0)
    a, b = plain.evaluate(params, np.arange(3)), shifted.evaluate(params, np.arange(3))
    np.testing.assert_array_equal(b.fitness, a.fitness - 10.0)
    np.testing.assert_array_equal(a.steps, b.steps)
    np.testing.assert_array_equal(plain.score(params[0], 3, seed=1), shifted.score(params[0], 3, seed=1))
    assert (shifted.training_goal(5.0), plain.training_goal(5.0)) == (-5.0, 5.0)
    assert shifted.describe()["reward_shift"] == -1.0 and "reward_shift" not in plain.describe()
    with pytest.raises(bb.ConfigError, match="reward_shift"):
        GymProblem(toy(), max_episode_steps=10, reward_shift="much")


def _floored_pendulum():
    return gym.wrappers.TransformReward(gym.make("Pendulum-v1"), lambda r: max(float(r), -1.0))


@pytest.mark.parametrize("batched", [True, False])
def test_reward_floor_raises_training_rewards_below_it_and_leaves_the_score(batched):
    # Pendulum's rewards are -(angle^2 + ...) per step, often below -1 from a random start.
    plain = GymProblem("Pendulum-v1", max_episode_steps=30, policy="linear", batched=batched)
    floored = GymProblem("Pendulum-v1", max_episode_steps=30, policy="linear", batched=batched, reward_floor=-1.0)
    by_hand = GymProblem(_floored_pendulum, max_episode_steps=30, policy="linear", batched=batched)
    params = np.random.default_rng(0).normal(size=(4, plain.dim))
    a, b, c = (p.evaluate(params, np.arange(4)) for p in (plain, floored, by_hand))
    np.testing.assert_array_equal(b.fitness, c.fitness)  # every reward below -1 counted as -1, bit for bit
    assert np.all(b.fitness >= -30.0) and np.all(b.fitness > a.fitness)
    np.testing.assert_array_equal(plain.score(params[0], 3, seed=1), floored.score(params[0], 3, seed=1))
    assert floored.training_goal(-100.0) == plain.training_goal(-100.0) == -100.0  # a floor only raises returns
    assert floored.describe()["reward_floor"] == -1.0 and "reward_floor" not in plain.describe()


def test_reward_floor_on_a_task_whose_rewards_are_all_one():
    # CartPole's vectorized slots report no rewards (each is 1): a floor above 1 lifts each to it.
    plain, floored = GymProblem("CartPole-v1"), GymProblem("CartPole-v1", reward_floor=2.0)
    params = np.random.default_rng(0).normal(size=(3, plain.dim))
    a, b = plain.evaluate(params, np.arange(3)), floored.evaluate(params, np.arange(3))
    np.testing.assert_array_equal(b.fitness, 2.0 * a.fitness)
    np.testing.assert_array_equal(GymProblem("CartPole-v1", reward_floor=0.5).evaluate(params, np.arange(3)).fitness,
                                  a.fitness)


def test_reward_floor_that_is_not_a_number_is_refused_in_one_line():
    with pytest.raises(bb.ConfigError, match=r"^reward_floor must be a number, got 'low'$"):
        GymProblem("Pendulum-v1", reward_floor="low")


def test_goal_is_screened_at_the_shifted_level_and_confirmed_on_the_task_reward():
    # Training fitness is return - 10 <= 0 here, so only the problem's training_goal lets the check start.
    problem = GymProblem(toy(), max_episode_steps=10, reward_shift=-1.0, hidden=[4])
    es = bb.make_strategy("openai-es", dim=problem.dim, x0=problem.initial_params(np.random.default_rng(0)),
                          seed=0, popsize=20, sigma=0.5, lr=0.2)
    confirm = ConfirmGoal(9.0, 3)
    result = bb.optimize(es, problem, generations=40, seed=0, stop=[confirm])
    assert confirm.summary()["solved"], (confirm.checks, [r.center for r in result.records])
    assert all(r.center <= 0 for r in result.records) and confirm.confirmed >= 9.0


def test_shared_seed_plays_every_row_of_a_generation_from_the_same_starts():
    problem = GymProblem("Pendulum-v1", max_episode_steps=20, shared_seed=True)
    assert problem.describe()["shared_seed"] is True and not GymProblem("Pendulum-v1").shared_seed
    seen = []
    evaluate = problem.evaluate
    problem.evaluate = lambda params, seeds: (seen.append(np.array(seeds)), evaluate(params, seeds))[1]
    es = bb.make_strategy("openai-es", dim=problem.dim, x0=problem.initial_params(np.random.default_rng(0)),
                          seed=0, popsize=6)
    bb.optimize(es, problem, generations=2, seed=0)
    assert [len(s) for s in seen] == [7, 7] and all(len(set(s.tolist())) == 1 for s in seen)
    assert seen[0][0] != seen[1][0]  # new starts every generation


def test_slot_moments_give_the_two_pass_mean_bit_for_bit_and_m2_within_rounding():
    from blackbox.problems.gym.obs_norm import SlotMoments

    rng = np.random.default_rng(3)
    episodes = [rng.normal(50.0, 0.01, (n, 4)).astype(np.float32) for n in (1, 2, 9, 300)]
    stats = SlotMoments(3, 4)
    for obs in episodes:
        stats.start(2, obs[0])
        for t in range(len(obs)):
            x = np.zeros((3, 4), dtype=np.float32)
            x[2] = obs[t]
            stats.add(x, np.array([2]) if t % 2 else slice(2, 3))
        stats.move(2, 0)
        count, mean, m2 = stats.take(0)
        want = episode_moments(obs)
        assert count == want[0]
        np.testing.assert_array_equal(mean, want[1])  # the same sums in the same order
        np.testing.assert_allclose(m2, want[2], rtol=1e-9, atol=1e-12)  # large mean, small spread: no cancellation


def test_slot_moments_add_all_three_sums_in_one_operation_with_the_bits_of_three():
    from blackbox.problems.gym.obs_norm import SlotMoments

    rng = np.random.default_rng(4)
    first = rng.normal(0.0, 3.0, (5, 6)).astype(np.float32)
    stats = SlotMoments(5, 6)
    want = np.zeros((5, 3, 6))
    for s in range(5):
        stats.start(s, first[s])
    for t in range(40):
        x = rng.normal(0.0, 3.0, (5, 6)).astype(np.float32)
        slots = slice(0, 4) if t % 3 else np.array([0, 2, 4])
        stats.add(x, slots)
        rows = x[slots]  # the three separate float64 additions the engine made before
        sums = want[slots]
        sums[:, 0] += rows
        shifted = np.subtract(rows, first[slots], dtype=np.float64)
        sums[:, 1] += shifted
        sums[:, 2] += shifted * shifted
        want[slots] = sums
    np.testing.assert_array_equal(stats.sums, want)
    assert stats.count.tolist() == [40, 26, 40, 26, 14]  # slot 4 only in the 14 steps t % 3 == 0


@pytest.mark.parametrize("spec", ["Pendulum-v1,hidden=[8],obs_norm=true,obs_norm_prob=0.5", "CartPole-v1,policy=linear"])
def test_rows_read_from_the_noise_table_into_policy_slots_score_as_dense_rows(spec):
    from blackbox.core.executor import evaluate_rows
    from blackbox.core.noise import NoiseTable

    problem = bb.make_problem(f"gym:{spec}")
    assert problem.takes_row_source
    table = NoiseTable(2**16, seed=5)
    center = problem.initial_params(np.random.default_rng(0))
    offsets = np.array([0, 0, 100, 100, 7, 3000])
    population = Population.compact(table, center, offsets, np.array([1, -1, 1, -1, 0, 1]), 0.3)
    seeds = np.arange(6) * 11
    lazy = evaluate_rows(problem, population, seeds, batch_size=4)
    dense = problem.evaluate(population.params, seeds)
    np.testing.assert_array_equal(lazy.fitness, dense.fitness)
    np.testing.assert_array_equal(lazy.steps, dense.steps)
    for key in dense.info:
        np.testing.assert_array_equal(lazy.info[key], dense.info[key])


def test_a_subclass_with_its_own_evaluate_gets_the_dense_rows():
    from blackbox.core.executor import evaluate_rows

    class Scaled(GymProblem):
        def evaluate(self, params, seeds):
            assert isinstance(params, np.ndarray)
            return super().evaluate(params * 1.0, seeds)

    problem = Scaled("CartPole-v1", policy="linear")
    assert not problem.takes_row_source and GymProblem("CartPole-v1", policy="linear").takes_row_source
    population = Population.from_dense(np.zeros((2, problem.dim)))
    assert len(evaluate_rows(problem, population, np.arange(2)).fitness) == 2


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.uint8])
def test_the_engines_in_place_normalizer_gives_the_calls_bits(dtype):
    from blackbox.problems.gym.obs_norm import Normalizer

    rng = np.random.default_rng(3)
    normalizer = Normalizer(rng.standard_normal(7), rng.random(7) + 0.05, 2.0)
    obs = (rng.standard_normal((5, 7)) * 40).astype(dtype) if dtype != np.uint8 else rng.integers(0, 255, (5, 7)).astype(np.uint8)
    if dtype != np.uint8:
        obs[0, 0], obs[1, 1], obs[2, 2] = np.nan, np.inf, -np.inf
    z, out = np.full((5, 7), 9.0), np.full((5, 7), 9.0, dtype=np.float32)
    given = normalizer.into(obs, z, out)
    assert given is out
    expected = normalizer(obs)
    assert expected.dtype == np.float32
    np.testing.assert_array_equal(out.view(np.uint32), expected.view(np.uint32))  # the very bits, NaN included
