"""xNES, exponential natural evolution strategies: Wierstra, Schaul, Glasmachers, Sun, Peters &
Schmidhuber, "Natural Evolution Strategies", JMLR 15, 949-980, 2014 (section 4.3, Algorithm 5;
first in Glasmachers, Schaul, Sun, Wierstra & Schmidhuber, "Exponential Natural Evolution
Strategies", GECCO 2010).

A full Gaussian ``N(center, sigma^2 B B^T)`` with ``det(B) = 1``; row ``k`` is
``center + sigma * B s_k`` with ``s_k ~ N(0, I)`` drawn from the strategy's own generator (a dense
population). With the rank-based NES utilities ``u_k``:

    G_delta = sum_k u_k s_k          G_M = sum_k u_k (s_k s_k^T - I)
    G_sigma = tr(G_M) / d            G_B = G_M - G_sigma I
    center <- center + lr * sigma * B G_delta
    sigma  <- sigma * exp(sigma_lr / 2 * G_sigma)
    B      <- B expm(cov_lr / 2 * G_B)

Defaults from the paper: ``popsize = 4 + floor(3 ln d)``, ``lr = 1``,
``sigma_lr = cov_lr = 3 (3 + ln d) / (5 d sqrt d)``. The matrix exponential of the symmetric
``G_B`` is taken through its eigendecomposition. Each generation costs O(popsize d^2 + d^3): for
dimensions up to a few hundred; SNES is the separable variant for large ``d``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import numpy as np

from .._validate import check_choice, check_float
from ..core.population import Population
from ..core.state import StateView, state_field
from ..core.strategy import Strategy
from ._gaussian import default_nes_popsize, normalized_utilities
from .cma_es import check_dense_dim
from .param_groups import SamplingParams
from .shaping import SHAPINGS

__all__ = ["XNES", "symmetric_expm"]


def symmetric_expm(matrix: np.ndarray) -> np.ndarray:
    """``expm`` of a symmetric matrix via its eigendecomposition."""
    values, vectors = np.linalg.eigh(matrix)
    exponential: np.ndarray = (vectors * np.exp(values)) @ vectors.T  # numpy leaves `@` untyped
    return exponential


class XNES(Strategy):
    """Exponential NES (Wierstra et al. 2014): full covariance, natural-gradient updates."""

    name = "xnes"

    @dataclasses.dataclass(frozen=True)
    class Params(SamplingParams):
        """Hyperparameters of xNES (the paper's defaults)."""

        #: Rows per generation (None: ``4 + floor(3 ln d)``).
        popsize: int | None = None
        #: Initial global step size.
        sigma: float = 0.1
        #: Learning rate of the center.
        lr: float = 1.0
        #: Learning rate of sigma (None: ``3 (3 + ln d) / (5 d sqrt d)``).
        sigma_lr: float | None = None
        #: Learning rate of the shape matrix B (None: as sigma_lr).
        cov_lr: float | None = None
        #: Utilities: ``nes`` (rank-based, as in the paper) or another shaping, normalized.
        shaping: str = "nes"
        #: sigma adapts by multiplying and may underflow to 0 in a long convergence.
        may_vanish: ClassVar[tuple[str, ...]] = ("sigma",)

        def __post_init__(self) -> None:
            self._check("sigma", check_float, positive=True)
            self._check("lr", check_float, positive=True)
            for name in ("sigma_lr", "cov_lr"):
                if getattr(self, name) is not None:
                    self._check(name, check_float, nonnegative=True)
            self._check("shaping", check_choice, SHAPINGS)
            super().__post_init__()

    min_popsize = 2  # utilities rank at least two rows
    default_popsize = staticmethod(default_nes_popsize)
    @dataclasses.dataclass
    class State:
        """What evolves besides the center and sigma: the shape ``B``; and the samples of the last
        ``ask()`` for its ``tell()`` (never saved: a state describes the strategy before that ``ask()``)."""

        B: np.ndarray = state_field()
        noise: np.ndarray | None = state_field(saved=False)

    params: Params
    state: State
    #: The shape of the search distribution (``state.B``).
    B: StateView[np.ndarray] = StateView()

    def _setup(self) -> None:
        check_dense_dim("xnes", self.dim, "snes")
        d, p = self.dim, self.params
        default_lr = 3 * (3 + math.log(d)) / (5 * d * math.sqrt(d))
        self.sigma = p.sigma
        self.sigma_lr = default_lr if p.sigma_lr is None else p.sigma_lr
        self.cov_lr = default_lr if p.cov_lr is None else p.cov_lr
        self.state = self.State(B=np.eye(d))

    @property
    def covariance(self) -> np.ndarray:
        """The search distribution's covariance ``sigma^2 B B^T``."""
        covariance: np.ndarray = self.sigma**2 * (self.B @ self.B.T)  # numpy leaves `@` untyped
        return covariance

    def _ask(self) -> Population:
        self.state.noise = self.rng.standard_normal((self.popsize, self.dim))
        return Population.from_dense(self._center + self.sigma * (self.state.noise @ self.state.B.T))

    def _tell(self, population: Population, fitness: np.ndarray) -> None:
        state = self.state
        s = state.noise
        assert s is not None  # drawn by _ask(); tell() comes after ask()
        u = normalized_utilities(self.params.shaping, fitness)
        grad_delta = u @ s
        grad_m = (s.T * u) @ s - u.sum() * np.eye(self.dim)
        grad_sigma = np.trace(grad_m) / self.dim
        grad_b = grad_m - grad_sigma * np.eye(self.dim)
        self._center = self._center + self.params.lr * self.sigma * (state.B @ grad_delta)
        self.sigma = float(self.sigma * math.exp(0.5 * self.sigma_lr * grad_sigma))
        state.B = state.B @ symmetric_expm(0.5 * self.cov_lr * (grad_b + grad_b.T) / 2)
        state.noise = None
        return None
