"""The ask/tell protocol every strategy follows, and the base class that enforces it.

Convention: **fitness is maximized** (higher is better), as in the ES papers and in RL returns.
Test functions return the negated loss.

A strategy is a mutable object, like pycma's or a torch optimizer: ``ask()`` returns a
:class:`~blackbox.Population`, ``tell(fitness)`` takes one value per row of it and updates the
search distribution. All randomness comes from the strategy's own ``numpy.random.Generator``,
seeded at construction, so a seed fixes the whole run. ``state_dict()`` holds numpy arrays and
JSON-able values only (RNG state included) and ``load_state_dict()`` continues bit-identically.

A strategy declares its hyperparameters as a ``Params`` dataclass (:mod:`blackbox.core.params`) and
what evolves as a ``State`` dataclass (:mod:`blackbox.core.state`), which holds all that ``tell``
needs besides its arguments. Beside the protocol, in modules of their own: the reduction
(:mod:`~blackbox.core.coefficients`), the pipelined mode (:mod:`~blackbox.core.pipeline`), the start
point (:mod:`~blackbox.core.start`), the state I/O (:mod:`~blackbox.core.strategy_state`), 0.1.0's
leftovers (:mod:`~blackbox.core.compat`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from .._validate import MAX_POPSIZE, check_dim_x0, check_int, check_seed
from ..errors import ConfigError, StateError, TellError, UnknownNameError
from .coefficients import CoefficientsStep, Reducer
from .compat import LEGACY_REDUCTION, REDUCTIONS, factory_signature, population_sums
from .failures import diverged, out_of_memory
from .fitness import check_fitness
from .params import Params, make_params, options_signature
from .pipeline import Pipeline
from .population import Population
from .reduce import REDUCTION
from .start import StartPoint
from .strategy_state import DeclaredState, load_state, save_state

__all__ = ["Strategy", "Reducer", "population_sums", "check_fitness", "LEGACY_REDUCTION", "REDUCTIONS"]


class Strategy(CoefficientsStep, StartPoint, DeclaredState, ABC):
    """Base class of every strategy: checks the ask/tell order and the fitness, keeps the RNG and the state.

    Subclasses implement ``_ask() -> Population`` (changing only ``self.rng`` and the ``State``'s
    unsaved fields: what its ``tell`` needs) and
    ``_tell(population, fitness) -> float | None`` (assigning a new array to ``self._center``, never
    writing into the old one, and returning the norm of the update when it is at hand). They
    declare their hyperparameters as ``Params`` (then the constructor takes them as keywords,
    checks them, and calls ``_setup()`` to derive what depends on the dimension, ``self.state``
    included) and what evolves as a ``State`` dataclass (:class:`DeclaredState`). A strategy written
    without them (as in 0.1.0) calls ``super().__init__(dim=dim, popsize=popsize, x0=x0, seed=seed)``
    and may keep state the declarations cannot describe in ``_state_dict`` / ``_load_state_dict``.
    """

    #: Registry name, set by each built-in (``"openai-es"``); plugins set their own.
    name: ClassVar[str] = ""
    #: The hyperparameters: a :class:`~blackbox.core.params.Params` dataclass (None: none declared).
    Params: ClassVar[type[Params] | None] = None
    #: The smallest population the strategy works with: 2 unless the strategy says otherwise (a (1+1)-ES: 1).
    min_popsize: ClassVar[int] = 2
    #: True when ``_tell`` uses nothing its last ``_ask`` left in the state: then the pipelined mode
    #: may sample the next population before this one is told (:meth:`ask_ahead`). False by default,
    #: so that a strategy written without the mode in mind is never fed the wrong rows.
    asks_ahead: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # help() shows the Params fields (the registry reads Params itself); a 0.1.0-style strategy
        # shows, and the registry reads, the plain constructor.
        cls.__signature__ = (  # type: ignore[attr-defined]
            options_signature(cls) if getattr(cls, "Params", None) is not None
            else factory_signature(cls, cls.__init__ is Strategy.__init__))

    def __init__(self, dim: int | None = None, params: Any = None, *, popsize: int | None = None,
                 x0: Any = None, seed: int | None = None, **overrides: Any):
        self.dim, x0_vec = check_dim_x0(dim, x0)
        self._start_open = x0 is None  # the start may still move (start_at) until it is chosen
        owner = self.name or type(self).__name__
        if self.Params is not None:
            if popsize is not None:
                overrides["popsize"] = popsize
            self.params = make_params(self.Params, params, overrides, owner)
            popsize = getattr(self.params, "popsize", popsize)
        elif params is not None or overrides:
            key = "params" if params is not None else next(iter(overrides))
            raise UnknownNameError(f"strategy {owner!r} has no option {key!r}. Options: dim, popsize, x0, seed")
        if popsize is None:
            popsize = self.default_popsize(self.dim)
        self.popsize = check_int("popsize", popsize, minimum=self.min_popsize, maximum=MAX_POPSIZE)
        self.seed = check_seed(seed)
        self.rng = np.random.default_rng(self.seed)
        self._center = x0_vec
        self.generation = 0
        self.sigma: float = 0.0
        self.update_norm: float = 0.0
        self._pending: Population | None = None
        self._rng_state_at_ask: Mapping[str, Any] | None = None
        self._diverged: str | None = None
        self._pipeline = Pipeline()  # the pipelined mode: a population asked ahead of the pending one's tell
        self.reduction = REDUCTION  # a state written by 0.1.0 sets LEGACY_REDUCTION
        try:
            if self.Params is not None:
                self._setup()
            self._start()  # what derives from the start; start_at() calls it again
        except MemoryError as exc:
            raise self._out_of_memory("building it", exc) from None

    @staticmethod
    def default_popsize(dim: int) -> int | None:
        """The population size when ``popsize`` is None, from the dimension (None: popsize is required)."""
        return None

    def _setup(self) -> None:
        """Derive from ``self.params``, ``dim`` and ``popsize`` what the strategy needs (checks, the
        initial ``self.state``); the constructor calls it before ``_start()`` (:mod:`blackbox.core.start`)."""

    # -- the protocol ---------------------------------------------------------------------
    @property
    def center(self) -> np.ndarray:
        """The current solution (the distribution's mean, or the GA's elite), read-only."""
        view: np.ndarray = self._center.view()
        view.flags.writeable = False
        return view

    @property
    def pending(self) -> bool:
        """True between ``ask()`` and the matching ``tell()``."""
        return self._pending is not None

    @property
    def pending_population(self) -> Population | None:
        """The population the next ``tell()`` is for (None when nothing is pending)."""
        return self._pending

    def ask(self) -> Population:
        """Sample the next population (``popsize`` rows of ``dim`` parameters)."""
        self._check_usable()
        if self._pending is not None:
            raise StateError(
                "ask() called twice without tell(); evaluate the population from the last ask() "
                "and pass its fitness to tell() first"
            )
        self._settle_start()  # the start is settled by the first population
        # numpy builds a new state dict on every read: no deep copy needed (it cost ~50 us a generation)
        self._rng_state_at_ask = self.rng.bit_generator.state
        try:
            population = self._ask()
        except MemoryError as exc:
            raise self._out_of_memory("ask()", exc) from None
        self._pending = population
        return population

    def ask_ahead(self) -> Population:
        """Sample the population after the pending one, now, around the current center: the
        pipelined mode (generation g+1 evaluated while g finishes; its update is one generation
        old when it is told). ``tell`` then applies to the pending population and the one asked
        ahead becomes pending; the order of asks and tells fixes every bit of the run."""
        self._check_usable()
        return self._pipeline.ask(self)

    def tell(self, fitness: object) -> None:
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
            # Overflow is checked and reported below, not warned; division by zero and invalid operations
            # still warn: they are a strategy's bugs (the conformance kit's check_constant_fitness finds them).
            with np.errstate(over="ignore"):
                norm = self._tell(population, f)
        except OverflowError as exc:  # math.exp of a huge step
            raise self._diverge(previous, f, str(exc)) from None
        except MemoryError as exc:  # the update stopped half way: nothing of it may be used
            self._center = previous
            error = self._out_of_memory("tell()", exc)
            self._diverged = f"{error}; restore a state with load_state_dict() or from a checkpoint"
            raise error from None
        if not (np.all(np.isfinite(self._center)) and np.all(np.isfinite(self.sigma))):
            raise self._diverge(previous, f, "the center or sigma is no longer finite")
        if norm is None:
            with np.errstate(over="ignore"):  # a norm that overflows is inf, quietly
                norm = float(np.linalg.norm(self._center - previous))
        self._pending = self._pipeline.advance()  # a population asked ahead is now pending
        self._rng_state_at_ask = None
        self.generation += 1
        self.update_norm = float(norm)

    def _diverge(self, previous: np.ndarray, fitness: np.ndarray, why: str) -> TellError:
        """Mark the strategy unusable after an overflowing update; the error that says so."""
        self._center = previous
        self._diverged = diverged(self.generation, fitness, why)
        return TellError(f"tell() failed: {self._diverged}")

    def memory_needed(self) -> str:
        """What the strategy needs in memory at its peak, in words (``"about 19.2 GB: ..."``), for the
        error when an allocation fails; empty when it has nothing particular to say."""
        return ""

    def _out_of_memory(self, stage: str, exc: MemoryError) -> ConfigError:
        """The one-line error for an allocation that failed in ``stage``."""
        return out_of_memory(self.name or type(self).__name__, stage, self.dim, self.popsize, self.memory_needed(), exc)

    def _check_usable(self) -> None:
        if self._diverged is not None:
            raise StateError(f"this strategy cannot go on: {self._diverged}")

    # -- state ----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue bit-identically; numpy arrays and JSON-able values only.

        The base keys (center, sigma, generation, the generator, ...) and the ``State``'s saved fields.
        Taken between ``ask()`` and ``tell()``, it describes the state before that ``ask()``:
        after loading, the next ``ask()`` returns the same population again.
        """
        return save_state(self)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a ``state_dict()``; the strategy's name, dim and popsize must match, and its
        arrays and numbers must fit this strategy (ConfigError naming the key otherwise)."""
        load_state(self, state)

    def stop_reason(self) -> str | None:
        """Why this strategy cannot usefully go on (None while it can); ``optimize`` stops on it.

        The built-ins always go on; a strategy with its own termination criteria (CMA-ES's tolx,
        tolfun, ...) returns a short reason such as ``"pycma: tolfun=1e-11"``.
        """
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dim={self.dim}, popsize={self.popsize}, generation={self.generation}, seed={self.seed})"

    # -- for subclasses -------------------------------------------------------------------
    @abstractmethod
    def _ask(self) -> Population:
        """Sample a population; change only ``self.rng`` and what ``_tell`` needs (the ``State``'s unsaved fields)."""

    @abstractmethod
    def _tell(self, population: Population, fitness: np.ndarray) -> float | None:
        """Update from the checked fitness and the state; return the update's norm if known."""

