"""CEM, the cross-entropy method for continuous optimization with a diagonal Gaussian:
R. Rubinstein, "The Cross-Entropy Method for Combinatorial and Continuous Optimization",
Methodology and Computing in Applied Probability 1(2), 1999; de Boer, Kroese, Mannor & Rubinstein,
"A Tutorial on the Cross-Entropy Method", Annals of Operations Research 134, 2005 (smoothing);
extra noise from Szita & Lőrincz, "Learning Tetris Using the Noisy Cross-Entropy Method", Neural
Computation 18(12), 2006.

Each generation samples ``center + stdev * eps_k`` (``eps_k`` from the shared noise table, a compact
population), keeps the best ``elite_fraction`` of rows and refits the Gaussian to them by maximum
likelihood: the elites' mean and per-dimension standard deviation (``ddof=0``). ``smoothing``
``alpha`` blends the fit with the previous parameters, ``new = alpha * fit + (1 - alpha) * old``
(1 = no smoothing). ``extra_noise`` is a variance added to every dimension after the fit, which
keeps the distribution from collapsing early; with ``extra_noise_decay = T`` it falls linearly to
zero over ``T`` generations (Szita & Lőrincz's ``max(5 - t/10, 0)`` is ``extra_noise=5,
extra_noise_decay=50``). The default, ``extra_noise=0.01`` (the variance of the default sigma 0.1)
decaying over 100 generations, keeps the method from collapsing within a few generations of its
start; ``extra_noise=0`` is Rubinstein's plain CEM. ``sigma_min`` is a floor on every standard
deviation. Ties at the elite boundary share the elite weight. The reported ``sigma`` is the root
mean square of the stdevs.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .._validate import check_float, check_int, check_stdev
from ..core.population import Population
from ..core.state import NONNEGATIVE, StateView, state_field
from ..errors import ConfigError
from ._gaussian import NoiseTableStrategy, root_mean_square
from .param_groups import SamplingParams
from .shaping import rank_weights

__all__ = ["CEM"]


class CEM(NoiseTableStrategy):
    """Cross-entropy method (Rubinstein 1999): refit a diagonal Gaussian to the elite fraction."""

    name = "cem"

    @dataclasses.dataclass(frozen=True)
    class Params(SamplingParams):
        """Hyperparameters of CEM."""

        #: Rows per generation.
        popsize: int = 64
        #: Initial standard deviations: a number for every dimension or a vector.
        sigma: Any = 0.1
        #: Share of the rows that the Gaussian is refitted to (at least 2 rows).
        elite_fraction: float = 0.2
        #: Weight of the new fit against the previous parameters, in (0, 1]; 1: no smoothing.
        smoothing: float = 1.0
        #: Variance added to every dimension after the fit (Szita & Lorincz); 0: plain CEM.
        extra_noise: float = 0.01
        #: Generations over which the extra noise falls linearly to zero (None: it stays).
        extra_noise_decay: int | None = 100
        #: Floor of every standard deviation.
        sigma_min: float = 0.0

        def __post_init__(self) -> None:
            self._check("elite_fraction", check_float, positive=True, maximum=1.0)
            self._check("smoothing", check_float, positive=True, maximum=1.0)
            self._check("extra_noise", check_float, nonnegative=True)
            if self.extra_noise_decay is not None:
                self._check("extra_noise_decay", check_int, minimum=1)
            self._check("sigma_min", check_float, nonnegative=True)
            super().__post_init__()

    min_popsize = 2  # a standard deviation is fitted to at least two elites
    @dataclasses.dataclass
    class State:
        """What evolves: the per-dimension standard deviations."""

        #: At least sigma_min, which may be 0.
        stdev: np.ndarray = state_field(bound=NONNEGATIVE)

    sigma_is_param = False  # sigma summarizes stdev
    params: Params
    state: State
    #: The per-dimension standard deviations (``state.stdev``).
    stdev: StateView[np.ndarray] = StateView()

    def _setup(self) -> None:
        p = self.params
        stdev = check_stdev("sigma", p.sigma, self.dim)
        self.elites = int(round(p.elite_fraction * self.popsize))
        if self.elites < 2:
            raise ConfigError(
                f"cem needs at least 2 elites to fit a standard deviation; elite_fraction {p.elite_fraction} "
                f"x popsize {self.popsize} gives {self.elites}: raise popsize or elite_fraction"
            )
        self.state = self.State(stdev=np.maximum(stdev, p.sigma_min))
        self.sigma = root_mean_square(self.state.stdev)

    def current_extra_noise(self) -> float:
        """The variance added after the fit of the current generation."""
        p = self.params
        if p.extra_noise_decay is None:
            return p.extra_noise
        return p.extra_noise * max(0.0, 1.0 - self.generation / p.extra_noise_decay)

    def _ask(self) -> Population:
        offsets = self.table.sample_offsets(self.rng, self.popsize, self.dim)
        signs = np.ones(self.popsize, dtype=np.int8)
        return Population.compact(self.table, self._center, offsets, signs, self.state.stdev)

    def _tell(self, population: Population, fitness: np.ndarray) -> None:
        places = np.zeros(self.popsize)
        places[: self.elites] = 1.0 / self.elites
        weights = rank_weights(fitness, places)
        mean_eps, mean_sq = self.reduce(population, weights, weights)
        mean_eps, mean_sq = mean_eps.astype(np.float64), mean_sq.astype(np.float64)
        state = self.state
        fit_center = self._center + state.stdev * mean_eps
        fit_stdev = state.stdev * np.sqrt(np.maximum(mean_sq - mean_eps**2, 0.0))
        a = self.params.smoothing
        self._center = fit_center if a == 1.0 else a * fit_center + (1 - a) * self._center
        stdev = fit_stdev if a == 1.0 else a * fit_stdev + (1 - a) * state.stdev
        extra = self.current_extra_noise()
        if extra:
            stdev = np.sqrt(stdev**2 + extra)
        state.stdev = np.maximum(stdev, self.params.sigma_min)
        self.sigma = root_mean_square(state.stdev)
        return None
