"""State dicts as files would keep them: numpy arrays in an ``.npz`` and everything else in JSON.

``state_dict()`` promises numpy arrays and JSON-able values only (no pickle). The kit holds every
state to that promise by sending it through :func:`through_files` (the arrays through ``np.savez``
and ``np.load(allow_pickle=False)``, the rest through ``json``) before loading it, so a state that
only survives in memory, or needs pickle, fails the check.
"""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np

__all__ = ["plain_data_faults", "through_files"]

_SCALARS = (str, int, float, bool, type(None))


def plain_data_faults(value: Any, path: str = "state") -> list[str]:
    """Where ``value`` holds something other than arrays and JSON-able data ([] when clean)."""
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return [f"{path} is an object array (it would need pickle)"]
        return []
    if isinstance(value, dict):
        faults = []
        for key, item in value.items():
            if not isinstance(key, str):
                faults.append(f"{path} has key {key!r} of type {type(key).__name__}; JSON keys are strings")
            faults.extend(plain_data_faults(item, f"{path}[{key!r}]"))
        return faults
    if isinstance(value, (list, tuple)):
        return [fault for i, item in enumerate(value) for fault in plain_data_faults(item, f"{path}[{i}]")]
    if isinstance(value, (np.integer, np.bool_)) or (isinstance(value, np.generic) and not isinstance(value, float)):
        return [f"{path} is {type(value).__module__}.{type(value).__name__}; use a Python number or a 0-d array"]
    if isinstance(value, _SCALARS):
        return []
    return [f"{path} is a {type(value).__module__}.{type(value).__name__}, not an array or JSON-able value"]


def through_files(state: Any) -> Any:
    """``state`` after a trip through an ``.npz`` (arrays, no pickle) and JSON (the rest)."""
    arrays: dict[str, np.ndarray] = {}

    def encode(value: Any) -> Any:
        if isinstance(value, np.ndarray):
            key = f"a{len(arrays)}"
            arrays[key] = value
            return {"__array__": key}
        if isinstance(value, dict):
            return {k: encode(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [encode(v) for v in value]
        if isinstance(value, np.floating):
            return float(value)
        return value

    text = json.dumps(encode(state), allow_nan=True)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    buffer.seek(0)
    with np.load(buffer, allow_pickle=False) as data:
        loaded = {key: data[key] for key in data.files}

    def decode(value: Any) -> Any:
        if isinstance(value, dict):
            if set(value) == {"__array__"}:
                return loaded[value["__array__"]]
            return {k: decode(v) for k, v in value.items()}
        if isinstance(value, list):
            return [decode(v) for v in value]
        return value

    return decode(json.loads(text))
