"""The body shared by ``openai-es`` and ``nes``: an isotropic Gaussian of fixed shape around the
center, sampled from the noise table (mirrored or not), moved along the search-gradient estimate
``sum_i w_i s_i eps_i / popsize`` by an optimizer. The two differ only in their defaults and in
whether the estimate is divided by sigma (NES) or sigma is absorbed into the learning rate
(OpenAI's reference code).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from .._validate import check_choice, check_float, check_int
from ..core.noise import NoiseTable
from ..core.population import Population
from ..core.strategy import Strategy
from ._gaussian import SigmaSchedule, check_mirrored_popsize, sample_rows
from .optim import OPTIMIZERS, make_optimizer
from .shaping import SHAPINGS, get_shaping

__all__ = ["IsotropicSearchGradient", "NES", "OpenAIES"]


class IsotropicSearchGradient(Strategy):
    """Base of the fixed-sigma search-gradient strategies (subclasses set the defaults)."""

    #: Divide the estimate by sigma (the textbook NES gradient) or not (OpenAI's code).
    divide_by_sigma: ClassVar[bool] = True

    def __init__(self, *, dim: int | None, popsize: int, sigma: float, sigma_decay: float, sigma_min: float,
                 lr: float, weight_decay: float, optimizer: str, shaping: str, mirrored: bool, x0: Any,
                 seed: int | None, noise_size: int | None, noise_seed: int, **optimizer_options: Any):
        super().__init__(dim=dim, popsize=popsize, x0=x0, seed=seed)
        self.sigma = check_float("sigma", sigma, positive=True)
        self.sigma_schedule = SigmaSchedule.checked(self.sigma, sigma_decay, sigma_min)
        self.mirrored = bool(mirrored)
        check_mirrored_popsize(self.popsize, self.mirrored)
        self.shaping = check_choice("shaping", shaping, SHAPINGS)
        self.optimizer = make_optimizer(
            check_choice("optimizer", optimizer, OPTIMIZERS), self.dim, lr,
            weight_decay=weight_decay, **optimizer_options,
        )
        self.table = NoiseTable.for_dim(self.dim, check_int("noise_seed", noise_seed, minimum=0), noise_size)

    def _ask(self) -> Population:
        offsets, signs, groups = sample_rows(self.table, self.rng, self.popsize, self.dim, self.mirrored)
        return Population.compact(self.table, self._center, offsets, signs, self.sigma, groups=groups)

    def _tell(self, population: Population, fitness: np.ndarray) -> float:
        weights = get_shaping(self.shaping)(fitness)
        scale = self.popsize * self.sigma if self.divide_by_sigma else self.popsize
        grad = population.noise_weighted_sum(weights) / scale
        self._center, step_norm = self.optimizer.step(self._center, grad)
        self.sigma = self.sigma_schedule(self.sigma)
        return step_norm

    def _state_dict(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.state_dict()}

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])


# -- from strategies/nes.py: Plain NES estimator, as in the OpenAI blog post "Evolution Strategies as a Scalable Alternative


class NES(IsotropicSearchGradient):
    """Plain NES search gradient with fixed sigma; z-scored fitness and SGD by default."""

    name = "nes"
    divide_by_sigma = True

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
        super().__init__(
            dim=dim, popsize=popsize, sigma=sigma, sigma_decay=sigma_decay, sigma_min=sigma_min, lr=lr,
            weight_decay=weight_decay, optimizer=optimizer, shaping=shaping, mirrored=mirrored, x0=x0,
            seed=seed, noise_size=noise_size, noise_seed=noise_seed, momentum=momentum,
        )


# -- from strategies/openai_es.py: OpenAI-ES: Salimans, Ho, Chen, Sidor & Sutskever, "Evolution Strategies as a Scalable


class OpenAIES(IsotropicSearchGradient):
    """OpenAI-ES (Salimans et al. 2017): mirrored sampling, centered ranks, Adam, weight decay."""

    name = "openai-es"
    divide_by_sigma = False

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
        super().__init__(
            dim=dim, popsize=popsize, sigma=sigma, sigma_decay=sigma_decay, sigma_min=sigma_min, lr=lr,
            weight_decay=weight_decay, optimizer=optimizer, shaping=shaping, mirrored=mirrored, x0=x0,
            seed=seed, noise_size=noise_size, noise_seed=noise_seed, momentum=momentum, beta1=beta1, beta2=beta2,
        )
