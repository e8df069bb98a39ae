"""Running the conformance kit: checks bound to a subject, expected failures, reports.

What is checked and how a check is declared live in :mod:`blackbox.testing.subject`; the checks
themselves in the three check modules, imported here so that they register. :func:`checks_for`
binds every check of a subject's kind to it, and :func:`run_checks` runs them and returns a
:class:`Report`.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from ..errors import BlackboxError, UnknownNameError, did_you_mean
from . import executor_checks, problem_checks, strategy_checks  # noqa: F401 - importing them registers their checks
from .subject import (
    KINDS,
    Check,
    CheckFailed,
    Subject,
    checks_of,
    fail,
    register_check,
    validate_expected_failures,
)

__all__ = [
    "CheckFailed", "ConformanceError", "Subject", "Check", "BoundCheck", "CheckResult", "Report",
    "KINDS", "checks_of", "checks_for", "run_checks", "fail", "register_check", "validate_expected_failures",
]


#: Declared failures: ``{check_name: reason}``, or a callable of the Subject returning such a dict.
ExpectedFailures = Mapping[str, str] | Callable[[Subject], Mapping[str, str]] | None


class ConformanceError(BlackboxError, AssertionError):
    """Raised by :func:`run_checks` when a check failed (or an expected failure passed)."""

    def __init__(self, report: Report):
        super().__init__(str(report))
        self.report = report


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


def as_subject(target: object, expected_failures: ExpectedFailures = None, kind: str | None = None) -> Subject:
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


def checks_for(target: object, expected_failures: ExpectedFailures = None, kind: str | None = None) -> Iterator[BoundCheck]:
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

    def as_dict(self) -> dict[str, object]:
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


def run_checks(target: object, *, expected_failures: ExpectedFailures = None, kind: str | None = None,
               raise_on_failure: bool = True, only: list[str] | None = None) -> Report:
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
