"""CMA-ES, covariance matrix adaptation: N. Hansen, "The CMA Evolution Strategy: A Tutorial",
arXiv:1604.00772, 2016 (Algorithm summary, Table 1 defaults, with negative "active" weights).

A full Gaussian ``N(mean, sigma^2 C)``; row ``k`` is ``mean + sigma * B D z_k`` with ``z_k ~ N(0, I)``
from the strategy's own generator and ``C = B D^2 B^T`` (a dense population). Each ``tell``:
weighted recombination of the best ``mu`` steps ``<y>_w`` moves the mean; cumulative step-size
adaptation (path ``p_sigma``, ``c_sigma``, ``d_sigma``) scales sigma; the rank-one update (path
``p_c``, ``c_c``, ``c_1``, with the ``h_sigma`` stall) and the rank-mu update (``c_mu``, all
``popsize`` weights, the negative ones rescaled by ``n / ||C^-1/2 y||^2``) adapt ``C``. ``B`` and
``D`` are refreshed every ``eigen_interval`` generations (default ``max(1, floor(1 / (10 n (c_1 +
c_mu))))``), which keeps the cost O(n^2) per sample.

Defaults (Table 1): ``popsize = 4 + floor(3 ln n)``, ``mu = floor(popsize / 2)``, weights
``ln((popsize + 1) / 2) - ln i``, ``c_m = 1``, ``alpha_cov = 2``,
``c_mu = min(1 - c_1, alpha_cov (mu_eff - 2 + 1/mu_eff) / ((n + 2)^2 + alpha_cov mu_eff / 2))``.
``active=False`` zeroes the negative weights (the classic CMA-ES). Tied fitness values share the
mean of their places' weights, so the update does not depend on row order. Fitness is maximized.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .._validate import check_float, check_int
from ..core.population import Population
from ..core.state import NONNEGATIVE, POSITIVE, StateView, state_field
from ..core.strategy import Strategy
from ..errors import ConfigError
from ._gaussian import default_nes_popsize
from .param_groups import SamplingParams
from .shaping import rank_weights

__all__ = ["CMAES", "CMAFamilyParams", "CMAParameters", "cma_parameters", "check_dense_dim", "dense_memory_needed",
           "MAX_DENSE_DIM"]


@dataclass(frozen=True)
class CMAParameters:
    """The strategy parameters of Hansen's tutorial (Table 1) for dimension ``n``."""

    n: int
    popsize: int
    mu: int
    weights: np.ndarray  # best first; the first mu positive and summing to 1, the rest <= 0
    mu_eff: float
    c_sigma: float
    d_sigma: float
    c_c: float
    c_1: float
    c_mu: float
    chi_n: float  # E||N(0, I)||

    @property
    def mean_weights(self) -> np.ndarray:
        """The recombination weights of the mean: the positive ones, zero for the rest."""
        positive: np.ndarray = np.maximum(self.weights, 0.0)  # numpy leaves the ufunc's result untyped
        return positive


def cma_parameters(n: int, popsize: int, mu: int, active: bool, diagonal: bool = False) -> CMAParameters:
    """Table 1 of the tutorial; ``diagonal`` scales ``c_1`` and ``c_mu`` by ``(n + 2) / 3`` (sep-CMA-ES)."""
    prime = math.log((popsize + 1) / 2) - np.log(np.arange(1, popsize + 1))
    prime[mu:] = np.minimum(prime[mu:], 0.0)  # with a smaller mu, places after mu never recombine
    positive, negative = prime[:mu], prime[mu:]
    mu_eff = positive.sum() ** 2 / np.sum(positive**2)
    alpha_cov = 2.0
    c_sigma = (mu_eff + 2) / (n + mu_eff + 5)
    d_sigma = 1 + 2 * max(0.0, math.sqrt((mu_eff - 1) / (n + 1)) - 1) + c_sigma
    c_c = (4 + mu_eff / n) / (n + 4 + 2 * mu_eff / n)
    c_1 = alpha_cov / ((n + 1.3) ** 2 + mu_eff)
    c_mu = min(1 - c_1, alpha_cov * (mu_eff - 2 + 1 / mu_eff) / ((n + 2) ** 2 + alpha_cov * mu_eff / 2))
    if diagonal:  # Ros & Hansen 2008: the diagonal learns (n + 2) / 3 times faster
        c_1 = min(1.0, c_1 * (n + 2) / 3)
        c_mu = min(1 - c_1, c_mu * (n + 2) / 3)
    weights = np.zeros(popsize)
    weights[:mu] = positive / positive.sum()
    if active and c_mu > 0 and np.any(negative < 0):
        mu_eff_neg = negative.sum() ** 2 / np.sum(negative**2)
        alpha_mu = 1 + c_1 / c_mu
        alpha_mu_eff = 1 + 2 * mu_eff_neg / (mu_eff + 2)
        alpha_posdef = (1 - c_1 - c_mu) / (n * c_mu)
        weights[mu:] = min(alpha_mu, alpha_mu_eff, alpha_posdef) * negative / np.abs(negative).sum()
    chi_n = math.sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n * n))
    return CMAParameters(n, popsize, mu, weights, float(mu_eff), c_sigma, d_sigma, c_c, c_1, c_mu, chi_n)


