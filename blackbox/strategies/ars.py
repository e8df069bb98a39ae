"""ARS, augmented random search: Mania, Guy & Recht, "Simple random search provides a competitive
approach to reinforcement learning", NeurIPS 2018 (arXiv:1803.07055), Algorithm 2.

Each generation evaluates ``N = popsize / 2`` directions ``delta_k`` (shared noise-table slices)
in mirrored pairs ``center +/- sigma * delta_k`` (``sigma`` is the paper's ``nu``), keeps the
``top`` (``b``) directions with the largest ``max(r+, r-)`` and steps

    center <- center + lr / (b * sigma_R) * sum_{k in top} (r+_k - r-_k) delta_k

with ``sigma_R`` the standard deviation of the ``2b`` rewards used (``std_scaling=False`` drops it,
giving the basic random search of the paper's Algorithm 1 when ``top`` is ``N``). The rewards are
the raw fitness values (NaN and -inf are clipped to the worst finite value); if they are all equal
the step is skipped. They are divided by their largest magnitude before use (and the step
multiplied back when ``std_scaling=False``), which changes nothing in exact arithmetic and keeps
rewards near the float64 limit from overflowing the standard deviation or the float32 noise sum.

Versions: V1 and V1-t are this strategy with ``top=N`` and ``top=b``. V2 and V2-t add state
normalization, which belongs to the policy's input and therefore lives in the gym problem: run
``ars`` with the gym problem's observation normalization switched on (running mean and standard
deviation of the observed states, synced by the driver each generation), and a linear policy, as in
the paper. ``sigma_decay`` / ``sigma_min`` set an optional schedule for ``nu``
(:mod:`blackbox.strategies._gaussian`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validate import check_float, check_int
from ..core.noise import NoiseTable
from ..core.population import Population
from ..core.strategy import Strategy
from ..errors import ConfigError
from ._gaussian import SigmaSchedule, sample_rows
from .shaping import raw

__all__ = ["ARS"]


class ARS(Strategy):
    """Augmented random search (Mania et al. 2018): top-b mirrored directions, reward-std scaling."""

    name = "ars"

    def __init__(
        self,
        dim: int | None = None,
        *,
        popsize: int = 32,
        sigma: float = 0.03,
        lr: float = 0.02,
        top: int | None = None,
        std_scaling: bool = True,
        sigma_decay: float = 1.0,
        sigma_min: float = 0.0,
        x0: Any = None,
        seed: int | None = None,
        noise_size: int | None = None,
        noise_seed: int = 0,
    ):
        super().__init__(dim=dim, popsize=popsize, x0=x0, seed=seed)
        if self.popsize % 2:
            raise ConfigError(
                f"popsize must be even for ars (two rows per direction), got {self.popsize}; "
                f"use {self.popsize + 1}"
            )
        self.directions = self.popsize // 2
        self.sigma = check_float("sigma", sigma, positive=True)
        self.sigma_schedule = SigmaSchedule.checked(self.sigma, sigma_decay, sigma_min)
        self.lr = check_float("lr", lr, positive=True)
        self.top = self.directions if top is None else check_int("top", top, minimum=1)
        if self.top > self.directions:
            raise ConfigError(
                f"top must be at most the number of directions (popsize / 2 = {self.directions}), got {self.top}"
            )
        self.std_scaling = bool(std_scaling)
        self.table = NoiseTable.for_dim(self.dim, check_int("noise_seed", noise_seed, minimum=0), noise_size)

    def _ask(self) -> Population:
        offsets, signs, groups = sample_rows(self.table, self.rng, self.popsize, self.dim, True)
        return Population.compact(self.table, self._center, offsets, signs, self.sigma, groups=groups)

    def _tell(self, population: Population, fitness: np.ndarray) -> float:
        rewards = raw(fitness)
        plus, minus = rewards[0::2], rewards[1::2]
        best = np.argsort(-np.maximum(plus, minus), kind="stable")[: self.top]
        rows = np.concatenate([2 * best, 2 * best + 1])
        self.sigma = self.sigma_schedule(self.sigma)
        magnitude = float(np.max(np.abs(rewards[rows])))
        if not magnitude > 0:
            return 0.0
        used = rewards[rows] / magnitude  # in [-1, 1]: nothing below can overflow
        scale = float(np.std(used)) if self.std_scaling else 1.0 / magnitude
        if not scale > 0:
            return 0.0
        weights = np.zeros(self.popsize)
        weights[rows] = used  # a pair combines to (r+ - r-) on its shared offset
        step = (self.lr / (self.top * scale)) * population.noise_weighted_sum(weights).astype(np.float64)
        self._center = self._center + step
        return float(np.linalg.norm(step))
