"""Declared state: a strategy's or an optimizer's ``State`` dataclass (or the attributes a strategy
written before it names in ``state_fields``), saved and loaded generically.

A strategy keeps what evolves as it runs in one typed dataclass, its ``State`` (``self.state``),
whose fields say how they are saved: :func:`state_field` marks a bound beyond "finite"
(``bound=POSITIVE``), an array whose number of rows changes (``rows=True``, a GA's parents) or a
value ``tell`` needs from ``ask`` that a saved state never holds (``saved=False``: CMA-ES's
samples, drawn again by the next ``ask()``). :func:`state_layout` reads those declarations back.
An optimizer declares its step count and moments the same way (:mod:`blackbox.strategies.optim`).
A strategy written before ``State`` names its attributes in ``state_fields`` instead, with
``state_bounds`` and ``state_rows``.

Saving copies arrays, keeps numbers and strings, and asks a value that has its own
``state_dict()`` (an optimizer) for it. Loading puts values back with the type the value has now
(an array keeps its dtype and, unless its rows may change, its shape:
:func:`blackbox._validate.check_state_layout` compares shapes before) and never keeps a reference
into the loaded state.

Loading is as strict as a constructor: a declared value is finite (every number a strategy keeps
is: ``tell()`` refuses an update that is not), an integer gets an integer, and a bound holds
(``{"stdev": POSITIVE, "t": NONNEGATIVE}``). A bad value is a ConfigError naming its key
(``state_dict/optimizer/v``), before anything is set. :func:`check_rng_state` checks a generator's
saved state the same way.
"""

from __future__ import annotations

import copy
import dataclasses
import weakref
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Generic, NamedTuple, TypeVar, overload

import numpy as np

from .._validate import check_int
from ..errors import ConfigError

__all__ = ["save_fields", "load_fields", "check_fields", "check_rng_state", "POSITIVE", "NONNEGATIVE",
           "state_field", "state_layout", "StateLayout", "StateView"]

#: Bounds a declared state value may have beyond "finite" (``state_field(bound=...)``, ``state_bounds``).
POSITIVE = "> 0"
NONNEGATIVE = ">= 0"

_T = TypeVar("_T")


def state_field(*, bound: str | None = None, rows: bool = False, saved: bool = True, default: object = None) -> Any:
    """A field of a ``State`` dataclass and how it is saved: ``bound`` (:data:`POSITIVE`,
    :data:`NONNEGATIVE`) beyond "finite"; ``rows``: an array whose number of rows may change;
    ``saved=False``: what ``tell`` needs from ``ask``, never saved (the state before ``ask()`` is
    saved, and the next ``ask()`` makes it again), reset to ``default`` when a state is loaded."""
    if bound not in (None, POSITIVE, NONNEGATIVE):
        raise ValueError(f"bound must be POSITIVE or NONNEGATIVE, got {bound!r}")
    metadata = {"bound": bound, "rows": rows, "saved": saved}
    return dataclasses.field(default=default, metadata=metadata) if not saved else dataclasses.field(metadata=metadata)


class StateLayout(NamedTuple):
    """How a ``State`` dataclass is saved: its saved fields in order, those whose rows may change,
    their bounds, and the fields never saved with the values they are reset to."""

    fields: tuple[str, ...]
    rows: tuple[str, ...]
    bounds: Mapping[str, str]
    transient: Mapping[str, object]


def state_layout(state_type: type[object]) -> StateLayout:
    """The :class:`StateLayout` a ``State`` dataclass declares with :func:`state_field` (read once per class)."""
    known = _LAYOUTS.get(state_type)
    if known is not None:
        return known
    if not dataclasses.is_dataclass(state_type):
        raise TypeError(f"State must be a dataclass, got {state_type!r}")
    declared = dataclasses.fields(state_type)
    saved = [f for f in declared if f.metadata.get("saved", True)]
    layout = _LAYOUTS[state_type] = StateLayout(
        tuple(f.name for f in saved), tuple(f.name for f in saved if f.metadata.get("rows")),
        MappingProxyType({f.name: f.metadata["bound"] for f in saved if f.metadata.get("bound")}),
        MappingProxyType({f.name: f.default for f in declared if not f.metadata.get("saved", True)}))
    return layout


