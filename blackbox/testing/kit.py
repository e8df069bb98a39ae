"""The machinery of the conformance kit: subjects, named checks, expected failures, reports.

A :class:`Subject` says what is checked (a registered name or spec, a class, a factory, or a
problem/executor instance) and how to build fresh copies of it. A :class:`Check` is one named
function ``check(subject)`` that raises :class:`CheckFailed` with a message saying what is wrong.
:func:`run_checks` runs every check of a subject's kind and returns a :class:`Report`.
"""

from __future__ import annotations

import copy
import inspect
import json
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.executor import Executor
from ..core.problem import Problem
from ..core.strategy import Strategy
from ..errors import BlackboxError, ConfigError, UnknownNameError, did_you_mean
from ..registry.plugins import make_executor, make_problem, make_strategy, registry_for
from ..registry.spec import format_spec, parse_spec

__all__ = [
    "CheckFailed", "ConformanceError", "Subject", "Check", "BoundCheck", "CheckResult", "Report",
    "KINDS", "checks_of", "checks_for", "run_checks", "fail",
]

KINDS = ("strategy", "problem", "executor")
_BASES = {"strategy": Strategy, "problem": Problem, "executor": Executor}
_PROTOCOL_HINTS = {  # how to tell a class's kind when it does not derive from a base class
    "strategy": ("ask", "tell"),
    "executor": ("start", "evaluate", "close"),
    "problem": ("evaluate", "initial_params"),
}


class CheckFailed(AssertionError):
    """A conformance check found behaviour that breaks the protocol; the message says which."""


class ConformanceError(BlackboxError, AssertionError):
    """Raised by :func:`run_checks` when a check failed (or an expected failure passed)."""

    def __init__(self, report: Report):
        super().__init__(str(report))
        self.report = report


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
        self.dim = int(options.pop("dim", 5)) if self.kind == "strategy" else None
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

    # -- factories --------------------------------------------------------------------------------
    def make_strategy(self, seed: int = 0, x0: Any = None, dim: int | None = None):
        """A fresh strategy of ``dim`` (default: the subject's) with ``seed`` and ``x0``."""
        self._require("strategy")
        dim = self.dim if dim is None else dim
        config = {"dim": dim, "seed": seed, "x0": x0, **self.options}
        if isinstance(self.target, str):
            return make_strategy(self.target, **config)
        return self.target(**config)

    def make_problem(self):
        """A fresh problem."""
        self._require("problem")
        return self._make_other(make_problem)

    def make_executor(self):
        """A fresh, not yet started executor."""
        self._require("executor")
        return self._make_other(make_executor)

    def _make_other(self, by_name: Callable):
        if isinstance(self.target, str):
            return by_name(self.target, **self.options)
        if isinstance(self.target, (Problem, Executor)) or not callable(self.target):
            return copy.deepcopy(self.target)
        return self.target(**self.options)

    def _require(self, kind: str) -> None:
        if self.kind != kind:
            raise ConfigError(f"{self.id} is a {self.kind}, not a {kind}")


def _infer_kind(target: Any, kind: str | None) -> str:
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


def _default_id(target: Any, options: dict[str, Any], kind: str) -> str:
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
    _load_checks()
    if kind not in _CHECKS:
        raise ConfigError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    return list(_CHECKS[kind].values())


def _load_checks() -> None:
    from . import executor_checks, problem_checks, strategy_checks  # noqa: F401 - they register themselves


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


