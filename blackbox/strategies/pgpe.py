"""PGPE: Sehnke, Osendorfer, Rückstieß, Graves, Peters & Schmidhuber, "Parameter-exploring policy
gradients", Neural Networks 23(4), 551-559, 2010; with ClipUp: Toklu, Liskowski & Srivastava,
"ClipUp: A Simple and Powerful Optimizer for Distribution-based Policy Evolution", PPSN 2020.

A diagonal Gaussian ``N(center, diag(stdev^2))`` sampled in symmetric pairs
``center +/- stdev * eps`` (``eps`` from the shared noise table, so the population stays compact).
With shaped, mean-centered utilities ``u`` (centered ranks by default) and ``n = popsize``:

    grad_center = stdev * sum_i u_i s_i eps_i / n
    grad_stdev  = stdev * sum_i u_i (eps_i^2 - 1) / n

which for a pair is EvoTorch's ``(u+ - u-)/2`` and ``(u+ + u-)/2`` per direction. The center
follows ``grad_center`` through ClipUp (default; or Adam, SGD, momentum); the stdevs take a plain
step ``sigma_lr * grad_stdev``, limited to a relative change of ``sigma_max_change`` (0.2, as in
Ha's and EvoTorch's PGPE) and clipped to ``[sigma_min, sigma_max]``. This matches
``evotorch.algorithms.PGPE`` (symmetric sampling, centered ranking, ClipUp with
``max_speed = 2 * lr``). The reported ``sigma`` is the root mean square of the stdevs,
``radius / sqrt(dim)``; ``radius=`` sets the initial stdevs that way, as EvoTorch's ``radius_init``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validate import check_choice, check_float, check_int, check_stdev
from ..core.noise import NoiseTable
from ..core.population import Population
from ..core.strategy import Strategy
from ..errors import ConfigError
from ._gaussian import check_mirrored_popsize, root_mean_square, sample_rows
from .optim import OPTIMIZERS, make_optimizer
from .shaping import SHAPINGS, get_shaping

__all__ = ["PGPE"]

# Stdevs never fall below this, even with sigma_min=0 and no max change (they must stay > 0).
_STDEV_FLOOR = 1e-12


class PGPE(Strategy):
    """PGPE (Sehnke et al. 2010) with ClipUp (Toklu et al. 2020): symmetric sampling, per-dim sigma."""

    name = "pgpe"

    def __init__(
        self,
        dim: int | None = None,
        *,
        popsize: int = 64,
        sigma: Any = None,
        radius: float | None = None,
        lr: float = 0.15,
        optimizer: str = "clipup",
        momentum: float = 0.9,
        max_speed: float | None = None,
        beta1: float = 0.9,
        beta2: float = 0.999,
        weight_decay: float = 0.0,
        sigma_lr: float = 0.1,
        sigma_max_change: float | None = 0.2,
        sigma_min: float = 0.0,
        sigma_max: float | None = None,
        shaping: str = "centered_ranks",
        mirrored: bool = True,
        x0: Any = None,
        seed: int | None = None,
        noise_size: int | None = None,
        noise_seed: int = 0,
    ):
        super().__init__(dim=dim, popsize=popsize, x0=x0, seed=seed)
        self.mirrored = bool(mirrored)
        check_mirrored_popsize(self.popsize, self.mirrored)
        if sigma is not None and radius is not None:
            raise ConfigError(f"pass sigma or radius, not both (got sigma={sigma!r}, radius={radius!r})")
        if radius is not None:
            sigma = check_float("radius", radius, positive=True) / math.sqrt(self.dim)
        self.stdev = check_stdev("sigma", 0.1 if sigma is None else sigma, self.dim)
        self.sigma_lr = check_float("sigma_lr", sigma_lr, nonnegative=True)
        self.sigma_max_change = None if sigma_max_change is None else check_float(
            "sigma_max_change", sigma_max_change, positive=True, below=1.0)
        self.sigma_min = check_float("sigma_min", sigma_min, nonnegative=True)
        self.sigma_max = math.inf if sigma_max is None else check_float("sigma_max", sigma_max, positive=True)
        if self.sigma_min > self.sigma_max:
            raise ConfigError(f"sigma_min ({self.sigma_min}) must be <= sigma_max ({self.sigma_max})")
        self.shaping = check_choice("shaping", shaping, SHAPINGS)
        self.optimizer = make_optimizer(
            check_choice("optimizer", optimizer, OPTIMIZERS), self.dim, lr, weight_decay=weight_decay,
            momentum=momentum, beta1=beta1, beta2=beta2, max_speed=max_speed,
        )
        self.table = NoiseTable.for_dim(self.dim, check_int("noise_seed", noise_seed, minimum=0), noise_size)
        self._sync_sigma()

    def _sync_sigma(self) -> None:
        self.sigma = root_mean_square(self.stdev)

    def _ask(self) -> Population:
        offsets, signs, groups = sample_rows(self.table, self.rng, self.popsize, self.dim, self.mirrored)
        return Population.compact(self.table, self._center, offsets, signs, self.stdev, groups=groups)

    def _tell(self, population: Population, fitness: np.ndarray) -> float:
        utilities = get_shaping(self.shaping)(fitness)
        utilities = utilities - utilities.mean()
        linear, squares = population.noise_weighted_sums(utilities, utilities)
        n = self.popsize
        grad_center = self.stdev * linear / n
        grad_stdev = self.stdev * (squares - utilities.sum()) / n
        self._center, step_norm = self.optimizer.step(self._center, grad_center)
        stdev = self.stdev + self.sigma_lr * grad_stdev
        if self.sigma_max_change is not None:
            stdev = np.clip(stdev, self.stdev * (1 - self.sigma_max_change), self.stdev * (1 + self.sigma_max_change))
        self.stdev = np.clip(stdev, max(self.sigma_min, _STDEV_FLOOR), self.sigma_max)
        self._sync_sigma()
        return step_norm

    def _state_dict(self) -> dict[str, Any]:
        return {"stdev": self.stdev.copy(), "optimizer": self.optimizer.state_dict()}

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        self.stdev = np.array(state["stdev"], dtype=np.float64)
        self.optimizer.load_state_dict(state["optimizer"])
        self._sync_sigma()
