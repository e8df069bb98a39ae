"""The ask/tell protocol every strategy follows, and the base class that enforces it.

Convention: **fitness is maximized** (higher is better), as in the ES papers and in RL returns.
Test functions return the negated loss.

A strategy is a mutable object, like pycma's or a torch optimizer: ``ask()`` returns a
:class:`~blackbox.Population`, ``tell(fitness)`` takes one value per row of it and updates the
search distribution. All randomness comes from the strategy's own ``numpy.random.Generator``,
seeded at construction, so a seed fixes the whole run. ``state_dict()`` holds numpy arrays and
JSON-able values only (RNG state included) and ``load_state_dict()`` continues bit-identically.
"""

from __future__ import annotations

import copy
import numbers
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from .._validate import MAX_POPSIZE, check_dim_x0, check_int, check_seed, check_state_layout
from ..errors import ConfigError, StateError, TellError
from .population import Population

__all__ = ["Strategy", "check_fitness"]


def check_fitness(fitness: Any, popsize: int) -> np.ndarray:
    """Fitness as a float64 vector of length ``popsize``, or a TellError saying what is wrong.

    Accepts any array-like of real numbers (booleans count as 0 and 1) or an object with a
    ``fitness`` attribute (an EvalResult). NaN is allowed and ranks worst, and so do the masked
    entries of a masked array. Complex numbers, strings, dates and other objects are refused rather
    than converted (numpy would drop an imaginary part or parse ``"1.5"`` silently).
    """
    fitness = getattr(fitness, "fitness", fitness)
    mask = np.ma.getmaskarray(fitness) if isinstance(fitness, np.ma.MaskedArray) else None
    try:
        raw = np.asarray(np.ma.getdata(fitness) if mask is not None else fitness)
        if raw.dtype.kind == "O" and all(isinstance(v, numbers.Real) for v in raw.ravel()):
            raw = raw.astype(np.float64)  # Python ints too large for int64, mixed numbers
        if raw.dtype.kind not in "biuf":
            raise TypeError(f"values of type {raw.dtype}")
        f = raw.astype(np.float64, copy=False)
    except (TypeError, ValueError, OverflowError) as exc:
        raise TellError(
            f"tell() needs real numbers, got {type(fitness).__name__} that does not convert to floats "
            f"({exc}); pass one fitness value per row of the population from ask()"
        ) from None
    if mask is not None and mask.shape == f.shape:
        f[mask] = np.nan
    if f.ndim != 1:
        raise TellError(
            f"tell() got fitness of shape {f.shape}; expected shape ({popsize},): "
            f"pass a flat array with one value per row of the population from ask()"
        )
    if len(f) != popsize:
        raise TellError(
            f"tell() got {len(f)} fitness values for a population of {popsize}; "
            f"pass one value per row of the population from ask()"
        )
    return f


