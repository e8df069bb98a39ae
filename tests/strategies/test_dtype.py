"""dtype="float32" on the noise-table strategies: float32 rows, a float32 center, same seed same bits."""

from __future__ import annotations

import numpy as np
import pytest

import blackbox as bb
from blackbox.core.population import Population
from blackbox.errors import ConfigError


@pytest.mark.parametrize("bad", [0, -1, "float7", "int32", None, np.float16])
def test_a_dtype_that_makes_no_sense_is_one_line(bad):
    with pytest.raises(ConfigError) as error:
        bb.make_strategy("openai-es", dim=5, dtype=bad)
    assert str(error.value) == (
        f"dtype must be 'float32' or 'float64' (the precision of the rows and the center), got {bad!r}"
    )


def _run(name: str, generations: int, **options) -> tuple[np.ndarray, list[float]]:
    es = bb.make_strategy(name, dim=20, seed=4, dtype="float32", x0=np.full(20, 3.0), **options)
    best = []
    for _ in range(generations):
        population = es.ask()
        x = population.params
        assert x.dtype == np.float32 and population.dtype == np.float32
        fitness = -np.sum(x.astype(np.float64) ** 2, axis=1)
        best.append(float(fitness.max()))
        es.tell(fitness)
    center = es.center
    assert np.array_equal(center, center.astype(np.float32))  # the center is kept in float32
    return center, best


@pytest.mark.parametrize("name,options,generations", [
    ("openai-es", {"popsize": 32, "sigma": 0.1, "lr": 0.05}, 300),
    ("cem", {"popsize": 32, "sigma": 1.0}, 60),
    ("ga", {"popsize": 64, "sigma": 0.1}, 150),
])
def test_float32_strategies_converge_on_a_quadratic_and_repeat_bit_for_bit(name, options, generations):
    center, best = _run(name, generations, **options)
    assert float(np.sum(center.astype(np.float64) ** 2)) < 0.5 < -best[0]  # from 180 to below 0.5
    again, best_again = _run(name, generations, **options)
    assert np.array_equal(center.view(np.int32 if center.dtype == np.float32 else np.int64),
                          again.view(np.int32 if again.dtype == np.float32 else np.int64))
    assert best == best_again


def test_float32_rows_are_the_same_bits_in_every_split_and_path():
    es = bb.make_strategy("pgpe", dim=3000, popsize=200, seed=1, dtype="float32")  # per-dimension sigma
    population = es.ask().with_center(es.center)
    whole = population.params.copy()
    shared, parts = population.split(3)
    assert shared.dtype == "float32"
    for part in parts:
        worker = Population.join(shared, part)
        assert worker.dtype == np.float32
        assert np.array_equal(worker.rows(np.arange(len(part))), whole[part.index])
    assert np.array_equal(population.rows(np.arange(5)), whole[:5])
    assert np.array_equal(population.dense(np.float64), whole.astype(np.float64))
    blocks = np.concatenate([block.copy() for _, block in population.blocks(rows=7, dtype=np.float32)])
    assert np.array_equal(blocks, whole)


def test_the_default_stays_float64():
    es = bb.make_strategy("openai-es", dim=5, seed=0)
    population = es.ask()
    assert es.dtype == np.float64 and population.dtype == np.float64 and population.params.dtype == np.float64


def test_a_float32_strategy_builds_every_generation_s_params_in_one_buffer():
    es = bb.make_strategy("cem", dim=1000, popsize=16, seed=2, dtype="float32")
    first = es.ask()
    kept = first.params
    snapshot = kept.copy()
    es.tell(-np.sum(kept.astype(np.float64) ** 2, axis=1))
    second = es.ask()
    assert np.array_equal(kept, snapshot)  # valid through tell and the next ask ...
    rows = second.params
    assert np.shares_memory(rows, kept) and np.array_equal(kept, rows)  # ... until the next params: documented
    again = first.params  # the first population forgot its rows and builds them anew, elsewhere
    assert np.array_equal(again, snapshot) and not np.shares_memory(again, rows)
    assert np.array_equal(rows, second.rows(np.arange(16)))
    import pickle

    assert "_rows_buffer" not in pickle.loads(pickle.dumps(es)).__dict__


def test_float64_params_are_never_overwritten():
    es = bb.make_strategy("cem", dim=1000, popsize=16, seed=2)
    kept = es.ask().params
    snapshot = kept.copy()
    es.tell(np.zeros(16))
    assert not np.shares_memory(es.ask().params, kept) and np.array_equal(kept, snapshot)


@pytest.mark.parametrize("spec", ["openai-es:dtype=float32,popsize=16", "ga:dtype=float32,popsize=16"])
def test_float32_runs_give_the_same_bits_on_another_executor(spec):
    serial = bb.optimize(spec, "sphere:dim=50", "serial", generations=4, seed=1)
    pooled = bb.optimize(spec, "sphere:dim=50", "futures:workers=2", generations=4, seed=1)
    assert serial.best_params.dtype == np.float32
    assert np.array_equal(serial.center, pooled.center) and np.array_equal(serial.best_params, pooled.best_params)
