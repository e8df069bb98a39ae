"""The conformance kit itself: every check fails on a subject built to break it, passes on a
correct one, and the pytest and plain-Python faces report what they should."""

from __future__ import annotations

import numpy as np
import pytest

import blackbox as bb
from blackbox.testing import (
    ConformanceError,
    Subject,
    check_problem,
    check_strategy,
    checks_for,
    checks_of,
    parametrize_with_checks,
    plain_data_faults,
    run_checks,
    through_files,
)
from tests.helpers.broken import (
    BROKEN_EXECUTORS,
    BROKEN_PROBLEMS,
    BROKEN_STRATEGIES,
    ToyES,
    ToyProblem,
    WalksAway,
)


def _only(target, name, kind):
    return run_checks(Subject(target, kind=kind), only=[name], raise_on_failure=False)[name]


@pytest.mark.parametrize("broken", list(BROKEN_STRATEGIES), ids=lambda c: c.__name__)
def test_each_strategy_check_catches_its_fault(broken):
    name, fragment = BROKEN_STRATEGIES[broken]
    result = _only(broken, name, "strategy")
    assert result.status == "failed", f"{name} let {broken.__name__} pass"
    assert fragment in result.message, result.message


@pytest.mark.parametrize("broken", list(BROKEN_PROBLEMS), ids=lambda c: c.__name__)
def test_each_problem_check_catches_its_fault(broken):
    name, fragment = BROKEN_PROBLEMS[broken]
    result = _only(broken, name, "problem")
    assert result.status == "failed", f"{name} let {broken.__name__} pass"
    assert fragment in result.message, result.message


@pytest.mark.parametrize("broken", list(BROKEN_EXECUTORS), ids=lambda c: c.__name__)
def test_each_executor_check_catches_its_fault(broken):
    name, fragment = BROKEN_EXECUTORS[broken]
    result = _only(broken, name, "executor")
    assert result.status == "failed", f"{name} let {broken.__name__} pass"
    assert fragment in result.message, result.message


def test_every_check_is_seen_failing():
    caught = {("strategy", n) for n, _ in BROKEN_STRATEGIES.values()}
    caught |= {("problem", n) for n, _ in BROKEN_PROBLEMS.values()}
    caught |= {("executor", n) for n, _ in BROKEN_EXECUTORS.values()}
    every = {(kind, c.name) for kind in ("strategy", "problem", "executor") for c in checks_of(kind)}
    assert every - caught == set()


def test_correct_baselines_pass_everything():
    assert check_strategy(ToyES).ok  # dense, like CMA-ES
    assert check_problem(ToyProblem, dim=3).ok
    assert run_checks(Subject("openai-es", popsize=8, dim=3)).ok  # compact


def test_report_and_conformance_error_without_pytest():
    from tests.helpers.broken import Unpicklable

    with pytest.raises(ConformanceError) as info:
        check_strategy(WalksAway)
    report = info.value.report
    assert not report.ok and [r.name for r in report.failures] == ["check_converges_on_quadratic"]
    assert "FAILED check_converges_on_quadratic: the center's loss went from 5 to" in str(info.value)
    assert isinstance(info.value, bb.BlackboxError) and isinstance(info.value, AssertionError)

    report = check_strategy(Unpicklable, expected_failures={"check_pickle": "holds a lambda"})
    assert report.ok and report["check_pickle"].status == "xfail"
    assert report["check_pickle"].reason == "holds a lambda"
    assert "xfail check_pickle: holds a lambda" in str(report)
    assert '"status": "xfail"' in report.to_json()


def test_an_expected_failure_that_passes_is_reported():
    report = check_strategy(ToyES, expected_failures={"check_pickle": "thought it would fail"},
                            raise_on_failure=False)
    assert report["check_pickle"].status == "xpass" and not report.ok
    assert "XPASS check_pickle: declared to fail (thought it would fail) but passed" in str(report)


def test_expected_failures_are_validated():
    with pytest.raises(bb.errors.UnknownNameError, match="unknown strategy check 'check_pikle'. Did you mean 'check_pickle'?"):
        check_strategy(ToyES, expected_failures={"check_pikle": "typo"})
    with pytest.raises(bb.ConfigError, match="needs a reason"):
        Subject(ToyES, expected_failures={"check_pickle": ""})


def test_subjects_know_their_kind_and_id():
    assert Subject("openai-es").kind == "strategy"
    assert Subject("quadratic:dim=4").kind == "problem"
    assert Subject("serial").kind == "executor"
    assert Subject(ToyES).id == "toy-es"
    assert Subject("nes", popsize=20).id == "nes:popsize=20"
    assert Subject(ToyProblem, dim=3).make_problem().dim == 3
    assert [b.id for b in checks_for("ga")][:2] == ["ga-check_protocol", "ga-check_ask_shape_and_dtype"]
    with pytest.raises(bb.errors.UnknownNameError, match="Did you mean 'openai-es'"):
        Subject("openai_es")
    with pytest.raises(bb.ConfigError, match="not an instance"):
        Subject(bb.make_strategy("nes", dim=2))
    with pytest.raises(bb.ConfigError, match="set by each check"):
        Subject("nes", seed=3)
    with pytest.raises(bb.ConfigError, match="pass kind="):
        Subject(lambda **kw: None)
    factory = Subject(lambda dim, seed, x0: ToyES(dim=dim, seed=seed, x0=x0), kind="strategy", id="toy-factory")
    assert run_checks(factory, only=["check_seed_determinism"]).ok