class Strategy(ABC):
    """Base class of every strategy: checks the ask/tell order and the fitness, keeps the RNG.

    Subclasses implement ``_ask() -> Population`` (changing state only through ``self.rng``),
    ``_tell(population, fitness) -> float | None`` (assigning a new array to ``self._center``, never
    writing into the old one, and returning the norm of the update when it is at hand), and
    ``_state_dict`` / ``_load_state_dict`` for their own state.
    """

    #: Registry name, set by each built-in (``"openai-es"``); plugins set their own.
    name: ClassVar[str] = ""
    #: True when every array of ``state_dict()`` keeps its shape for the strategy's whole life, so
    #: that ``load_state_dict`` can refuse a state (a corrupt or crafted checkpoint) whose arrays
    #: have other shapes. A strategy whose state grows (a wrapped library's history) sets False.
    fixed_state_layout: ClassVar[bool] = True

    def __init__(self, *, dim: int | None, popsize: int, x0: Any = None, seed: int | None = None):
        self.dim, x0_vec = check_dim_x0(dim, x0)
        self.popsize = check_int("popsize", popsize, minimum=2, maximum=MAX_POPSIZE)
        self.seed = check_seed(seed)
        self.rng = np.random.default_rng(self.seed)
        self._center = x0_vec
        self.generation = 0
        self.sigma: float = 0.0
        self.update_norm: float = 0.0
        self._pending: Population | None = None
        self._rng_state_at_ask: dict | None = None
        self._diverged: str | None = None

    # -- the protocol ---------------------------------------------------------------------
    @property
    def center(self) -> np.ndarray:
        """The current solution (the distribution's mean, or the GA's elite), read-only."""
        view = self._center.view()
        view.flags.writeable = False
        return view

    @property
    def pending(self) -> bool:
        """True between ``ask()`` and the matching ``tell()``."""
        return self._pending is not None

    def ask(self) -> Population:
        """Sample the next population (``popsize`` rows of ``dim`` parameters)."""
        self._check_usable()
        if self._pending is not None:
            raise StateError(
                "ask() called twice without tell(); evaluate the population from the last ask() "
                "and pass its fitness to tell() first"
            )
        # numpy builds a new state dict on every read: no deep copy needed (it cost ~50 us a generation)
        self._rng_state_at_ask = self.rng.bit_generator.state
        population = self._ask()
        self._pending = population
        return population

    def tell(self, fitness: Any) -> None:
        """Update from one fitness value per row of the last ``ask()`` (higher is better).

        NaN ranks worst and never becomes the best. An update that overflows (the center or sigma
        no longer finite: a step size far too large, or raw fitness near the float limit) raises
        TellError, keeps the previous center, and leaves the strategy refusing ask/tell until a
        state is loaded: a diverged search distribution is never used silently.
        """
        self._check_usable()
        if self._pending is None:
            when = "before ask()" if self.generation == 0 else "twice for one ask()"
            raise StateError(f"tell() called {when}; call ask(), evaluate its rows, then tell()")
        population = self._pending
        f = check_fitness(fitness, len(population))
        previous = self._center
        try:
            norm = self._tell(population, f)
        except OverflowError as exc:  # math.exp of a huge step
            raise self._diverge(previous, f, str(exc)) from None
        if not (np.all(np.isfinite(self._center)) and np.all(np.isfinite(self.sigma))):
            raise self._diverge(previous, f, "the center or sigma is no longer finite")
        if norm is None:
            norm = float(np.linalg.norm(self._center - previous))
        self._pending = None
        self._rng_state_at_ask = None
        self.generation += 1
        self.update_norm = float(norm)

    def _diverge(self, previous: np.ndarray, fitness: np.ndarray, why: str) -> TellError:
        """Mark the strategy unusable after an overflowing update; the error that says so."""
        self._center = previous
        finite = fitness[np.isfinite(fitness)]
        spread = (f"finite fitness from {finite.min():.6g} to {finite.max():.6g}" if len(finite)
                  else "no finite fitness")
        self._diverged = (
            f"the update of generation {self.generation + 1} diverged ({why}; {spread}); lower sigma or the "
            f"learning rates, or use rank-based shaping (centered_ranks), and restore a state with "
            f"load_state_dict() or from a checkpoint"
        )
        return TellError(f"tell() failed: {self._diverged}")

    def _check_usable(self) -> None:
        if self._diverged is not None:
            raise StateError(f"this strategy cannot go on: {self._diverged}")

    # -- state ----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue bit-identically; numpy arrays and JSON-able values only.

        Taken between ``ask()`` and ``tell()``, it describes the state before that ``ask()``:
        after loading, the next ``ask()`` returns the same population again.
        """
        rng_state = self._rng_state_at_ask if self._pending is not None else self.rng.bit_generator.state
        state = {
            "strategy": self.name or type(self).__name__,
            "dim": self.dim,
            "popsize": self.popsize,
            "seed": self.seed,
            "generation": self.generation,
            "rng": copy.deepcopy(rng_state),
            "center": self._center.copy(),
            "sigma": self.sigma,
            "update_norm": self.update_norm,
        }
        state.update(self._state_dict())
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a ``state_dict()``; the strategy's name, dim and popsize must match, and its
        arrays and numbers must fit this strategy (ConfigError naming the key otherwise)."""
        if not isinstance(state, dict):
            raise ConfigError(f"state_dict must be a dict, got {type(state).__name__}")
        expected = {"strategy": self.name or type(self).__name__, "dim": self.dim, "popsize": self.popsize}
        for key, want in expected.items():
            if key not in state:
                raise ConfigError(f"state_dict has no {key!r}; it was not made by Strategy.state_dict()")
            got = state[key]
            if (got.item() if isinstance(got, np.ndarray) else got) != want:
                raise ConfigError(f"state_dict is for {key}={got!r} but this strategy has {key}={want!r}")
        for key in ("rng", "seed", "generation", "center", "sigma", "update_norm"):
            if key not in state:
                raise ConfigError(f"state_dict has no {key!r}; it was not made by Strategy.state_dict()")
        template = self.state_dict()
        if not self.fixed_state_layout:
            template = {key: template[key] for key in ("center", "sigma", "update_norm", "seed", "generation")}
        check_state_layout(template, state)
        if not np.all(np.isfinite(np.asarray(state["center"], dtype=np.float64))):
            raise ConfigError("state_dict center is not finite")
        self.rng.bit_generator.state = copy.deepcopy(state["rng"])
        self.seed = int(state["seed"])
        self.generation = int(state["generation"])
        self._center = np.array(state["center"], dtype=np.float64)
        self.sigma = float(state["sigma"])
        self.update_norm = float(state["update_norm"])
        self._pending = None
        self._rng_state_at_ask = None
        self._diverged = None
        self._load_state_dict(state)

    def stop_reason(self) -> str | None:
        """Why this strategy cannot usefully go on (None while it can); ``optimize`` stops on it.

        The built-ins always go on; a strategy with its own termination criteria (CMA-ES's tolx,
        tolfun, ...) returns a short reason such as ``"pycma: tolfun=1e-11"``.
        """
        return None

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(dim={self.dim}, popsize={self.popsize}, "
                f"generation={self.generation}, seed={self.seed})")

    # -- for subclasses -------------------------------------------------------------------
    @abstractmethod
    def _ask(self) -> Population:
        """Sample a population; change state only through ``self.rng``."""

    @abstractmethod
    def _tell(self, population: Population, fitness: np.ndarray) -> float | None:
        """Update from the checked fitness; return the update's norm if known."""

    def _state_dict(self) -> dict[str, Any]:
        """The subclass's own state (optimizer moments, parents, ...)."""
        return {}

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``_state_dict`` returned."""
