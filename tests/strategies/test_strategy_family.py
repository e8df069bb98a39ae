"""Behaviour shared by every built-in strategy: convergence, seeds, state_dict, bad input, NaN."""

import pickle

import numpy as np
import pytest

import blackbox as bb

ALL = ["openai-es", "nes", "ga", "pgpe", "snes", "xnes", "cma-es", "sep-cma-es", "ars", "cem"]
NEW = ["pgpe", "snes", "xnes", "cma-es", "sep-cma-es", "ars", "cem"]
COMPACT = ["pgpe", "snes", "sep-cma-es", "ars", "cem"]
DENSE = ["xnes", "cma-es"]

# (strategy, options, problem, dim, generations, largest final |center - x_opt|^2), 3 seeds each.
# The budget in evaluations is generations x popsize. Rosenbrock is non-separable: the diagonal
# methods get 2 dimensions, the full-covariance ones 5 or 10. ARS (made for linear RL policies) is
# checked on the quadratic and the sphere only. Entries marked slow run with ``-m slow``.
_ = None
CONVERGENCE = [
    ("pgpe", {}, "quadratic", 10, 300, 0.2, _),  # ClipUp's fixed step length: a ball of ~lr
    ("pgpe", {"lr": 0.05}, "quadratic", 100, 300, 0.3, "slow"),
    ("pgpe", {"optimizer": "adam", "lr": 0.02}, "quadratic", 100, 300, 1e-3, _),
    ("pgpe", {"optimizer": "adam", "lr": 0.05, "popsize": 100}, "sphere", 20, 400, 1e-4, "slow"),
    ("pgpe", {"lr": 0.01, "sigma": 0.3, "popsize": 32}, "rosenbrock", 2, 600, 0.05, "slow"),
    ("snes", {}, "quadratic", 10, 300, 1e-10, _),
    ("snes", {}, "quadratic", 100, 600, 2e-3, "slow"),
    ("snes", {"sigma": 1.0}, "sphere", 20, 300, 1e-5, _),
    ("snes", {"sigma": 0.5}, "rosenbrock", 2, 3000, 0.2, "slow"),  # separable: slow in the valley
    ("xnes", {}, "quadratic", 10, 300, 1e-4, _),
    ("xnes", {"sigma": 0.5}, "rosenbrock", 5, 1500, 1e-8, "slow"),
    ("cma-es", {}, "quadratic", 10, 300, 1e-14, _),
    ("cma-es", {"sigma": 1.0}, "sphere", 20, 300, 1e-8, "slow"),
    ("cma-es", {"sigma": 0.5}, "rosenbrock", 10, 1000, 1e-12, "slow"),
    ("sep-cma-es", {}, "quadratic", 100, 300, 0.01, _),
    ("sep-cma-es", {"sigma": 1.0}, "sphere", 20, 300, 1e-9, "slow"),
    ("sep-cma-es", {"sigma": 0.5}, "rosenbrock", 2, 3000, 1e-5, "slow"),
    ("ars", {}, "quadratic", 10, 300, 1e-20, _),
    ("ars", {}, "quadratic", 100, 300, 0.05, "slow"),
    ("ars", {}, "sphere", 20, 400, 1e-6, "slow"),
    ("cem", {}, "quadratic", 10, 300, 1e-6, _),
    ("cem", {"sigma": 1.0, "extra_noise": 0.01, "extra_noise_decay": 150}, "quadratic", 10, 200, 1e-4, "slow"),
    ("cem", {"sigma": 1.0, "popsize": 200, "extra_noise": 0.01, "extra_noise_decay": 250}, "quadratic", 100, 300, 1e-3, "slow"),
    ("cem", {"sigma": 1.0, "popsize": 100, "extra_noise": 0.01, "extra_noise_decay": 200}, "sphere", 20, 300, 1e-6, "slow"),
    ("cem", {"sigma": 0.5, "popsize": 100, "extra_noise": 0.01, "extra_noise_decay": 250}, "rosenbrock", 2, 300, 0.05, "slow"),
]