#: Above this many parameters the dense strategies refuse to start: two dim x dim float64 matrices
#: (6.4 GB at 20,000) and an O(dim^3) eigendecomposition per update are no longer a sane default.
MAX_DENSE_DIM = 20_000


def check_dense_dim(name: str, dim: int, alternative: str) -> None:
    """Refuse dimensions whose dim x dim matrices would not fit, naming the linear-cost variant."""
    if dim > MAX_DENSE_DIM:
        gigabytes = 2 * 8 * dim * dim / 1e9
        raise ConfigError(
            f"{name} keeps dim x dim matrices ({gigabytes:,.0f} GB for dim={dim}) and decomposes them "
            f"every few generations; it supports dim <= {MAX_DENSE_DIM}. Use {alternative} for large "
            f"dimensions (per-dimension variances, linear cost)"
        )


def dense_memory_needed(dim: int, alternative: str) -> str:
    """In words, the peak memory of a full-covariance CMA-ES: C and B kept, and about four more
    dim x dim float64 arrays alive during an update (the three terms of C's update and their sum)."""
    kept, peak = 2 * 8 * dim * dim, 6 * 8 * dim * dim
    return (f"about {peak / 1e9:,.1f} GB at its peak ({kept / 1e9:,.1f} GB for the dim x dim matrices C and B, "
            f"the rest while C is updated); {alternative} needs O(dim)")


def check_mu(mu: int | None, popsize: int) -> int:
    """The number of parents: ``popsize // 2`` by default, at most that (the log weights of later
    places are negative)."""
    if mu is None:
        return popsize // 2
    mu = check_int("mu", mu, minimum=1)
    if mu > popsize // 2:
        raise ConfigError(f"mu must be <= popsize // 2 ({popsize // 2} for popsize {popsize}), got {mu}")
    return mu


@dataclasses.dataclass(frozen=True)
class CMAFamilyParams(SamplingParams):
    """The hyperparameters CMA-ES and sep-CMA-ES share."""

    #: Rows per generation (None: ``4 + floor(3 ln n)``).
    popsize: int | None = None
    #: Initial global step size.
    sigma: float = 0.1
    #: Parents recombined into the mean (None: ``popsize // 2``; at most that).
    mu: int | None = None
    #: sigma adapts by multiplying and may underflow to 0 in a long convergence.
    may_vanish: ClassVar[tuple[str, ...]] = ("sigma",)

    def __post_init__(self) -> None:
        self._check("sigma", check_float, positive=True)
        if self.mu is not None:
            self._check("mu", check_int, minimum=1)
        super().__post_init__()


