"""The code fingerprint: what the numbers of a run depend on, so a resume can say what changed.

A fingerprint holds the versions of blackbox, Python, numpy and the numerical libraries in use, and
a hash of the sources that compute a run: the strategy's module, the problem's module and the
driver, each with every module of its own distribution that it imports, transitively. The import
closure is read from the source files with :mod:`ast` (nothing is imported), so the answer does not
depend on what else the process has loaded.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import platform
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from .._version import __version__

__all__ = ["code_fingerprint", "code_changes", "source_closure"]

#: Libraries whose versions a fingerprint records when the process has imported them.
_LIBRARIES = ("gymnasium", "torch", "mujoco", "ale_py", "Box2D", "jax", "cma")
#: The module of the driver, whose import closure the fingerprint hashes as "driver".
_DRIVER = "blackbox.driver.loop"


def _module_origin(name: str) -> tuple[str | None, bool]:
    """The source file of module ``name`` (None if it has none) and whether it is a package.

    Found from the top-level package's folder, without importing anything.
    """
    top, _, rest = name.partition(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError, AttributeError):
        return None, False
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None, False
    if not rest:
        return spec.origin, spec.submodule_search_locations is not None
    if spec.submodule_search_locations is None:
        return None, False
    base = Path(spec.origin).parent.joinpath(*rest.split("."))
    if base.with_suffix(".py").is_file():
        return str(base.with_suffix(".py")), False
    if (base / "__init__.py").is_file():
        return str(base / "__init__.py"), True
    return None, False


def _imported_names(tree: ast.AST, package: str, top: str) -> set[str]:
    """Every dotted name of distribution ``top`` that the module ``tree`` imports (a name may be a module)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            try:
                base = importlib.util.resolve_name("." * node.level + (node.module or ""), package) \
                    if node.level else (node.module or "")
            except ImportError:
                continue
            if base.split(".")[0] != top:
                continue
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names if alias.name.split(".")[0] == top)
    return names


@functools.lru_cache(maxsize=64)
def _closure_cached(module: str) -> tuple[str, ...]:
    return tuple(source_closure(module))


def source_closure(module: str) -> list[str]:
    """Source files of ``module`` and of every module of its own distribution it imports, transitively.

    Read from the files (nothing is imported), so the answer does not depend on what else this
    process has loaded. Package ``__init__`` files are not followed (they re-export everything).
    """
    top = module.split(".")[0]
    files: dict[str, str] = {}
    seen: set[str] = set()
    stack = [module]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        origin, is_package = _module_origin(name)
        if origin is None or (is_package and name != module):
            continue
        files[name] = origin
        try:
            tree = ast.parse(Path(origin).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        package = name if is_package else name.rpartition(".")[0]
        stack.extend(sorted(_imported_names(tree, package, top) - seen))
    return [files[name] for name in sorted(files)]


def _closure_sha(module: str) -> str | None:
    digest = hashlib.sha256()
    found = False
    for path in _closure_cached(module):
        digest.update(Path(path).name.encode() + b"\0" + Path(path).read_bytes())
        found = True
    return digest.hexdigest()[:16] if found else None


#: Where a component's numbers come from: its class and a hash of its module and what that imports.
SourceOf = TypedDict("SourceOf", {"class": str, "sha256": "str | None"})


class CodeFingerprint(TypedDict):
    """What :func:`code_fingerprint` returns; a checkpoint's ``state.json`` keeps it as ``code``."""

    blackbox: str
    python: str
    numpy: str
    driver: str | None
    strategy: SourceOf
    problem: SourceOf
    libraries: dict[str, str]


def _source_of(obj: object) -> SourceOf:
    cls = obj if isinstance(obj, type) else type(obj)
    return {"class": f"{cls.__module__}:{cls.__qualname__}", "sha256": _closure_sha(cls.__module__)}


def code_fingerprint(strategy: object, problem: object) -> CodeFingerprint:
    """What the numbers of a run depend on: versions, and hashes of the sources that compute them
    (the strategy's and the problem's modules and what they import from their own package, and
    the driver's)."""
    libraries = {}
    for name in _LIBRARIES:
        module = sys.modules.get(name)
        if module is not None:
            libraries[name] = str(getattr(module, "__version__", "?"))
    return {
        "blackbox": __version__, "python": platform.python_version(), "numpy": np.__version__,
        "driver": _closure_sha(_DRIVER), "strategy": _source_of(strategy), "problem": _source_of(problem),
        "libraries": libraries,
    }


def code_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What differs between two fingerprints, in words; libraries compared where both list them."""
    changes = []
    for key, label in (("blackbox", "blackbox version"), ("python", "Python version"),
                       ("numpy", "numpy version"), ("driver", f"driver source ({_DRIVER} and its imports)")):
        if old.get(key) != new.get(key):
            changes.append(f"{label}: {old.get(key)} -> {new.get(key)}")
    for part in ("strategy", "problem"):
        before, after = old.get(part, {}), new.get(part, {})
        if before.get("class") != after.get("class"):
            changes.append(f"{part} class: {before.get('class')} -> {after.get('class')}")
        elif before.get("sha256") != after.get("sha256"):
            changes.append(f"{part} source ({after.get('class')} or a module it imports) changed")
    old_libs, new_libs = old.get("libraries", {}), new.get("libraries", {})
    for name in sorted(set(old_libs) & set(new_libs)):
        if old_libs[name] != new_libs[name]:
            changes.append(f"{name} version: {old_libs[name]} -> {new_libs[name]}")
    return changes
