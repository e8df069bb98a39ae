"""SNES, separable natural evolution strategies: Wierstra, Schaul, Glasmachers, Sun, Peters &
Schmidhuber, "Natural Evolution Strategies", JMLR 15, 949-980, 2014 (section 5.2, Algorithm 6;
first in Schaul, Glasmachers & Schmidhuber, "High Dimensions and Heavy Tails for Natural Evolution
Strategies", GECCO 2011).

A diagonal Gaussian ``N(center, diag(stdev^2))``; each row is ``center + stdev * s_k`` with
``s_k`` read from the shared noise table (a compact population). With the rank-based NES utilities
``u_k`` (which sum to zero):

    center <- center + lr * stdev * sum_k u_k s_k
    stdev  <- stdev * exp(sigma_lr / 2 * sum_k u_k (s_k^2 - 1))

Defaults from the paper: ``popsize = 4 + floor(3 ln d)``, ``lr = 1``,
``sigma_lr = (3 + ln d) / (5 sqrt d)``. Another ``shaping`` (centered ranks, z-scores) is
mean-centered and scaled to unit absolute sum first, as in EvoTorch, so the learning rates keep
their meaning. The reported ``sigma`` is the root mean square of the stdevs. Cost per generation is
linear in ``d``: use it where CMA-ES and xNES are too expensive.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .._validate import check_choice, check_float, check_stdev
from ..core.population import Population
from ..core.state import NONNEGATIVE, StateView, state_field
from ._gaussian import NoiseTableStrategy, default_nes_popsize, normalized_utilities, root_mean_square
from .param_groups import SamplingParams
from .shaping import SHAPINGS

__all__ = ["SNES"]


class SNES(NoiseTableStrategy):
    """Separable NES (Wierstra et al. 2014): per-dimension sigma, natural-gradient updates."""

    name = "snes"

    @dataclasses.dataclass(frozen=True)
    class Params(SamplingParams):
        """Hyperparameters of SNES (the paper's defaults)."""

        #: Rows per generation (None: ``4 + floor(3 ln d)``).
        popsize: int | None = None
        #: Initial standard deviations: a number for every dimension or a vector.
        sigma: Any = 0.1
        #: Learning rate of the center.
        lr: float = 1.0
        #: Learning rate of the standard deviations (None: ``(3 + ln d) / (5 sqrt d)``).
        sigma_lr: float | None = None
        #: Utilities: ``nes`` (rank-based, as in the paper) or another shaping, normalized.
        shaping: str = "nes"

        def __post_init__(self) -> None:
            self._check("lr", check_float, positive=True)
            if self.sigma_lr is not None:
                self._check("sigma_lr", check_float, nonnegative=True)
            self._check("shaping", check_choice, SHAPINGS)
            super().__post_init__()

    min_popsize = 2  # utilities rank at least two rows
    default_popsize = staticmethod(default_nes_popsize)
    @dataclasses.dataclass
    class State:
        """What evolves: the per-dimension standard deviations."""

        #: Multiplied each generation: may underflow to 0.
        stdev: np.ndarray = state_field(bound=NONNEGATIVE)

    sigma_is_param = False  # sigma summarizes stdev
    params: Params
    state: State
    #: The per-dimension standard deviations (``state.stdev``).
    stdev: StateView[np.ndarray] = StateView()

    def _setup(self) -> None:
        self.state = self.State(stdev=check_stdev("sigma", self.params.sigma, self.dim))
        default_sigma_lr = (3 + math.log(self.dim)) / (5 * math.sqrt(self.dim))
        self.sigma_lr = default_sigma_lr if self.params.sigma_lr is None else self.params.sigma_lr
        self.sigma = root_mean_square(self.state.stdev)

    def _ask(self) -> Population:
        offsets = self.table.sample_offsets(self.rng, self.popsize, self.dim)
        signs = np.ones(self.popsize, dtype=np.int8)
        return Population.compact(self.table, self._center, offsets, signs, self.state.stdev)

    def _tell(self, population: Population, fitness: np.ndarray) -> None:
        state = self.state
        u = normalized_utilities(self.params.shaping, fitness)
        grad_center, squares = self.reduce(population, u, u)
        grad_log_stdev = squares - u.sum()
        self._center = self._center + self.params.lr * state.stdev * grad_center
        state.stdev = state.stdev * np.exp(0.5 * self.sigma_lr * grad_log_stdev)
        self.sigma = root_mean_square(state.stdev)
        return None
