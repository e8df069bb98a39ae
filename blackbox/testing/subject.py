"""What the conformance kit checks and how a check is declared: :class:`Subject`, :class:`Check`,
:func:`register_check`, :func:`fail`, and the bit-for-bit comparisons the checks share.

A :class:`Subject` says what is checked (a registered name or spec, a class, a factory, or a
problem/executor instance) and how to build fresh copies of it. A :class:`Check` is one named
function ``check(subject)`` that raises :class:`CheckFailed` with a message saying what is wrong;
the check modules (``strategy_checks``, ``problem_checks``, ``executor_checks``) declare theirs with
``register_check(kind)`` and :mod:`blackbox.testing.kit` runs them.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from ..core.executor import Executor
from ..core.problem import EvalResult, Problem
from ..core.strategy import Strategy
from ..errors import ConfigError, UnknownNameError, did_you_mean
from ..registry.plugins import make_executor, make_problem, make_strategy, registry_for
from ..registry.spec import format_spec, parse_spec

__all__ = [
    "KINDS", "CheckFailed", "fail", "Subject", "Check", "register_check", "checks_of",
    "validate_expected_failures", "same", "describe_difference", "same_result",
]

_T = TypeVar("_T")

KINDS = ("strategy", "problem", "executor")
_BASES = {"strategy": Strategy, "problem": Problem, "executor": Executor}
_PROTOCOL_HINTS = {  # how to tell a class's kind when it does not derive from a base class
    "strategy": ("ask", "tell"),
    "executor": ("start", "evaluate", "close"),
    "problem": ("evaluate", "initial_params"),
}


class CheckFailed(AssertionError):
    """A conformance check found behaviour that breaks the protocol; the message says which."""


def fail(message: str) -> CheckFailed:
    """The exception a check raises: ``raise fail("what was expected, what came")``."""
    return CheckFailed(message)


# -- subjects ---------------------------------------------------------------------------------------
class Subject:
    """What the kit checks, and how to build fresh copies of it for each check.

    ``target`` is a registered name or spec string (``"openai-es"``, ``"quadratic:dim=4"``), a
    class, a factory function (give ``kind``), or a problem or executor instance (deep-copied for
    every check). ``options`` are passed to the constructor. For a strategy, ``dim`` is the
    dimension the checks use (default 5) and ``dim``, ``seed`` and ``x0`` are set by the checks;
    for a problem or an executor ``dim`` is an ordinary option. ``expected_failures`` maps a check
    name to the reason it is expected to fail.
    """

    def __init__(self, target: Any, *, kind: str | None = None, id: str | None = None,
                 expected_failures: Mapping[str, str] | None = None, **options: Any):
        if isinstance(target, Subject):
            raise ConfigError("target is already a Subject; pass it as it is")
        self.target = target
        self.kind = _infer_kind(target, kind)
        self.dim: int | None = int(options.pop("dim", 5)) if self.kind == "strategy" else None
        if self.kind == "strategy":
            for reserved in ("seed", "x0"):
                if reserved in options:
                    raise ConfigError(f"{reserved} is set by each check; do not pass it to Subject")
            if isinstance(target, Strategy):
                raise ConfigError(
                    f"pass the strategy's class or registered name with its options, not an instance "
                    f"({type(target).__name__}): the checks build strategies with their own seeds"
                )
        self.options = options
        shown = {**options, "dim": self.dim} if self.kind == "strategy" and self.dim != 5 else options
        self.id = id or _default_id(target, shown, self.kind)
        self.expected_failures = dict(expected_failures or {})
        validate_expected_failures(self.kind, self.expected_failures)

    def __repr__(self) -> str:
        return f"Subject({self.id!r}, kind={self.kind!r})"

    @property
    def strategy_dim(self) -> int:
        """The dimension the strategy checks build strategies in (a strategy subject only)."""
        if self.dim is None:
            raise ConfigError(f"{self.id} is a {self.kind}, not a strategy")
        return self.dim

    # -- factories --------------------------------------------------------------------------------
    def make_strategy(self, seed: int = 0, x0: npt.ArrayLike | None = None, dim: int | None = None) -> Strategy:
        """A fresh strategy of ``dim`` (default: the subject's) with ``seed`` and ``x0``."""
        self._require("strategy")
        dim = self.dim if dim is None else dim
        config = {"dim": dim, "seed": seed, "x0": x0, **self.options}
        if isinstance(self.target, str):
            return make_strategy(self.target, **config)
        return self.target(**config)

    def make_problem(self) -> Problem:
        """A fresh problem."""
        self._require("problem")
        return self._make_other(make_problem)

    def make_executor(self) -> Executor:
        """A fresh, not yet started executor."""
        self._require("executor")
        return self._make_other(make_executor)

    def _make_other(self, by_name: Callable[..., _T]) -> _T:
        if isinstance(self.target, str):
            return by_name(self.target, **self.options)
        if isinstance(self.target, (Problem, Executor)) or not callable(self.target):
            return copy.deepcopy(self.target)
        return self.target(**self.options)

    def _require(self, kind: str) -> None:
        if self.kind != kind:
            raise ConfigError(f"{self.id} is a {self.kind}, not a {kind}")


def _infer_kind(target: object, kind: str | None) -> str:
    if kind is not None:
        if kind not in KINDS:
            raise ConfigError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}.{did_you_mean(kind, KINDS)}")
        return kind
    if isinstance(target, str):
        name = parse_spec(target).name
        holders = [k for k in KINDS if name in registry_for(k).names()]
        if len(holders) == 1:
            return holders[0]
        if not holders:
            everything = [n for k in KINDS for n in registry_for(k).names()]
            raise UnknownNameError(
                f"no strategy, problem or executor is registered as {name!r}.{did_you_mean(name, everything)}"
            )
        raise ConfigError(f"{name!r} names a {' and a '.join(holders)}; pass kind= to say which to check")
    for k, base in _BASES.items():
        if (inspect.isclass(target) and issubclass(target, base)) or isinstance(target, base):
            return k
    probe = target if inspect.isclass(target) else type(target)
    if inspect.isclass(target) or not callable(target):
        for k, methods in _PROTOCOL_HINTS.items():
            if all(hasattr(probe, m) for m in methods):
                return k
    raise ConfigError(
        f"cannot tell whether {target!r} is a strategy, a problem or an executor; pass kind="
    )


