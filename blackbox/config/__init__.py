"""From a TOML file plus command-line flags to a resolved run.

:mod:`.toml` reads TOML with line numbers, :mod:`.component` reads a strategy, problem or executor
from a spec string or a table, :mod:`.run` is the run-config schema (flags, ``--set``, presets,
resolution, config diffs), and :mod:`.resolved` the typed :class:`~.resolved.ResolvedRun` it gives.

``blackbox.config`` was one module in 0.1.0; its names still import from here, with a
DeprecationWarning naming the submodule each lives in now (``make_component`` is
``component.read_component``).
"""

from .._moved import forward_names

_RUN = "blackbox.config.run"
#: 0.1.0's ``blackbox.config.__all__`` -> where each name lives now.
MOVED_NAMES = {
    "ConfigDoc": "blackbox.config.toml", "load_toml": "blackbox.config.toml",
    "Component": "blackbox.registry.component",
    "make_component": "blackbox.config.component:read_component",
    "component_override": "blackbox.config.component",
    "build_components": "blackbox.config.resolved", "BUDGET_KEYS": "blackbox.config.resolved",
    **dict.fromkeys(("check_section", "RunConfig", "read_run_config", "resolve_run_config", "config_changes",
                     "breaking_changes", "set_override", "STOP_KEYS", "run_config", "set_value", "parse_set"), _RUN),
}

__getattr__ = forward_names(__name__, MOVED_NAMES)
