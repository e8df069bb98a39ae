"""The gymnax problem: one compiled call per generation, rows expanded on the device, seeds, errors."""

from __future__ import annotations

import numpy as np
import pytest

import blackbox as bb
from blackbox.core.executor import evaluate_rows
from blackbox.core.noise import NoiseTable
from blackbox.core.population import Population
from blackbox.errors import ConfigError, StateError
from blackbox.problems.gym.obs_norm import combine_moments
from tests.helpers.extras import requires

pytestmark = requires("jax")


@pytest.fixture(scope="module")
def cartpole():
    return bb.make_problem("gymnax:CartPole-v1,policy=linear")


def population(problem, popsize=16, seed=0, sigma=0.5):
    es = bb.make_strategy("openai-es", dim=problem.dim, popsize=popsize, sigma=sigma, seed=seed)
    return es.ask()


def manual_cartpole_return(row: np.ndarray, seed: int) -> float:
    """A linear policy on gymnax CartPole stepped one step at a time with gymnax's own API (the reference)."""
    import gymnax
    import jax
    import jax.numpy as jnp

    env, params = gymnax.make("CartPole-v1")
    halves = np.array([seed & 0xFFFFFFFF, seed >> 32], dtype=np.uint32)
    key = jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(halves[0]), halves[1]), 0)
    key, reset_key = jax.random.split(key)
    obs, state = env.reset(reset_key, params)
    weights, bias = jnp.asarray(row[:8].reshape(4, 2), jnp.float32), jnp.asarray(row[8:], jnp.float32)
    total = 0.0
    for _ in range(params.max_steps_in_episode):
        action = int(jnp.argmax(obs.astype(jnp.float32) @ weights + bias))
        key, step_key = jax.random.split(key)
        obs, state, reward, terminated, _ = env.step_env(step_key, state, action, params)
        total += float(reward)
        if bool(terminated) or bool(env.is_truncated(state, params)):
            break
    return total


def test_returns_match_a_step_by_step_rollout_with_gymnax(cartpole):
    rows = population(cartpole, popsize=6, seed=3).params
    seeds = np.array([0, 1, 2**40 + 5, 7, 8, 9])
    result = cartpole.evaluate(rows, seeds)
    expected = [manual_cartpole_return(row, int(seed)) for row, seed in zip(rows, seeds)]
    assert result.fitness.tolist() == expected
    assert result.steps.tolist() == [int(e) for e in expected]  # CartPole pays 1 per step


def test_same_seeds_same_returns_and_other_seeds_other_returns():
    problem = bb.make_problem("gymnax:Pendulum-v1,policy=linear,episodes=2")
    rows = population(problem, popsize=8).params
    a = problem.evaluate(rows, np.arange(8))
    b = problem.evaluate(rows, np.arange(8))
    c = problem.evaluate(rows, np.arange(8) + 100)
    assert a.fitness.tobytes() == b.fitness.tobytes()
    assert not np.any(a.fitness == c.fitness)
    assert a.steps.tolist() == [400] * 8  # fixed-length episodes: 2 x 200 steps


def test_reward_shift_moves_the_training_fitness_never_the_score(cartpole):
    """CartPole pays 1 a step: shifted by -1 every training return is 0; ``score`` keeps the task's returns
    and the goal screen is the shifted bar of a whole episode (500 steps)."""
    shifted = bb.make_problem("gymnax:CartPole-v1,policy=linear,reward_shift=-1")
    pop = population(cartpole, popsize=6, seed=3)
    plain, moved = cartpole.evaluate_population(pop, np.arange(6)), shifted.evaluate_population(pop, np.arange(6))
    assert moved.fitness.tolist() == [0.0] * 6 and min(plain.fitness) > 0
    assert moved.steps.tolist() == plain.steps.tolist()
    assert shifted.score(pop.params[1], episodes=4).tolist() == cartpole.score(pop.params[1], episodes=4).tolist()
    assert shifted.training_goal(475.0) == 475.0 - 500 and cartpole.training_goal(475.0) == 475.0
    with pytest.raises(ConfigError) as info:
        bb.make_problem("gymnax:CartPole-v1,policy=linear,reward_shift=many")
    assert "reward_shift" in str(info.value) and "many" in str(info.value)