_LAYOUTS: weakref.WeakKeyDictionary[type[object], StateLayout] = weakref.WeakKeyDictionary()


class StateView(Generic[_T]):
    """A strategy's read-only attribute for a field of its state (``es.stdev`` is ``es.state.stdev``),
    so that what users read keeps its name; the strategy itself writes ``self.state``. ``owner``
    names what holds the state in the message that refuses a write (an optimizer's ``adam.m``)."""

    def __init__(self, owner: str = "strategy") -> None:
        self.owner = owner

    def __set_name__(self, owner: type[object], name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type[object]) -> StateView[_T]: ...

    @overload
    def __get__(self, instance: object, owner: type[object]) -> _T: ...

    def __get__(self, instance: object | None, owner: type[object]) -> StateView[_T] | _T:
        if instance is None:
            return self
        value: _T = getattr(vars(instance)["state"], self.name)
        return value

    def __set__(self, instance: object, value: _T) -> None:
        raise AttributeError(f"{self.name} is read from the {self.owner}'s state; set state.{self.name} instead")


def save_fields(owner: object, names: Iterable[str]) -> dict[str, Any]:
    """``{name: value}`` for each declared attribute: arrays copied, nested state as its state_dict()."""
    out: dict[str, Any] = {}
    for name in names:
        value = getattr(owner, name)
        if isinstance(value, np.ndarray):
            out[name] = value.copy()
        elif callable(getattr(value, "state_dict", None)):
            out[name] = value.state_dict()
        elif isinstance(value, np.generic):
            out[name] = value.item()
        else:
            out[name] = copy.deepcopy(value)
    return out


def load_fields(owner: object, names: Iterable[str], state: Mapping[str, Any], *, rows: Iterable[str] = (),
                path: str = "state_dict", bounds: Mapping[str, str] | None = None) -> None:
    """Set each declared attribute from ``state``, converted to the attribute's current type.

    Arrays named in ``rows`` may have another number of rows than now (a GA's parents), but the
    same row length, at least one row, and finite values only. Every value is checked first
    (:func:`check_fields`, nested states too when their owner has ``check_state_dict``), so a bad
    state changes nothing declared here.
    """
    names = list(names)
    converted = check_fields(owner, names, state, rows=rows, path=path, bounds=bounds)
    for name in names:
        current = getattr(owner, name)
        if callable(getattr(current, "load_state_dict", None)):
            current.load_state_dict(state[name])
        else:
            setattr(owner, name, converted[name])