def _default_id(target: object, options: dict[str, object], kind: str) -> str:
    if isinstance(target, str):
        spec = parse_spec(target)
        return format_spec(spec.name, *spec.args, **{**spec.kwargs, **options})
    obj = target if (inspect.isclass(target) or inspect.isfunction(target)) else type(target)
    name = getattr(obj, "name", "") or getattr(obj, "__name__", kind)
    if not isinstance(name, str) or not name:
        name = getattr(obj, "__name__", kind)
    return format_spec(name, **options) if options else name


# -- checks -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Check:
    """One named check of one kind; ``function(subject)`` raises CheckFailed when it finds a fault."""

    name: str
    kind: str
    function: Callable[[Subject], None]

    @property
    def description(self) -> str:
        """The first line of the check's docstring."""
        return (inspect.getdoc(self.function) or "").splitlines()[0] if self.function.__doc__ else ""


_CHECKS: dict[str, dict[str, Check]] = {kind: {} for kind in KINDS}


def register_check(kind: str) -> Callable[[Callable[[Subject], None]], Callable[[Subject], None]]:
    """Decorator adding a function named ``check_*`` to the checks of ``kind`` (in source order)."""

    def add(function: Callable[[Subject], None]) -> Callable[[Subject], None]:
        if not function.__name__.startswith("check_"):
            raise ValueError(f"check functions are named check_*, got {function.__name__}")
        _CHECKS[kind][function.__name__] = Check(function.__name__, kind, function)
        return function

    return add


def checks_of(kind: str) -> list[Check]:
    """Every check of ``kind`` (``strategy``, ``problem`` or ``executor``), in order."""
    if kind not in _CHECKS:
        raise ConfigError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    return list(_CHECKS[kind].values())


def validate_expected_failures(kind: str, expected: Mapping[str, str]) -> None:
    """Refuse unknown check names and empty reasons: a typo must not silence nothing."""
    names = [c.name for c in checks_of(kind)]
    for name, reason in expected.items():
        if name not in names:
            raise UnknownNameError(
                f"expected failure for unknown {kind} check {name!r}.{did_you_mean(name, names)} "
                f"Checks: {', '.join(names)}"
            )
        if not isinstance(reason, str) or not reason.strip():
            raise ConfigError(f"expected failure {name!r} needs a reason (a non-empty string), got {reason!r}")


# -- comparisons the checks share ----------------------------------------------------------------
def describe_difference(a: np.ndarray, b: np.ndarray) -> str:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return f"shapes {a.shape} and {b.shape}"
    differ = np.flatnonzero(~((a == b) | (np.isnan(a) & np.isnan(b))).ravel())
    if not len(differ):
        return "no difference"
    i = np.unravel_index(differ[0], a.shape)
    return f"{len(differ)} of {a.size} values differ, first at {tuple(int(k) for k in i)}: {a[i]!r} vs {b[i]!r}"


def same(a: npt.ArrayLike, b: npt.ArrayLike) -> bool:
    """Whether ``a`` and ``b`` are arrays of one shape with equal values, NaN where the other has NaN."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


def same_result(a: EvalResult, b: EvalResult) -> str:
    """'' when both results are bit-identical, else what differs."""
    if not same(a.fitness, b.fitness):
        return f"fitness differs ({describe_difference(a.fitness, b.fitness)})"
    if not same(a.steps, b.steps):
        return f"steps differ ({describe_difference(a.steps, b.steps)})"
    if set(a.info) != set(b.info):
        return f"info keys differ: {sorted(a.info)} vs {sorted(b.info)}"
    for key in a.info:
        if not same(np.asarray(a.info[key]), np.asarray(b.info[key])):
            return f"info[{key!r}] differs"
    return ""