def test_device_expansion_gives_the_host_rows(cartpole):
    import jax

    from blackbox.problems.jax.device_noise import DeviceNoise, compact_arrays, expand

    pop = population(cartpole, popsize=32, seed=5).with_center(np.linspace(-1, 1, cartpole.dim))
    arrays = compact_arrays(pop)
    table = DeviceNoise.table(pop, jax.devices("cpu")[0])
    rows = np.asarray(jax.jit(expand, static_argnums=6)(
        table, arrays["bases"], arrays["parents"], arrays["offsets"], arrays["signs"], arrays["sigma"], pop.dim))
    assert rows.dtype == np.float32
    # float32 on the device, with the host's float32 arithmetic: the same bits on the CPU backend
    assert np.array_equal(rows, pop.dense(np.float32))
    # and the float64 rows rounded: a float32 rounding or two apart
    np.testing.assert_allclose(rows, pop.params, rtol=2e-7, atol=1e-7)
    assert np.array_equal(rows[pop.center_row], np.linspace(-1, 1, cartpole.dim).astype(np.float32))


def test_a_per_dimension_sigma_expands_as_on_the_host(cartpole):
    import jax

    from blackbox.problems.jax.device_noise import DeviceNoise, compact_arrays, expand

    table = NoiseTable.get(2**20, 0)
    sigma = np.linspace(0.01, 1.0, cartpole.dim)
    pop = Population.compact(table, np.ones(cartpole.dim), np.array([0, 5, 5, 99]), np.array([1, 1, -1, 0]), sigma)
    arrays = compact_arrays(pop)
    rows = expand(DeviceNoise.table(pop, jax.devices("cpu")[0]), arrays["bases"], arrays["parents"],
                  arrays["offsets"], arrays["signs"], arrays["sigma"], pop.dim)
    assert np.array_equal(np.asarray(rows), pop.dense(np.float32))


def test_the_noise_table_is_uploaded_once_per_process(cartpole):
    from blackbox.problems.jax.device_noise import DeviceNoise

    DeviceNoise.clear()
    first = population(cartpole, seed=1)
    cartpole.evaluate_population(first, np.arange(16))
    copies = dict(DeviceNoise._copies)
    cartpole.evaluate_population(population(cartpole, seed=2), np.arange(16))
    assert len(copies) == 1 and DeviceNoise._copies == copies
    assert next(iter(copies.values())) is next(iter(DeviceNoise._copies.values()))


def test_executors_hand_over_the_compact_population(cartpole, monkeypatch):
    pop = population(cartpole, popsize=20, seed=4)
    seen = []
    original = type(cartpole).evaluate_population

    def spy(self, population, seeds):
        seen.append((population.is_compact, len(population)))
        return original(self, population, seeds)

    monkeypatch.setattr(type(cartpole), "evaluate_population", spy)
    monkeypatch.setattr(type(cartpole), "evaluate", lambda *a: pytest.fail("dense rows were sent"))
    result = evaluate_rows(cartpole, pop, np.arange(20), batch_size=3)
    assert seen == [(True, 20)]  # all rows in one call, however small the batch size
    assert len(result) == 20


def test_compact_and_dense_paths_agree_on_cartpole(cartpole):
    pop = population(cartpole, popsize=64, seed=7)
    seeds = np.arange(64) * 3
    compact = cartpole.evaluate_population(pop, seeds)
    assert compact.fitness.tobytes() == cartpole.evaluate(pop.dense(np.float32), seeds).fitness.tobytes()
    # float64 rows are rounded to float32 first: CartPole's integer returns come out the same here
    assert compact.fitness.tolist() == cartpole.evaluate(pop.params, seeds).fitness.tolist()


