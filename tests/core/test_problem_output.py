"""One validation of fitness and steps, the same whether values come through ``tell()`` or from a
problem's ``evaluate`` (issue 16): what ``tell()`` refuses is refused when a problem returns it, and
an exit inside ``evaluate`` is an evaluation error."""

from __future__ import annotations

import numpy as np
import pytest

import blackbox as bb
from blackbox.core.executor import evaluate_rows
from blackbox.executors.serial import SerialExecutor
from tests.helpers.crash_problems import BAD_OUTPUTS, Misbehaves
from tests.helpers.extras import import_or_skip

#: The fitness values of BAD_OUTPUTS, as tell() receives them.
FITNESS_OF = {"string-fitness": ["a"] * 4, "none-fitness": [None] * 4, "complex-fitness": np.zeros(4) + 1j}


def marked(rows: int = 4, mark: int = 2) -> bb.Population:
    params = np.zeros((rows, 2))
    params[:, 1] = np.arange(rows)
    params[mark, 0] = 1.0
    return bb.Population.from_dense(params)


@pytest.mark.parametrize("mode", sorted(BAD_OUTPUTS))
def test_bad_output_is_an_evaluation_error_naming_the_rows(mode):
    with pytest.raises(bb.errors.EvaluationError) as info:
        evaluate_rows(Misbehaves(mode), marked(), np.arange(10, 14), batch_size=1)
    message = str(info.value)
    assert message.startswith("problem.evaluate ") and message.endswith("(evaluating row 2)"), message
    assert info.value.row == 2


@pytest.mark.parametrize("mode, expected", [
    ("string-fitness", "returned fitness of type ndarray that is not real numbers (values of type <U1)"),
    ("none-fitness", "returned fitness of type list that is not real numbers (NoneType None is not a real number)"),
    ("complex-fitness", "returned fitness of type ndarray that is not real numbers (values of type complex128)"),
    ("scalar-info", "returned info['x'] with a single value for 4 rows; expected one entry per row"),
    ("none-steps", "returned steps that are not step counts: None; return one step count per row"),
    ("nan-steps", "returned steps that are not step counts: nan steps; counts must be whole numbers from 0 to 4294967296"),
    ("negative-steps", "returned steps that are not step counts: -5 steps; counts must be whole numbers"),
    ("huge-steps", "returned steps that are not step counts: 4611686018427387904 steps; counts must be whole"),
    ("fractional-steps", "returned steps that are not step counts: 2.5 steps; counts must be whole numbers"),
])
def test_what_was_converted_silently_is_refused_with_the_reason(mode, expected):
    with pytest.raises(bb.errors.EvaluationError) as info:
        evaluate_rows(Misbehaves(mode), marked(), np.arange(4))
    assert expected in str(info.value)
    assert str(info.value).endswith("(evaluating rows 0..3)")


@pytest.mark.parametrize("mode", sorted(FITNESS_OF))
def test_tell_refuses_what_evaluate_refuses(mode):
    strategy = bb.make_strategy("openai-es", dim=2, popsize=4, seed=0)
    strategy.ask()
    with pytest.raises(bb.errors.TellError, match="tell\\(\\) needs real numbers"):
        strategy.tell(FITNESS_OF[mode])
    with pytest.raises(bb.errors.EvaluationError, match="is not real numbers|not real numbers"):
        evaluate_rows(Misbehaves(mode), marked(), np.arange(4))


def test_a_tensor_that_requires_grad_is_one_clear_error_on_both_paths():
    torch = import_or_skip("torch", "torch")
    hint = "Use tensor.detach().numpy() instead"
    for name in bb.registry.strategies.names():
        strategy = bb.make_strategy(name, dim=3, popsize=8, seed=0)
        population = strategy.ask()
        with pytest.raises(bb.errors.TellError, match="got Tensor that does not convert to floats") as info:
            strategy.tell(torch.zeros(len(population), requires_grad=True))
        assert hint in str(info.value), name
        strategy.tell(torch.zeros(len(population)).numpy())  # nothing was changed by the refusal
    with pytest.raises(bb.errors.EvaluationError, match="returned fitness of type Tensor that is not real numbers"):
        evaluate_rows(Misbehaves("torch-grad"), marked(), np.arange(4))


def test_values_that_were_fine_stay_fine():
    class Fine(bb.Problem):
        dim = 2

        def evaluate(self, params, seeds):
            m = len(params)
            fitness = [True, 2**70, np.nan, -np.inf][:m]  # bools, huge ints, NaN and infinities
            return bb.EvalResult(fitness, np.array([0.0, 3.0, 2**32, 7][:m]), {"obs": [[1, 2]] * m})

    result = evaluate_rows(Fine(), marked(), np.arange(4))
    assert result.fitness.tolist()[:2] == [1.0, float(2**70)] and np.isnan(result.fitness[2])
    assert result.steps.tolist() == [0, 3, 2**32, 7] and result.steps.dtype == np.int64
    assert result.info["obs"].shape == (4, 2)


def test_info_keys_that_differ_between_batches_are_an_evaluation_error():
    class Shifty(bb.Problem):
        dim = 2

        def evaluate(self, params, seeds):
            m = len(params)
            key = "a" if params[0, 1] < 2 else "b"
            return bb.EvalResult(np.zeros(m), np.zeros(m, dtype=np.int64), {key: np.zeros(m)})

    with pytest.raises(bb.errors.EvaluationError, match=r"info with keys \['a'\] for some rows and \['b'\] for others"):
        evaluate_rows(Shifty(), marked(), np.arange(4), batch_size=2)


def test_sys_exit_inside_evaluate_is_an_evaluation_error_under_serial():
    executor = SerialExecutor()
    executor.start(Misbehaves("exit"))
    with pytest.raises(bb.errors.EvaluationError) as info:
        executor.evaluate(marked(), np.arange(20, 24))
    assert str(info.value) == "evaluation of row 2 (seed 22) failed: SystemExit: the problem called sys.exit(0)"
    assert (info.value.row, info.value.seed) == (2, 22)


def test_sys_exit_inside_evaluate_ends_blackbox_run_with_status_2(tmp_path, capsys):
    from blackbox.cli import main
    from blackbox.registry.plugins import problems

    problems.register("exits-on-mark", lambda: Misbehaves("exit"))
    try:
        status = main(["run", "--problem", "exits-on-mark", "--strategy", "openai-es:popsize=4,sigma=2",
                       "--generations", "3", "--out", str(tmp_path / "run"), "--quiet"])
    finally:
        problems.unregister("exits-on-mark")
    err = capsys.readouterr().err
    assert status == 2, err
    assert "blackbox run: error: evaluation of row" in err and "the problem called sys.exit(0)" in err
