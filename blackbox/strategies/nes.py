"""Plain NES estimator, as in the OpenAI blog post "Evolution Strategies as a Scalable Alternative
to Reinforcement Learning" (Karpathy et al., 2017) and Wierstra et al., "Natural Evolution
Strategies", JMLR 15, 2014 (the search-gradient estimator with a fixed isotropic Gaussian).

    theta <- theta + lr / (popsize * sigma) * sum_i F_i eps_i

with ``F`` the standardized fitness (z-scores) by default. Mirrored sampling is an option. The
blog's example (solution [0.5, 0.1, -0.3], popsize 50, sigma 0.1, lr 0.001, 300 iterations from a
standard-normal start) converges with it as in the blog. Sigma is fixed unless ``sigma_decay`` /
``sigma_min`` set a schedule (:mod:`blackbox.schedule`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..noise import NoiseTable
from ..optim import OPTIMIZERS, make_optimizer
from ..population import Population
from ..sampling import check_mirrored_popsize, sample_rows
from ..schedule import SigmaSchedule
from ..shaping import SHAPINGS, get_shaping
from ..strategy import Strategy
from ..validation import check_choice, check_float, check_int

__all__ = ["NES"]


class NES(Strategy):
    """Plain NES search gradient with fixed sigma; z-scored fitness and SGD by default."""

    name = "nes"

    def __init__(
        self,
        dim: int | None = None,
        *,
        popsize: int = 50,
        sigma: float = 0.1,
        sigma_decay: float = 1.0,
        sigma_min: float = 0.0,
        lr: float = 0.001,
        shaping: str = "zscore",
        mirrored: bool = False,
        optimizer: str = "sgd",
        momentum: float = 0.9,
        weight_decay: float = 0.0,
        x0: Any = None,
        seed: int | None = None,
        noise_size: int | None = None,
        noise_seed: int = 0,
    ):
        super().__init__(dim=dim, popsize=popsize, x0=x0, seed=seed)
        self.sigma = check_float("sigma", sigma, positive=True)
        self.sigma_schedule = SigmaSchedule.checked(self.sigma, sigma_decay, sigma_min)
        self.mirrored = bool(mirrored)
        check_mirrored_popsize(self.popsize, self.mirrored)
        self.shaping = check_choice("shaping", shaping, SHAPINGS)
        self.optimizer = make_optimizer(
            check_choice("optimizer", optimizer, OPTIMIZERS), self.dim, lr,
            weight_decay=weight_decay, momentum=momentum,
        )
        self.table = NoiseTable.for_dim(self.dim, check_int("noise_seed", noise_seed, minimum=0), noise_size)

    def _ask(self) -> Population:
        offsets, signs, groups = sample_rows(self.table, self.rng, self.popsize, self.dim, self.mirrored)
        return Population.compact(self.table, self._center, offsets, signs, self.sigma, groups=groups)

    def _tell(self, population: Population, fitness: np.ndarray) -> float:
        weights = get_shaping(self.shaping)(fitness)
        grad = population.noise_weighted_sum(weights) / (self.popsize * self.sigma)
        self._center, step_norm = self.optimizer.step(self._center, grad)
        self.sigma = self.sigma_schedule(self.sigma)
        return step_norm

    def _state_dict(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.state_dict()}

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
