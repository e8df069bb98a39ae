"""Problems that take populations (``evaluate_population``): the executors' row routine hands them every
row in one call, compact as it is, and still names a failing row through ``evaluate``."""

from __future__ import annotations

import numpy as np
import pytest

import blackbox as bb
from blackbox.core.executor import evaluate_rows
from blackbox.core.problem import EvalResult, EvaluatesPopulations, Problem
from blackbox.errors import EvaluationError


class Negated(Problem):
    """-sum(x^2); ``evaluate_population`` records what it was given; a row whose first value is above
    ``fail_above`` makes both paths raise."""

    dim = 3

    def __init__(self, fail_above: float = np.inf):
        self.fail_above = fail_above
        self.calls: list[tuple[bool, int]] = []

    def evaluate(self, params, seeds):
        if np.any(params[:, 0] > self.fail_above):
            raise ValueError("diverged")
        return EvalResult(-np.sum(params**2, axis=1), np.zeros(len(params), dtype=np.int64))

    def evaluate_population(self, population, seeds):
        self.calls.append((population.is_compact, len(population)))
        return self.evaluate(population.params, seeds)


def test_all_rows_go_in_one_call_as_the_compact_population():
    problem = Negated()
    assert isinstance(problem, EvaluatesPopulations)
    es = bb.make_strategy("openai-es", dim=3, popsize=10, seed=0)
    population = es.ask()
    result = evaluate_rows(problem, population, np.arange(10), batch_size=2)
    assert problem.calls == [(True, 10)]
    assert result.fitness.tobytes() == (-np.sum(population.params**2, axis=1)).tobytes()


def test_a_failing_row_is_named_as_for_any_problem():
    es = bb.make_strategy("openai-es", dim=3, popsize=10, sigma=1.0, seed=0, x0=np.zeros(3))
    population = es.ask()
    worst = int(np.argmax(population.params[:, 0]))
    problem = Negated(fail_above=np.sort(population.params[:, 0])[-2])
    with pytest.raises(EvaluationError) as info:
        evaluate_rows(problem, population, np.arange(10) + 100, index=np.arange(10) + 50)
    assert str(info.value) == f"evaluation of row {50 + worst} (seed {100 + worst}) failed: ValueError: diverged"


def test_serial_executor_results_equal_the_plain_problem():
    class Plain(Problem):
        dim = 3

        def evaluate(self, params, seeds):
            return Negated().evaluate(params, seeds)

    a = bb.optimize("openai-es:popsize=8", Negated(), "serial", max_generations=3, seed=0)
    b = bb.optimize("openai-es:popsize=8", Plain(), "serial", max_generations=3, seed=0)
    assert a.center.tobytes() == b.center.tobytes()
