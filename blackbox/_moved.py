"""Import paths of blackbox 0.1.0 that moved in 0.2.0 keep working, with a DeprecationWarning, through
plain stub modules at the old paths (SciPy's pattern); no import hook.

A moved module's stub (``blackbox/loop.py``) is two lines, ``from blackbox._moved import alias`` and
``alias(__name__)``: :func:`alias` warns and puts the module that lives at the new path in ``sys.modules``
under the old name, so ``import blackbox.loop`` gives ``blackbox.driver.loop`` itself (one module object,
executed once, under two names: ``isinstance`` checks and pickles agree) and warns::

    DeprecationWarning: blackbox.loop moved to blackbox.driver.loop in 0.2.0; import from blackbox.driver.loop

A moved package (``blackbox.datasets``, now ``blackbox.problems.mnist.data``) cannot be the new package
itself: the import system would look its submodules up on the new package's ``__path__`` and run
``idx.py`` a second time as ``blackbox.datasets.idx``. Its stub is a package of its own whose module
``__getattr__`` (:func:`forward_package`) hands out the new package's names after one warning, and each
0.1.0 submodule (:data:`SUBMODULES`) is an :func:`alias` stub: ``blackbox.datasets.idx`` is the module
``blackbox.problems.mnist.data.idx``.

:data:`ALIASES` are the short public names of submodules (``blackbox.stop``, ``blackbox.optim``,
``blackbox.shaping``): :func:`alias` stubs that warn not. Names that moved out of a module that still
exists are served by :func:`forward_names`, a module ``__getattr__`` that warns alike.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import FrameType
from typing import Any

__all__ = ["MOVED", "SUBMODULES", "ALIASES", "alias", "forward_package", "forward_names", "moved_message"]

#: The release in which the 0.1.0 paths moved.
SINCE = "0.2.0"

#: 0.1.0 module path -> where it lives now (``git diff --stat 8e4f0e8 HEAD -M``: renames, and the
#: modules folded into another); each has a stub file at the old path. A moved package carries its
#: 0.1.0 submodules (:data:`SUBMODULES`): ``blackbox.datasets.idx`` is ``blackbox.problems.mnist.data.idx``.
MOVED: dict[str, str] = {
    "blackbox.validation": "blackbox._validate",
    "blackbox.executor": "blackbox.core.executor",
    "blackbox.noise": "blackbox.core.noise",
    "blackbox.population": "blackbox.core.population",
    "blackbox.problem": "blackbox.core.problem",
    "blackbox.seeding": "blackbox.core.seeding",
    "blackbox.strategy": "blackbox.core.strategy",
    "blackbox.loop": "blackbox.driver.loop",
    "blackbox.record": "blackbox.driver.record",
    "blackbox.records": "blackbox.driver.logs",
    "blackbox.tensorboard": "blackbox.driver.logs",
    "blackbox.progress": "blackbox.driver.progress",
    "blackbox.confirm": "blackbox.driver.stop",
    "blackbox.spec": "blackbox.registry.spec",
    "blackbox.presets": "blackbox.config.run",
    "blackbox.checkpoint": "blackbox.store.checkpoint",
    "blackbox.sampling": "blackbox.strategies._gaussian",
    "blackbox.schedule": "blackbox.strategies._gaussian",
    "blackbox.strategies.nes": "blackbox.strategies.search_gradient",
    "blackbox.strategies.openai_es": "blackbox.strategies.search_gradient",
    "blackbox.executors.dispatch": "blackbox.executors.wire",
    "blackbox.experiment": "blackbox.lab.experiment",
    "blackbox.runs": "blackbox.lab.runs",
    "blackbox.report": "blackbox.lab.report",
    "blackbox.plots": "blackbox.lab.plots",
    "blackbox.stats": "blackbox.lab.stats",
    "blackbox.contrast": "blackbox.lab.contrast",
    "blackbox.torch_params": "blackbox.problems.torch_params",
    "blackbox.envs": "blackbox.problems.gym.envs",
    "blackbox.problems.envs": "blackbox.problems.gym.slots",
    "blackbox.problems.gym_presets": "blackbox.problems.gym.presets",
    "blackbox.problems.actions": "blackbox.problems.gym.actions",
    "blackbox.problems.convnets": "blackbox.problems.gym.convnets",
    "blackbox.problems.episode_cap": "blackbox.problems.gym.episode_cap",
    "blackbox.problems.obs_norm": "blackbox.problems.gym.obs_norm",
    "blackbox.problems.policies": "blackbox.problems.gym.policies",
    "blackbox.problems.reference": "blackbox.problems.gym.reference",
    "blackbox.problems.rollout": "blackbox.problems.gym.rollout",
    "blackbox.problems.vbn": "blackbox.problems.gym.vbn",
    "blackbox.problems.wrappers": "blackbox.problems.gym.wrappers",
    "blackbox.problems.classifiers": "blackbox.problems.mnist.classifiers",
    "blackbox.datasets": "blackbox.problems.mnist.data",
}

#: The submodules that the moved packages had in 0.1.0 (``git ls-tree 8e4f0e8``), each a stub too.
SUBMODULES: dict[str, tuple[str, ...]] = {
    "blackbox.contrast": ("backprop", "curves", "es", "plot", "report", "runner"),
    "blackbox.datasets": ("digits", "idx", "mnist", "source"),
    "blackbox.envs": ("cyclic_mdp",),
}

#: Public short names of submodules (``bb.stop``, ``bb.optim``, ``bb.shaping``): no warning.
ALIASES: dict[str, str] = {
    "blackbox.stop": "blackbox.driver.stop",
    "blackbox.optim": "blackbox.strategies.optim",
    "blackbox.shaping": "blackbox.strategies.shaping",
}


def moved_message(old: str, new: str, module: str | None = None) -> str:
    """``blackbox.X moved to blackbox.Y in 0.2.0; import from blackbox.Y`` (``module``: where to import from)."""
    return f"{old} moved to {new} in {SINCE}; import from {module or new}"


def _target(fullname: str) -> tuple[str, bool] | None:
    """Where ``fullname`` lives now and whether importing it by that name is deprecated."""
    for table, deprecated in ((ALIASES, False), (MOVED, True)):
        if fullname in table:
            return table[fullname], deprecated
        head, _, tail = fullname.rpartition(".")
        while head:
            if head in table:
                return f"{table[head]}.{fullname[len(head) + 1:]}", deprecated
            head, _, _ = head.rpartition(".")
    return None


def _caller_stacklevel(stub: str) -> int:
    """The ``stacklevel`` that points a warning raised in this module at the code doing the import.

    ``warnings`` itself steps over the import system's frozen frames; this counts the frames of this
    module, of the ``stub`` file and of ``importlib.import_module`` that remain above the importer.
    """
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None:
        name = frame.f_code.co_filename
        if not ("importlib" in name and "_bootstrap" in name):  # frames warnings skips by itself
            if name not in (__file__, stub, importlib.__file__):
                return level
            level += 1
        frame = frame.f_back
    return level


def _stub(old: str) -> tuple[str, bool, str]:
    """Where the stub module ``old`` (being executed) leads, whether it is deprecated, and its file."""
    found = _target(old)
    if found is None:
        raise ImportError(f"{old} is not an old blackbox module path: add it to MOVED or ALIASES in "
                          f"blackbox/_moved.py")
    return found[0], found[1], str(getattr(sys.modules.get(old), "__file__", ""))


def alias(old: str) -> None:
    """Make the stub module ``old`` the module that lives at its new path (imported there if needed),
    warning first when the old path is deprecated. Called at the end of the stub: the import system
    returns what ``sys.modules`` holds under the old name once the stub has run."""
    new, deprecated, stub = _stub(old)
    if deprecated:
        warnings.warn(moved_message(old, new), DeprecationWarning, stacklevel=_caller_stacklevel(stub))
    sys.modules[old] = importlib.import_module(new)


def forward_package(old: str) -> Callable[[str], object]:
    """Warn that the package ``old`` moved, and return a module ``__getattr__`` for its stub package
    that hands out the names of the new package (the same objects; its ``__all__`` and ``dir()`` too)::

        __getattr__ = forward_package(__name__)
    """
    new, _, stub = _stub(old)
    warnings.warn(moved_message(old, new), DeprecationWarning, stacklevel=_caller_stacklevel(stub))
    package = importlib.import_module(new)
    names = list(getattr(package, "__all__", [name for name in dir(package) if not name.startswith("_")]))
    module = vars(sys.modules[old])  # ``from blackbox.datasets import *`` gives the new package's names
    module.update(__all__=names, __dir__=lambda: sorted(set(names) | set(module)))

    def __getattr__(name: str) -> object:
        try:
            return getattr(package, name)
        except AttributeError:
            raise AttributeError(f"module {old!r} has no attribute {name!r}") from None

    return __getattr__


def forward_names(module: str, moved: Mapping[str, str], submodules: Sequence[str] = ()) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving names that moved: ``moved`` maps a name to ``"new.module"``
    (where the name lives now, under the same name) or ``"new.module:new_name"`` (renamed), and each
    use warns with :func:`moved_message`; the ``submodules`` of ``module`` named are imported on first
    use, without a warning::

        __getattr__ = forward_names(__name__, {"MNIST": "blackbox.problems.mnist.problem"})
    """

    def __getattr__(name: str) -> Any:
        if name in submodules:
            return importlib.import_module(f"{module}.{name}")
        if name not in moved:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        home, _, new_name = moved[name].partition(":")
        new_name = new_name or name
        warnings.warn(moved_message(f"{module}.{name}", f"{home}.{new_name}", home), DeprecationWarning,
                      stacklevel=2)
        return getattr(importlib.import_module(home), new_name)

    return __getattr__
