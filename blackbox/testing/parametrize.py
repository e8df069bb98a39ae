"""The pytest face of the kit: one test per check, with ids such as ``openai-es-check_pickle``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .kit import Subject, checks_for

__all__ = ["parametrize_with_checks"]


def parametrize_with_checks(
    targets: Any | Iterable[Any],
    *,
    expected_failures: Mapping[str, str] | Callable[[Subject], Mapping[str, str]] | None = None,
    strict: bool = True,
) -> Any:
    """A ``pytest.mark.parametrize`` over every check of every target, passed as ``check``.

    ``targets`` is one target or a list of them: registered names or specs, classes, factories
    (wrapped in :class:`Subject` with ``kind=``), problem or executor instances, or Subjects.
    ``expected_failures`` maps check names to reasons (or is a callable of the Subject returning
    such a dict); those checks are marked ``xfail`` with the reason, ``strict`` by default, so a
    check that starts passing is reported and the declaration can go::

        @parametrize_with_checks(["my-es", Subject("my-problem", dim=4)])
        def test_conformance(check):
            check()
    """
    import pytest

    if isinstance(targets, (str, Subject)) or not isinstance(targets, Iterable):
        targets = [targets]
    params = []
    for target in targets:
        for bound in checks_for(target, expected_failures):
            reason = bound.expected_failure
            marks = [pytest.mark.xfail(reason=reason, strict=strict)] if reason else []
            params.append(pytest.param(bound, id=bound.id, marks=marks))
    return pytest.mark.parametrize("check", params)
