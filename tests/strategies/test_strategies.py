"""Each seed strategy converges, repeats under a seed, and resumes bit-identically."""

import pickle

import numpy as np
import pytest

import blackbox as bb
from blackbox.problems.functions import BLOG_SOLUTION
from blackbox.strategies.optim import Adam, WeightDecay

# name, options, generations, largest final loss allowed at dim 10 and at dim 100
CONVERGENCE = [
    ("openai-es", {}, 300, {10: 1e-3, 100: 5e-2}),
    ("nes", {"popsize": 100, "mirrored": True, "lr": 0.02}, 300, {10: 1e-6, 100: 1e-6}),
    ("ga", {}, 500, {10: 2e-3, 100: 0.5}),
]


def run_on_quadratic(name, options, dim, seed, generations):
    problem = bb.make_problem("quadratic", dim=dim)
    x0 = problem.initial_params(np.random.default_rng(seed))
    strategy = bb.make_strategy(name, dim=dim, seed=seed, x0=x0, **options)
    start_loss = float(np.sum((x0 - problem.x_opt) ** 2))
    result = bb.optimize(strategy, problem, generations=generations)
    return start_loss, float(np.sum((result.center - problem.x_opt) ** 2))


@pytest.mark.parametrize("name,options,generations,limits", CONVERGENCE, ids=[c[0] for c in CONVERGENCE])
@pytest.mark.parametrize("dim", [10, 100])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_converges_on_quadratic(name, options, generations, limits, dim, seed):
    start, final = run_on_quadratic(name, options, dim, seed, generations)
    assert start > 3.0  # the start is far away
    assert final < limits[dim], f"{name} dim {dim} seed {seed}: loss {final:.3g} from {start:.3g}"


def test_nes_blog_example_converges():
    """Karpathy's blog: solution [0.5, 0.1, -0.3], npop 50, sigma 0.1, alpha 0.001, 300 iterations."""
    solution = np.array(BLOG_SOLUTION)
    for seed in range(3):
        x0 = np.random.default_rng(seed).standard_normal(3)
        nes = bb.make_strategy("nes", x0=x0, popsize=50, sigma=0.1, lr=0.001, seed=seed)
        for _ in range(300):
            w = nes.ask().params
            nes.tell(-np.sum((w - solution) ** 2, axis=1))
        assert np.sum((nes.center - solution) ** 2) < 1e-3, nes.center
        assert np.sum((x0 - solution) ** 2) > 0.1


def twenty_generations(name, seed, **options):
    strategy = bb.make_strategy(name, dim=15, seed=seed, x0=np.full(15, 2.0), **options)
    for _ in range(20):
        x = strategy.ask().params
        strategy.tell(-np.sum(x * x, axis=1) + np.sin(x[:, 0] * 7))
    return strategy.center.copy()


@pytest.mark.parametrize("name", ["openai-es", "nes", "ga"])
def test_same_seed_identical_other_seed_differs(name):
    a = twenty_generations(name, 7)
    b = twenty_generations(name, 7)
    c = twenty_generations(name, 8)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("name", ["openai-es", "nes", "ga"])
@pytest.mark.parametrize("between", [False, True], ids=["after-tell", "between-ask-and-tell"])
def test_state_dict_continues_bit_identically(name, between):
    def fitness(x):
        return -np.sum((x - 1.5) ** 2, axis=1)

    ref = bb.make_strategy(name, dim=12, seed=3)
    for _ in range(10):
        ref.tell(fitness(ref.ask().params))
    if between:
        ref.ask()
    state = pickle.loads(pickle.dumps(ref.state_dict()))  # plain data survives a round trip
    if between:
        ref.tell(fitness(ref._pending.params))
    fresh = bb.make_strategy(name, dim=12, seed=999)
    fresh.load_state_dict(state)
    if between:
        fresh.tell(fitness(fresh.ask().params))
    for _ in range(10):
        pa, pb = ref.ask(), fresh.ask()
        np.testing.assert_array_equal(pa.params, pb.params)
        ref.tell(fitness(pa.params))
        fresh.tell(fitness(pb.params))
    assert np.array_equal(ref.center, fresh.center)
    assert fresh.generation == ref.generation == (21 if between else 20)


def test_state_dict_holds_only_arrays_and_plain_values():
    es = bb.make_strategy("openai-es", dim=4, seed=0)
    es.tell(-np.sum(es.ask().params ** 2, axis=1))

    def check(value):
        if isinstance(value, dict):
            for v in value.values():
                check(v)
        else:
            assert isinstance(value, (np.ndarray, int, float, str, bool, type(None))), type(value)

    check(es.state_dict())


def test_openai_es_defaults_are_the_papers():
    es = bb.make_strategy("openai-es", dim=5)
    assert es.sigma == 0.02 and es.optimizer.lr == 0.01 and es.optimizer.rate == 0.005
    assert es.optimizer == WeightDecay(Adam(lr=0.01), 0.005)
    assert es.params.mirrored and es.params.shaping == "centered_ranks"
    assert es.ask().params.dtype == np.float64 and es.table.data.dtype == np.float32


def test_ga_keeps_elite_and_uses_top_fraction():
    ga = bb.make_strategy("ga", dim=4, popsize=20, truncation=0.2, seed=0, sigma=0.5)
    assert ga.num_parents == 4
    pop = ga.ask()
    fitness = -np.sum((pop.params - 3) ** 2, axis=1)
    ga.tell(fitness)
    order = np.argsort(-fitness)
    np.testing.assert_array_equal(ga.parents, pop.params[order[:4]])
    np.testing.assert_array_equal(ga.center, pop.params[order[0]])
    nxt = ga.ask()
    np.testing.assert_array_equal(nxt.params[0], ga.center)  # the elite survives unchanged
    assert set(nxt.parents[1:].tolist()) <= set(range(4))


def test_ga_nan_fitness_never_becomes_the_elite():
    ga = bb.make_strategy("ga", dim=3, popsize=10, seed=0)
    pop = ga.ask()
    fitness = np.full(10, -1.0)
    fitness[4] = np.nan
    fitness[6] = 0.0
    ga.tell(fitness)
    np.testing.assert_array_equal(ga.center, pop.params[6])
