"""Population.rows: the fast path gives bit for bit the values of the plain formula, in every layout."""

import numpy as np
import pytest

from blackbox.core.noise import NoiseTable
from blackbox.core.population import Population


def reference_rows(pop: Population, indices: np.ndarray) -> np.ndarray:
    """row = base[parent] + sign * sigma * float64(table slice), the definition."""
    out = pop.bases[pop.parents[indices]].copy()
    for k, i in enumerate(indices):
        if pop.signs[i]:
            noise = pop.table.data[pop.offsets[i] : pop.offsets[i] + pop.dim].astype(np.float64)
            out[k] = out[k] + (np.float64(pop.signs[i]) * pop.sigma) * noise
    return out


# 2000 x 120 rows: the vectorized path on mapped arrays (core/mapped.py); 3000 x 120: the row-by-row one
@pytest.mark.parametrize("dim", [7, 2000, 3000])
@pytest.mark.parametrize("layout", ["mirrored", "with_center", "parents_and_elites", "sigma_vector"])
def test_fast_rows_equal_the_definition(dim, layout):
    rng = np.random.default_rng(0)
    table = NoiseTable.get(2**16, 3)
    n = 120
    offsets = rng.integers(0, table.size - dim, n)
    signs = np.tile(np.array([1, -1], dtype=np.int8), n // 2)
    bases = rng.standard_normal((1, dim))
    bases[0, :3] = [-0.0, 0.0, 1e-300]
    parents = np.zeros(n, dtype=np.int64)
    sigma = 0.05
    if layout == "parents_and_elites":
        bases = rng.standard_normal((4, dim))
        parents = rng.integers(0, 4, n)
        signs[::7] = 0  # elites: exactly their parent
    if layout == "sigma_vector":
        sigma = rng.uniform(0.01, 0.1, dim)
    pop = Population.compact(table, bases, offsets, signs, sigma, parents=parents)
    if layout == "with_center":
        pop = pop.with_center(bases[0])
    everything = np.arange(len(pop))
    for indices in (everything, everything[::3], everything[-5:]):
        got = pop.rows(indices)
        want = reference_rows(pop, indices)
        assert got.dtype == np.float64 and np.array_equal(got.view(np.int64), want.view(np.int64))
