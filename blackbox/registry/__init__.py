"""From a name to an object: plugin discovery through entry points, spec strings, option binding.

``make_strategy("openai-es", dim=10)`` and friends build a plugin by name, spec string or
:class:`Component`; ``strategies``, ``problems`` and ``executors`` are the three registries
(``names()``, ``entry(name)``, ``register``); :func:`options_of` lists what a factory takes.
"""

from .component import KINDS, Component, as_component
from .options import FactoryOptions, Option, bind, options_of, resolved_config, resolved_options
from .parts import resolve_run_parts
from .plugins import (
    BrokenDistribution,
    PluginEntry,
    Registry,
    broken_distributions,
    check_protocol,
    executors,
    make,
    make_executor,
    make_problem,
    make_strategy,
    problems,
    refresh,
    registry_for,
    strategies,
)
from .spec import Spec, format_spec, parse_spec, parse_value

__all__ = [
    "KINDS", "BrokenDistribution", "Component", "FactoryOptions", "Option", "PluginEntry", "Registry", "Spec",
    "as_component", "bind", "broken_distributions", "check_protocol", "executors", "format_spec", "make",
    "make_executor", "make_problem", "make_strategy", "options_of", "parse_spec", "parse_value", "problems",
    "refresh", "registry_for", "resolve_run_parts", "resolved_config", "resolved_options", "strategies",
]
