"""State trees as files keep them: JSON for the structure, a flat dict of arrays for ``.npz``.

A state tree is what ``state_dict()`` returns: nested dicts (string keys) and lists of numpy arrays,
numpy scalars, Python numbers (big integers too, as in RNG states), strings, booleans and None.
:func:`encode_tree` turns it into JSON-able data with every array replaced by a reference
``{"$array": "strategy/optimizer/m"}`` (numpy scalars ``{"$scalar": ...}``, non-finite floats
``{"$float": "nan"}``; keys starting with ``$`` are stored as ``$$...``) and the arrays collected
under their paths; :func:`decode_tree` undoes it exactly. :func:`through_files` sends a tree through
both and through real ``.npz`` and JSON bytes, as a checkpoint would.
"""

from __future__ import annotations

import io
import json
import math
from typing import Any

import numpy as np

from ..errors import CheckpointError
from ..files import map_tree, npz_bytes

__all__ = ["encode_tree", "decode_tree", "leaf_fault", "through_files"]


def leaf_fault(value: object) -> str | None:
    """Why ``value`` (not a dict or list) cannot be part of a state tree, or None when it can."""
    if isinstance(value, (np.ndarray, np.generic)):
        return "is an object array (it would need pickle)" if value.dtype == object else None
    if value is None or isinstance(value, (bool, int, float, str)):
        return None
    return f"is a {type(value).__module__}.{type(value).__name__}, not an array or JSON-able value"


def encode_tree(tree: object, arrays: dict[str, np.ndarray], path: str = "") -> object:
    """A JSON-able copy of ``tree``; arrays and numpy scalars move to ``arrays`` under their path."""

    def key(name: object, where: str) -> str:
        if not isinstance(name, str):
            raise CheckpointError(f"cannot checkpoint {where or 'state'}: key {name!r} is not a string")
        return "$" + name if name.startswith("$") else name

    def leaf(value: object, where: str) -> object:
        if isinstance(value, (np.ndarray, np.generic)):
            arr = np.asarray(value)
            if arr.dtype == object:
                raise CheckpointError(f"cannot checkpoint {where}: object arrays would need pickle")
            name = where or "value"
            while name in arrays:
                name += "#"
            arrays[name] = arr
            return {"$scalar" if isinstance(value, np.generic) else "$array": name}
        if isinstance(value, float) and not math.isfinite(value):
            return {"$float": repr(value)}
        if leaf_fault(value) is None:
            return value
        raise CheckpointError(
            f"cannot checkpoint {where or 'state'} of type {type(value).__name__}: state_dict() must hold "
            f"numpy arrays, numbers, strings, booleans, None, and dicts or lists of those"
        )

    return map_tree(tree, leaf, path=path, key=key)


def decode_tree(tree: object, arrays: dict[str, np.ndarray]) -> Any:
    """Undo :func:`encode_tree`."""
    if isinstance(tree, dict):
        if len(tree) == 1:
            (marker, value), = tree.items()
            if marker in ("$array", "$scalar"):
                if value not in arrays:
                    raise CheckpointError(f"arrays.npz has no array {value!r} that state.json refers to")
                arr = arrays[value]
                return arr[()] if marker == "$scalar" else arr
            if marker == "$float":
                return float(value)
        return {(k[1:] if k.startswith("$$") else k): decode_tree(v, arrays) for k, v in tree.items()}
    if isinstance(tree, list):
        return [decode_tree(v, arrays) for v in tree]
    return tree


def through_files(tree: object) -> Any:
    """``tree`` after the trip a checkpoint makes: :func:`encode_tree`, the arrays through an ``.npz``
    (``np.load(allow_pickle=False)``) and the rest through JSON, then :func:`decode_tree`."""
    arrays: dict[str, np.ndarray] = {}
    text = json.dumps(encode_tree(tree, arrays), allow_nan=False)
    with np.load(io.BytesIO(npz_bytes(arrays)), allow_pickle=False) as data:
        loaded = {name: data[name] for name in data.files}
    return decode_tree(json.loads(text), loaded)
