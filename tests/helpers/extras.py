"""Tests that need an optional extra skip where it is not installed, and say which extra to install.

    from tests.helpers.extras import requires, import_or_skip

    @requires("gym")                          # a test, a class, or pytest.param(..., marks=requires("gym"))
    def test_cartpole(): ...

    pytestmark = requires("plot")             # a whole file
    torch = import_or_skip("torch", "torch")  # in a test: the module, or a skip naming the extra
    torch = pytest.importorskip("torch", reason=reason("torch", "torch"))  # the same, for a whole file

The modules an extra provides are :data:`EXTRAS` (pyproject.toml's ``[project.optional-dependencies]``,
by the names they are imported as); ``requires("blackbox-cma", "cma")`` names a plugin of ``plugins/``
and the module it brings (pycma comes with the blackbox-cma plugin).
"""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest

__all__ = ["EXTRAS", "PROBLEM_EXTRAS", "missing", "requires", "requires_problem", "import_or_skip",
           "installed_problems", "reason"]

#: extra -> the modules it provides, as imported.
EXTRAS: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "gym": ("gymnasium",),
    "box2d": ("gymnasium", "Box2D"),
    "mujoco": ("gymnasium", "mujoco"),
    "atari": ("gymnasium", "ale_py", "cv2", "torch"),
    "mnist": ("torch", "sklearn", "matplotlib"),
    "plot": ("matplotlib",),
    "tensorboard": ("tensorboardX",),
    "dask": ("distributed",),
    "jax": ("jax", "gymnax"),
}
#: registered problem -> the extra it needs and the modules it imports from it (test functions: none).
PROBLEM_EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "gym": ("gym", ("gymnasium",)),
    "mnist": ("mnist", ("torch", "sklearn")),
    "gymnax": ("jax", ("jax", "gymnax")),
    "brax": ("jax", ("jax", "brax")),
}


def missing(*modules: str) -> list[str]:
    """The ``modules`` that cannot be imported here (found without importing them)."""
    gone = []
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a dotted name whose parent is missing
            found = False
        if not found:
            gone.append(module)
    return gone


def reason(extra: str, *gone: str) -> str:
    """``needs the gym extra (pip install 'blackbox-es[gym]'): gymnasium is not installed``; an
    ``extra`` named ``blackbox-*`` is one of the plugins in ``plugins/``."""
    where = (f"the {extra} plugin (pip install -e plugins/{extra})" if extra.startswith("blackbox-")
             else f"the {extra} extra (pip install 'blackbox-es[{extra}]')")
    return f"needs {where}: {', '.join(gone)} {'is' if len(gone) == 1 else 'are'} not installed"


def requires(extra: str, *modules: str) -> pytest.MarkDecorator:
    """A skip mark, unless every module of ``extra`` (or the ``modules`` given) can be imported."""
    if not modules and extra not in EXTRAS:
        raise KeyError(f"unknown extra {extra!r}; name its modules: requires({extra!r}, 'module', ...)")
    gone = missing(*(modules or EXTRAS[extra]))
    return pytest.mark.skipif(bool(gone), reason=reason(extra, *gone))


def requires_problem(name: str) -> pytest.MarkDecorator:
    """A skip mark for tests of the registered problem ``name``, unless its extra is installed."""
    extra, modules = PROBLEM_EXTRAS.get(name, ("", ()))
    return requires(extra, *modules) if modules else pytest.mark.skipif(False, reason="")


def import_or_skip(extra: str, module: str) -> ModuleType:
    """``module`` imported, or the calling test (or file, at module level) skipped naming ``extra``."""
    return pytest.importorskip(module, reason=reason(extra, module))


def installed_problems(names: list[str]) -> list[str]:
    """The registered problem ``names`` whose extra is installed here."""
    return [name for name in names if name not in PROBLEM_EXTRAS or not missing(*PROBLEM_EXTRAS[name][1])]
