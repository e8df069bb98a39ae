"""A strategy's ``State`` dataclass (:mod:`blackbox.core.state`): the layout its fields declare, the
values a ``tell`` needs from its ``ask`` kept there and never saved, the attributes users read
forwarded to it, and ``coefficients()`` putting its fields back."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import blackbox as bb
from blackbox.core.state import NONNEGATIVE, POSITIVE, StateLayout, state_field, state_layout
from blackbox.strategies.snes import SNES
from tests.golden.cases import BUILTIN_STRATEGIES


@dataclasses.dataclass
class Example:
    stdev: np.ndarray = state_field(bound=POSITIVE)
    parents: np.ndarray = state_field(rows=True)
    steps: int = state_field(bound=NONNEGATIVE)
    samples: np.ndarray | None = state_field(saved=False)


def test_the_layout_is_read_from_the_fields_in_their_order():
    assert state_layout(Example) == StateLayout(fields=("stdev", "parents", "steps"), rows=("parents",),
                                                bounds={"stdev": "> 0", "steps": ">= 0"},
                                                transient={"samples": None})


def test_a_bound_that_is_not_known_and_a_state_that_is_no_dataclass_are_refused():
    with pytest.raises(ValueError, match=r"^bound must be POSITIVE or NONNEGATIVE, got '> 1'$"):
        state_field(bound="> 1")
    with pytest.raises(TypeError, match=r"^State must be a dataclass, got <class 'int'>$"):
        state_layout(int)


@pytest.mark.parametrize("name", BUILTIN_STRATEGIES)
def test_ask_leaves_for_tell_only_the_state_and_tell_clears_what_is_not_saved(name):
    es = bb.make_strategy(name, dim=4, popsize=8, seed=2)
    if name == "ars":  # nothing evolves but the center and sigma: no State
        assert type(es).State is None and not hasattr(es, "state")
    else:
        assert dataclasses.is_dataclass(es.state) and type(es.state) is type(es).State
    state = getattr(es, "state", Example(np.ones(1), np.ones((1, 1)), 0))
    layout = state_layout(type(state))
    before = dict(vars(es))
    fields_before = dict(vars(state))
    population = es.ask()
    changed = {key for key in vars(es) if vars(es)[key] is not before.get(key)}
    # the pending population and the generator's state at ask(): the base's bookkeeping; a float32 buffer
    assert changed <= {"_pending", "_rng_state_at_ask", "_start_open", "_rows_buffer", "_rows_owner"}, changed
    changed_fields = {key for key in vars(state) if vars(state)[key] is not fields_before[key]}
    assert changed_fields <= set(layout.transient), changed_fields  # what tell needs from ask: never saved
    assert not set(layout.transient) & set(es.state_dict())
    es.tell(-np.sum(population.params**2, axis=1))
    assert all(getattr(state, key) is default for key, default in layout.transient.items())


def test_cma_es_keeps_its_samples_in_the_state_and_a_loaded_state_drops_them():
    es = bb.make_strategy("cma-es", dim=4, popsize=6, seed=1)
    saved = es.state_dict()
    population = es.ask()
    assert es.state.z is not None and es.state.z.shape == (6, 4) and not hasattr(es, "_z")
    es.load_state_dict(saved)
    assert es.state.z is None and not es.pending
    again = es.ask()  # the same population again, and tell uses the samples of this ask()
    assert np.array_equal(again.params, population.params)
    es.tell(np.arange(6, dtype=float))
    assert es.generation == 1 and es.state.z is None


def test_the_attributes_users_read_are_the_state_and_cannot_be_set_around_it():
    es = bb.make_strategy("snes", dim=3, seed=0)
    assert es.stdev is es.state.stdev and SNES.stdev.name == "stdev"
    with pytest.raises(AttributeError, match=r"^stdev is read from the strategy's state; set state.stdev instead$"):
        es.stdev = np.ones(3)
    cma = bb.make_strategy("cma-es", dim=3, seed=0)
    assert cma.C is cma.state.C and cma.p_sigma is cma.state.p_sigma
    assert bb.make_strategy("ga", dim=3, seed=0).parents.shape == (1, 3)
    assert bb.make_strategy("pgpe", dim=3, seed=0).optimizer.t == 0


class RebindsFirst(SNES):
    """An SNES whose tell rebinds a state field before it reduces (allowed: never in place)."""

    def _tell(self, population, fitness):
        self.state.stdev = self.state.stdev * 2.0
        return super()._tell(population, fitness)


def test_coefficients_put_back_the_state_fields_tell_rebinds_before_it_reduces():
    es = RebindsFirst(dim=4, popsize=6, seed=3)
    population = es.ask()
    stdev = es.state.stdev
    got = es.coefficients(population, np.arange(6, dtype=float))
    assert got is not None and es.state.stdev is stdev and np.array_equal(stdev, np.full(4, 0.1))


class SlotsState(RebindsFirst):
    """The same with a State of slots (no ``__dict__``): saved, loaded and put back all the same."""

    @dataclasses.dataclass(slots=True)
    class State:
        stdev: np.ndarray = state_field(bound=NONNEGATIVE)


def test_a_state_with_slots_is_saved_loaded_and_put_back():
    es = SlotsState(dim=4, popsize=6, seed=3)
    population = es.ask()
    stdev = es.state.stdev
    assert es.coefficients(population, np.arange(6, dtype=float)) is not None and es.state.stdev is stdev
    es.tell(np.arange(6, dtype=float))
    twin = SlotsState(dim=4, popsize=6, seed=9)
    twin.load_state_dict(es.state_dict())
    assert np.array_equal(twin.state.stdev, es.state.stdev) and twin.state.stdev is not es.state.stdev


class NamedLists(bb.Strategy):
    """A strategy written before ``State``: its evolving attributes named in ``state_fields``."""

    name = "named-lists"
    state_fields = ("scale", "kept")
    state_bounds = {"scale": POSITIVE}
    state_rows = ("kept",)

    def __init__(self, dim=None, *, popsize=4, x0=None, seed=None):
        super().__init__(dim, popsize=popsize, x0=x0, seed=seed)
        self.scale = np.ones(self.dim)
        self.kept = self._center[None, :].copy()

    def _ask(self):
        return bb.Population.from_dense(self._center + self.scale * self.rng.standard_normal((self.popsize, self.dim)))

    def _tell(self, population, fitness):
        self.kept = population.params[np.argsort(-fitness)[:2]].copy()
        self._center = self.kept[0].copy()
        self.scale = self.scale * 0.9


def test_a_strategy_with_the_name_lists_of_before_still_saves_checks_and_loads():
    es = NamedLists(dim=3, seed=1)
    es.ask()
    es.tell(np.arange(4, dtype=float))
    state = es.state_dict()
    assert list(state)[-2:] == ["scale", "kept"] and state["kept"].shape == (2, 3)  # rows changed: allowed
    twin = NamedLists(dim=3, seed=2)
    twin.load_state_dict(state)
    assert np.array_equal(twin.kept, es.kept) and np.array_equal(twin.scale, es.scale)
    with pytest.raises(bb.ConfigError, match=r"^state_dict/scale must be > 0; entry 1 is 0.0$"):
        twin.load_state_dict({**state, "scale": np.array([1.0, 0.0, 1.0])})
