"""Property tests: every malformed input gets a BlackboxError with a message, never a stray
IndexError/KeyError/TypeError/AttributeError from deep inside; every accepted one leaves the
strategy finite and checkpointable."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import blackbox as bb
from blackbox.registry.plugins import strategies
from blackbox.registry.spec import parse_spec
from blackbox.store.checkpoint import decode_tree, encode_tree
from tests.reliability.helpers import note

# The default run's property tests are derandomized (the same inputs every run: CI stays stable);
# the long ones draw new inputs each time, so that every CI run explores further.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:cma")  # pycma reports non-finite values itself

SPEC_ALPHABET = st.sampled_from(list("abcxyz019_-.:=,[]'\" /+eE"))
ALL_STRATEGIES = strategies.names()  # the built-ins and the installed plugins (cma)
COUNTS = {"spec strings": 0, "tell arguments": 0, "tell arguments refused": 0, "strategy options": 0}


def teardown_module(module):
    note("bad spec strings, tell arguments, options", inputs=sum(v for k, v in COUNTS.items() if "refused" not in k),
         refused=COUNTS["tell arguments refused"], uncaught=0)


@settings(max_examples=2000, deadline=None, derandomize=True)
@given(st.text(SPEC_ALPHABET, max_size=30))
def test_any_spec_string_parses_or_raises_spec_error(text):
    COUNTS["spec strings"] += 1
    try:
        spec = parse_spec(text)
    except bb.errors.SpecError as exc:
        assert str(exc).startswith("bad spec") or "spec must be" in str(exc)
        return
    assert spec.name and isinstance(spec.kwargs, dict)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(st.text(SPEC_ALPHABET, max_size=24), st.sampled_from(["strategy", "problem", "executor"]))
def test_any_spec_makes_an_object_or_raises_blackbox_error(text, kind):
    COUNTS["spec strings"] += 1
    maker = {"strategy": bb.make_strategy, "problem": bb.make_problem, "executor": bb.make_executor}[kind]
    extra = {"dim": 3} if kind == "strategy" else {}
    try:
        maker(text, **extra)
    except bb.BlackboxError as exc:
        assert str(exc)


# -- tell ----------------------------------------------------------------------------------------
POPSIZE = 8
EXTREMES = [0.0, -0.0, 1e308, -1e308, 5e-324, -5e-324, 1e-300, math.nan, math.inf, -math.inf, 2.0**53]

plain_values = st.one_of(
    st.none(), st.integers(), st.text(max_size=3), st.floats(allow_nan=True), st.booleans(), st.complex_numbers(),
    st.lists(st.one_of(st.floats(allow_nan=True), st.integers(-5, 5), st.text(max_size=2), st.none()), max_size=12),
    st.lists(st.lists(st.floats(), max_size=3), max_size=5),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    st.tuples(st.floats(), st.floats()), st.binary(max_size=16), st.sets(st.integers(), max_size=3),
)
#: Arrays of every dtype and a few shapes, most of the right length.
shapes = st.one_of(st.just((POPSIZE,)), st.just((POPSIZE,)), st.just((POPSIZE, 1)), st.just((1, POPSIZE)), st.just(()),
                   st.just((POPSIZE + 1,)), st.just((0,)), hnp.array_shapes(max_dims=3, max_side=9))
dtypes = st.one_of(hnp.floating_dtypes(), hnp.integer_dtypes(), hnp.unsigned_integer_dtypes(), hnp.boolean_dtypes(),
                   hnp.complex_number_dtypes(), hnp.datetime64_dtypes(), hnp.timedelta64_dtypes(),
                   hnp.unicode_string_dtypes(max_len=3), hnp.byte_string_dtypes(max_len=3))
arrays = hnp.arrays(dtypes, shapes)
#: Right-length float vectors full of extremes: the values are legal and must be survived.
edge_vectors = st.lists(st.one_of(st.sampled_from(EXTREMES), st.floats(allow_nan=True, allow_infinity=True)),
                        min_size=POPSIZE, max_size=POPSIZE).map(lambda v: np.array(v, dtype=np.float64))


class Fitnessish:
    """An object with a ``fitness`` attribute (what an EvalResult offers), holding anything."""

    def __init__(self, fitness):
        self.fitness = fitness


fitness_arguments = st.one_of(plain_values, arrays, edge_vectors, edge_vectors,
                              st.one_of(plain_values, arrays, edge_vectors).map(Fitnessish),
                              arrays.map(np.ma.masked_array))


def assert_finite_state(strategy) -> None:
    assert np.all(np.isfinite(strategy.center)), strategy.center
    assert np.all(np.isfinite(np.asarray(strategy.sigma, dtype=float)))
    state = strategy.state_dict()
    arrays: dict = {}
    decode_tree(encode_tree(state, arrays), arrays)  # checkpointable as it stands


def check_tell(name: str, fitness) -> None:
    strategy = bb.make_strategy(name, dim=3, popsize=POPSIZE, seed=0)
    for _ in range(2):  # the second generation sees what the first one left
        strategy.ask()
        generation = strategy.generation
        COUNTS["tell arguments"] += 1
        try:
            with np.errstate(all="ignore"):
                strategy.tell(fitness)
        except bb.BlackboxError as exc:
            COUNTS["tell arguments refused"] += 1
            assert str(exc)
            assert strategy.generation == generation and np.all(np.isfinite(strategy.center))
            if "diverged" in str(exc):  # legal values whose update overflowed: the strategy stops
                assert isinstance(exc, bb.errors.TellError) and str(exc).startswith("tell() failed: the update of generation")
                with pytest.raises(bb.StateError, match="this strategy cannot go on: the update of generation"):
                    strategy.ask()
                return
            assert strategy.pending  # a refused argument changes nothing
            strategy.tell(np.linspace(-1.0, 0.0, POPSIZE))  # the population is still there to tell
            assert_finite_state(strategy)
            return
        assert strategy.generation == generation + 1
        assert_finite_state(strategy)


@pytest.mark.parametrize("name", ALL_STRATEGIES)
@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(fitness=fitness_arguments)
def test_tell_with_any_argument_raises_blackbox_error_or_accepts(name, fitness):
    check_tell(name, fitness)


@pytest.mark.reliability_long
@pytest.mark.parametrize("name", ALL_STRATEGIES)
@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)
@given(fitness=fitness_arguments)
def test_tell_with_any_argument_long(name, fitness):
    check_tell(name, fitness)


@pytest.mark.parametrize("name", ALL_STRATEGIES)
def test_tell_out_of_order_is_a_state_error(name):
    strategy = bb.make_strategy(name, dim=3, popsize=POPSIZE, seed=0)
    with pytest.raises(bb.StateError, match=r"tell\(\) called before ask\(\)"):
        strategy.tell(np.zeros(POPSIZE))
    strategy.ask()
    with pytest.raises(bb.StateError, match=r"ask\(\) called twice without tell\(\)"):
        strategy.ask()
    strategy.tell(np.zeros(POPSIZE))
    with pytest.raises(bb.StateError, match=r"tell\(\) called twice for one ask\(\)"):
        strategy.tell(np.zeros(POPSIZE))


@pytest.mark.parametrize("name", ALL_STRATEGIES)
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(rounds=st.lists(edge_vectors, min_size=5, max_size=30))
def test_many_generations_of_extreme_fitness_keep_the_strategy_finite(name, rounds):
    strategy = bb.make_strategy(name, dim=3, popsize=POPSIZE, seed=1)
    for fitness in rounds:
        strategy.ask()
        with np.errstate(all="ignore"):
            strategy.tell(fitness)
    assert_finite_state(strategy)


# -- options -------------------------------------------------------------------------------------
option_values = st.one_of(st.none(), st.booleans(), st.integers(-3, 300), st.floats(allow_nan=True),
                          st.text(max_size=4), st.lists(st.floats(), max_size=3),
                          st.sampled_from([2**62, -(2**62), 1e308, 5e-324, "adam", "centered_ranks", [0.1, 0.2, 0.3]]))


def _option_names(name):
    from blackbox.registry.options import options_of

    return sorted(options_of(strategies.load(name)).names)


@pytest.mark.parametrize("name", ALL_STRATEGIES)
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_any_strategy_options_build_or_raise_blackbox_error(name, data):
    keys = _option_names(name) + ["optimizer", "mirrored", "typo_option"]
    options = data.draw(st.dictionaries(st.sampled_from(keys), option_values, max_size=4))
    options.setdefault("dim", 3)
    COUNTS["strategy options"] += 1
    try:
        strategy = bb.make_strategy(name, **options)
    except bb.BlackboxError as exc:
        assert str(exc)
        return
    # A strategy that was built runs a generation or refuses with a BlackboxError. (An absurd step
    # size such as sigma=1e307 overflows with a RuntimeWarning first; what matters is the outcome.)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            population = strategy.ask()
            strategy.tell(-np.sum(population.params**2, axis=1))
    except bb.BlackboxError as exc:
        assert str(exc)
        return
    assert_finite_state(strategy)


@pytest.mark.parametrize("name,options,sign", [
    ("xnes", {"sigma_lr": 1e6}, 1.0),  # wider is better: math.exp of the sigma step overflows
    ("openai-es", {"shaping": "raw", "optimizer": "sgd", "lr": 1e308, "x0": 1.0}, -1.0),  # the step is inf
])
def test_an_update_that_overflows_stops_the_strategy_with_a_clear_error(name, options, sign):
    strategy = bb.make_strategy(name, dim=3, seed=0, **options)
    saved = strategy.state_dict()
    with pytest.raises(bb.errors.TellError) as info:
        for _ in range(20):
            population = strategy.ask()
            with np.errstate(over="ignore"):
                strategy.tell(sign * np.sum(population.params**2, axis=1))
    assert str(info.value).startswith(f"tell() failed: the update of generation {strategy.generation + 1} diverged")
    assert "lower sigma or the learning rates, or use rank-based shaping" in str(info.value)
    assert np.all(np.isfinite(strategy.center))  # the previous center is kept
    with pytest.raises(bb.StateError, match="this strategy cannot go on: the update of generation"):
        strategy.ask()
    strategy.load_state_dict(saved)  # a saved state makes it usable again
    strategy.ask()


@pytest.mark.parametrize("spec, diverges", [
    ("pgpe:sigma=1e300", False), ("pgpe:sigma_lr=1e300", False), ("pgpe:lr=1e308", True),
    ("openai-es:lr=1e308,optimizer=sgd,shaping=raw", True), ("cma-es:sigma=1e300", None),
])
def test_an_update_that_overflows_prints_no_numpy_warning(spec, diverges):
    """Issue 25: pgpe printed numpy's RuntimeWarnings (overflow in multiply, in dot) before its clean
    error; an update's overflow is checked and reported by tell() alone."""
    strategy = bb.make_strategy(spec, dim=3, popsize=10, seed=0)
    outcome = None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            for _ in range(5):
                strategy.ask()
                strategy.tell(np.arange(10.0) * 1e300)
            outcome = False
        except bb.errors.TellError as exc:
            assert "diverged" in str(exc) and len(str(exc).splitlines()) == 1
            outcome = True
    assert diverges is None or outcome == diverges