def check_fields(owner: object, names: Iterable[str], state: Mapping[str, Any], *, rows: Iterable[str] = (),
                 path: str = "state_dict", bounds: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The declared values of ``state`` converted to the attributes' types, each checked: present,
    finite, an integer where the attribute is one, within ``bounds``. Nested states (an optimizer)
    are left to their owner's ``load_state_dict``."""
    rows, bounds = set(rows), dict(bounds or {})
    out: dict[str, Any] = {}
    for name in names:
        if name not in state:
            raise ConfigError(f"{path} has no {name!r}; it was not made by this object's state_dict()")
        current, value, key = getattr(owner, name), state[name], f"{path}/{name}"
        if isinstance(current, np.ndarray):
            array = np.array(value, dtype=current.dtype)
            if name in rows:
                _check_rows(key, array, current)
            if array.dtype.kind in "fc":
                _check_finite(key, array)
            out[name] = array
        elif callable(getattr(current, "load_state_dict", None)):
            if callable(getattr(current, "check_state_dict", None)):
                current.check_state_dict(value, key)
            continue
        elif isinstance(current, (bool, np.bool_)):
            if not isinstance(value, (bool, np.bool_)):
                raise ConfigError(f"{key} must be true or false, got {value!r}")
            out[name] = bool(value)
        elif isinstance(current, (int, np.integer)):
            out[name] = check_int(key, value)
        elif isinstance(current, (float, np.floating)):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
                raise ConfigError(f"{key} must be a number, got {value!r}")
            out[name] = float(value)
            _check_finite(key, np.asarray(out[name]))
        else:
            out[name] = copy.deepcopy(value)
        if name in bounds:
            _check_bound(key, np.asarray(out[name]), bounds[name])
    return out


def _check_finite(key: str, array: np.ndarray) -> None:
    bad = np.flatnonzero(~np.isfinite(array))
    if len(bad):
        value = array.ravel()[bad[0]].item()
        raise ConfigError(f"{key} must be finite; entry {bad[0]} is {value} ({len(bad)} non-finite in all)"
                          if array.ndim else f"{key} must be finite, got {value}")


def _check_bound(key: str, array: np.ndarray, bound: str) -> None:
    bad = np.flatnonzero(array <= 0 if bound == POSITIVE else array < 0)
    if len(bad):
        value = array.ravel()[bad[0]].item()
        raise ConfigError(f"{key} must be {bound}; entry {bad[0]} is {value}" if array.ndim
                          else f"{key} must be {bound}, got {value}")


def check_rng_state(path: str, state: object, rng: np.random.Generator, seed: int | None = None) -> None:
    """Refuse a saved generator state that ``rng`` could not have had: another bit generator, fields
    missing or of the wrong type or range, or, given the ``seed`` that ``numpy.random.default_rng``
    seeded it from, a PCG64 stream increment other than that seed's (it never changes as it runs)."""
    current = rng.bit_generator.state
    kind = current.get("bit_generator")
    if not isinstance(state, dict) or state.get("bit_generator") != kind:
        got = state.get("bit_generator") if isinstance(state, dict) else state
        raise ConfigError(f"{path} does not fit this run's generator: it must be the state of a {kind} "
                          f"generator, got {got!r}"[:400])
    _same_shape(path, current, state)
    if kind in ("PCG64", "PCG64DXSM"):
        inner = state["state"]
        for name in ("state", "inc"):
            check_int(f"{path}/state/{name}", inner[name], minimum=0, maximum=2**128 - 1)
        if inner["inc"] % 2 == 0:
            raise ConfigError(f"{path}/state/inc must be odd (a {kind} stream's increment), got {inner['inc']}")
        check_int(f"{path}/has_uint32", state["has_uint32"], minimum=0, maximum=1)
        check_int(f"{path}/uinteger", state["uinteger"], minimum=0, maximum=2**32 - 1)
        if seed is not None and kind == "PCG64":
            expected = np.random.default_rng(seed).bit_generator.state["state"]["inc"]
            if inner["inc"] != expected:
                raise ConfigError(f"{path}/state/inc is {inner['inc']}, but seed {seed} gives the stream {expected}")
    try:
        probe = type(rng.bit_generator)()
        probe.state = copy.deepcopy(state)
    except (TypeError, ValueError, OverflowError, KeyError) as exc:
        raise ConfigError(f"{path} is not a valid {kind} state: {exc}") from None


def _same_shape(path: str, template: object, state: object) -> None:
    """Same keys, and integers where ``template`` has integers (no bool, no float, no text)."""
    if isinstance(template, dict):
        if not isinstance(state, dict) or set(state) != set(template):
            raise ConfigError(f"{path} must be a table with the keys {sorted(template)}, got {state!r}"[:300])
        for key, value in template.items():
            _same_shape(f"{path}/{key}", value, state[key])
    elif isinstance(template, int) and (isinstance(state, bool) or not isinstance(state, int)):
        raise ConfigError(f"{path} must be an integer, got {state!r}"[:300])


def _check_rows(path: str, array: np.ndarray, current: np.ndarray) -> None:
    width = current.shape[1:]
    if array.ndim != current.ndim or array.shape[1:] != width or not len(array) or not np.all(np.isfinite(array)):
        shape = ", ".join(["k", *map(str, width)])
        raise ConfigError(f"{path} must be a finite ({shape}) array, got shape {array.shape}")
