"""The error family of blackbox: one base class, one subclass per kind of mistake.

Every error a user can cause is a :class:`BlackboxError`; the subclasses also derive from the
built-in exception a Python user would expect (``ValueError`` for bad values, ``RuntimeError``
for calls in the wrong order), so ``except ValueError`` keeps working.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "BlackboxError",
    "ConfigError",
    "SpecError",
    "UnknownNameError",
    "PluginError",
    "TellError",
    "StateError",
    "EvaluationError",
    "WorkerError",
    "CheckpointError",
    "CheckpointVersionError",
    "RunInUseError",
    "StorageError",
    "DatasetError",
    "ReductionError",
    "SumOverflowError",
    "did_you_mean",
]


class BlackboxError(Exception):
    """Base class of every error raised by blackbox for something a user can cause."""


class ConfigError(BlackboxError, ValueError):
    """A configuration value is missing, unknown, of the wrong type or out of range."""


class SpecError(ConfigError):
    """A spec string such as ``quadratic:dim=100`` could not be parsed."""


class UnknownNameError(ConfigError, KeyError):
    """A strategy, problem, executor or option name is not known."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0]) if self.args else ""


class PluginError(BlackboxError):
    """A plugin could not be loaded, clashes with another one, or breaks its protocol."""


class TellError(BlackboxError, ValueError):
    """``tell()`` received fitness values that do not fit the population from ``ask()``."""


class StateError(BlackboxError, RuntimeError):
    """A method was called in the wrong order (``tell`` before ``ask``, ``ask`` twice, ...)."""


class EvaluationError(BlackboxError, RuntimeError):
    """An evaluation raised; names the population row and seed and chains the cause."""

    def __init__(self, message: str, *, row: int | None = None, seed: int | None = None):
        super().__init__(message)
        self.row = row
        self.seed = seed

    def __reduce__(self):  # keep row and seed when crossing process boundaries
        return (_rebuild_evaluation_error, (str(self), self.row, self.seed))


def _rebuild_evaluation_error(message: str, row: int | None, seed: int | None) -> EvaluationError:
    return EvaluationError(message, row=row, seed=seed)


class WorkerError(BlackboxError, RuntimeError):
    """A worker process or actor failed in a way that retrying could not repair."""


class CheckpointError(BlackboxError, OSError):
    """A checkpoint is missing, truncated, corrupt, or could not be written."""


class CheckpointVersionError(CheckpointError):
    """A checkpoint in a newer format than this blackbox reads: not corrupt, so it is neither set
    aside nor skipped; upgrading blackbox resumes it."""


class RunInUseError(BlackboxError, RuntimeError):
    """A run directory is in use by another blackbox process (its lock file names the holder)."""


class StorageError(BlackboxError, OSError):
    """A file of a run (records, result, solution, config) could not be written: a full disk, a
    read-only file system, missing permissions."""


class DatasetError(BlackboxError, ValueError):
    """A data file is missing or malformed (bad header, truncated data, inconsistent sizes)."""


class ReductionError(BlackboxError, ValueError):
    """Partial noise-weighted sums that do not make one whole: made for another generation's
    coefficients, a block counted twice, or a block missing."""


class SumOverflowError(ReductionError, OverflowError):
    """A noise-weighted sum that cannot be computed exactly: a coefficient that is not finite, or
    sums beyond float32's range. Refused instead of wrapped or rounded to infinity."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """Return ``' Did you mean 'x'?'`` for the closest choice, or an empty string."""
    close = difflib.get_close_matches(str(name), list(choices), n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""
