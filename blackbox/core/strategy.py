"""The ask/tell protocol every strategy follows, and the base class that enforces it.

Convention: **fitness is maximized** (higher is better), as in the ES papers and in RL returns.
Test functions return the negated loss.

A strategy is a mutable object, like pycma's or a torch optimizer: ``ask()`` returns a
:class:`~blackbox.Population`, ``tell(fitness)`` takes one value per row of it and updates the
search distribution. All randomness comes from the strategy's own ``numpy.random.Generator``,
seeded at construction, so a seed fixes the whole run. ``state_dict()`` holds numpy arrays and
JSON-able values only (RNG state included) and ``load_state_dict()`` continues bit-identically.

A strategy declares its hyperparameters once, as a ``Params`` dataclass (:mod:`blackbox.core.params`),
and the attributes that evolve as it runs in ``state_fields`` (:mod:`blackbox.core.state`); the
base class builds the constructor's options and the state I/O from those declarations. ``tell``
reduces a compact population through :meth:`Strategy.reduce`, the one place an executor can take over.

The reduction in use is part of the state (``state_dict()["reduction"]``): new strategies use
:data:`~blackbox.core.reduce.REDUCTION`, whose bits do not depend on how the sums are split among
threads, processes or machines (:mod:`blackbox.core.reduce`); a state without the key (written by
0.1.0) resumes with 0.1.0's one float32 pass, bit-identically.
"""

from __future__ import annotations

import copy
import inspect
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, overload

import numpy as np

from .._validate import (
    MAX_POPSIZE,
    check_dim_x0,
    check_float,
    check_int,
    check_seed,
    check_state_layout,
)
from ..errors import ConfigError, StateError, TellError, UnknownNameError
from .coefficients import CoefficientsStep
from .fitness import check_fitness
from .params import Params, make_params, options_signature
from .population import Population
from .population_state import population_from_state, population_state
from .reduce import REDUCTION, block_sums
from .state import check_fields, check_rng_state, save_fields

__all__ = ["Strategy", "Reducer", "population_sums", "check_fitness", "LEGACY_REDUCTION", "REDUCTIONS"]

#: The keys every ``state_dict()`` has, whatever the strategy (``"reduction"`` too, but a state
#: written by 0.1.0 lacks it).
BASE_STATE = ("strategy", "dim", "popsize", "seed", "generation", "rng", "center", "sigma", "update_norm")
#: 0.1.0's reduction: one float32 pass over the distinct slices in offset order, in one process.
LEGACY_REDUCTION = "float32"
#: The reductions this version computes, by the name a state records.
REDUCTIONS = (REDUCTION, LEGACY_REDUCTION)


class Reducer(Protocol):
    """Computes the sums a Gaussian strategy's update needs from a compact population.

    ``(sum_i c_i s_i eps_i, sum_i q_i eps_i**2)`` for coefficients ``c`` and square coefficients
    ``q`` (None: the second sum is not needed and None is returned for it), with ``eps_i`` row
    i's noise-table slice and ``s_i`` its sign, as float64 vectors of length ``dim``, with the bits
    of :func:`blackbox.core.reduce.block_sums` (an executor that takes over may split the blocks
    any way it likes: the integers it adds do not depend on the split).
    """

    def __call__(self, population: Population, coefficients: np.ndarray,
                 square_coefficients: np.ndarray | None = None, /) -> tuple[np.ndarray, np.ndarray | None]: ...


