"""``blackbox.testing``: the conformance kit every strategy, problem and executor can run.

Modeled on scikit-learn's ``parametrize_with_checks``: a list of small named checks per kind, each
one a function that builds fresh objects, exercises one promise of the protocol and fails with a
message saying what was expected and what came. The built-ins run it on themselves; a plugin runs
it in four lines of pytest::

    from blackbox.testing import parametrize_with_checks

    @parametrize_with_checks(["my-es"])          # one test per check: my-es-check_pickle, ...
    def test_conformance(check):
        check()

or without pytest::

    from blackbox.testing import check_strategy
    report = check_strategy("my-es", popsize=16)  # raises ConformanceError listing what failed
    print(report)

What can be checked (a *target*):

- a registered name or spec string: ``"openai-es"``, ``"nes:popsize=20"``, ``"bbob:function=3,dim=5"``;
- a class (a Strategy, Problem or Executor subclass, or one with the protocol's methods);
- a factory function, wrapped as ``Subject(factory, kind="strategy")``;
- a problem or executor instance (deep-copied for each check);
- a :class:`Subject`, which adds constructor options, an id, and expected failures:
  ``Subject("cma", popsize=8, expected_failures={"check_pickle": "why"})``.

Strategies are built by the checks as ``factory(dim=..., seed=..., x0=..., **options)`` with
``dim`` = ``Subject(dim=...)`` (default 5). Expected failures are ``{check_name: reason}``; such a
check counts as ``xfail`` when it fails and as a failure (``xpass``) when it passes, so stale
declarations surface. An unknown check name in a declaration is an error.

The checks (``checks_of(kind)`` lists them with their descriptions):

- strategy: ``check_protocol``, ``check_ask_shape_and_dtype``, ``check_generation_counter``,
  ``check_tell_leaves_inputs_alone``, ``check_tell_keeps_the_old_center``, ``check_seed_determinism``,
  ``check_state_dict_plain_data``, ``check_state_dict_round_trip``,
  ``check_state_dict_between_ask_and_tell``, ``check_pickle``, ``check_nan_fitness``,
  ``check_nan_row_never_the_center``, ``check_constant_fitness``, ``check_tell_wrong_length``,
  ``check_call_order``, ``check_converges_on_quadratic`` (the loss on ``-|x - x*|^2`` from
  ``x* + 1`` must drop 100-fold within 1000 generations and 200,000 evaluations);
- problem: ``check_protocol``, ``check_initial_params``, ``check_evaluate_shapes``,
  ``check_finite_fitness``, ``check_deterministic_per_seed``, ``check_rows_independent``,
  ``check_does_not_mutate_input``, ``check_pickle``, ``check_state_sync``;
- executor: ``check_evaluate_before_start``, ``check_order_kept``, ``check_same_as_serial``,
  ``check_state_reaches_workers``, ``check_errors_surface``, ``check_close_and_restart``,
  ``check_run_matches_serial``.

State dicts are sent through :func:`through_files` (arrays through ``.npz`` without pickle, the
rest through JSON) before they are loaded, so a state that would not survive a checkpoint file
fails. Checks that feed NaN or constant fitness turn RuntimeWarnings into failures.
"""

from __future__ import annotations

from typing import Any

from .kit import (
    BoundCheck,
    Check,
    CheckFailed,
    CheckResult,
    ConformanceError,
    Report,
    Subject,
    checks_for,
    checks_of,
    run_checks,
)
from .parametrize import parametrize_with_checks
from .plain import plain_data_faults, through_files

__all__ = [
    "BoundCheck", "Check", "CheckFailed", "CheckResult", "ConformanceError", "Report", "Subject",
    "check_executor", "check_problem", "check_strategy", "checks_for", "checks_of",
    "parametrize_with_checks", "plain_data_faults", "run_checks", "through_files",
]


def check_strategy(target: object, *, expected_failures: dict[str, str] | None = None, dim: int = 5,
                   raise_on_failure: bool = True, **options: Any) -> Report:
    """Run every strategy check on ``target`` built with ``options``; see :func:`run_checks`."""
    subject = Subject(target, kind="strategy", expected_failures=expected_failures, dim=dim, **options)
    return run_checks(subject, raise_on_failure=raise_on_failure)


def check_problem(target: object, *, expected_failures: dict[str, str] | None = None,
                  raise_on_failure: bool = True, **options: Any) -> Report:
    """Run every problem check on ``target`` built with ``options``; see :func:`run_checks`."""
    subject = Subject(target, kind="problem", expected_failures=expected_failures, **options)
    return run_checks(subject, raise_on_failure=raise_on_failure)


def check_executor(target: object, *, expected_failures: dict[str, str] | None = None,
                   raise_on_failure: bool = True, **options: Any) -> Report:
    """Run every executor check on ``target`` built with ``options``; see :func:`run_checks`."""
    subject = Subject(target, kind="executor", expected_failures=expected_failures, **options)
    return run_checks(subject, raise_on_failure=raise_on_failure)
