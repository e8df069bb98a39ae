"""CEM, the cross-entropy method for continuous optimization with a diagonal Gaussian:
R. Rubinstein, "The Cross-Entropy Method for Combinatorial and Continuous Optimization",
Methodology and Computing in Applied Probability 1(2), 1999; de Boer, Kroese, Mannor & Rubinstein,
"A Tutorial on the Cross-Entropy Method", Annals of Operations Research 134, 2005 (smoothing);
extra noise from Szita & Lőrincz, "Learning Tetris Using the Noisy Cross-Entropy Method", Neural
Computation 18(12), 2006.

Each generation samples ``center + stdev * eps_k`` (``eps_k`` from the shared noise table, a compact
population), keeps the best ``elite_fraction`` of rows and refits the Gaussian to them by maximum
likelihood: the elites' mean and per-dimension standard deviation (``ddof=0``). ``smoothing``
``alpha`` blends the fit with the previous parameters, ``new = alpha * fit + (1 - alpha) * old``
(1 = no smoothing). ``extra_noise`` is a variance added to every dimension after the fit, which
keeps the distribution from collapsing early; with ``extra_noise_decay = T`` it falls linearly to
zero over ``T`` generations (Szita & Lőrincz's ``max(5 - t/10, 0)`` is ``extra_noise=5,
extra_noise_decay=50``). The default, ``extra_noise=0.01`` (the variance of the default sigma 0.1)
decaying over 100 generations, keeps the method from collapsing within a few generations of its
start; ``extra_noise=0`` is Rubinstein's plain CEM. ``sigma_min`` is a floor on every standard
deviation. Ties at the elite boundary share the elite weight. The reported ``sigma`` is the root
mean square of the stdevs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validate import check_float, check_int, check_stdev
from ..core.noise import NoiseTable
from ..core.population import Population
from ..core.strategy import Strategy
from ..errors import ConfigError
from ._gaussian import root_mean_square
from .shaping import rank_weights

__all__ = ["CEM"]


class CEM(Strategy):
    """Cross-entropy method (Rubinstein 1999): refit a diagonal Gaussian to the elite fraction."""

    name = "cem"

    def __init__(
        self,
        dim: int | None = None,
        *,
        popsize: int = 64,
        sigma: Any = 0.1,
        elite_fraction: float = 0.2,
        smoothing: float = 1.0,
        extra_noise: float = 0.01,
        extra_noise_decay: int | None = 100,
        sigma_min: float = 0.0,
        x0: Any = None,
        seed: int | None = None,
        noise_size: int | None = None,
        noise_seed: int = 0,
    ):
        super().__init__(dim=dim, popsize=popsize, x0=x0, seed=seed)
        self.stdev = check_stdev("sigma", sigma, self.dim)
        self.elite_fraction = check_float("elite_fraction", elite_fraction, positive=True, maximum=1.0)
        self.elites = int(round(self.elite_fraction * self.popsize))
        if self.elites < 2:
            raise ConfigError(
                f"cem needs at least 2 elites to fit a standard deviation; elite_fraction {self.elite_fraction} "
                f"x popsize {self.popsize} gives {self.elites}: raise popsize or elite_fraction"
            )
        self.smoothing = check_float("smoothing", smoothing, positive=True, maximum=1.0)
        self.extra_noise = check_float("extra_noise", extra_noise, nonnegative=True)
        self.extra_noise_decay = None if extra_noise_decay is None else check_int(
            "extra_noise_decay", extra_noise_decay, minimum=1)
        self.sigma_min = check_float("sigma_min", sigma_min, nonnegative=True)
        self.table = NoiseTable.for_dim(self.dim, check_int("noise_seed", noise_seed, minimum=0), noise_size)
        self.stdev = np.maximum(self.stdev, self.sigma_min)
        self._sync_sigma()

    def _sync_sigma(self) -> None:
        self.sigma = root_mean_square(self.stdev)

    def current_extra_noise(self) -> float:
        """The variance added after the fit of the current generation."""
        if self.extra_noise_decay is None:
            return self.extra_noise
        return self.extra_noise * max(0.0, 1.0 - self.generation / self.extra_noise_decay)

    def _ask(self) -> Population:
        offsets = self.table.sample_offsets(self.rng, self.popsize, self.dim)
        signs = np.ones(self.popsize, dtype=np.int8)
        return Population.compact(self.table, self._center, offsets, signs, self.stdev)

    def _tell(self, population: Population, fitness: np.ndarray) -> None:
        places = np.zeros(self.popsize)
        places[: self.elites] = 1.0 / self.elites
        weights = rank_weights(fitness, places)
        mean_eps, mean_sq = population.noise_weighted_sums(weights, weights)
        mean_eps, mean_sq = mean_eps.astype(np.float64), mean_sq.astype(np.float64)
        fit_center = self._center + self.stdev * mean_eps
        fit_stdev = self.stdev * np.sqrt(np.maximum(mean_sq - mean_eps**2, 0.0))
        a = self.smoothing
        self._center = fit_center if a == 1.0 else a * fit_center + (1 - a) * self._center
        stdev = fit_stdev if a == 1.0 else a * fit_stdev + (1 - a) * self.stdev
        extra = self.current_extra_noise()
        if extra:
            stdev = np.sqrt(stdev**2 + extra)
        self.stdev = np.maximum(stdev, self.sigma_min)
        self._sync_sigma()
        return None

    def _state_dict(self) -> dict[str, Any]:
        return {"stdev": self.stdev.copy()}

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        self.stdev = np.array(state["stdev"], dtype=np.float64)
        self._sync_sigma()
