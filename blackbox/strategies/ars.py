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

import dataclasses

import numpy as np

from .._validate import check_float, check_int
from ..core.population import Population
from ..errors import ConfigError
from ._gaussian import NoiseTableStrategy, sample_rows
from .param_groups import SigmaScheduleOptions
from .shaping import raw

__all__ = ["ARS"]


class ARS(NoiseTableStrategy):
    """Augmented random search (Mania et al. 2018): top-b mirrored directions, reward-std scaling."""

    name = "ars"

    @dataclasses.dataclass(frozen=True)
    class Params(SigmaScheduleOptions):
        """Hyperparameters of ARS."""

        #: Rows per generation: ``popsize / 2`` directions, each in a mirrored pair.
        popsize: int = 32
        #: Exploration noise (the paper's ``nu``).
        sigma: float = 0.03
        #: Step size (the paper's ``alpha``).
        lr: float = 0.02
        #: Directions used per update, the best by ``max(r+, r-)`` (the paper's ``b``; None: all).
        top: int | None = None
        #: Divide the step by the standard deviation of the rewards used (V1-t/V2-t); False: Algorithm 1.
        std_scaling: bool = True

        def __post_init__(self) -> None:
            self._check("sigma", check_float, positive=True)
            self._check("lr", check_float, positive=True)
            if self.top is not None:
                self._check("top", check_int, minimum=1)
            object.__setattr__(self, "std_scaling", bool(self.std_scaling))
            super().__post_init__()

    min_popsize = 2  # one mirrored pair
    params: Params

    def _setup(self) -> None:
        p = self.params
        if self.popsize % 2:
            raise ConfigError(
                f"popsize must be even for ars (two rows per direction), got {self.popsize}; "
                f"use {self.popsize + 1}"
            )
        self.directions = self.popsize // 2
        self.top = self.directions if p.top is None else p.top
        if self.top > self.directions:
            raise ConfigError(
                f"top must be at most the number of directions (popsize / 2 = {self.directions}), got {self.top}"
            )
        self.sigma = p.sigma
        self.sigma_schedule = p.sigma_schedule()

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
        scale = float(np.std(used)) if self.params.std_scaling else 1.0 / magnitude
        if not scale > 0:
            return 0.0
        weights = np.zeros(self.popsize)
        weights[rows] = used  # a pair combines to (r+ - r-) on its shared offset
        weighted, _ = self.reduce(population, weights)
        step = (self.params.lr / (self.top * scale)) * weighted.astype(np.float64)
        self._center = self._center + step
        return float(np.linalg.norm(step))