def final_loss(name, options, problem_name, dim, generations, seed):
    problem = bb.make_problem(problem_name, dim=dim)
    x0 = problem.initial_params(np.random.default_rng(seed))
    strategy = bb.make_strategy(name, dim=dim, seed=seed, x0=x0, **options)
    result = bb.optimize(strategy, problem, generations=generations, evaluate_center=False)
    start = float(np.sum((x0 - problem.x_opt) ** 2))
    return start, float(np.sum((result.center - problem.x_opt) ** 2))


@pytest.mark.parametrize("name,options,problem,dim,generations,limit", [
    pytest.param(*c[:6], id=f"{c[0]}-{c[2]}{c[3]}-{i}", marks=[pytest.mark.slow] if c[6] else [])
    for i, c in enumerate(CONVERGENCE)
])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_converges(name, options, problem, dim, generations, limit, seed):
    start, final = final_loss(name, options, problem, dim, generations, seed)
    assert final < min(limit, start / 10), f"{name} on {problem}{dim} seed {seed}: loss {final:.3g} from {start:.3g}"


def run(name, seed, generations=15, dim=8, **options):
    strategy = bb.make_strategy(name, dim=dim, seed=seed, x0=np.full(dim, 2.0), **options)
    for _ in range(generations):
        x = strategy.ask().params
        strategy.tell(-np.sum(x * x, axis=1) + np.sin(x[:, 0] * 7))
    return strategy


@pytest.mark.parametrize("name", NEW)
def test_same_seed_identical_other_seed_differs(name):
    a, b, c = run(name, 7), run(name, 7), run(name, 8)
    assert np.array_equal(a.center, b.center) and a.sigma == b.sigma
    np.testing.assert_array_equal(a.ask().params, b.ask().params)
    assert not np.array_equal(a.center, c.center)


def plain(value):
    if isinstance(value, dict):
        return all(plain(v) for v in value.values())
    return isinstance(value, (np.ndarray, int, float, str, bool, type(None)))


@pytest.mark.parametrize("name", NEW)
@pytest.mark.parametrize("between", [False, True], ids=["after-tell", "between-ask-and-tell"])
def test_state_dict_continues_bit_identically(name, between):
    def fitness(x):
        return -np.sum((x - 1.5) ** 2, axis=1)

    ref = bb.make_strategy(name, dim=6, seed=3)
    for _ in range(8):
        ref.tell(fitness(ref.ask().params))
    if between:
        pending = ref.ask()
    state = pickle.loads(pickle.dumps(ref.state_dict()))
    assert plain(state)
    if between:
        ref.tell(fitness(pending.params))
    fresh = bb.make_strategy(name, dim=6, seed=999)
    fresh.load_state_dict(state)
    if between:
        fresh.tell(fitness(fresh.ask().params))
    for _ in range(8):
        pa, pb = ref.ask(), fresh.ask()
        np.testing.assert_array_equal(pa.params, pb.params)
        ref.tell(fitness(pa.params))
        fresh.tell(fitness(pb.params))
    assert np.array_equal(ref.center, fresh.center) and ref.sigma == fresh.sigma
    assert fresh.generation == ref.generation == (17 if between else 16)


@pytest.mark.parametrize("name", NEW)
@pytest.mark.parametrize("between", [False, True], ids=["after-tell", "between-ask-and-tell"])
def test_pickled_strategy_continues_identically(name, between):
    a = run(name, 4, generations=5)
    if between:
        pending = a.ask()
    b = pickle.loads(pickle.dumps(a))
    if between:
        f = -np.sum(pending.params**2, axis=1)
        a.tell(f)
        b.tell(f)
    for _ in range(5):
        pa, pb = a.ask(), b.ask()
        np.testing.assert_array_equal(pa.params, pb.params)
        a.tell(-np.sum(pa.params**2, axis=1))
        b.tell(-np.sum(pb.params**2, axis=1))
    np.testing.assert_array_equal(a.center, b.center)


