"""What a strategy's ``tell`` would reduce a population's noise with, found without updating it.

A cluster's nodes call :meth:`Strategy.coefficients <blackbox.core.strategy.Strategy.coefficients>`
on a copy of the strategy to sum their share of the rows with the driver's bits: ``tell``'s own
steps run up to its reduction, where a reducer set for the call stops them; every field ``_tell``
rebound on the way is put back. A strategy's ``_tell`` may rebind fields before it reduces, never
change them in place.
"""

from __future__ import annotations

from typing import Any, NoReturn

import numpy as np
from numpy.typing import ArrayLike

from .fitness import check_fitness
from .population import Population
from .reduce import REDUCTION

__all__ = ["tell_coefficients", "CoefficientsStep"]


class _Coefficients(Exception):
    """Raised by the reducer :func:`tell_coefficients` sets: the reduction's weights are known."""

    def __init__(self, coefficients: np.ndarray, square_coefficients: np.ndarray | None):
        super().__init__("coefficients captured")
        self.coefficients, self.square_coefficients = coefficients, square_coefficients


def _capture(population: Population, coefficients: ArrayLike, square_coefficients: ArrayLike | None = None
             ) -> NoReturn:
    raise _Coefficients(np.asarray(coefficients, dtype=np.float64),
                        None if square_coefficients is None else np.asarray(square_coefficients, dtype=np.float64))


def tell_coefficients(strategy: Any, population: Population,
                      fitness: np.ndarray) -> tuple[np.ndarray, np.ndarray | None] | None:
    """``strategy``'s coefficients and square coefficients for ``fitness`` (checked), or None where
    its tell reduces no noise (a dense population, or a run started by 0.1.0)."""
    if getattr(strategy, "reduction", None) != REDUCTION or not population.is_compact:
        return None  # tell would update in place without reducing
    saved = dict(strategy.__dict__)
    strategy.reducer = _capture
    try:
        strategy._tell(population, fitness)
    except _Coefficients as got:
        return got.coefficients, got.square_coefficients
    finally:  # _tell rebinds fields (sigma, ...) before it reduces: put every one back
        strategy.__dict__.clear()
        strategy.__dict__.update(saved)
    return None


class CoefficientsStep:
    """The public step of :class:`~blackbox.core.strategy.Strategy` that a cluster's nodes need."""

    def coefficients(self, population: Population, fitness: Any) -> tuple[np.ndarray, np.ndarray | None] | None:
        """The coefficients (and square coefficients) ``tell(fitness)`` would reduce ``population``'s
        noise with (see :class:`~blackbox.core.strategy.Reducer`), computed by ``tell``'s own steps
        with nothing of the strategy updated; None where ``tell`` reduces no noise."""
        return tell_coefficients(self, population, check_fitness(fitness, len(population)))
