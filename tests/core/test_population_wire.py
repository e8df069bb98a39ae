"""The population is its own wire format: split into Shared and Rows, pickled, and joined back,
bit for bit, for any partition of the rows; the center row is a documented row kind."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import blackbox as bb
from blackbox.core.population import Population, Rows, Shared
from blackbox.core.seeding import evaluation_seeds

DIM = 7


def es_population() -> Population:
    """Mirrored pairs around the mean, and the center row."""
    es = bb.make_strategy("openai-es", dim=DIM, popsize=12, sigma=0.1, seed=3, x0=np.linspace(-1, 1, DIM))
    return es.ask().with_center(es.center)


def cma_population() -> Population:
    """A dense population (CMA-ES), and the center row."""
    cma = bb.make_strategy("cma-es", dim=DIM, popsize=9, seed=3)
    return cma.ask().with_center(cma.center)


def ga_population() -> Population:
    """A GA's second generation: several parents, elites (sign 0), offspring, and the center row."""
    ga = bb.make_strategy("ga", dim=DIM, popsize=16, truncation=0.25, elitism=2, seed=3)
    first = ga.ask()
    ga.tell(-np.sum(first.params**2, axis=1))
    population = ga.ask()
    assert len(population.bases) == 4 and np.any(population.signs == 0)
    return population.with_center(ga.center)


POPULATIONS = {"openai-es": es_population, "cma-es": cma_population, "ga": ga_population}


def bits(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float64).view(np.int64)


def assert_same_population(got: Population, want: Population) -> None:
    assert got.dim == want.dim and len(got) == len(want) and got.is_compact == want.is_compact
    assert got.center_row == want.center_row
    np.testing.assert_array_equal(got.groups, want.groups)
    np.testing.assert_array_equal(bits(got.params), bits(want.params))
    if want.table is not None:
        np.testing.assert_array_equal(got.offsets, want.offsets)
        np.testing.assert_array_equal(got.signs, want.signs)
        np.testing.assert_array_equal(bits(got.bases[got.parents]), bits(want.bases[want.parents]))
        assert (got.table.size, got.table.seed) == (want.table.size, want.table.seed)


def through_the_wire(shared: Shared, parts: list[Rows]) -> tuple[Shared, list[Rows]]:
    return pickle.loads(pickle.dumps(shared, protocol=5)), [pickle.loads(pickle.dumps(p, protocol=5)) for p in parts]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(kind=st.sampled_from(sorted(POPULATIONS)), data=st.data())
def test_split_and_join_round_trip_over_random_partitions(kind, data):
    population = POPULATIONS[kind]()
    n = len(population)
    labels = data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n), label="part of each row")
    parts_index = [np.flatnonzero(np.array(labels) == k) for k in range(5)]
    parts_index = [p for p in parts_index if len(p)]
    seeds = evaluation_seeds(5, 0, population.groups)
    shared, parts = through_the_wire(*population.split(parts_index, seeds=seeds, state={"mean": np.arange(3.0)}))
    assert [list(p.index) for p in parts] == [list(p) for p in parts_index]
    for part in parts:
        np.testing.assert_array_equal(part.seeds, seeds[part.index])
        alone = Population.join(shared, part)  # what one worker evaluates: exactly those rows
        np.testing.assert_array_equal(bits(alone.params), bits(population.rows(part.index)))
    order = data.draw(st.permutations(range(len(parts))), label="order the parts come back in")
    assert_same_population(Population.join(shared, [parts[i] for i in order]), population)
    np.testing.assert_array_equal(shared.state["mean"], np.arange(3.0))


@pytest.mark.parametrize("kind", sorted(POPULATIONS))
@pytest.mark.parametrize("chunks", [1, 3, 100])
def test_split_into_counts_covers_every_row_once_in_order(kind, chunks):
    population = POPULATIONS[kind]()
    shared, parts = population.split(chunks)
    index = np.concatenate([p.index for p in parts])
    np.testing.assert_array_equal(index, np.arange(len(population)))
    assert len(parts) == min(chunks, len(np.unique(population.groups)))  # a mirrored pair stays in one part
    assert_same_population(Population.join(shared, parts), population)