@pytest.mark.parametrize("name", COMPACT)
def test_compact_population_travels_as_offsets(name):
    strategy = bb.make_strategy(name, dim=50_000, seed=0)
    pop = strategy.ask()
    assert pop.is_compact and pop.table is strategy.table and len(pop) == strategy.popsize
    shared, parts = pop.split(1)  # what crosses to the workers: the shared part once, then rows
    wire = pickle.dumps((shared.sigma, parts))
    assert len(wire) < 50_000 * 8 + 20_000  # at most the per-dim sigma vector, never popsize x dim
    back = bb.Population.join(shared, pickle.loads(wire)[1])
    np.testing.assert_array_equal(back.rows([0, len(pop) - 1]), pop.rows([0, len(pop) - 1]))


@pytest.mark.parametrize("name", COMPACT)
def test_compact_rows_use_per_dimension_sigma(name):
    strategy = run(name, 0, generations=5)
    pop = strategy.ask()
    eps = strategy.table.gather(pop.offsets, strategy.dim).astype(np.float64)
    expected = strategy.center + pop.signs[:, None] * np.broadcast_to(pop.sigma, (strategy.dim,)) * eps
    np.testing.assert_allclose(pop.params, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", DENSE)
def test_dense_population(name):
    pop = bb.make_strategy(name, dim=5, seed=0).ask()
    assert not pop.is_compact and pop.params.shape == (len(pop), 5)


@pytest.mark.parametrize("name", NEW)
def test_nan_fitness_ranks_worst_and_never_spreads(name):
    strategy = bb.make_strategy(name, dim=4, seed=0, x0=np.ones(4))
    for generation in range(6):
        x = strategy.ask().params
        f = -np.sum(x * x, axis=1)
        f[generation % len(f)] = np.nan
        f[(generation + 3) % len(f)] = -np.inf
        strategy.tell(f)
        assert np.all(np.isfinite(strategy.center)) and np.isfinite(strategy.sigma)
    assert np.sum(strategy.center**2) < 4.0


@pytest.mark.parametrize("name", NEW)
def test_constant_fitness_keeps_everything_finite(name):
    strategy = bb.make_strategy(name, dim=4, seed=0)
    for _ in range(5):
        strategy.tell(np.full(len(strategy.ask()), 3.0))
    assert np.all(np.isfinite(strategy.center)) and np.isfinite(strategy.sigma) and strategy.sigma > 0


@pytest.mark.parametrize("name", ["pgpe", "snes", "xnes", "ars"])
def test_constant_fitness_moves_nothing_for_zero_sum_utilities(name):
    strategy = bb.make_strategy(name, dim=4, seed=0, x0=np.arange(4.0))
    before = (strategy.center.copy(), strategy.sigma)
    strategy.tell(np.full(len(strategy.ask()), 3.0))
    np.testing.assert_array_equal(strategy.center, before[0])
    assert strategy.sigma == pytest.approx(before[1], rel=1e-6)


@pytest.mark.parametrize("name", NEW)
def test_registered_and_cites_its_paper(name):
    cls = type(bb.make_strategy(name, dim=3))
    assert cls.name == name
    doc = __import__(cls.__module__, fromlist=["_"]).__doc__
    assert any(year in doc for year in ("1999", "2008", "2010", "2014", "2016", "2018", "2020"))


@pytest.mark.parametrize("name", NEW)
def test_tell_checks_length(name):
    strategy = bb.make_strategy(name, dim=3, seed=0)
    n = len(strategy.ask())
    with pytest.raises(bb.errors.TellError, match=f"tell\\(\\) got {n - 1} fitness values for a population of {n}"):
        strategy.tell(np.zeros(n - 1))


BAD = [
    ("pgpe", {"sigma": 0.0}, "sigma must be > 0, got 0.0"),
    ("pgpe", {"sigma": [0.1, -0.1, 0.1]}, "sigma must be > 0 in every dimension; entry 1 is -0.1"),
    ("pgpe", {"sigma": [0.1, 0.1]}, "sigma has length 2, expected dim=3"),
    ("pgpe", {"popsize": 7}, "popsize must be even for mirrored sampling, got 7; use 8 or pass mirrored=False"),
    ("pgpe", {"popsize": 1}, "popsize must be >= 2, got 1"),
    ("pgpe", {"sigma": 0.1, "radius": 1.0}, "pass sigma or radius, not both"),
    ("pgpe", {"sigma_max_change": 1.0}, "sigma_max_change must be < 1.0, got 1.0"),
    ("pgpe", {"sigma_min": 0.5, "sigma_max": 0.1}, "sigma_min \\(0.5\\) must be <= sigma_max \\(0.1\\)"),
    ("pgpe", {"optimizer": "clipupp"}, "optimizer must be one of .* got 'clipupp'. Did you mean 'clipup'"),
    ("pgpe", {"max_speed": -1.0}, "max_speed must be a finite number > 0, got -1.0"),
    ("pgpe", {"lr": 0}, "lr must be a finite number > 0, got 0"),
    ("snes", {"sigma": -1.0}, "sigma must be > 0, got -1.0"),
    ("snes", {"popsize": 1}, "popsize must be >= 2, got 1"),
    ("snes", {"shaping": "rank"}, "shaping must be one of"),
    ("snes", {"sigma_lr": -0.1}, "sigma_lr must be >= 0, got -0.1"),
    ("xnes", {"sigma": 0}, "sigma must be > 0, got 0"),
    ("xnes", {"cov_lr": float("nan")}, "cov_lr must be finite, got nan"),
    ("cma-es", {"sigma": 0.0}, "sigma must be > 0, got 0.0"),
    ("cma-es", {"popsize": 1}, "popsize must be >= 2, got 1"),
    ("cma-es", {"popsize": 10, "mu": 6}, "mu must be <= popsize // 2 \\(5 for popsize 10\\), got 6"),
    ("cma-es", {"eigen_interval": 0}, "eigen_interval must be >= 1, got 0"),
    ("sep-cma-es", {"sigma": -2}, "sigma must be > 0, got -2"),
    ("sep-cma-es", {"mu": 0}, "mu must be >= 1, got 0"),
    ("ars", {"popsize": 9}, "popsize must be even for ars \\(two rows per direction\\), got 9; use 10"),
    ("ars", {"top": 9, "popsize": 16}, "top must be at most the number of directions \\(popsize / 2 = 8\\), got 9"),
    ("ars", {"top": 0}, "top must be >= 1, got 0"),
    ("ars", {"sigma": 0.0}, "sigma must be > 0, got 0.0"),
    ("cem", {"elite_fraction": 0.01}, "cem needs at least 2 elites to fit a standard deviation; elite_fraction 0.01 x popsize 64 gives 1"),
    ("cem", {"elite_fraction": 1.5}, "elite_fraction must be <= 1.0, got 1.5"),
    ("cem", {"smoothing": 0}, "smoothing must be > 0, got 0"),
    ("cem", {"extra_noise": -1}, "extra_noise must be >= 0, got -1"),
    ("cem", {"extra_noise_decay": 0}, "extra_noise_decay must be >= 1, got 0"),
    ("cem", {"sigma": 0}, "sigma must be > 0, got 0"),
]


@pytest.mark.parametrize("name,alternative", [("cma-es", "sep-cma-es"), ("xnes", "snes")])
def test_dense_strategies_refuse_huge_dimensions(name, alternative):
    with pytest.raises(bb.ConfigError, match=f"{name} keeps dim x dim matrices \\(16,000 GB for dim=1000000\\).*"
                                             f"Use {alternative} for large dimensions"):
        bb.make_strategy(name, dim=1_000_000)


@pytest.mark.parametrize("name,options,message", BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_bad_options(name, options, message):
    with pytest.raises(bb.ConfigError, match=message):
        bb.make_strategy(name, dim=3, **options)


def test_unknown_option_names_the_close_one():
    with pytest.raises(bb.ConfigError, match="strategy 'cma-es' has no option 'sigma0'. Did you mean 'sigma'"):
        bb.make_strategy("cma-es", dim=3, sigma0=1.0)


@pytest.mark.parametrize("name", NEW)
def test_spec_strings_build_every_strategy(name):
    strategy = bb.make_strategy(f"{name}:popsize=12", dim=4, seed=0)
    assert strategy.popsize == 12 and strategy.dim == 4
