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

from .search_gradient import IsotropicSearchGradient

__all__ = ["NES"]


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