class CMAES(Strategy):
    """CMA-ES (Hansen's 2016 tutorial): full covariance, cumulative step-size adaptation, active update."""

    name = "cma-es"

    @dataclasses.dataclass(frozen=True)
    class Params(CMAFamilyParams):
        """Hyperparameters of CMA-ES (the other constants follow Table 1 of the tutorial)."""

        #: Negative weights for the worse half in the covariance update (active CMA-ES).
        active: bool = True
        #: Generations between eigendecompositions of C (None: ``max(1, 1 / (10 n (c_1 + c_mu)))``).
        eigen_interval: int | None = None

        def __post_init__(self) -> None:
            if self.eigen_interval is not None:
                self._check("eigen_interval", check_int, minimum=1)
            object.__setattr__(self, "active", bool(self.active))
            super().__post_init__()

    min_popsize = 2  # mu = popsize // 2 parents, at least one
    default_popsize = staticmethod(default_nes_popsize)
    @dataclasses.dataclass
    class State:
        """What evolves besides the mean and sigma: ``C = B D^2 B^T``, the evolution paths, the
        generation of the last eigendecomposition; and the samples ``z`` of the last ``ask()`` for its
        ``tell()`` (never saved: a state describes the strategy before that ``ask()``)."""

        C: np.ndarray = state_field()
        B: np.ndarray = state_field()
        #: At least 1e-150 (see ``_decompose``).
        D: np.ndarray = state_field(bound=POSITIVE)
        p_sigma: np.ndarray = state_field()
        p_c: np.ndarray = state_field()
        eigen_generation: int = state_field(bound=NONNEGATIVE)
        z: np.ndarray | None = state_field(saved=False)

    params: Params
    state: State
    #: The covariance matrix (without sigma^2), its eigenvectors and the square roots of its eigenvalues.
    C: StateView[np.ndarray] = StateView()
    B: StateView[np.ndarray] = StateView()
    D: StateView[np.ndarray] = StateView()
    #: The evolution paths of sigma and of C.
    p_sigma: StateView[np.ndarray] = StateView()
    p_c: StateView[np.ndarray] = StateView()

    def memory_needed(self) -> str:
        return dense_memory_needed(self.dim, "sep-cma-es")

    def _setup(self) -> None:
        check_dense_dim("cma-es", self.dim, "sep-cma-es")
        p = self.params
        self.sigma = p.sigma
        self.constants = cma_parameters(self.dim, self.popsize, check_mu(p.mu, self.popsize), p.active)
        c = self.constants
        default_interval = max(1, int(1 / (10 * self.dim * (c.c_1 + c.c_mu))))
        self.eigen_interval = default_interval if p.eigen_interval is None else p.eigen_interval
        self.state = self.State(C=np.eye(self.dim), B=np.eye(self.dim), D=np.ones(self.dim),
                                p_sigma=np.zeros(self.dim), p_c=np.zeros(self.dim), eigen_generation=0)

    @property
    def covariance(self) -> np.ndarray:
        """The search distribution's covariance ``sigma^2 C``."""
        return self.sigma**2 * self.C

    def _ask(self) -> Population:
        state = self.state
        state.z = self.rng.standard_normal((self.popsize, self.dim))
        y = (state.z * state.D) @ state.B.T
        return Population.from_dense(self._center + self.sigma * y)

    def _tell(self, population: Population, fitness: np.ndarray) -> None:
        p, n, state = self.constants, self.dim, self.state
        z = state.z
        assert z is not None  # drawn by _ask(); tell() comes after ask()
        y = (z * state.D) @ state.B.T
        mean_w = rank_weights(fitness, p.mean_weights)
        cov_w = rank_weights(fitness, p.weights)
        z_w, y_w = mean_w @ z, mean_w @ y
        self._center = self._center + self.sigma * y_w
        # Step-size control: C^-1/2 <y>_w = B <z>_w (with the B, D the samples were drawn with).
        state.p_sigma = (1 - p.c_sigma) * state.p_sigma + math.sqrt(p.c_sigma * (2 - p.c_sigma) * p.mu_eff) * (state.B @ z_w)
        norm_ps = float(np.linalg.norm(state.p_sigma))
        self.sigma = float(self.sigma * math.exp(p.c_sigma / p.d_sigma * (norm_ps / p.chi_n - 1)))
        # Covariance: rank-one with the h_sigma stall, rank-mu with all (negative: rescaled) weights.
        threshold = (1.4 + 2 / (n + 1)) * p.chi_n
        h_sigma = norm_ps / math.sqrt(1 - (1 - p.c_sigma) ** (2 * (self.generation + 1))) < threshold
        state.p_c = (1 - p.c_c) * state.p_c + h_sigma * math.sqrt(p.c_c * (2 - p.c_c) * p.mu_eff) * y_w
        z_sq = np.einsum("ij,ij->i", z, z)
        w_circ = np.where(cov_w < 0, cov_w * n / np.maximum(z_sq, 1e-300), cov_w)
        delta_h = (1 - h_sigma) * p.c_c * (2 - p.c_c)
        decay = 1 + p.c_1 * delta_h - p.c_1 - p.c_mu * cov_w.sum()
        state.C = decay * state.C + p.c_1 * np.outer(state.p_c, state.p_c) + p.c_mu * (y.T * w_circ) @ y
        if self.generation + 1 - state.eigen_generation >= self.eigen_interval:
            self._decompose()
        state.z = None
        return None

    def _decompose(self) -> None:
        state = self.state
        state.C = (state.C + state.C.T) / 2
        values, state.B = np.linalg.eigh(state.C)
        state.D = np.sqrt(np.maximum(values, 1e-300))
        state.eigen_generation = self.generation + 1
