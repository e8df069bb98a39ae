"""Declared state: the attributes an object names in ``state_fields``, saved and loaded generically.

A strategy (or an optimizer) lists the attributes that evolve as it runs, ``state_fields =
("stdev", "optimizer")``, instead of writing a ``state_dict``/``load_state_dict`` pair. Saving copies
arrays, keeps numbers and strings, and asks an attribute that has its own ``state_dict()`` (an
optimizer) for it. Loading puts values back with the type the attribute has now (an array keeps
its dtype and, unless named in ``rows``, its shape: :func:`blackbox._validate.check_state_layout`
compares shapes before) and never keeps a reference into the loaded state.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ..errors import ConfigError

__all__ = ["save_fields", "load_fields"]


def save_fields(owner: Any, names: Iterable[str]) -> dict[str, Any]:
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


def load_fields(owner: Any, names: Iterable[str], state: Mapping[str, Any], *, rows: Iterable[str] = (),
                path: str = "state_dict") -> None:
    """Set each declared attribute from ``state``, converted to the attribute's current type.

    Arrays named in ``rows`` may have another number of rows than now (a GA's parents), but the
    same row length, at least one row, and finite values only.
    """
    rows = set(rows)
    for name in names:
        if name not in state:
            raise ConfigError(f"{path} has no {name!r}; it was not made by this object's state_dict()")
        current, value = getattr(owner, name), state[name]
        if isinstance(current, np.ndarray):
            array = np.array(value, dtype=current.dtype)
            if name in rows:
                _check_rows(f"{path}/{name}", array, current)
            setattr(owner, name, array)
        elif callable(getattr(current, "load_state_dict", None)):
            current.load_state_dict(value)
        elif isinstance(current, (bool, np.bool_)):
            setattr(owner, name, bool(value))
        elif isinstance(current, (int, np.integer)):
            setattr(owner, name, int(value))
        elif isinstance(current, (float, np.floating)):
            setattr(owner, name, float(value))
        else:
            setattr(owner, name, copy.deepcopy(value))


def _check_rows(path: str, array: np.ndarray, current: np.ndarray) -> None:
    width = current.shape[1:]
    if array.ndim != current.ndim or array.shape[1:] != width or not len(array) or not np.all(np.isfinite(array)):
        shape = ", ".join(["k", *map(str, width)])
        raise ConfigError(f"{path} must be a finite ({shape}) array, got shape {array.shape}")
