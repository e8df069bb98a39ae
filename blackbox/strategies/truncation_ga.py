"""Truncation-selection genetic algorithm: Such, Madhavan, Conti, Lehman, Stanley & Clune,
"Deep Neuroevolution: Genetic Algorithms Are a Competitive Alternative for Training Deep Neural
Networks for Reinforcement Learning", arXiv:1712.06567, 2017.

The top ``truncation`` fraction of each generation become parents. The next generation holds the
``elitism`` best of them unchanged (re-evaluated, so a lucky noisy score does not stick) and
``popsize - elitism`` offspring, each a uniformly drawn parent plus ``sigma * eps``, with no
crossover. Offspring are encoded compactly as (parent index, noise offset). The center is the
elite. Such et al. pick the elite after 30 extra episodes per top candidate; here the elite is
simply re-evaluated every generation with the rest of the population. The mutation strength
``sigma`` is fixed unless ``sigma_decay`` / ``sigma_min`` set a schedule (:mod:`blackbox.strategies._gaussian`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validate import check_float, check_int
from ..core.noise import NoiseTable
from ..core.population import Population
from ..core.strategy import Strategy
from ..errors import ConfigError
from ._gaussian import SigmaSchedule
from .shaping import average_ranks

__all__ = ["TruncationGA"]


class TruncationGA(Strategy):
    """Top-x% truncation selection with Gaussian mutation and elitism (Such et al. 2017)."""

    name = "ga"
    fixed_state_layout = False  # the number of parents changes after the first generation

    def __init__(
        self,
        dim: int | None = None,
        *,
        popsize: int = 64,
        sigma: float = 0.02,
        sigma_decay: float = 1.0,
        sigma_min: float = 0.0,
        truncation: float = 0.1,
        elitism: int = 1,
        x0: Any = None,
        seed: int | None = None,
        noise_size: int | None = None,
        noise_seed: int = 0,
    ):
        super().__init__(dim=dim, popsize=popsize, x0=x0, seed=seed)
        self.sigma = check_float("sigma", sigma, positive=True)
        self.sigma_schedule = SigmaSchedule.checked(self.sigma, sigma_decay, sigma_min)
        self.truncation = check_float("truncation", truncation, positive=True, maximum=1.0)
        self.num_parents = max(1, int(round(self.truncation * self.popsize)))
        self.elitism = check_int("elitism", elitism, minimum=0)
        if self.elitism > self.num_parents or self.elitism >= self.popsize:
            raise ConfigError(
                f"elitism must be at most the number of parents ({self.num_parents} = truncation "
                f"{self.truncation} x popsize {self.popsize}) and below popsize, got {self.elitism}"
            )
        self.table = NoiseTable.for_dim(self.dim, check_int("noise_seed", noise_seed, minimum=0), noise_size)
        self.parents = self._center[None, :].copy()  # generation 0: the initial point alone

    def _ask(self) -> Population:
        n_elite = min(self.elitism, len(self.parents))
        n_children = self.popsize - n_elite
        parents = np.concatenate([
            np.arange(n_elite, dtype=np.int64),
            self.rng.integers(0, len(self.parents), size=n_children, dtype=np.int64),
        ])
        offsets = np.concatenate([
            np.zeros(n_elite, dtype=np.int64), self.table.sample_offsets(self.rng, n_children, self.dim)
        ])
        signs = np.concatenate([np.zeros(n_elite, dtype=np.int8), np.ones(n_children, dtype=np.int8)])
        return Population.compact(self.table, self.parents, offsets, signs, self.sigma, parents=parents)

    def _tell(self, population: Population, fitness: np.ndarray) -> None:
        # Best first; ties keep population order, so an elite wins a tie with its offspring.
        order = np.argsort(-average_ranks(fitness), kind="stable")
        self.parents = population.rows(order[: self.num_parents])
        self._center = self.parents[0].copy()
        self.sigma = self.sigma_schedule(self.sigma)
        return None

    def _state_dict(self) -> dict[str, Any]:
        return {"parents": self.parents.copy()}

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        parents = np.array(state["parents"], dtype=np.float64)
        if parents.ndim != 2 or parents.shape[1] != self.dim or not len(parents) or not np.all(np.isfinite(parents)):
            raise ConfigError(f"state_dict/parents must be a finite (k, {self.dim}) array, got shape {parents.shape}")
        self.parents = parents
