"""From a name to an object: plugin discovery through entry points, spec strings, option binding.

``make_strategy("openai-es", dim=10)`` and friends build a plugin by name; ``strategies``,
``problems`` and ``executors`` are the three registries (``names()``, ``entry(name)``, ``register``).
"""

from .plugins import (
    BrokenDistribution,
    PluginEntry,
    Registry,
    broken_distributions,
    check_options,
    check_protocol,
    executors,
    make_executor,
    make_problem,
    make_strategy,
    problems,
    refresh,
    registry_for,
    resolved_config,
    strategies,
)
from .spec import Spec, format_spec, parse_spec, parse_value

__all__ = [
    "BrokenDistribution", "PluginEntry", "Registry", "Spec", "broken_distributions", "check_options",
    "check_protocol", "executors", "format_spec", "make_executor", "make_problem", "make_strategy",
    "parse_spec", "parse_value", "problems", "refresh", "registry_for", "resolved_config", "strategies",
]
