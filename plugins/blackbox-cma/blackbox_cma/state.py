"""pycma's state as numpy arrays plus JSON, and back, without pickle.

A ``cma.CMAEvolutionStrategy`` is a graph of a few dozen objects (the sampler with C, B and D, the
step-size adaptation, the evolution paths, fitness histories for the termination criteria, the
solution archives, the options). To continue bit-identically after a restart all of it matters,
so the whole graph is encoded: arrays go to a flat ``{key: ndarray}`` dict and everything else to
a JSON tree whose nodes name their type (``{"~": "dict", ...}``, ``{"~": "object", ...}``).
Shared references and cycles are kept (``{"~": "ref", "id": n}``).

Decoding never runs code chosen by the data: objects are rebuilt only for classes defined in the
``cma`` package (``cls.__new__`` plus their ``__dict__``, as pickle would, minus ``__reduce__``),
methods bound to objects of the graph are rebound to the rebuilt objects by name, and values that
are code (functions, classes, numpy functions, methods of other objects: pycma's options such as
``randn`` or ``CMA_eigenmethod``) are not stored at all but taken from a freshly built strategy
with the same options, at the same place in the graph.
"""

from __future__ import annotations

import importlib
import inspect
import json
import types
from collections import deque
from typing import Any

import numpy as np

from blackbox import StateError

__all__ = ["encode", "decode", "ALLOWED_PACKAGE"]

#: Objects are rebuilt only for classes defined in this package.
ALLOWED_PACKAGE = "cma"
_MISSING = object()
_SCALARS = (type(None), bool, int, float, str)


def _allowed(cls: type) -> bool:
    module = getattr(cls, "__module__", "") or ""
    return module == ALLOWED_PACKAGE or module.startswith(ALLOWED_PACKAGE + ".")


def encode(root: Any) -> tuple[str, dict[str, np.ndarray]]:
    """``root`` as (JSON text, arrays); code-like values are marked to be taken from a live copy."""
    arrays: dict[str, np.ndarray] = {}
    memo: dict[int, int] = {}
    keep_alive: list[Any] = []

    def remember(obj: Any) -> int:
        memo[id(obj)] = len(memo)
        keep_alive.append(obj)
        return memo[id(obj)]

    def enc(obj: Any) -> Any:
        if type(obj) in _SCALARS:
            return obj
        if isinstance(obj, np.generic):
            return {"~": "scalar", "dtype": obj.dtype.str, "value": obj.item()}
        if id(obj) in memo:
            return {"~": "ref", "id": memo[id(obj)]}
        if type(obj) is np.ndarray:
            if obj.dtype == object:
                return {"~": "objarray", "id": remember(obj), "shape": list(obj.shape),
                        "items": [enc(x) for x in obj.ravel().tolist()]}
            key = f"a{len(arrays)}"
            arrays[key] = np.array(obj, copy=True)
            return {"~": "array", "id": remember(obj), "key": key}
        if type(obj) is list:
            node = {"~": "list", "id": remember(obj)}
            node["items"] = [enc(x) for x in obj]
            return node
        if type(obj) is dict:
            node = {"~": "dict", "id": remember(obj)}
            node["items"] = [[enc(k), enc(v)] for k, v in obj.items()]
            return node
        if type(obj) is tuple:
            return {"~": "tuple", "items": [enc(x) for x in obj]}
        if type(obj) in (set, frozenset):
            return {"~": type(obj).__name__, "items": [enc(x) for x in obj]}
        if type(obj) is deque:
            node = {"~": "deque", "id": remember(obj), "maxlen": obj.maxlen}
            node["items"] = [enc(x) for x in obj]
            return node
        if type(obj) is range:
            return {"~": "range", "args": [obj.start, obj.stop, obj.step]}
        if isinstance(obj, types.MethodType) and _allowed(type(obj.__self__)) and not isinstance(obj.__self__, type):
            # a method bound to an object of the graph (IntegerCentering keeps one): rebind it
            return {"~": "method", "self": enc(obj.__self__), "name": obj.__func__.__name__}
        cls = type(obj)
        if _allowed(cls) and hasattr(obj, "__dict__") and not isinstance(obj, type):
            node = {"~": "object", "id": remember(obj), "class": f"{cls.__module__}:{cls.__qualname__}"}
            if isinstance(obj, dict):
                node["items"] = [[enc(k), enc(v)] for k, v in dict.items(obj)]
            if isinstance(obj, list):
                node["list"] = [enc(x) for x in list.__iter__(obj)]
            node["attrs"] = [[name, enc(value)] for name, value in vars(obj).items()]
            return node
        return {"~": "live", "what": f"{cls.__module__}.{cls.__qualname__}"}

    tree = enc(root)
    return json.dumps(tree, allow_nan=True, separators=(",", ":")), arrays