def population_sums(population: Population, coefficients: np.ndarray,
                    square_coefficients: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """0.1.0's reduction (:data:`LEGACY_REDUCTION`): ``Population.noise_weighted_sum(s)``, float32, in
    this process. A strategy whose state says ``"float32"`` (a run started by 0.1.0) reduces with it."""
    if square_coefficients is None:
        return population.noise_weighted_sum(coefficients), None
    return population.noise_weighted_sums(coefficients, square_coefficients)


class Strategy(CoefficientsStep, ABC):
    """Base class of every strategy: checks the ask/tell order and the fitness, keeps the RNG and the state.

    Subclasses implement ``_ask() -> Population`` (changing state only through ``self.rng``) and
    ``_tell(population, fitness) -> float | None`` (assigning a new array to ``self._center``, never
    writing into the old one, and returning the norm of the update when it is at hand). They
    declare their hyperparameters as ``Params`` (then the constructor takes them as keywords,
    checks them, and calls ``_setup()`` to derive what depends on the dimension) and their evolving
    attributes in ``state_fields``. A strategy written without them (as in 0.1.0) calls
    ``super().__init__(dim=dim, popsize=popsize, x0=x0, seed=seed)`` and may keep state the
    declarations cannot describe in ``_state_dict`` / ``_load_state_dict`` (which checks it itself).
    """

    #: Registry name, set by each built-in (``"openai-es"``); plugins set their own.
    name: ClassVar[str] = ""
    #: The hyperparameters: a :class:`~blackbox.core.params.Params` dataclass (None: none declared).
    Params: ClassVar[type[Params] | None] = None
    #: The attributes that evolve and that ``state_dict()`` saves beside the center, sigma, the
    #: generation and the generator: arrays, numbers, or objects with their own ``state_dict()``.
    state_fields: ClassVar[tuple[str, ...]] = ()
    #: The arrays of ``state_fields`` whose number of rows changes as the strategy runs (a GA's
    #: parents); every other array keeps its shape, and a state with another shape is refused.
    state_rows: ClassVar[tuple[str, ...]] = ()
    #: Bounds of ``state_fields`` beyond "finite" that a loaded state must keep
    #: (``{"stdev": POSITIVE}``: :mod:`blackbox.core.state`).
    state_bounds: ClassVar[Mapping[str, str]] = {}
    #: Optimizer steps each ``tell()`` takes, for a strategy whose ``optimizer`` (a state field with a
    #: step count ``t``) steps a fixed number of times a generation: a loaded state must agree
    #: (``t == optimizer_steps_per_generation * generation``). None: no such relation is checked.
    optimizer_steps_per_generation: ClassVar[int | None] = None
    #: True when ``sigma`` is the ``Params`` field of that name, evolved: a loaded sigma passes that
    #: field's checks (:meth:`Params.check_evolved`). False when sigma summarizes a per-dimension
    #: ``stdev`` declared in ``state_fields``.
    sigma_is_param: ClassVar[bool] = True
    #: The smallest population the strategy works with: 2 unless the strategy says otherwise (a (1+1)-ES: 1).
    min_popsize: ClassVar[int] = 2
    #: True when ``_tell`` uses only the population it is given, nothing its last ``_ask`` kept: then
    #: the pipelined mode may sample the next population before this one is told (:meth:`ask_ahead`).
    #: False by default, so that a strategy written without the mode in mind is never fed the wrong rows.
    asks_ahead: ClassVar[bool] = False
    #: What :meth:`reduce` calls; an executor may set its own on a strategy (default: the fixed
    #: blocks summed in this process).
    reducer: Reducer = staticmethod(block_sums)
    #: The constructor's arguments while the start is open (see :meth:`start_at`); an instance attribute.
    _construction: tuple[tuple[Any, ...], dict[str, Any]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The options a factory takes: its Params fields, or the plain constructor of 0.1.0.
        if cls.Params is not None:
            cls.__signature__ = options_signature(cls)  # type: ignore[attr-defined]
        else:
            cls.__signature__ = _PLAIN_SIGNATURE if cls.__init__ is Strategy.__init__ else None  # type: ignore

    def __new__(cls, *args: Any, **kwargs: Any) -> Strategy:
        strategy = super().__new__(cls)
        # How it was built, so that start_at() can build it again at another x0 (dropped once the start is chosen).
        strategy._construction = (args, kwargs)
        return strategy

    def __init__(self, dim: int | None = None, params: Any = None, *, popsize: int | None = None,
                 x0: Any = None, seed: int | None = None, **overrides: Any):
        self.dim, x0_vec = check_dim_x0(dim, x0)
        if x0 is not None:
            self.__dict__.pop("_construction", None)
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
        # The pipelined mode: a population asked ahead of the pending one's tell, and whether the
        # pending population must be kept in the state (it was sampled before an update it now follows).
        self._ahead: Population | None = None
        self._rng_state_at_ahead: Mapping[str, Any] | None = None
        self._pending_kept = False
        #: The reduction of the noise-weighted sums (a state written by 0.1.0 sets LEGACY_REDUCTION).
        self.reduction: str = REDUCTION
        if self.Params is not None:
            try:
                self._setup()
            except MemoryError as exc:
                raise self._out_of_memory("building it", exc) from None

    @staticmethod
    def default_popsize(dim: int) -> int | None:
        """The population size when ``popsize`` is None, from the dimension (None: popsize is required)."""
        return None

    def _setup(self) -> None:
        """Derive from ``self.params``, ``dim`` and ``popsize`` what the strategy needs (checks that
        need the dimension, the initial state); called at the end of the constructor."""

    # -- the starting point ---------------------------------------------------------------
    @property
    def start_chosen(self) -> bool:
        """True once the starting point is settled: ``x0`` was given, :meth:`start_at` was called,
        a state was loaded, or the first ``ask()`` was made. Until then the center is the default
        ``x0`` (zeros), and :func:`blackbox.optimize` moves it to the problem's ``initial_params``."""
        return "_construction" not in self.__dict__ or self.generation != 0 or self._pending is not None

    def start_at(self, x0: Any) -> None:
        """Build this strategy again as it was built, with ``x0`` as its starting point.

        Only before the first ``ask()`` and only when no ``x0`` was given (StateError otherwise):
        the strategy then is exactly the one its constructor makes with this ``x0`` (everything
        derived from the start, such as a GA's parents, included).
        """
        construction = self.__dict__.get("_construction")
        if construction is None or self.start_chosen:
            raise StateError(
                f"start_at() moves a strategy whose start is still open; this one {self._start_settled_by()}. "
                f"Pass x0= when you build the strategy instead"
            )
        args, kwargs = construction
        kwargs = {**kwargs, "x0": x0, "seed": self.seed}
        type(self).__init__(self, *args, **kwargs)
        self.__dict__.pop("_construction", None)

    def _start_settled_by(self) -> str:
        return ("has run a generation" if self.generation or self._pending is not None
                else "was given x0 or a loaded state")

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
        self.__dict__.pop("_construction", None)  # the start is settled by the first population
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
        if not self.asks_ahead:
            raise StateError(
                f"{self.name or type(self).__name__} cannot sample ahead: its tell() uses what its last ask() kept; "
                f"run it without the pipelined mode"
            )
        if self._pending is None:
            raise StateError("ask_ahead() needs a pending population; call ask() first, then ask_ahead()")
        if self._ahead is not None:
            raise StateError(
                "ask_ahead() called twice without tell(); tell() the pending population's fitness first"
            )
        self._rng_state_at_ahead = self.rng.bit_generator.state
        self._ahead = self._ask()
        return self._ahead

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
            # numpy's overflow warnings would be printed before the clean TellError below (or for an
            # update norm that overflowed): a non-finite result is checked and reported here instead.
            # Division by zero and invalid operations still warn: they are a strategy's bugs (the
            # conformance kit's check_constant_fitness turns them into errors to find them).
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
        self._pending, self._ahead = self._ahead, None  # a population asked ahead is now pending
        self._pending_kept = self._pending is not None
        self._rng_state_at_ask = self._rng_state_at_ahead = None
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

    def memory_needed(self) -> str:
        """What the strategy needs in memory at its peak, in words (``"about 19.2 GB: ..."``), for the
        error when an allocation fails; empty when it has nothing particular to say."""
        return ""

    def _out_of_memory(self, stage: str, exc: MemoryError) -> ConfigError:
        """The one-line error for an allocation that failed in ``stage``."""
        name = self.name or type(self).__name__
        need = self.memory_needed()
        return ConfigError(
            f"{name} ran out of memory in {stage} at dim={self.dim}, popsize={self.popsize}"
            f"{': it needs ' + need if need else ''} ({type(exc).__name__}: {exc or 'no more memory'}); "
            f"lower dim or popsize, or run on a machine with more memory"
        )

    def _check_usable(self) -> None:
        if self._diverged is not None:
            raise StateError(f"this strategy cannot go on: {self._diverged}")

    # -- state ----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue bit-identically; numpy arrays and JSON-able values only.

        The base keys (center, sigma, generation, the generator, ...) and the ``state_fields``.
        Taken between ``ask()`` and ``tell()``, it describes the state before that ``ask()``:
        after loading, the next ``ask()`` returns the same population again.
        """
        rng_state = self._rng_state_at_ask if self._pending is not None else self.rng.bit_generator.state
        pending = None
        if self._pending_kept and self._pending is not None:  # sampled before the last update: keep
            pending = population_state(self._pending)  # it, and the generator after it
            rng_state = self._rng_state_at_ahead or self.rng.bit_generator.state
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
            "reduction": self.reduction,
        }
        if pending is not None:
            state["asked_ahead"] = pending
        state.update(save_fields(self, self.state_fields))
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
        for key in (*BASE_STATE, *self.state_fields):
            if key not in state:
                raise ConfigError(f"state_dict has no {key!r}; it was not made by Strategy.state_dict()")
        declared = [key for key in (*BASE_STATE, *self.state_fields) if key not in self.state_rows]
        template = self.state_dict()
        check_state_layout({key: template[key] for key in declared}, state)
        if not np.all(np.isfinite(np.asarray(state["center"], dtype=np.float64))):
            raise ConfigError("state_dict center is not finite")
        reduction = state.get("reduction", LEGACY_REDUCTION)  # absent: written by 0.1.0
        if reduction not in REDUCTIONS:
            raise ConfigError(
                f"state_dict reduction {reduction!r} is not known to this version of blackbox (it knows "
                f"{', '.join(repr(r) for r in REDUCTIONS)}); resume the run with the version that wrote it"
            )
        self._check_base_state(state)
        fields = check_fields(self, self.state_fields, state, rows=self.state_rows, bounds=self.state_bounds)
        self._check_optimizer_steps(state)
        self.rng.bit_generator.state = copy.deepcopy(state["rng"])
        self.seed = int(state["seed"])
        self.generation = int(state["generation"])
        self._center = np.array(state["center"], dtype=np.float64)
        self.sigma = float(state["sigma"])
        self.update_norm = float(state["update_norm"])
        self._pending = None
        self._rng_state_at_ask = None
        self._diverged = None
        self._ahead, self._rng_state_at_ahead, self._pending_kept = None, None, False
        if "asked_ahead" in state:  # a population asked ahead (pipelined mode): pending again, as saved
            self._pending, self._pending_kept = population_from_state(state["asked_ahead"], self.dim), True
        self.reduction = str(reduction)
        for name in self.state_fields:
            current = getattr(self, name)
            if callable(getattr(current, "load_state_dict", None)):
                current.load_state_dict(state[name])
            else:
                setattr(self, name, fields[name])
        self._load_state_dict(state)
        self.__dict__.pop("_construction", None)

    def _check_base_state(self, state: dict[str, Any]) -> None:
        """The base keys checked as the constructor checks its arguments (ConfigError naming the key):
        the seed and the generation are integers >= 0, the generator's state is one this strategy's
        generator could have (its stream that of the seed), sigma and the update norm are finite
        and >= 0, and where ``sigma`` is a ``Params`` field that evolves, the field's own checks."""
        seed = check_int("state_dict/seed", state["seed"], minimum=0, maximum=2**63 - 1)
        check_int("state_dict/generation", state["generation"], minimum=0, maximum=2**63 - 1)
        sigma = check_float("state_dict/sigma", state["sigma"], nonnegative=True)
        check_float("state_dict/update_norm", state["update_norm"], nonnegative=True)
        check_rng_state("state_dict/rng", state["rng"], self.rng, seed if self._seeded_from_seed() else None)
        if self.sigma_is_param and self.Params is not None and "sigma" in self.Params.options():
            try:
                self.params.check_evolved("sigma", sigma)
            except ConfigError as exc:
                raise ConfigError(f"state_dict/sigma is {sigma!r}, which {self.name or type(self).__name__} "
                                  f"refuses: {exc}") from None

    def _seeded_from_seed(self) -> bool:
        """True when this strategy's generator is ``numpy.random.default_rng(self.seed)`` (as the base
        makes it): then a saved generator's PCG64 stream must be its saved seed's."""
        current = self.rng.bit_generator.state
        if current.get("bit_generator") != "PCG64":
            return False
        same: bool = current["state"]["inc"] == np.random.default_rng(self.seed).bit_generator.state["state"]["inc"]
        return same

    @overload
    def reduce(self, population: Population, coefficients: np.ndarray) -> tuple[np.ndarray, None]: ...

    @overload
    def reduce(self, population: Population, coefficients: np.ndarray,
               square_coefficients: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

    def reduce(self, population: Population, coefficients: np.ndarray,
               square_coefficients: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """The noise-weighted sums of a compact population (see :class:`Reducer`): the one place
        where ``tell`` reduces the rows, through ``self.reducer`` (or, for a run started by 0.1.0,
        with 0.1.0's float32 pass in this process, so that it continues bit-identically)."""
        if self.reduction == LEGACY_REDUCTION:
            return population_sums(population, coefficients, square_coefficients)
        return self.reducer(population, coefficients, square_coefficients)

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

    def _check_optimizer_steps(self, state: dict[str, Any]) -> None:
        """A strategy whose optimizer steps once a generation (``optimizer_steps_per_generation``) has
        taken exactly ``generation`` steps: another step count is an impossible state (a tampered or
        miswritten checkpoint whose checksums were made again), refused before anything is changed."""
        per = self.optimizer_steps_per_generation
        optimizer = state.get("optimizer")
        if per is None or not isinstance(optimizer, dict) or "t" not in optimizer:
            return
        steps, generation = int(optimizer["t"]), int(state["generation"])
        if steps != per * generation:
            raise ConfigError(f"state_dict/optimizer/t is {steps}, but a strategy at generation {generation} has "
                              f"taken {per * generation} optimizer steps ({per} a generation): the state is "
                              f"inconsistent")

    def _state_dict(self) -> dict[str, Any]:
        """State that ``state_fields`` cannot describe (a wrapped library's object graph); plain data."""
        return {}

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        """Check and restore what ``_state_dict`` returned (the base does not know its layout)."""


#: The constructor a strategy without ``Params`` inherits, as it reads in 0.1.0.
_PLAIN_SIGNATURE = inspect.Signature([
    inspect.Parameter("dim", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None, annotation=int | None),
    inspect.Parameter("popsize", inspect.Parameter.KEYWORD_ONLY, annotation=int),
    inspect.Parameter("x0", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Any),
    inspect.Parameter("seed", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=int | None),
])
