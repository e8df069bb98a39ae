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

import math
from typing import Any

import numpy as np

from .._validate import check_dim_x0, check_float, check_int
from ..core.noise import NoiseTable
from ..core.population import Population
from ..core.strategy import Strategy
from .cma_es import check_mu, cma_parameters
from .shaping import rank_weights
from .snes import default_nes_popsize

__all__ = ["SepCMAES"]


class SepCMAES(Strategy):
    """sep-CMA-ES (Ros & Hansen 2008): diagonal covariance, linear time and space."""

    name = "sep-cma-es"

    def __init__(
        self,
        dim: int | None = None,
        *,
        popsize: int | None = None,
        sigma: float = 0.1,
        mu: int | None = None,
        x0: Any = None,
        seed: int | None = None,
        noise_size: int | None = None,
        noise_seed: int = 0,
    ):
        n, _ = check_dim_x0(dim, x0)
        popsize = default_nes_popsize(n) if popsize is None else popsize
        super().__init__(dim=dim, popsize=popsize, x0=x0, seed=seed)
        self.sigma = check_float("sigma", sigma, positive=True)
        self.params = cma_parameters(self.dim, self.popsize, check_mu(mu, self.popsize), active=False, diagonal=True)
        self.c = np.ones(self.dim)
        self.p_sigma = np.zeros(self.dim)
        self.p_c = np.zeros(self.dim)
        self.table = NoiseTable.for_dim(self.dim, check_int("noise_seed", noise_seed, minimum=0), noise_size)

    @property
    def stdev(self) -> np.ndarray:
        """Per-dimension standard deviations of the search distribution, ``sigma * sqrt(c)``."""
        return self.sigma * np.sqrt(self.c)

    def _ask(self) -> Population:
        offsets = self.table.sample_offsets(self.rng, self.popsize, self.dim)
        signs = np.ones(self.popsize, dtype=np.int8)
        return Population.compact(self.table, self._center, offsets, signs, self.stdev)

    def _tell(self, population: Population, fitness: np.ndarray) -> None:
        p, n = self.params, self.dim
        weights = rank_weights(fitness, p.mean_weights)
        z_w, z_sq_w = population.noise_weighted_sums(weights, weights)
        z_w, z_sq_w = z_w.astype(np.float64), z_sq_w.astype(np.float64)
        d = np.sqrt(self.c)
        self._center = self._center + self.sigma * d * z_w
        self.p_sigma = (1 - p.c_sigma) * self.p_sigma + math.sqrt(p.c_sigma * (2 - p.c_sigma) * p.mu_eff) * z_w
        norm_ps = float(np.linalg.norm(self.p_sigma))
        self.sigma = float(self.sigma * math.exp(p.c_sigma / p.d_sigma * (norm_ps / p.chi_n - 1)))
        threshold = (1.4 + 2 / (n + 1)) * p.chi_n
        h_sigma = norm_ps / math.sqrt(1 - (1 - p.c_sigma) ** (2 * (self.generation + 1))) < threshold
        self.p_c = (1 - p.c_c) * self.p_c + h_sigma * math.sqrt(p.c_c * (2 - p.c_c) * p.mu_eff) * d * z_w
        delta_h = (1 - h_sigma) * p.c_c * (2 - p.c_c)
        decay = 1 + p.c_1 * delta_h - p.c_1 - p.c_mu * weights.sum()
        c = decay * self.c + p.c_1 * self.p_c**2 + p.c_mu * self.c * z_sq_w
        # (sigma, c) is defined up to a factor; keep max(c) = 1 (same distribution, same dynamics).
        scale = math.sqrt(float(c.max()))
        self.c = np.maximum(c / scale**2, 1e-300)
        self.p_c = self.p_c / scale
        self.sigma *= scale
        return None

    def _state_dict(self) -> dict[str, Any]:
        return {"c": self.c.copy(), "p_sigma": self.p_sigma.copy(), "p_c": self.p_c.copy()}

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        for key in ("c", "p_sigma", "p_c"):
            setattr(self, key, np.array(state[key], dtype=np.float64))
