"""Where a run starts: one rule for a named strategy and a strategy object (registry/parts.py),
``Strategy.start_at``, and the base Problem's documented start (a standard-normal draw, never zeros)."""

from __future__ import annotations

import numpy as np
import pytest

import blackbox as bb
from tests.golden.cases import BUILTIN_STRATEGIES, record_rows
from tests.helpers.broken import ToyES
from tests.helpers.extras import requires


class Bowl(bb.Problem):
    """A problem that keeps the base class's initial_params: -|x|^2, optimum at zeros."""

    name = "bowl"

    def __init__(self, dim: int = 4):
        self.dim = dim

    def evaluate(self, params, seeds):
        return bb.EvalResult(-np.sum(params**2, axis=1), np.zeros(len(params), dtype=np.int64))


def same_run(a: bb.Result, b: bb.Result) -> bool:
    return (np.array_equal(a.center, b.center) and np.array_equal(a.best_params, b.best_params)
            and record_rows(a.records) == record_rows(b.records))


@pytest.mark.parametrize("name", BUILTIN_STRATEGIES)
def test_a_named_strategy_and_a_built_one_start_alike(name):
    problem = bb.make_problem("quadratic:dim=4")
    named = bb.optimize(name, problem, generations=3, seed=7)
    built = bb.optimize(bb.make_strategy(name, dim=4, seed=7), problem, generations=3)
    assert same_run(named, built)
    start = problem.initial_params(np.random.default_rng(7))
    first = bb.optimize(bb.make_strategy(name, dim=4, seed=7), problem, generations=1).records[0]
    assert first.center == float(problem.evaluate(start[None, :], np.zeros(1, dtype=np.int64)).fitness[0])


def test_the_start_derives_from_the_run_seed_and_x0_wins():
    problem = Bowl()
    es = bb.make_strategy("nes", dim=4, popsize=8, seed=1)
    bb.optimize(es, problem, generations=1, seed=2)  # run seed 2: the start is drawn from it
    replay = bb.make_strategy("nes", dim=4, popsize=8, seed=1, x0=np.random.default_rng(2).standard_normal(4))
    replay.tell(-np.sum(replay.ask().params ** 2, axis=1))
    assert np.array_equal(es.center, replay.center)
    given = bb.make_strategy("nes", dim=4, popsize=8, seed=1, x0=[1.0, 2.0, 3.0, 4.0])
    assert given.start_chosen
    assert bb.optimize(given, problem, generations=1, seed=2).records[0].center == -30.0  # started at x0


def test_start_at_rebuilds_a_plain_strategy_as_its_constructor_would():
    moved = ToyES(dim=3, sigma=0.3, popsize=6, seed=4)
    assert not moved.start_chosen and np.array_equal(moved.center, np.zeros(3))
    moved.start_at([1.0, 2.0, 3.0])
    built = ToyES(dim=3, sigma=0.3, popsize=6, seed=4, x0=[1.0, 2.0, 3.0])
    assert moved.start_chosen and moved.sigma == 0.3 and moved.seed == 4
    for _ in range(3):
        a, b = moved.ask().params, built.ask().params
        assert np.array_equal(a, b)
        moved.tell(-np.sum(a**2, axis=1))
        built.tell(-np.sum(b**2, axis=1))
    ga = bb.make_strategy("ga", dim=2, popsize=6, seed=0)
    ga.start_at([5.0, 6.0])  # a GA's parents derive from the start: they move with it
    assert np.array_equal(ga.parents, [[5.0, 6.0]])


def states_equal(a: dict, b: dict) -> bool:
    if a.keys() != b.keys():
        return False
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, dict):
            if not (isinstance(y, dict) and states_equal(x, y)):
                return False
        elif isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if np.asarray(x).dtype != np.asarray(y).dtype or np.asarray(x).tobytes() != np.asarray(y).tobytes():
                return False
        elif x != y:
            return False
    return True