def test_problems_of_the_same_settings_share_one_compiled_generation():
    from blackbox.problems.jax.batched import forget_programs, shared_programs
    from blackbox.problems.jax.policies import MLPPolicy

    forget_programs()
    spec = "gymnax:CartPole-v1,policy=linear,max_episode_steps=50"
    first, second = bb.make_problem(spec), bb.make_problem(spec)
    rows, seeds = population(first, popsize=8, seed=1).params, np.arange(8)
    returns = first.evaluate(rows, seeds).fitness
    assert shared_programs() == 1
    assert second.evaluate(rows, seeds).fitness.tobytes() == returns.tobytes()
    assert second._compiled(1) is first._compiled(1) and shared_programs() == 1
    # any setting the program depends on makes another one: the episode length, the normalizer, episodes per row
    for other in ("gymnax:CartPole-v1,policy=linear,max_episode_steps=60",
                  "gymnax:CartPole-v1,policy=linear,max_episode_steps=50,obs_norm=true",
                  "gymnax:CartPole-v1,policy=linear,max_episode_steps=50,episodes=2"):
        problem = bb.make_problem(other)
        problem.evaluate(rows, seeds)
        assert problem._compiled(problem.episodes) is not first._compiled(1), other
    assert shared_programs() == 4

    class Yours:  # a policy of the user's: its value may not show all it computes, so it is never shared
        dim = MLPPolicy((4, 2)).dim

        def apply(self, row, obs):
            return MLPPolicy((4, 2)).apply(row, obs)

        def initial_params(self, rng):
            return np.zeros(self.dim)

        def describe(self):
            return "yours"

    from blackbox.problems.jax.gymnax import GymnaxProblem

    yours = GymnaxProblem("CartPole-v1", policy=Yours(), max_episode_steps=50)
    assert yours.evaluate(rows, seeds).fitness.tobytes() == returns.tobytes()
    assert shared_programs() == 4 and yours._compiled(1) is not first._compiled(1)


def test_loky_workers_give_the_serial_bits():
    problem = bb.make_problem("gymnax:Pendulum-v1,policy=linear,max_episode_steps=60")
    serial = bb.optimize("openai-es:popsize=24,sigma=0.1", problem, "serial", max_generations=3, seed=0)
    with bb.make_executor("loky:workers=2") as executor:
        loky = bb.optimize("openai-es:popsize=24,sigma=0.1", problem, executor, max_generations=3, seed=0)
    assert loky.center.tobytes() == serial.center.tobytes()
    assert [(r.mean, r.best, r.steps) for r in loky.records] == [(r.mean, r.best, r.steps) for r in serial.records]


def test_openai_es_solves_cartpole():
    result = bb.optimize("openai-es:popsize=64,sigma=0.1,lr=0.1", "gymnax:CartPole-v1,policy=linear",
                         "serial", max_generations=30, seed=0)
    assert result.best_fitness == 500.0


# -- observation normalization -------------------------------------------------------------------
def test_fold_moments_is_the_row_by_row_fold():
    from blackbox.problems.jax.gymnax import fold_moments

    rng = np.random.default_rng(0)
    counts = np.array([5.0, 0.0, 17.0, 3.0])
    means, m2s = rng.standard_normal((4, 3)), rng.random((4, 3)) * 10
    start = (7.0, rng.standard_normal(3), rng.random(3))
    expected = start
    for n, mu, m2 in zip(counts, means, m2s):
        expected = combine_moments(expected, (n, mu, m2))
    got = fold_moments(*start, counts, means, m2s)
    assert got[0] == expected[0]
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-12)
    np.testing.assert_allclose(got[2], expected[2], rtol=1e-12)


