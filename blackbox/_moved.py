"""Import paths of blackbox 0.1.0 that moved in 0.2.0 keep working, with a DeprecationWarning.

``blackbox/__init__`` installs :class:`MovedModules` on ``sys.meta_path``. It answers only for the
names in :data:`MOVED` and :data:`ALIASES` (and the submodules of a moved package): ``import
blackbox.loop`` gives the module ``blackbox.driver.loop`` itself (one module object under two
names, so ``isinstance`` checks and pickles agree) and warns::

    DeprecationWarning: blackbox.loop moved to blackbox.driver.loop in 0.2.0; import from blackbox.driver.loop

:data:`ALIASES` are the short public names of submodules (``blackbox.stop``, ``blackbox.optim``,
``blackbox.shaping``); they resolve the same way without a warning. Names that moved out of a module
that still exists are served by :func:`forward_names`, a module ``__getattr__`` that warns alike.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import FrameType, ModuleType
from typing import Any

__all__ = ["MOVED", "ALIASES", "MovedModules", "install", "forward_names", "moved_message"]

#: The release in which the 0.1.0 paths moved.
SINCE = "0.2.0"

#: 0.1.0 module path -> where it lives now (``git diff --stat 8e4f0e8 HEAD -M``: renames, and the
#: modules folded into another). A moved package carries its submodules: ``blackbox.datasets.idx``
#: is ``blackbox.problems.mnist.data.idx``.
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


def _caller_stacklevel() -> int:
    """The ``stacklevel`` that points a warning raised in this module at the code doing the import.

    ``warnings`` itself steps over the import system's frozen frames; this counts the frames of this
    module and of ``importlib.import_module`` that remain above the importer.
    """
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None:
        name = frame.f_code.co_filename
        if not ("importlib" in name and "_bootstrap" in name):  # frames warnings skips by itself
            if name not in (__file__, importlib.__file__):
                return level
            level += 1
        frame = frame.f_back
    return level


class _Alias(importlib.abc.Loader):
    """Loads an old name as the module that lives under the new name (imported there if needed)."""

    def __init__(self, old: str, new: str, deprecated: bool):
        self.old, self.new, self.deprecated = old, new, deprecated
        self._spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        if self.deprecated:
            warnings.warn(moved_message(self.old, self.new), DeprecationWarning, stacklevel=_caller_stacklevel())
        module = importlib.import_module(self.new)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system set the alias's spec on the module: give it back its own.
        module.__spec__ = self._spec


class MovedModules(importlib.abc.MetaPathFinder):
    """A finder for the old names in :data:`MOVED` and the public aliases in :data:`ALIASES`."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("blackbox."):
            return None
        found = _target(fullname)
        if found is None:
            return None
        new, deprecated = found
        if importlib.util.find_spec(new) is None:
            return None
        return importlib.util.spec_from_loader(fullname, _Alias(fullname, new, deprecated))


def install() -> None:
    """Put :class:`MovedModules` first on ``sys.meta_path`` (once): before the path finder, which
    would otherwise load a submodule of a moved package a second time under its old name."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModules())


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
