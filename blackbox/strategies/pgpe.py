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

import dataclasses
import math
from typing import Any

import numpy as np

from .._validate import check_choice, check_float, check_stdev
from ..core.population import Population
from ..core.state import POSITIVE, StateView, state_field
from ..errors import ConfigError
from ._gaussian import NoiseTableStrategy, check_mirrored_popsize, root_mean_square, sample_rows
from .optim import Optimizer
from .param_groups import OptimizerOptions
from .shaping import SHAPINGS, get_shaping

__all__ = ["PGPE"]

# Stdevs never fall below this, even with sigma_min=0 and no max change (they must stay > 0).
_STDEV_FLOOR = 1e-12


class PGPE(NoiseTableStrategy):
    """PGPE (Sehnke et al. 2010) with ClipUp (Toklu et al. 2020): symmetric sampling, per-dim sigma."""

    name = "pgpe"

    @dataclasses.dataclass(frozen=True)
    class Params(OptimizerOptions):
        """Hyperparameters of PGPE (EvoTorch's defaults)."""

        #: Rows per generation (even when mirrored).
        popsize: int = 64
        #: Initial standard deviations: a number for every dimension or a vector (default 0.1).
        sigma: Any = None
        #: Initial ``sqrt(dim) * sigma`` instead of sigma (EvoTorch's ``radius_init``).
        radius: float | None = None
        lr: float = 0.15
        optimizer: str | Optimizer = "clipup"
        #: Learning rate of the standard deviations.
        sigma_lr: float = 0.1
        #: Largest relative change of a standard deviation per generation (None: no limit).
        sigma_max_change: float | None = 0.2
        #: Floor of the standard deviations.
        sigma_min: float = 0.0
        #: Ceiling of the standard deviations (None: none).
        sigma_max: float | None = None
        #: Fitness shaping (mean-centered afterwards): ``centered_ranks``, ``zscore``, ``raw`` or ``nes``.
        shaping: str = "centered_ranks"
        #: Symmetric pairs ``center +/- stdev * eps`` that share one noise slice and one episode seed.
        mirrored: bool = True

        def __post_init__(self) -> None:
            if self.sigma is not None and self.radius is not None:
                raise ConfigError(f"pass sigma or radius, not both (got sigma={self.sigma!r}, radius={self.radius!r})")
            if self.radius is not None:
                self._check("radius", check_float, positive=True)
            self._check("sigma_lr", check_float, nonnegative=True)
            if self.sigma_max_change is not None:
                self._check("sigma_max_change", check_float, positive=True, below=1.0)
            self._check("sigma_min", check_float, nonnegative=True)
            if self.sigma_max is not None:
                self._check("sigma_max", check_float, positive=True)
                if self.sigma_min > self.sigma_max:
                    raise ConfigError(f"sigma_min ({self.sigma_min}) must be <= sigma_max ({self.sigma_max})")
            self._check("shaping", check_choice, SHAPINGS)
            object.__setattr__(self, "mirrored", bool(self.mirrored))
            super().__post_init__()

    min_popsize = 2  # a gradient estimate needs two rows (a symmetric pair)
    @dataclasses.dataclass
    class State:
        """What evolves: the per-dimension standard deviations and the center's optimizer."""

        #: At least max(sigma_min, 1e-12).
        stdev: np.ndarray = state_field(bound=POSITIVE)
        optimizer: Optimizer = state_field()

    optimizer_steps_per_generation = 1  # tell() steps the optimizer once: resume checks t == generation
    sigma_is_param = False  # sigma summarizes stdev
    params: Params
    state: State
    #: The per-dimension standard deviations (``state.stdev``).
    stdev: StateView[np.ndarray] = StateView()
    #: The optimizer that steps the center (``state.optimizer``).
    optimizer: StateView[Optimizer] = StateView()

    def _setup(self) -> None:
        p = self.params
        check_mirrored_popsize(self.popsize, p.mirrored)
        sigma = p.sigma if p.radius is None else p.radius / math.sqrt(self.dim)
        self.state = self.State(stdev=check_stdev("sigma", 0.1 if sigma is None else sigma, self.dim),
                                optimizer=p.make_optimizer(self.dim))
        self.sigma_max = math.inf if p.sigma_max is None else p.sigma_max
        self.sigma = root_mean_square(self.state.stdev)

    def _ask(self) -> Population:
        offsets, signs, groups = sample_rows(self.table, self.rng, self.popsize, self.dim, self.params.mirrored)
        return Population.compact(self.table, self._center, offsets, signs, self.state.stdev, groups=groups)

    def _tell(self, population: Population, fitness: np.ndarray) -> float:
        p, state = self.params, self.state
        utilities = get_shaping(p.shaping)(fitness)
        utilities = utilities - utilities.mean()
        linear, squares = self.reduce(population, utilities, utilities)
        n = self.popsize
        grad_center = state.stdev * linear / n
        grad_stdev = state.stdev * (squares - utilities.sum()) / n
        self._center, step_norm = state.optimizer.step(self._center, grad_center)
        stdev = state.stdev + p.sigma_lr * grad_stdev
        if p.sigma_max_change is not None:
            stdev = np.clip(stdev, state.stdev * (1 - p.sigma_max_change), state.stdev * (1 + p.sigma_max_change))
        state.stdev = np.clip(stdev, max(p.sigma_min, _STDEV_FLOOR), self.sigma_max)
        self.sigma = root_mean_square(state.stdev)
        return step_norm
