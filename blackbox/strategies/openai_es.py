"""OpenAI-ES: Salimans, Ho, Chen, Sidor & Sutskever, "Evolution Strategies as a Scalable
Alternative to Reinforcement Learning", arXiv:1703.03864, 2017.

Each generation samples ``popsize/2`` mirrored pairs ``center +/- sigma * eps`` with ``eps`` read
from the shared noise table, shapes the fitness by centered ranks, and moves the center with Adam
along ``g = sum_i w_i eps_i / popsize - weight_decay * center``. As in OpenAI's reference code
(``es_distributed/es.py``) the estimate is not divided by sigma; that constant is absorbed into the
learning rate. Sigma stays fixed unless ``sigma_decay``/``sigma_min`` set a schedule
(:mod:`blackbox.schedule`). Defaults are the paper's: sigma 0.02, lr 0.01, L2 0.005.
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

__all__ = ["OpenAIES"]


class OpenAIES(Strategy):
    """OpenAI-ES (Salimans et al. 2017): mirrored sampling, centered ranks, Adam, weight decay."""

    name = "openai-es"

    def __init__(
        self,
        dim: int | None = None,
        *,
        popsize: int = 64,
        sigma: float = 0.02,
        sigma_decay: float = 1.0,
        sigma_min: float = 0.0,
        lr: float = 0.01,
        weight_decay: float = 0.005,
        optimizer: str = "adam",
        momentum: float = 0.9,
        beta1: float = 0.9,
        beta2: float = 0.999,
        shaping: str = "centered_ranks",
        mirrored: bool = True,
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
            weight_decay=weight_decay, momentum=momentum, beta1=beta1, beta2=beta2,
        )
        self.table = NoiseTable.for_dim(self.dim, check_int("noise_seed", noise_seed, minimum=0), noise_size)

    def _ask(self) -> Population:
        offsets, signs, groups = sample_rows(self.table, self.rng, self.popsize, self.dim, self.mirrored)
        return Population.compact(self.table, self._center, offsets, signs, self.sigma, groups=groups)

    def _tell(self, population: Population, fitness: np.ndarray) -> float:
        weights = get_shaping(self.shaping)(fitness)
        grad = population.noise_weighted_sum(weights) / self.popsize
        self._center, step_norm = self.optimizer.step(self._center, grad)
        self.sigma = self.sigma_schedule(self.sigma)
        return step_norm

    def _state_dict(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.state_dict()}

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
