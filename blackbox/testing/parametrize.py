"""The pytest face of the kit: one test per check, with ids such as ``openai-es-check_pickle``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, UnknownNameError, did_you_mean
from .kit import Subject, as_subject, checks_for

if TYPE_CHECKING:
    from pytest import MarkDecorator

__all__ = ["parametrize_with_checks"]

#: What ``expected_failures`` may be: per target ``{target_id: {check: reason}}``; for a single target
#: ``{check: reason}``; or a callable of each Subject returning ``{check: reason}``.
ExpectedFailures = (Mapping[str, Mapping[str, str]] | Mapping[str, str]
                    | Callable[[Subject], Mapping[str, str]] | None)


def parametrize_with_checks(
    targets: object | Iterable[object],
    *,
    expected_failures: ExpectedFailures = None,
    strict: bool = True,
) -> MarkDecorator:
    """A ``pytest.mark.parametrize`` over every check of every target, passed as ``check``.

    ``targets`` is one target or a list of them: registered names or specs, classes, factories
    (wrapped in :class:`Subject` with ``kind=``), problem or executor instances, or Subjects.
    ``expected_failures`` says which checks fail on purpose, per target: ``{target_id: {check:
    reason}}`` with the ids the tests carry (``"my-es"``, ``"nes:popsize=20"``); ``{check: reason}``
    when there is one target; or a callable of the Subject returning ``{check: reason}``. Those
    checks are marked ``xfail`` with the reason, ``strict`` by default, so a check that starts
    passing is reported and the declaration can go::

        @parametrize_with_checks(["my-es", "my-problem"],
                                 expected_failures={"my-es": {"check_pickle": "holds a socket"}})
        def test_conformance(check):
            check()
    """
    import pytest

    if isinstance(targets, (str, Subject)) or not isinstance(targets, Iterable):
        targets = [targets]
    subjects = [as_subject(target) for target in targets]
    params = []
    for subject, declared in zip(subjects, _per_target(expected_failures, subjects), strict=True):
        for bound in checks_for(subject, declared):
            reason = bound.expected_failure
            marks = [pytest.mark.xfail(reason=reason, strict=strict)] if reason else []
            params.append(pytest.param(bound, id=bound.id, marks=marks))
    return pytest.mark.parametrize("check", params)


def _per_target(expected: ExpectedFailures, subjects: list[Subject]) -> list[Any]:
    """The declaration that applies to each subject, in order (None: nothing declared for it)."""
    if expected is None or callable(expected):
        return [expected] * len(subjects)
    if not isinstance(expected, Mapping):
        raise ConfigError(f"expected_failures must be a dict, got {type(expected).__name__}")
    nested = [key for key, value in expected.items() if isinstance(value, Mapping)]
    ids = [subject.id for subject in subjects]
    if not nested:
        if len(subjects) > 1 and expected:
            first = next(iter(expected))
            raise ConfigError(
                f"expected_failures={{{first!r}: ...}} names no target, so it would apply to all {len(subjects)} "
                f"targets, and a check that passes for one of them fails as a strict XPASS; say which target it "
                f"is for: expected_failures={{{ids[0]!r}: {{{first!r}: ...}}}}"
            )
        return [expected] * len(subjects)
    if len(nested) != len(expected):
        flat = next(key for key in expected if key not in nested)
        raise ConfigError(
            f"expected_failures mixes target ids with a check name ({flat!r}); give one dict per target id: "
            f"expected_failures={{{ids[0]!r}: {{{flat!r}: ...}}}}"
        )
    for key in expected:
        if key not in ids:
            raise UnknownNameError(
                f"expected_failures names the target {key!r}, which is not one of the targets "
                f"({', '.join(ids)}).{did_you_mean(key, ids)}"
            )
    return [expected.get(subject.id) for subject in subjects]