def test_rows_pickle_compactly():
    population = es_population()
    seeds = evaluation_seeds(5, 0, population.groups)
    shared, (rows,) = population.split(1, seeds=seeds)
    wire = pickle.dumps(rows, protocol=5)
    assert rows.nbytes == 33 * len(rows)  # offsets, parents, groups, seeds (int64) and signs (int8)
    assert len(wire) < rows.nbytes + 200
    _, scattered = population.split([[0, 3, 4, 12]], seeds=seeds)
    assert scattered[0].nbytes == 41 * 4  # not consecutive: the row numbers travel too
    back = pickle.loads(pickle.dumps(scattered[0]))
    np.testing.assert_array_equal(back.index, [0, 3, 4, 12])
    assert back.spans() == "0..0, 3..4, 12..12" and rows.spans() == f"0..{len(population) - 1}"
    dense = cma_population().split([[1, 2]], seeds=np.arange(10))[1][0]
    assert dense.nbytes == 8 * 2 * 2 + 2 * DIM * 8  # groups and seeds, and the two rows' values


def test_split_refuses_bad_input():
    population = es_population()
    with pytest.raises(ValueError, match="split\\(\\) needs one seed per row: 13 rows, seeds of shape \\(4,\\)"):
        population.split(2, seeds=np.arange(4))
    with pytest.raises(IndexError, match="a row index falls outside 0..12"):
        population.split([[0, 13]])
    shared, parts = population.split([[0, 1], [1, 2]])
    with pytest.raises(ValueError, match="a row appears in more than one part"):
        Population.join(shared, parts)


# -- the center row -------------------------------------------------------------------------------
def test_the_center_row_points_at_base_zero_in_its_own_seed_group():
    es = bb.make_strategy("openai-es", dim=DIM, popsize=12, seed=3, x0=np.ones(DIM))
    population = es.ask()
    assert population.center_row is None
    batch = population.with_center(es.center)
    c = batch.center_row
    assert c == len(population) == len(batch) - 1
    assert (batch.signs[c], batch.parents[c], batch.offsets[c]) == (0, 0, 0)
    assert batch.bases is population.bases  # nothing copied
    assert batch.groups[c] == population.groups.max() + 1 and np.sum(batch.groups == batch.groups[c]) == 1
    np.testing.assert_array_equal(bits(batch.row(c)), bits(es.center))
    with pytest.raises(ValueError, match="already has its center row \\(row 12\\)"):
        batch.with_center(es.center)


def test_a_center_that_is_not_base_zero_becomes_a_base():
    table = bb.make_strategy("openai-es", dim=DIM, seed=0).table
    population = Population.compact(table, np.zeros(DIM), np.arange(4) * 3, np.array([1, -1, 1, -1]), 0.5)
    center = np.full(DIM, 2.0)
    batch = population.with_center(center)
    assert len(batch.bases) == 2 and batch.parents[-1] == 1 and batch.signs[-1] == 0
    np.testing.assert_array_equal(batch.row(4), center)
    dense = Population.from_dense(np.zeros((3, DIM))).with_center(center)
    assert dense.center_row == 3 and not dense.is_compact
    np.testing.assert_array_equal(dense.params[3], center)


def test_separate_center_gives_the_strategy_its_rows_and_the_record_the_center():
    batch = es_population()
    values = np.arange(len(batch), dtype=np.float64)
    rest, center = batch.separate_center(values)
    np.testing.assert_array_equal(rest, values[:-1])
    assert rest.base is values and center == float(len(batch) - 1)  # a view: nothing copied
    plain = values[:3]
    rest, center = Population.from_dense(np.zeros((3, DIM))).separate_center(plain)
    assert center is None and rest is plain  # no center row: every value goes to the strategy


def test_the_center_row_survives_split_take_and_join():
    batch = es_population()
    c = batch.center_row
    shared, parts = batch.split([[0, 1], [2, c], list(range(3, c))])
    assert shared.center_row == c
    assert Population.join(shared, parts[1]).center_row == 1  # the second of the rows [2, c]
    assert Population.join(shared, parts[0]).center_row is None
    assert Population.join(shared, parts).center_row == c
    assert batch.take([c, 0]).center_row == 0 and batch.take([0, 1]).center_row is None


def test_the_driver_records_the_center_row_and_tells_the_rest():
    problem = bb.make_problem("sphere", dim=DIM)
    es = bb.make_strategy("openai-es", dim=DIM, popsize=8, seed=1)
    result = bb.optimize(es, problem, generations=1, seed=2)
    record = result.records[-1]
    assert record.evaluations == 9  # the 8 rows ask() returned, and the center row
    replay = bb.make_strategy("openai-es", dim=DIM, popsize=8, seed=1)
    replay.start_at(problem.initial_params(np.random.default_rng(2)))  # where optimize starts it (run seed 2)
    batch = replay.ask().with_center(replay.center)
    fitness = problem.evaluate(batch.params, evaluation_seeds(2, 0, batch.groups)).fitness
    assert record.center == fitness[-1] and record.best == np.max(fitness[:-1])