@dataclass(frozen=True)
class BoundCheck:
    """A check bound to its subject: call it with no arguments. ``id`` reads ``subject-check``."""

    subject: Subject
    check: Check

    @property
    def name(self) -> str:
        return self.check.name

    @property
    def id(self) -> str:
        return f"{self.subject.id}-{self.check.name}"

    @property
    def expected_failure(self) -> str | None:
        """The declared reason this check fails for this subject, if any."""
        return self.subject.expected_failures.get(self.check.name)

    def __call__(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            self.check.function(self.subject)

    def __repr__(self) -> str:
        return f"<check {self.id}>"


def as_subject(target: Any, expected_failures: Mapping[str, str] | Callable[[Subject], Mapping[str, str]] | None = None,
               kind: str | None = None) -> Subject:
    """``target`` as a Subject, with ``expected_failures`` (a dict, or a callable of the subject) added."""
    subject = target if isinstance(target, Subject) else Subject(target, kind=kind)
    if expected_failures is not None:
        extra = expected_failures(subject) if callable(expected_failures) else expected_failures
        extra = dict(extra or {})
        names = {c.name for c in checks_of(subject.kind)}
        if not callable(expected_failures):  # one dict for several kinds: keep the names of this kind
            extra = {k: v for k, v in extra.items() if k in names or not _is_any_check(k)}
        validate_expected_failures(subject.kind, extra)
        subject.expected_failures = {**extra, **subject.expected_failures}
    return subject


def _is_any_check(name: str) -> bool:
    return any(name in {c.name for c in checks_of(kind)} for kind in KINDS)


def checks_for(target: Any, expected_failures=None, kind: str | None = None) -> Iterator[BoundCheck]:
    """Every check of the target's kind, bound to it."""
    subject = as_subject(target, expected_failures, kind)
    for check in checks_of(subject.kind):
        yield BoundCheck(subject, check)


# -- running without pytest -------------------------------------------------------------------------
@dataclass
class CheckResult:
    """The outcome of one check: ``passed``, ``failed``, ``xfail`` (failed as declared) or ``xpass``."""

    id: str
    name: str
    status: str
    message: str = ""
    reason: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status in ("passed", "xfail")


@dataclass
class Report:
    """What :func:`run_checks` found: one CheckResult per check."""

    subject: str
    results: list[CheckResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every check passed or failed as declared."""
        return all(r.ok for r in self.results)

    @property
    def failures(self) -> list[CheckResult]:
        """Checks that failed unexpectedly, or passed although declared to fail."""
        return [r for r in self.results if not r.ok]

    def __getitem__(self, name: str) -> CheckResult:
        for result in self.results:
            if result.name == name:
                return result
        raise KeyError(name)

    def as_dict(self) -> dict[str, Any]:
        return {"subject": self.subject, "ok": self.ok, "results": [r.__dict__ for r in self.results]}

    def __str__(self) -> str:
        counts = {s: sum(r.status == s for r in self.results) for s in ("passed", "failed", "xfail", "xpass")}
        head = f"{self.subject}: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n)
        lines = [head]
        for r in self.results:
            if r.status == "failed":
                lines.append(f"  FAILED {r.name}: {r.message}")
            elif r.status == "xpass":
                lines.append(f"  XPASS {r.name}: declared to fail ({r.reason}) but passed; drop the declaration")
            elif r.status == "xfail":
                lines.append(f"  xfail {r.name}: {r.reason}")
        return "\n".join(lines)

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2)


def run_checks(target: Any, *, expected_failures=None, kind: str | None = None, raise_on_failure: bool = True,
               only: list[str] | None = None) -> Report:
    """Run every check (or the ``only`` ones) of ``target``; raise ConformanceError if one fails.

    A check declared in ``expected_failures`` that fails counts as ``xfail``; one that passes
    counts as ``xpass``, a failure, so stale declarations do not linger.
    """
    bound = list(checks_for(target, expected_failures, kind))
    if only is not None:
        names = [b.name for b in bound]
        for name in only:
            if name not in names:
                raise UnknownNameError(f"no check {name!r}.{did_you_mean(name, names)}")
        bound = [b for b in bound if b.name in only]
    report = Report(bound[0].subject.id if bound else str(target))
    for check in bound:
        started = time.perf_counter()
        reason = check.expected_failure or ""
        try:
            check()
        except Exception as exc:  # noqa: BLE001 - any exception is a finding about the subject
            message = str(exc) if isinstance(exc, CheckFailed) else f"{type(exc).__name__}: {exc}"
            status = "xfail" if reason else "failed"
        else:
            message, status = "", ("xpass" if reason else "passed")
        report.results.append(CheckResult(check.id, check.name, status, message, reason,
                                          time.perf_counter() - started))
    if raise_on_failure and not report.ok:
        raise ConformanceError(report)
    return report