@pytest.mark.parametrize("spec", [*BUILTIN_STRATEGIES, "ga:dtype=float32", "openai-es:dtype=float32"])
def test_start_at_is_the_constructor_with_that_x0_bit_for_bit(spec):
    """The explicit start step (``_start``) derives what the constructor derives: the same state,
    then the same generations (a float32 GA's parents from the start as given, its center rounded)."""
    name, _, option = spec.partition(":")
    options = dict([option.split("=")]) if option else {}
    x0 = np.random.default_rng(11).standard_normal(4) * 3
    moved = bb.make_strategy(name, dim=4, seed=9, **options)
    moved.start_at(x0)
    built = bb.make_strategy(name, dim=4, seed=9, x0=x0, **options)
    assert moved.start_chosen and states_equal(moved.state_dict(), built.state_dict())
    for _ in range(2):
        a, b = moved.ask().params, built.ask().params
        assert a.tobytes() == b.tobytes()
        moved.tell(-np.sum(a**2, axis=1))
        built.tell(-np.sum(b**2, axis=1))
    assert states_equal(moved.state_dict(), built.state_dict())


def test_start_at_checks_x0_as_the_constructor_does():
    es = bb.make_strategy("nes", dim=3, popsize=4, seed=0)
    with pytest.raises(bb.ConfigError) as moved:
        es.start_at([1.0, 2.0])
    with pytest.raises(bb.ConfigError) as built:
        bb.make_strategy("nes", dim=3, popsize=4, seed=0, x0=[1.0, 2.0])
    assert str(moved.value) == str(built.value) == "x0 has length 2 but dim=3; pass one or make them agree"
    assert not es.start_chosen  # refused: the start is still open
    es.start_at(2.5)  # a number fills every dimension, as x0=2.5 does
    assert np.array_equal(es.center, [2.5, 2.5, 2.5]) and es.start_chosen


def test_start_at_refuses_a_settled_start():
    es = bb.make_strategy("nes", dim=2, popsize=4, seed=0, x0=[1.0, 1.0])
    with pytest.raises(bb.StateError) as info:
        es.start_at([0.0, 0.0])
    assert str(info.value) == ("start_at() moves a strategy whose start is still open; this one was given x0 or a "
                               "loaded state. Pass x0= when you build the strategy instead")
    es = bb.make_strategy("nes", dim=2, popsize=4, seed=0)
    es.ask()
    with pytest.raises(bb.StateError, match="this one has run a generation"):
        es.start_at([0.0, 0.0])
    loaded = bb.make_strategy("nes", dim=2, popsize=4, seed=0)
    loaded.load_state_dict(bb.make_strategy("nes", dim=2, popsize=4, seed=3).state_dict())
    assert loaded.start_chosen


def test_the_base_problem_starts_from_a_standard_normal_draw_not_zeros():
    problem = Bowl(dim=5)
    start = problem.initial_params(np.random.default_rng(3))
    assert np.array_equal(start, np.random.default_rng(3).standard_normal(5)) and start.dtype == np.float64
    first = bb.optimize("openai-es", problem, generations=1, seed=3).records[0]
    assert first.center == -float(np.sum(start**2)) and first.center < -1.0  # not at the optimum (0)


@requires("blackbox-cma", "blackbox_cma")
def test_a_strategy_that_builds_a_library_object_in_its_constructor_moves_whole():
    from blackbox_cma.strategy import CMAES

    problem = bb.make_problem("sphere:dim=3")
    built = bb.optimize(CMAES(dim=3, seed=5), problem, generations=3)
    named = bb.optimize("cma", problem, generations=3, seed=5)
    assert same_run(built, named)
    x0 = [0.5, -1.0, 2.0]
    moved, given = CMAES(dim=3, seed=5, popsize=6, CMA_diagonal=True), CMAES(dim=3, seed=5, popsize=6, x0=x0,
                                                                             CMA_diagonal=True)
    moved.start_at(x0)  # pycma's object is made again around the new start

    def state(strategy):  # pycma's object graph holds wall-clock timers: every build differs there
        return {key: value for key, value in strategy.state_dict().items() if key != "pycma"}

    assert states_equal(state(moved), state(given))
    for _ in range(2):
        a, b = moved.ask().params, given.ask().params
        assert a.tobytes() == b.tobytes()
        moved.tell(-np.sum(a**2, axis=1))
        given.tell(-np.sum(b**2, axis=1))
    assert states_equal(state(moved), state(given))