def _resolve(name: str) -> type[Any]:
    module_name, _, qualname = name.partition(":")
    if not (module_name == ALLOWED_PACKAGE or module_name.startswith(ALLOWED_PACKAGE + ".")) or "<" in qualname:
        raise StateError(f"pycma state names class {name!r}, outside the {ALLOWED_PACKAGE!r} package; refusing it")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    if not isinstance(obj, type) or not _allowed(obj):
        raise StateError(f"pycma state names {name!r}, which is not a class of the installed cma package")
    return obj


def decode(text: str, arrays: dict[str, np.ndarray], live: Any) -> Any:
    """Rebuild what :func:`encode` stored; code-like values come from ``live`` (same place)."""
    memo: dict[int, Any] = {}

    def counterpart(parent: Any, key: Any, kind: str) -> Any:
        try:
            if kind == "attr":
                return vars(parent).get(key, _MISSING) if hasattr(parent, "__dict__") else _MISSING
            if kind == "item":
                return dict.get(parent, key, _MISSING) if isinstance(parent, dict) else _MISSING
            if kind == "index":
                return parent[key] if isinstance(parent, (list, tuple)) and key < len(parent) else _MISSING
        except (TypeError, KeyError, IndexError):
            return _MISSING
        return _MISSING

    def dec(node: Any, live_value: Any, path: str) -> Any:
        if not isinstance(node, dict):
            return node
        tag = node["~"]
        if tag == "scalar":
            return np.dtype(node["dtype"]).type(node["value"])
        if tag == "ref":
            return memo[node["id"]]
        if tag == "live":
            if live_value is _MISSING:
                raise StateError(f"cannot restore {path} ({node['what']}): it is code, not data, and the "
                                 f"strategy loading the state has nothing there; build it with the same options")
            return live_value
        if tag == "array":
            out = np.array(arrays[node["key"]], copy=True)
            memo[node["id"]] = out
            return out
        if tag == "objarray":
            objects = np.empty(len(node["items"]), dtype=object)
            memo[node["id"]] = objects
            for i, item in enumerate(node["items"]):
                objects[i] = dec(item, _MISSING, f"{path}[{i}]")
            return objects.reshape(node["shape"])
        if tag == "list":
            items: list[Any] = []
            memo[node["id"]] = items
            items.extend(dec(x, counterpart(live_value, i, "index"), f"{path}[{i}]") for i, x in enumerate(node["items"]))
            return items
        if tag == "dict":
            mapping: dict[Any, Any] = {}
            memo[node["id"]] = mapping
            for k, v in node["items"]:
                key = dec(k, _MISSING, path)
                mapping[key] = dec(v, counterpart(live_value, key, "item"), f"{path}[{key!r}]")
            return mapping
        if tag == "tuple":
            return tuple(dec(x, counterpart(live_value, i, "index"), f"{path}[{i}]") for i, x in enumerate(node["items"]))
        if tag in ("set", "frozenset"):
            members = [dec(x, _MISSING, path) for x in node["items"]]
            return set(members) if tag == "set" else frozenset(members)
        if tag == "deque":
            queue: deque[Any] = deque(maxlen=node["maxlen"])
            memo[node["id"]] = queue
            queue.extend(dec(x, _MISSING, path) for x in node["items"])
            return queue
        if tag == "range":
            return range(*node["args"])
        if tag == "method":
            owner = dec(node["self"], _MISSING, path)
            function = inspect.getattr_static(type(owner), node["name"], None)
            if not inspect.isfunction(function) or not _allowed(type(owner)):
                raise StateError(f"pycma state binds {node['name']!r} at {path}, not a method of {type(owner).__name__}")
            return getattr(owner, node["name"])
        if tag == "object":
            cls = _resolve(node["class"])
            obj = cls.__new__(cls)  # type: ignore[call-overload]  # mypy reads a class variable's __new__ as type.__new__
            memo[node["id"]] = obj
            same_class = type(live_value) is cls
            for k, v in node.get("items", []):
                key = dec(k, _MISSING, path)
                dict.__setitem__(obj, key, dec(v, counterpart(live_value, key, "item") if same_class else _MISSING,
                                               f"{path}[{key!r}]"))
            if "list" in node:
                list.extend(obj, [dec(x, counterpart(live_value, i, "index") if same_class else _MISSING,
                                      f"{path}[{i}]") for i, x in enumerate(node["list"])])
            for name, value in node["attrs"]:
                live_attr = counterpart(live_value, name, "attr") if same_class else _MISSING
                obj.__dict__[name] = dec(value, live_attr, f"{path}.{name}")
            return obj
        raise StateError(f"unknown node type {tag!r} at {path} in a pycma state")

    return dec(json.loads(text), live, "es")
