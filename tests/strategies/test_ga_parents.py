"""ga's tell builds its parents row by row on a kept buffer: the bits of the definition, unchanged."""

from __future__ import annotations

import numpy as np

import blackbox as bb
from blackbox.strategies.shaping import average_ranks


def _definition_parents(population, indices: np.ndarray) -> np.ndarray:
    """parent = base[parent] + float64(sign * sigma) * float64(table slice), one row at a time."""
    out = population.bases[population.parents[indices]].copy()
    for k, i in enumerate(indices):
        if population.signs[i]:
            noise = population.table.data[population.offsets[i] : population.offsets[i] + population.dim]
            out[k] = out[k] + (np.float64(population.signs[i]) * population.sigma) * noise.astype(np.float64)
    return out


def test_ga_parents_equal_the_dense_definition_bit_for_bit():
    # 60 parents x 6000 dimensions: above the gather limit, so the row-by-row path builds them
    es = bb.make_strategy("ga", dim=6000, popsize=600, truncation=0.1, elitism=2, seed=3)
    reference = es.parents.copy()
    rng = np.random.default_rng(0)
    for _ in range(4):
        population = es.ask()
        fitness = rng.standard_normal(len(population))
        order = np.argsort(-average_ranks(fitness), kind="stable")
        assert np.array_equal(population.bases.view(np.int64), reference.view(np.int64))
        reference = _definition_parents(population, order[: es.num_parents])
        es.tell(fitness)
        assert np.array_equal(es.parents.view(np.int64), reference.view(np.int64))
        assert np.array_equal(es.center.view(np.int64), reference[0].view(np.int64))