def test_observation_statistics_are_those_of_the_observations_seen():
    problem = bb.make_problem("gymnax:Pendulum-v1,policy=linear,obs_norm=true,max_episode_steps=30")
    rows = population(problem, popsize=4).params
    result = problem.evaluate(rows, np.arange(4))
    assert result.info["obs_count"].tolist() == [[30.0]] * 4
    problem.observe(result)
    assert problem.count == 120.0
    # Pendulum observes (cos, sin, angular velocity): |cos|, |sin| <= 1
    assert np.all(np.abs(problem.mean[:2]) <= 1.0) and np.all(problem.m2 > 0)
    # the next generation normalizes with them: other returns, and the state travels to a fresh copy
    after = problem.evaluate(rows, np.arange(4))
    assert not np.array_equal(after.fitness, result.fitness)
    copy = bb.make_problem("gymnax:Pendulum-v1,policy=linear,obs_norm=true,max_episode_steps=30")
    copy.load_state_dict(problem.state_dict())
    assert copy.evaluate(rows, np.arange(4)).fitness.tobytes() == after.fitness.tobytes()


def test_state_of_another_environment_is_refused():
    problem = bb.make_problem("gymnax:CartPole-v1,obs_norm=true")
    with pytest.raises(StateError, match="observation statistics are for 3 features, but gymnax 'CartPole-v1' "
                                         "observations have 4"):
        problem.load_state_dict({"obs_count": 1.0, "obs_mean": np.zeros(3), "obs_m2": np.zeros(3)})


# -- bad input ----------------------------------------------------------------------------------
def test_unknown_environment_names_close_ones():
    with pytest.raises(ConfigError) as info:
        bb.make_problem("gymnax:CartPole-v2")
    assert str(info.value) == "unknown gymnax environment 'CartPole-v2'; close names: CartPole-v1"


def test_a_policy_with_the_wrong_output_shape_names_both_shapes():
    from blackbox.problems.jax.gymnax import GymnaxProblem
    from blackbox.problems.jax.policies import MLPPolicy

    with pytest.raises(ConfigError) as info:
        GymnaxProblem("CartPole-v1", policy=MLPPolicy((4, 3)))
    assert str(info.value) == ("the policy's output for one observation has shape (3,), but the action space "
                               "Discrete(2, dtype=int32) of gymnax 'CartPole-v1' needs shape (2,) (argmax of 2)")


def test_missing_jax_names_the_extra(monkeypatch):
    import sys

    from blackbox.problems.jax.gymnax import GymnaxProblem

    monkeypatch.setitem(sys.modules, "jax", None)
    with pytest.raises(ConfigError) as info:
        GymnaxProblem("CartPole-v1")
    assert str(info.value) == 'the gymnax problem needs JAX, which is not installed: pip install "blackbox-es[jax]"'


def test_nan_returns_are_counted_and_ranked_last():
    from blackbox.problems.jax.gymnax import GymnaxProblem
    from blackbox.problems.jax.policies import MLPPolicy

    class Diverges(MLPPolicy):
        """NaN torque wherever the first parameter is negative (a simulator that blew up)."""

        def apply(self, row, obs):
            import jax.numpy as jnp

            out = super().apply(row, obs)
            return jnp.where(row[0] < 0, jnp.nan, out)

    problem = GymnaxProblem("Pendulum-v1", policy=Diverges((3, 1)), max_episode_steps=20)
    es = bb.make_strategy("openai-es", dim=problem.dim, popsize=8, sigma=1.0, seed=0, x0=np.zeros(problem.dim))
    pop = es.ask()
    result = evaluate_rows(problem, pop, np.arange(8))
    bad = pop.params[:, 0] < 0
    assert bad.any() and not bad.all()
    assert np.isnan(result.fitness[bad]).all() and np.isfinite(result.fitness[~bad]).all()
    assert result.info["nan_returns"].tolist() == bad.astype(int).tolist()
    problem.observe(result)
    assert problem.nan_returns == int(bad.sum())
    es.tell(result.fitness)  # ranked last, no error
    run = bb.optimize(bb.make_strategy("openai-es", dim=problem.dim, popsize=8, sigma=1.0, seed=0), problem,
                      "serial", max_generations=2, seed=0)
    assert run.generations == 2


