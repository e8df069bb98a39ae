"""Property tests: every malformed input gets a BlackboxError with a message, never a stray
IndexError/KeyError/TypeError from deep inside."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import blackbox as bb
from blackbox.spec import parse_spec

SPEC_ALPHABET = st.sampled_from(list("abcxyz019_-.:=,[]'\" /+eE"))


@settings(max_examples=2000, deadline=None)
@given(st.text(SPEC_ALPHABET, max_size=30))
def test_any_spec_string_parses_or_raises_spec_error(text):
    try:
        spec = parse_spec(text)
    except bb.SpecError as exc:
        assert str(exc).startswith("bad spec") or "spec must be" in str(exc)
        return
    assert spec.name and isinstance(spec.kwargs, dict)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(SPEC_ALPHABET, max_size=24), st.sampled_from(["strategy", "problem", "executor"]))
def test_any_spec_makes_an_object_or_raises_blackbox_error(text, kind):
    maker = {"strategy": bb.make_strategy, "problem": bb.make_problem, "executor": bb.make_executor}[kind]
    extra = {"dim": 3} if kind == "strategy" else {}
    try:
        maker(text, **extra)
    except bb.BlackboxError as exc:
        assert str(exc)


fitness_values = st.one_of(
    st.none(), st.integers(), st.text(max_size=3), st.floats(allow_nan=True),
    st.lists(st.one_of(st.floats(allow_nan=True), st.integers(-5, 5), st.text(max_size=2), st.none()), max_size=12),
    st.lists(st.lists(st.floats(), max_size=3), max_size=5),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)


@pytest.mark.parametrize("name", ["openai-es", "nes", "ga"])
@settings(max_examples=150, deadline=None)
@given(fitness=fitness_values)
def test_tell_with_any_argument_raises_blackbox_error_or_accepts(name, fitness):
    strategy = bb.make_strategy(name, dim=2, popsize=8, seed=0)
    strategy.ask()
    try:
        strategy.tell(fitness)
    except bb.BlackboxError as exc:
        assert str(exc)
        strategy.tell(np.zeros(8))  # a refused tell leaves the population pending
        return
    assert strategy.generation == 1


option_values = st.one_of(st.none(), st.booleans(), st.integers(-3, 300), st.floats(allow_nan=True),
                          st.text(max_size=4), st.lists(st.floats(), max_size=3))


@pytest.mark.parametrize("name", ["openai-es", "nes", "ga"])
@settings(max_examples=200, deadline=None)
@given(options=st.dictionaries(
    st.sampled_from(["popsize", "sigma", "lr", "x0", "seed", "noise_size", "noise_seed", "shaping",
                     "optimizer", "mirrored", "truncation", "elitism", "weight_decay", "dim"]),
    option_values, max_size=4))
def test_any_strategy_options_build_or_raise_blackbox_error(name, options):
    options.setdefault("dim", 3)
    try:
        bb.make_strategy(name, **options)
    except bb.BlackboxError as exc:
        assert str(exc)
