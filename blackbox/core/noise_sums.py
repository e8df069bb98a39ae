"""A compact population's noise-weighted sums in float32, each distinct noise slice read once.

``Population.noise_weighted_sum(s)``: 0.1.0's reduction (:mod:`blackbox.core.compat`), kept for a
run it started; new runs reduce with :mod:`blackbox.core.reduce`, whose bits do not depend on how
the rows are split. Rows sharing an offset (a mirrored pair) are combined first, so a mirrored
population of n rows reads n/2 slices; rows with sign 0 (elites, the center) add nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .population import Population

__all__ = ["noise_weighted_sum", "noise_weighted_sums"]


def noise_weighted_sum(population: Population, weights: np.ndarray) -> np.ndarray:
    """``sum_i weights[i] * signs[i] * eps_i`` (float32)."""
    table, _, _, offsets, signs = population._compact("noise_weighted_sum")
    coeff = np.asarray(weights, dtype=np.float64) * signs
    live = signs != 0
    unique, inverse = np.unique(offsets[live], return_inverse=True)
    combined = np.bincount(inverse, weights=coeff[live], minlength=len(unique))
    return table.weighted_sum(combined, unique, population.dim)


def noise_weighted_sums(population: Population, weights: np.ndarray,
                        square_weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(sum_i w_i s_i eps_i, sum_i v_i eps_i**2)`` (float32) in one pass over the noise (the
    squares carry no sign; a mirrored pair combines to ``w+ - w-`` and ``v+ + v-``)."""
    table, _, _, offsets, signs = population._compact("noise_weighted_sums")
    live = signs != 0
    linear = np.asarray(weights, dtype=np.float64) * signs
    unique, inverse = np.unique(offsets[live], return_inverse=True)
    combined = np.bincount(inverse, weights=linear[live], minlength=len(unique))
    squares = np.bincount(
        inverse, weights=np.asarray(square_weights, dtype=np.float64)[live], minlength=len(unique)
    )
    return table.weighted_sums(combined, squares, unique, population.dim)
