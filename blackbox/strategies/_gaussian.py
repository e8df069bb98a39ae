"""What the Gaussian strategies share: the noise-table base class, row layouts (mirrored pairs and
plain samples), the summary sigma of a per-dimension standard deviation, the NES family's default
population size and utilities, and sigma schedules."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validate import check_float, check_int
from ..core import mapped
from ..core.noise import NoiseTable
from ..core.population import Population
from ..core.strategy import Strategy
from ..errors import ConfigError
from .shaping import get_shaping

__all__ = [
    "NoiseTableStrategy", "sample_rows", "check_mirrored_popsize", "root_mean_square", "default_nes_popsize",
    "normalized_utilities", "SigmaSchedule", "check_dtype",
]


class NoiseTableStrategy(Strategy):
    """A strategy whose rows are read from the shared noise table (compact populations).

    ``noise_seed`` picks the table and ``noise_size`` its size (default: :meth:`NoiseTable.for_dim`);
    they are infrastructure, not hyperparameters, so they are constructor options beside ``x0``
    and ``seed`` rather than ``Params`` fields.
    """

    #: The built-in table strategies tell from the population they are given, nothing kept from
    #: their last ask: the pipelined mode can sample the next population first.
    asks_ahead = True

    def __init__(self, dim: int | None = None, params: Any = None, *, x0: Any = None, seed: int | None = None,
                 noise_size: int | None = None, noise_seed: int = 0, dtype: Any = "float64", **overrides: Any):
        #: The rows' precision: ``float64`` (the default, bit for bit as ever) or ``float32`` (rows
        #: built in float32 straight from the float32 noise, half the memory; the center kept in float32).
        self.dtype = check_dtype(dtype)
        super().__init__(dim, params, x0=x0, seed=seed, **overrides)
        self.table = NoiseTable.for_dim(self.dim, check_int("noise_seed", noise_seed, minimum=0), noise_size)

    def _start(self) -> None:
        super()._start()
        self._round_center()  # a float32 strategy starts from its start rounded to float32

    def _round_center(self) -> None:
        """A float32 strategy keeps its center in float32: every update is rounded once, here."""
        if self.dtype == np.float32:
            self._center = self._center.astype(np.float32).astype(np.float64)

    #: A float32 strategy's one buffer for its populations' ``params``, and the population whose
    #: rows it holds (never pickled: see ``__getstate__``).
    _rows_buffer: np.ndarray | None = None
    _rows_owner: Population | None = None

    def _typed(self, population: Population) -> Population:
        if self.dtype == np.float32 and population.table is not None:
            population.dtype = self.dtype  # set before anything is built from it
            population.into = self._rows_into
        return population

    def _rows_into(self, population: Population) -> np.ndarray:
        """The buffer a float32 population's ``params`` is built in: one per strategy, reused every
        generation, so a float32 loop holds one matrix, as EvoTorch's does. The population whose
        rows it held forgets them (asked again, it builds them anew); an array taken from it earlier
        now holds the new rows: copy a generation's ``params`` to keep it past the next one's."""
        shape = (len(population), self.dim)
        owner, buffer = self._rows_owner, self._rows_buffer
        if owner is not None and owner is not population:
            owner.release()
        if buffer is None or buffer.shape != shape:
            self._rows_buffer = None  # the old buffer goes first
            buffer = self._rows_buffer = mapped.large(shape, np.float32, "population.params (float32)")
        self._rows_owner = population
        return buffer

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_rows_buffer", None)
        state.pop("_rows_owner", None)
        return state

    def ask(self) -> Population:
        return self._typed(super().ask())

    def ask_ahead(self) -> Population:
        return self._typed(super().ask_ahead())

    def tell(self, fitness: object) -> None:
        super().tell(fitness)
        self._round_center()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self._round_center()


def check_dtype(value: object) -> np.dtype:
    """``float32`` or ``float64`` (a name or a numpy dtype); anything else is one ConfigError line."""
    try:
        kind = np.dtype(value) if isinstance(value, (str, type, np.dtype)) else None
    except TypeError:
        kind = None
    if kind is None or kind.name not in ("float32", "float64"):
        raise ConfigError(f"dtype must be 'float32' or 'float64' (the precision of the rows and the center), "
                          f"got {value!r}")
    return kind


def default_nes_popsize(dim: int) -> int:
    """``4 + floor(3 ln d)``, the NES family's (and CMA-ES's) default population size."""
    return 4 + int(math.floor(3 * math.log(dim)))


def normalized_utilities(shaping: str, fitness: np.ndarray) -> np.ndarray:
    """NES utilities as they are; any other shaping mean-centered and scaled to unit absolute sum."""
    u = get_shaping(shaping)(fitness)
    if shaping == "nes":
        return u
    u = u - u.mean()
    total = np.abs(u).sum()
    return u / total if total > 0 else np.zeros_like(u)


def root_mean_square(values: np.ndarray) -> float:
    """``sqrt(mean(values**2))``, the scalar ``sigma`` of a per-dimension stdev, without overflowing
    when the values are beyond 1e154 (their squares would be infinite)."""
    with np.errstate(over="ignore"):
        result = float(np.sqrt(np.mean(values * values)))
    if not np.isfinite(result):
        largest = float(np.max(np.abs(values)))
        result = largest * float(np.sqrt(np.mean((values / largest) ** 2)))
    return result


def check_mirrored_popsize(popsize: int, mirrored: bool) -> None:
    """Mirrored sampling needs pairs: refuse an odd population with a fix in the message."""
    if mirrored and popsize % 2:
        raise ConfigError(
            f"popsize must be even for mirrored sampling, got {popsize}; "
            f"use {popsize + 1} or pass mirrored=False"
        )


def sample_rows(
    table: NoiseTable, rng: np.random.Generator, popsize: int, dim: int, mirrored: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Offsets, signs and seed groups for ``popsize`` rows.

    Mirrored (antithetic) sampling lays pairs out as ``+eps, -eps`` on adjacent rows that share one
    offset and one seed group, so both members of a pair meet the same episode.
    """
    check_mirrored_popsize(popsize, mirrored)
    if mirrored:
        half = table.sample_offsets(rng, popsize // 2, dim)
        offsets = np.repeat(half, 2)
        signs = np.tile(np.array([1, -1], dtype=np.int8), popsize // 2)
        groups = np.arange(popsize, dtype=np.int64) // 2
    else:
        offsets = table.sample_offsets(rng, popsize, dim)
        signs = np.ones(popsize, dtype=np.int8)
        groups = np.arange(popsize, dtype=np.int64)
    return offsets, signs, groups


# -- sigma schedules, for the strategies whose sigma does not adapt itself (openai-es, nes, ga, ars)


@dataclass(frozen=True)
class SigmaSchedule:
    """Multiplicative decay per generation down to a floor."""

    decay: float = 1.0
    minimum: float = 0.0

    @classmethod
    def checked(cls, sigma: float, sigma_decay: float, sigma_min: float) -> SigmaSchedule:
        """Validate the options ``sigma_decay`` (in (0, 1]) and ``sigma_min`` (in [0, sigma])."""
        decay = check_float("sigma_decay", sigma_decay, positive=True, maximum=1.0)
        minimum = check_float("sigma_min", sigma_min, nonnegative=True)
        if minimum > sigma:
            raise ConfigError(
                f"sigma_min must be <= sigma (the initial sigma, {sigma!r}), got {minimum!r}; "
                f"it is a floor that the decay stops at"
            )
        return cls(decay, minimum)

    def __call__(self, sigma: float) -> float:
        """The sigma of the next generation."""
        return max(self.minimum, sigma * self.decay)

