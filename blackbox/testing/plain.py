"""State dicts as files would keep them: numpy arrays in an ``.npz`` and everything else in JSON.

``state_dict()`` promises numpy arrays and JSON-able values only (no pickle). The kit holds every
state to that promise: :func:`plain_data_faults` lists what breaks it, and :func:`through_files`
sends a state through the checkpoint codec (:mod:`blackbox.store.tree`: the arrays through
``np.savez`` and ``np.load(allow_pickle=False)``, the rest through ``json``) before it is loaded, so
a state that only survives in memory, or needs pickle, fails the check.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from ..files import map_tree
from ..store.tree import leaf_fault, through_files

__all__ = ["plain_data_faults", "through_files"]


def plain_data_faults(value: object, path: str = "state") -> list[str]:
    """Where ``value`` holds something other than arrays and JSON-able data ([] when clean).

    Stricter than a checkpoint, which also keeps numpy scalars: apart from ``np.float64`` (a Python
    float) they are not JSON-able, so a state must hold a Python number or a 0-d array instead.
    """
    faults: list[str] = []

    def key(name: object, where: str) -> Hashable:
        if not isinstance(name, str):
            faults.append(f"{where} has key {name!r} of type {type(name).__name__}; JSON keys are strings")
        return name

    def leaf(item: object, where: str) -> None:
        if isinstance(item, np.generic) and not isinstance(item, float):
            faults.append(f"{where} is {type(item).__module__}.{type(item).__name__}; "
                          f"use a Python number or a 0-d array")
            return
        fault = leaf_fault(item)
        if fault:
            faults.append(f"{where} {fault}")

    map_tree(value, leaf, path=path, key=key)
    return faults