def test_presets_have_a_goal_and_a_budget():
    from blackbox.problems.jax.gymnax import GymnaxProblem

    for env in ("CartPole-v1", "Pendulum-v1", "Acrobot-v1", "Breakout-MinAtar"):
        preset = GymnaxProblem.recommended(env, strategy="openai-es")
        assert "goal" in preset["run"] and ({"generations", "max_time", "max_steps"} & preset["run"].keys())
        assert preset["strategy"]["popsize"] > 0
        assert GymnaxProblem.recommended_strategy(env) == "openai-es"
    assert GymnaxProblem.recommended("Pendulum-v1", strategy="openai-es")["problem"] == {"episodes": 3,
                                                                                         "shared_seed": True}


def test_hidden_that_is_not_a_size_or_a_list_is_one_line():
    """Found by the long config properties: hidden=1.0 raised a TypeError."""
    from blackbox.problems.jax.policies import make_policy

    for bad in (1.0, "32", True, None):
        with pytest.raises(ConfigError) as info:
            make_policy("mlp", 4, 2, bad)
        assert str(info.value) == f"hidden must be a layer size or a list of them (such as [32, 32]), got {bad!r}"


# -- unrolled loop bodies ------------------------------------------------------------------------
@pytest.mark.slow  # over 8 s: the default run stays under 10 minutes; CI runs -m slow
def test_unrolled_loops_give_the_returns_of_one_step_per_pass():
    """k steps per pass of the while loop: the steps after an episode's end are masked, so returns and
    lengths are those of k = 1, bit for bit on this CPU backend (XLA promises no fusion across bodies:
    this test is where the batched module's claim is checked). 3 does not divide 500 (steps past the
    limit masked)."""
    rows = population(bb.make_problem("gymnax:CartPole-v1,unroll=1"), popsize=48, seed=5, sigma=0.3).params
    seeds = np.arange(48) * 11 + 2**33
    results = {k: bb.make_problem(f"gymnax:CartPole-v1,unroll={k}").evaluate(rows, seeds) for k in (1, 2, 3, 4, 8)}
    assert results[1].fitness.max() > 100  # long episodes as well as short ones
    for k in (2, 3, 4, 8):
        assert results[k].fitness.tobytes() == results[1].fitness.tobytes(), k
        assert results[k].steps.tolist() == results[1].steps.tolist(), k


def test_unrolled_loops_stop_at_the_step_limit_and_keep_the_moments():
    """max_episode_steps=30 with 4 steps per pass (Acrobot: bit-identical across bodies here): the 31st
    and 32nd steps of the last pass are masked; the observation moments (float32 Welford on the device)
    are those of one step per pass."""
    spec = "gymnax:Acrobot-v1,policy=linear,obs_norm=true,max_episode_steps=30,episodes=2"
    one, four = bb.make_problem(spec + ",unroll=1"), bb.make_problem(spec + ",unroll=4")
    assert four.describe()["unroll"] == 4
    rows, seeds = population(one, popsize=8, seed=2).params, np.arange(8)
    a, b = one.evaluate(rows, seeds), four.evaluate(rows, seeds)
    assert b.steps.tolist() == [60] * 8 == a.steps.tolist()
    assert b.fitness.tobytes() == a.fitness.tobytes()
    for name in ("obs_count", "obs_mean", "obs_m2"):
        assert b.info[name].tobytes() == a.info[name].tobytes(), name


def test_pendulum_keeps_one_step_per_pass_whose_rounding_unrolling_moves():
    """Pendulum's float32 returns are not bit-identical across loop bodies on this CPU (XLA fuses each
    body its own way), so its default stays 1: the results of before are kept."""
    spec = "gymnax:Pendulum-v1,policy=linear,max_episode_steps=32"
    default, four = bb.make_problem(spec), bb.make_problem(spec + ",unroll=4")
    assert default.unroll == 1
    rows, seeds = population(default, popsize=8, seed=2).params, np.arange(8)
    a, b = default.evaluate(rows, seeds), four.evaluate(rows, seeds)
    np.testing.assert_allclose(b.fitness, a.fitness, rtol=0, atol=1e-3)  # the same up to float32 rounding


