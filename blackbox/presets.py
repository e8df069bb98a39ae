"""Problem presets: recommended settings a problem offers for ``blackbox run``.

A problem class (or factory) may define ``recommended(*args, strategy=name, **options)`` returning
``{"problem": {...}, "strategy": {...}, "run": {...}}``: problem options, options for the named
strategy, and run settings (a budget such as ``generations`` or ``max_time``, and a ``goal`` with
``goal_generations`` or ``goal_episodes``). ``blackbox run`` fills in from it whatever the user did
not set: problem and strategy options one by one, the budget only when no budget was given, the
goal only when no ``--goal`` was given. ``--no-preset`` turns it off. The gym problem's presets
live in :mod:`blackbox.problems.gym_presets`.
"""

from __future__ import annotations

from typing import Any

from .errors import ConfigError
from .registry import problems
from .spec import Spec

__all__ = ["problem_preset", "empty_preset"]

_SECTIONS = ("problem", "strategy", "run")


def empty_preset() -> dict[str, dict[str, Any]]:
    return {section: {} for section in _SECTIONS}


def problem_preset(spec: Spec, strategy: str) -> dict[str, dict[str, Any]]:
    """The preset the problem named by ``spec`` recommends for ``strategy`` (empty if none)."""
    factory = problems.load(spec.name)
    hook = getattr(factory, "recommended", None)
    if not callable(hook):
        return empty_preset()
    preset = hook(*spec.args, strategy=strategy, **spec.kwargs)
    if not isinstance(preset, dict) or not set(preset) <= set(_SECTIONS):
        raise ConfigError(f"problem {spec.name!r}: recommended() must return a dict with keys {_SECTIONS}")
    return {section: dict(preset.get(section) or {}) for section in _SECTIONS}
