"""sep-CMA-ES, CMA-ES with a diagonal covariance: R. Ros & N. Hansen, "A Simple Modification in
CMA-ES Achieving Linear Time and Space Complexity", PPSN X, 2008; constants from Hansen's tutorial
(arXiv:1604.00772, 2016, Table 1).

The covariance is ``diag(c)`` with ``D = sqrt(c)``, so a row is ``mean + sigma * D * z_k`` with
``z_k`` read from the shared noise table: the population is compact with the per-dimension sigma
``sigma * D``, and every update is linear in ``n`` (one pass over the selected slices for
``sum w z`` and ``sum w z^2``). The updates are those of :mod:`.cma_es` restricted to the diagonal
(``C^-1/2 <y>_w = <z>_w``), with the learning rates ``c_1`` and ``c_mu`` multiplied by
``(n + 2) / 3`` as Ros & Hansen prescribe. Only positive recombination weights are used (the
paper's algorithm has no active update). The reported ``sigma`` is the global step size; ``stdev``
is ``sigma * D``. The pair ``(sigma, c)`` is only defined up to a factor and on non-separable
functions the two drift apart without bound (sigma past 1e50 within 3000 generations on the 2-d
Rosenbrock function), so after each update ``c`` is rescaled to ``max(c) = 1`` and the factor
folded into ``sigma`` and ``p_c``: the distribution and its dynamics are unchanged, and ``sigma``
reads as the largest per-dimension standard deviation. For large dimensions (policies with many parameters) where ``n^2`` is too much.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..core.population import Population
from ..core.state import POSITIVE, StateView, state_field
from ._gaussian import NoiseTableStrategy, default_nes_popsize
from .cma_es import CMAFamilyParams, check_mu, cma_parameters
from .shaping import rank_weights

__all__ = ["SepCMAES"]


class SepCMAES(NoiseTableStrategy):
    """sep-CMA-ES (Ros & Hansen 2008): diagonal covariance, linear time and space."""

    name = "sep-cma-es"
    Params = CMAFamilyParams.with_defaults("SepCMAES.Params", "Hyperparameters of sep-CMA-ES.")
    min_popsize = 2  # mu = popsize // 2 parents, at least one
    default_popsize = staticmethod(default_nes_popsize)
    @dataclasses.dataclass
    class State:
        """What evolves besides the mean and sigma: the diagonal covariance ``c`` and the evolution paths."""

        #: At least 1e-300 after every update.
        c: np.ndarray = state_field(bound=POSITIVE)
        p_sigma: np.ndarray = state_field()
        p_c: np.ndarray = state_field()

    params: CMAFamilyParams
    state: State
    #: The diagonal of the covariance matrix (without sigma^2) and the evolution paths of sigma and of c.
    c: StateView[np.ndarray] = StateView()
    p_sigma: StateView[np.ndarray] = StateView()
    p_c: StateView[np.ndarray] = StateView()

    def _setup(self) -> None:
        p = self.params
        self.sigma = p.sigma
        self.constants = cma_parameters(self.dim, self.popsize, check_mu(p.mu, self.popsize), active=False,
                                        diagonal=True)
        self.state = self.State(c=np.ones(self.dim), p_sigma=np.zeros(self.dim), p_c=np.zeros(self.dim))

    @property
    def stdev(self) -> np.ndarray:
        """Per-dimension standard deviations of the search distribution, ``sigma * sqrt(c)``."""
        stdev: np.ndarray = self.sigma * np.sqrt(self.c)
        return stdev

    def _ask(self) -> Population:
        offsets = self.table.sample_offsets(self.rng, self.popsize, self.dim)
        signs = np.ones(self.popsize, dtype=np.int8)
        return Population.compact(self.table, self._center, offsets, signs, self.stdev)

    def _tell(self, population: Population, fitness: np.ndarray) -> None:
        p, n, state = self.constants, self.dim, self.state
        weights = rank_weights(fitness, p.mean_weights)
        z_w, z_sq_w = self.reduce(population, weights, weights)
        z_w, z_sq_w = z_w.astype(np.float64), z_sq_w.astype(np.float64)
        d = np.sqrt(state.c)
        self._center = self._center + self.sigma * d * z_w
        state.p_sigma = (1 - p.c_sigma) * state.p_sigma + math.sqrt(p.c_sigma * (2 - p.c_sigma) * p.mu_eff) * z_w
        norm_ps = float(np.linalg.norm(state.p_sigma))
        self.sigma = float(self.sigma * math.exp(p.c_sigma / p.d_sigma * (norm_ps / p.chi_n - 1)))
        threshold = (1.4 + 2 / (n + 1)) * p.chi_n
        h_sigma = norm_ps / math.sqrt(1 - (1 - p.c_sigma) ** (2 * (self.generation + 1))) < threshold
        state.p_c = (1 - p.c_c) * state.p_c + h_sigma * math.sqrt(p.c_c * (2 - p.c_c) * p.mu_eff) * d * z_w
        delta_h = (1 - h_sigma) * p.c_c * (2 - p.c_c)
        decay = 1 + p.c_1 * delta_h - p.c_1 - p.c_mu * weights.sum()
        c = decay * state.c + p.c_1 * state.p_c**2 + p.c_mu * state.c * z_sq_w
        # (sigma, c) is defined up to a factor; keep max(c) = 1 (same distribution, same dynamics).
        scale = math.sqrt(float(c.max()))
        state.c = np.maximum(c / scale**2, 1e-300)
        state.p_c = state.p_c / scale
        self.sigma *= scale
        return None