def test_the_default_unroll_is_four_where_checked():
    from blackbox.problems.jax.gymnax import GymnaxProblem

    assert bb.make_problem("gymnax:CartPole-v1").unroll == 4
    assert GymnaxProblem.UNROLLED == {"CartPole-v1", "Acrobot-v1", "MountainCar-v0"}


@pytest.mark.parametrize("bad, message", [
    (0, "unroll must be between 1 and 64, got 0"),
    (-3, "unroll must be between 1 and 64, got -3"),
    (65, "unroll must be between 1 and 64, got 65"),
    (2.5, "unroll must be an integer, got 2.5"),
    ("4", "unroll must be an integer, got '4'"),
])
def test_a_bad_unroll_is_one_line_naming_the_range(bad, message):
    from blackbox.problems.jax.gymnax import GymnaxProblem

    with pytest.raises(ConfigError) as info:
        GymnaxProblem("CartPole-v1", unroll=bad)
    assert str(info.value) == message


def test_the_layers_cut_once_give_the_returns_of_apply_at_every_step():
    """The built-in policy runs as forward(prepare(row)) with the row cut before the step loop; a subclass
    with its own apply runs apply on the row at each step. Both give the same returns, bit for bit."""
    from blackbox.problems.jax.gymnax import GymnaxProblem
    from blackbox.problems.jax.policies import MLPPolicy, step_functions

    class SameAsApply(MLPPolicy):
        def apply(self, row, obs):
            return super().apply(row, obs)

    for env, options in [("CartPole-v1", {}), ("Pendulum-v1", {"episodes": 2, "obs_norm": True})]:
        built_in = GymnaxProblem(env, hidden=[8], **options)
        own = GymnaxProblem(env, policy=SameAsApply((built_in.obs_size, 8, built_in.actions.out_size)), **options)
        assert step_functions(built_in.policy)[1] == built_in.policy.forward
        assert step_functions(own.policy)[1] == own.policy.apply
        rows = np.random.default_rng(1).standard_normal((12, built_in.dim))
        first, second = built_in.evaluate(rows, np.arange(12)), own.evaluate(rows, np.arange(12))
        assert first.fitness.tolist() == second.fitness.tolist()
        assert first.steps.tolist() == second.steps.tolist()


def test_small_layers_are_sums_in_input_order_and_wide_layers_dots():
    """A layer of at most SUMMED_LAYER_WEIGHTS weights is the sum x[0] * w[0] + x[1] * w[1] + ... (elementwise,
    fused over the population by XLA), a wider one a dot; either way the policy's outputs are the float64
    forward pass's up to float32 rounding."""
    import jax
    import jax.numpy as jnp

    from blackbox.problems.jax.policies import SUMMED_LAYER_WEIGHTS, MLPPolicy, layer_product

    assert SUMMED_LAYER_WEIGHTS == 64
    rng = np.random.default_rng(3)
    for inputs, outputs, dot in [(4, 16, False), (16, 4, False), (64, 1, False), (5, 13, True), (400, 3, True)]:
        x = jnp.asarray(rng.standard_normal(inputs), jnp.float32)
        weights = jnp.asarray(rng.standard_normal((inputs, outputs)), jnp.float32)
        assert ("dot_general" in str(jax.make_jaxpr(layer_product)(x, weights))) is dot, (inputs, outputs)
        np.testing.assert_allclose(np.asarray(layer_product(x, weights)),
                                   np.asarray(x, np.float64) @ np.asarray(weights, np.float64), rtol=1e-5, atol=1e-5)
    for sizes in [(4, 16, 2), (4, 32, 2), (6, 16, 3)]:  # CartPole MLP 16 (all summed), MLP 32, Acrobot (mixed)
        policy = MLPPolicy(sizes)
        row = rng.standard_normal(policy.dim).astype(np.float32)
        obs = rng.standard_normal(sizes[0]).astype(np.float32)
        x, at = obs.astype(np.float64), 0
        for k, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            x = x @ row[at:at + a * b].reshape(a, b).astype(np.float64) + row[at + a * b:at + a * b + b]
            x = np.tanh(x) if k < len(sizes) - 2 else x
            at += a * b + b
        np.testing.assert_allclose(np.asarray(policy.apply(jnp.asarray(row), jnp.asarray(obs))), x, rtol=1e-5, atol=1e-5)


