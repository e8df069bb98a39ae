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

from .search_gradient import IsotropicSearchGradient

__all__ = ["OpenAIES"]


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
