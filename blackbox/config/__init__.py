"""From a TOML file plus command-line flags to a resolved run.

:mod:`.toml` reads TOML with line numbers, :mod:`.component` reads a strategy, problem or executor
from a spec string or a table, :mod:`.run` is the run-config schema (flags, ``--set``, presets,
resolution, config diffs), and :mod:`.resolved` the typed :class:`~.resolved.ResolvedRun` it gives.
"""