def test_es_init_starts_from_the_gym_policys_start_policy():
    """init="es" draws the gym problem's start policy (unit-norm hidden weights, a 0.01 output layer) from
    the same rng, in the JAX layout."""
    import jax.numpy as jnp

    gymnax_problem = bb.make_problem("gymnax:CartPole-v1,hidden=[16],init=es")
    gym_problem = bb.make_problem("gym:CartPole-v1,hidden=[16],activation=tanh")
    ours = gymnax_problem.initial_params(np.random.default_rng(5))
    theirs = gym_problem.initial_params(np.random.default_rng(5))
    assert ours.shape == theirs.shape == (114,)
    hidden = ours[:64].reshape(4, 16)
    assert np.allclose(np.linalg.norm(hidden, axis=0), 1.0)
    assert np.allclose(np.linalg.norm(ours[80:112].reshape(16, 2), axis=0), 0.01)
    assert not ours[64:80].any() and not ours[112:].any()
    obs = np.random.default_rng(6).standard_normal((5, 4))
    expected = np.tanh(obs @ theirs[:64].reshape(16, 4).T) @ theirs[80:112].reshape(2, 16).T
    got = np.stack([np.asarray(gymnax_problem.policy.apply(jnp.asarray(ours, jnp.float32), jnp.asarray(o, jnp.float32)))
                    for o in obs])
    assert np.allclose(got, expected, atol=1e-6)
    assert gymnax_problem.policy.describe() == "mlp 4-16-2 tanh, es init"
    fan_in = bb.make_problem("gymnax:CartPole-v1,hidden=[16]").initial_params(np.random.default_rng(5))
    assert np.linalg.norm(fan_in[80:112]) > 1.0  # the default draws outputs of order one


def test_a_bad_init_is_one_line():
    from blackbox.problems.jax.gymnax import GymnaxProblem
    from blackbox.problems.jax.policies import MLPPolicy

    with pytest.raises(ConfigError) as error:
        bb.make_problem("gymnax:CartPole-v1,init=xavier")
    assert str(error.value) == ("init must be one of fan_in, es (N(0, 1/fan_in) weights, or the ES paper's unit-norm "
                                "weights with a 0.01 output layer), got 'xavier'")
    with pytest.raises(ConfigError) as error:
        GymnaxProblem("CartPole-v1", policy=MLPPolicy((4, 2)), init="es")
    assert str(error.value) == ("init='es' sets the start rows of the built-in 'linear' and 'mlp' policies; a policy "
                                "object starts from its own initial_params(rng): leave init unset")


@pytest.mark.slow  # over 8 s: the default run stays under 10 minutes; CI runs -m slow
def test_the_breakout_preset_confirms_its_goal_on_a_fresh_seed(tmp_path, capsys):
    """The preset (a linear policy with observation normalization) on fresh seed 102: goal 10 confirmed over 20
    fresh episodes, as the preset's measurement says (202 generations there, about 15 s). The bound is the worst of
    seeds 100-109 (2,512), in case another CPU's XLA rounds a step differently; the MLP 32 preset before this one
    never confirmed 10 in 30 minutes."""
    import json

    from blackbox.cli import main

    assert main(["run", "--problem", "gymnax:Breakout-MinAtar", "--seed", "102", "--out", str(tmp_path / "run"),
                 "--generations", "3000", "--no-plot", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["problem_description"]["policy"] == "linear 400->3"
    assert summary["problem_description"]["obs_norm"] is True
    assert summary["goal_check"]["solved"] and summary["goal_check"]["confirmed_mean"] >= 10.0
    assert summary["generations"] < 3000
