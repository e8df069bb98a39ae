"""SNES, separable natural evolution strategies: Wierstra, Schaul, Glasmachers, Sun, Peters &
Schmidhuber, "Natural Evolution Strategies", JMLR 15, 949-980, 2014 (section 5.2, Algorithm 6;
first in Schaul, Glasmachers & Schmidhuber, "High Dimensions and Heavy Tails for Natural Evolution
Strategies", GECCO 2011).

A diagonal Gaussian ``N(center, diag(stdev^2))``; each row is ``center + stdev * s_k`` with
``s_k`` read from the shared noise table (a compact population). With the rank-based NES utilities
``u_k`` (which sum to zero):

    center <- center + lr * stdev * sum_k u_k s_k
    stdev  <- stdev * exp(sigma_lr / 2 * sum_k u_k (s_k^2 - 1))

Defaults from the paper: ``popsize = 4 + floor(3 ln d)``, ``lr = 1``,
``sigma_lr = (3 + ln d) / (5 sqrt d)``. Another ``shaping`` (centered ranks, z-scores) is
mean-centered and scaled to unit absolute sum first, as in EvoTorch, so the learning rates keep
their meaning. The reported ``sigma`` is the root mean square of the stdevs. Cost per generation is
linear in ``d``: use it where CMA-ES and xNES are too expensive.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validate import check_choice, check_dim_x0, check_float, check_int, check_stdev
from ..core.noise import NoiseTable
from ..core.population import Population
from ..core.strategy import Strategy
from ._gaussian import root_mean_square
from .shaping import SHAPINGS, get_shaping

__all__ = ["SNES", "default_nes_popsize", "normalized_utilities"]


def default_nes_popsize(dim: int) -> int:
    """``4 + floor(3 ln d)``, the NES family's (and CMA-ES's) default population size."""
    return 4 + int(math.floor(3 * math.log(dim)))


def normalized_utilities(shaping: str, fitness: np.ndarray) -> np.ndarray:
    """NES utilities as they are; any other shaping mean-centered and scaled to unit absolute sum."""
    u = get_shaping(shaping)(fitness)
    if shaping == "nes":
        return u
    u = u - u.mean()
    total = np.abs(u).sum()
    return u / total if total > 0 else np.zeros_like(u)


class SNES(Strategy):
    """Separable NES (Wierstra et al. 2014): per-dimension sigma, natural-gradient updates."""

    name = "snes"

    def __init__(
        self,
        dim: int | None = None,
        *,
        popsize: int | None = None,
        sigma: Any = 0.1,
        lr: float = 1.0,
        sigma_lr: float | None = None,
        shaping: str = "nes",
        x0: Any = None,
        seed: int | None = None,
        noise_size: int | None = None,
        noise_seed: int = 0,
    ):
        n, _ = check_dim_x0(dim, x0)
        popsize = default_nes_popsize(n) if popsize is None else popsize
        super().__init__(dim=dim, popsize=popsize, x0=x0, seed=seed)
        self.stdev = check_stdev("sigma", sigma, self.dim)
        self.lr = check_float("lr", lr, positive=True)
        default_sigma_lr = (3 + math.log(self.dim)) / (5 * math.sqrt(self.dim))
        self.sigma_lr = default_sigma_lr if sigma_lr is None else check_float("sigma_lr", sigma_lr, nonnegative=True)
        self.shaping = check_choice("shaping", shaping, SHAPINGS)
        self.table = NoiseTable.for_dim(self.dim, check_int("noise_seed", noise_seed, minimum=0), noise_size)
        self._sync_sigma()

    def _sync_sigma(self) -> None:
        self.sigma = root_mean_square(self.stdev)

    def _ask(self) -> Population:
        offsets = self.table.sample_offsets(self.rng, self.popsize, self.dim)
        signs = np.ones(self.popsize, dtype=np.int8)
        return Population.compact(self.table, self._center, offsets, signs, self.stdev)

    def _tell(self, population: Population, fitness: np.ndarray) -> None:
        u = normalized_utilities(self.shaping, fitness)
        grad_center, squares = population.noise_weighted_sums(u, u)
        grad_log_stdev = squares - u.sum()
        self._center = self._center + self.lr * self.stdev * grad_center
        self.stdev = self.stdev * np.exp(0.5 * self.sigma_lr * grad_log_stdev)
        self._sync_sigma()
        return None

    def _state_dict(self) -> dict[str, Any]:
        return {"stdev": self.stdev.copy()}

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        self.stdev = np.array(state["stdev"], dtype=np.float64)
        self._sync_sigma()
