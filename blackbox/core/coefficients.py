"""How a strategy's ``tell`` reduces a compact population's noise (:meth:`CoefficientsStep.reduce`,
through a :class:`Reducer`), and what it would reduce it with, found without updating it.

A cluster's nodes call :meth:`Strategy.coefficients <blackbox.core.strategy.Strategy.coefficients>`
on a copy of the strategy to sum their share of the rows with the driver's bits: ``tell``'s own
steps run up to its reduction, where a reducer set for the call stops them; every field ``_tell``
rebound on the way is put back. A strategy's ``_tell`` may rebind fields before it reduces, never
change them in place.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NoReturn, Protocol, overload

import numpy as np
from numpy.typing import ArrayLike

from .compat import LEGACY_REDUCTION, population_sums
from .fitness import check_fitness
from .population import Population
from .reduce import REDUCTION, block_sums

__all__ = ["tell_coefficients", "CoefficientsStep", "Reducer"]


class Reducer(Protocol):
    """Computes the sums a Gaussian strategy's update needs from a compact population.

    ``(sum_i c_i s_i eps_i, sum_i q_i eps_i**2)`` for coefficients ``c`` and square coefficients
    ``q`` (None: the second sum is not needed and None is returned for it), with ``eps_i`` row
    i's noise-table slice and ``s_i`` its sign, as float64 vectors of length ``dim``, with the bits
    of :func:`blackbox.core.reduce.block_sums` (an executor that takes over may split the blocks
    any way it likes: the integers it adds do not depend on the split).
    """

    def __call__(self, population: Population, coefficients: np.ndarray,
                 square_coefficients: np.ndarray | None = None, /) -> tuple[np.ndarray, np.ndarray | None]: ...


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
    state = saved.get("state") if getattr(strategy, "State", None) is not None else None
    fields = {f.name: getattr(state, f.name) for f in dataclasses.fields(state)} if state is not None else {}
    strategy.reducer = _capture
    try:
        strategy._tell(population, fitness)
    except _Coefficients as got:
        return got.coefficients, got.square_coefficients
    finally:  # _tell rebinds fields (sigma, the state's, ...) before it reduces: put every one back
        strategy.__dict__.clear()
        strategy.__dict__.update(saved)
        for name, value in fields.items():
            setattr(state, name, value)
    return None


class CoefficientsStep:
    """The reduction of :class:`~blackbox.core.strategy.Strategy`: :meth:`reduce`, the one place an
    executor can take over, and :meth:`coefficients`, the public step a cluster's nodes need."""

    #: The reduction in use, part of the state (``state_dict()["reduction"]``): new strategies use
    #: :data:`~blackbox.core.reduce.REDUCTION`, whose bits do not depend on how the sums are split among
    #: threads, processes or machines; a state written by 0.1.0 (without the key) resumes with
    #: :data:`~blackbox.core.compat.LEGACY_REDUCTION`, 0.1.0's one float32 pass, bit-identically.
    reduction: str = REDUCTION
    #: What :meth:`reduce` calls; an executor may set its own (default: the fixed blocks summed in this process).
    reducer: Reducer = staticmethod(block_sums)

    @overload
    def reduce(self, population: Population, coefficients: np.ndarray) -> tuple[np.ndarray, None]: ...

    @overload
    def reduce(self, population: Population, coefficients: np.ndarray,
               square_coefficients: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

    def reduce(self, population: Population, coefficients: np.ndarray,
               square_coefficients: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """The noise-weighted sums of a compact population (see :class:`Reducer`): the one place
        where ``tell`` reduces the rows, through ``self.reducer`` (or, for a run started by 0.1.0,
        with 0.1.0's float32 pass in this process, so that it continues bit-identically)."""
        if self.reduction == LEGACY_REDUCTION:
            return population_sums(population, coefficients, square_coefficients)
        return self.reducer(population, coefficients, square_coefficients)

    def coefficients(self, population: Population, fitness: object) -> tuple[np.ndarray, np.ndarray | None] | None:
        """The coefficients (and square coefficients) ``tell(fitness)`` would reduce ``population``'s
        noise with (see :class:`~blackbox.core.strategy.Reducer`), computed by ``tell``'s own steps
        with nothing of the strategy updated; None where ``tell`` reduces no noise."""
        return tell_coefficients(self, population, check_fitness(fitness, len(population)))
