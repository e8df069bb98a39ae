"""RowSource: rows read one at a time with the bits of Population.rows, no dense array built."""

import numpy as np
import pytest

from blackbox.core.executor import evaluate_rows
from blackbox.core.noise import NoiseTable
from blackbox.core.population import Population
from blackbox.core.problem import EvalResult, Problem
from blackbox.core.row_source import RowSource


def _population(dim: int, sigma) -> Population:
    rng = np.random.default_rng(4)
    table = NoiseTable(2**16, seed=3)
    bases = rng.standard_normal((2, dim))
    offsets = np.array([0, 0, 17, 2**16 - dim - 1, 5, 9])
    signs = np.array([1, -1, 1, -1, 0, 1])
    parents = np.array([0, 0, 1, 1, 1, 0])
    return Population.compact(table, bases, offsets, signs, sigma, parents=parents)


@pytest.mark.parametrize("dim", [7, 2**15 + 3])  # one chunk, and more than one
@pytest.mark.parametrize("per_dimension", [False, True])
def test_rows_read_one_at_a_time_have_the_bits_of_rows(dim, per_dimension):
    sigma = np.linspace(0.01, 0.3, dim) if per_dimension else 0.07
    population = _population(dim, sigma)
    source = RowSource(population, np.arange(len(population)))
    want = population.rows(np.arange(len(population)))
    assert source.shape == want.shape and len(source) == len(want)
    for i in range(len(population)):
        np.testing.assert_array_equal(source[i], want[i])
        # and what a float32 policy slot gets: the float64 row rounded once
        np.testing.assert_array_equal(source[i].astype(np.float32), want[i].astype(np.float32))
    np.testing.assert_array_equal(np.asarray(source[2:5]), want[2:5])
    np.testing.assert_array_equal(source[2:5][1], want[3])


def test_a_dense_population_reads_its_rows():
    params = np.random.default_rng(0).standard_normal((4, 3))
    source = RowSource(Population.from_dense(params), np.array([3, 1]))
    np.testing.assert_array_equal(source[0], params[3])
    np.testing.assert_array_equal(np.asarray(source), params[[3, 1]])


class _Sums(Problem):
    dim = 7

    def __init__(self, lazy: bool):
        self.takes_row_source = lazy
        self.got: list[type] = []

    def evaluate(self, params, seeds):
        self.got.append(type(params))
        fitness = np.array([float(np.sum(params[i])) for i in range(len(params))])
        return EvalResult(fitness, np.ones(len(params), dtype=np.int64))


def test_evaluate_rows_hands_a_source_only_to_problems_that_declare_it():
    population = _population(7, 0.07)
    seeds = np.arange(len(population))
    lazy, dense = _Sums(True), _Sums(False)
    a = evaluate_rows(lazy, population, seeds, batch_size=4)
    b = evaluate_rows(dense, population, seeds, batch_size=4)
    assert lazy.got == [RowSource, RowSource] and dense.got == [np.ndarray, np.ndarray]
    np.testing.assert_array_equal(a.fitness, b.fitness)


def test_row_into_of_a_float32_population_is_its_float32_row():
    """A float32 strategy's rows are built in float32: ``row_into`` gives those bits, widened
    exactly, so a policy slot filled from it equals ``rows()`` (not a float64 row rounded once)."""
    import blackbox as bb

    es = bb.make_strategy("openai-es", dim=50, seed=0, dtype="float32")
    population = es.ask()
    out = np.empty(50)
    for index in range(len(population)):
        assert np.array_equal(population.row_into(index, out).astype(np.float32), population.rows([index])[0])