def test_plain_data_and_files():
    state = {"a": np.arange(3.0), "b": [1, {"c": np.ones((2, 2), np.float32)}], "d": None, "e": 2.5}
    back = through_files(state)
    assert back["b"][1]["c"].dtype == np.float32 and np.array_equal(back["a"], state["a"])
    assert plain_data_faults(state) == []
    faults = plain_data_faults({"x": np.int64(3), 4: "k", "o": np.array([None]), "g": object()})
    assert len(faults) == 4 and "numpy.int64" in faults[0]


# the pytest face, exactly as a plugin author writes it (WalksAway's declared failure shows as xfail)
@parametrize_with_checks([Subject(WalksAway, expected_failures={"check_converges_on_quadratic": "walks away by design"}),
                          Subject(ToyProblem, dim=2)])
def test_parametrize_with_checks_runs_each_check(check):
    check()


# expected failures per target: WalksAway's declared failure must not touch the correct ToyES
@parametrize_with_checks([WalksAway, Subject(ToyES, id="toy-es-correct")],
                         expected_failures={"toy-es": {"check_converges_on_quadratic": "walks away by design"}})
def test_parametrize_with_checks_per_target(check):
    check()


def _marks(mark):
    return {p.id: [(m.name, m.kwargs) for m in p.marks] for p in mark.args[1]}


def test_expected_failures_per_target():
    marks = _marks(parametrize_with_checks(["nes", Subject(ToyES)], expected_failures={
        "toy-es": {"check_pickle": "holds a socket"}}))
    assert marks["toy-es-check_pickle"] == [("xfail", {"reason": "holds a socket", "strict": True})]
    assert marks["nes-check_pickle"] == [] and marks["toy-es-check_nan_fitness"] == []
    one = _marks(parametrize_with_checks(["nes"], expected_failures={"check_pickle": "reason"}))  # the old form
    assert one["nes-check_pickle"] == [("xfail", {"reason": "reason", "strict": True})]
    with pytest.raises(bb.ConfigError) as info:
        parametrize_with_checks(["nes", "ga"], expected_failures={"check_pickle": "reason"})
    assert str(info.value) == (
        "expected_failures={'check_pickle': ...} names no target, so it would apply to all 2 targets, and a check "
        "that passes for one of them fails as a strict XPASS; say which target it is for: "
        "expected_failures={'nes': {'check_pickle': ...}}")
    with pytest.raises(bb.errors.UnknownNameError) as info:
        parametrize_with_checks(["nes", "ga"], expected_failures={"nes:": {"check_pickle": "reason"}})
    assert str(info.value) == ("expected_failures names the target 'nes:', which is not one of the targets "
                               "(nes, ga). Did you mean 'nes'?")
    with pytest.raises(bb.ConfigError, match="mixes target ids with a check name"):
        parametrize_with_checks(["nes", "ga"], expected_failures={"nes": {"check_pickle": "r"}, "check_pickle": "r"})
    with pytest.raises(bb.errors.UnknownNameError, match="unknown strategy check 'check_pikle'"):
        parametrize_with_checks(["nes", "ga"], expected_failures={"ga": {"check_pikle": "typo"}})


def test_parametrize_ids_and_marks():
    mark = parametrize_with_checks(["nes"], expected_failures={"check_pickle": "reason"})
    params = mark.args[1]
    ids = [p.id for p in params]
    assert "nes-check_state_dict_round_trip" in ids and len(ids) == len(checks_of("strategy"))
    pickle_param = next(p for p in params if p.id == "nes-check_pickle")
    assert pickle_param.marks[0].name == "xfail" and pickle_param.marks[0].kwargs == {"reason": "reason", "strict": True}


def test_the_kit_documents_every_check():
    import blackbox.testing as kit

    for kind in ("strategy", "problem", "executor"):
        for check in checks_of(kind):
            assert f"``{check.name}``" in kit.__doc__, f"{kind} check {check.name} missing from the docstring"
            assert check.description, f"{check.name} has no docstring"


def test_blackbox_check_command(capsys):
    from blackbox.cli import main
    from blackbox.registry.plugins import strategies

    assert main(["check", "ga", "--dim", "3"]) == 0
    assert "16 of 16 checks ok" in capsys.readouterr().out
    strategies.register("walks-away", WalksAway)
    try:
        assert main(["check", "walks-away", "--only", "check_converges_on_quadratic"]) == 1
        out = capsys.readouterr().out
        assert "failed" in out and "0 of 1 checks ok" in out
        assert main(["check", "walks-away", "--only", "check_converges_on_quadratic",
                     "--expect-failure", "check_converges_on_quadratic=walks away by design"]) == 0
        assert "xfail" in capsys.readouterr().out
        assert main(["check", "walks-away", "--expect-failure", "check_pikle=typo"]) == 2
        assert "Did you mean 'check_pickle'?" in capsys.readouterr().err
    finally:
        strategies.unregister("walks-away")
    assert main(["check", "serial", "--json", "--only", "check_order_kept"]) == 0
    assert '"ok": true' in capsys.readouterr().out
