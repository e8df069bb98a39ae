"""Checks every strategy passes: the ask/tell protocol, reproducibility, state, robustness, progress.

Each check builds fresh strategies through the subject (``subject.make_strategy(seed, x0)``) in
the subject's dimension and drives them with a fixed smooth fitness function. They work for
compact (noise-table) and dense (CMA-ES style) populations alike, since they only use the
Population API (``params``, ``rows``, ``take``, ``with_center``, pickling).
"""

from __future__ import annotations

import json
import pickle
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..core.population import Population
from ..core.strategy import Strategy
from ..errors import StateError, TellError
from ..problems.functions import BLOG_SOLUTION
from .plain import plain_data_faults, through_files
from .subject import Subject, describe_difference, fail, register_check, same

__all__: list[str] = []

check = register_check("strategy")

#: The convergence check's budget and goal, stated here so that its message can quote them.
CONVERGENCE_GENERATIONS = 1000
CONVERGENCE_EVALUATIONS = 200_000
CONVERGENCE_FACTOR = 0.01


def fitness_of(x: np.ndarray) -> np.ndarray:
    """The kit's fitness: a smooth bowl around 0.7 with a ripple, so ranks are all distinct."""
    x = np.asarray(x, dtype=np.float64)
    return -np.sum((x - 0.7) ** 2, axis=1) + 0.1 * np.sin(3.0 * x[:, 0])


def start_point(dim: int) -> np.ndarray:
    return np.linspace(-1.0, 1.0, dim)


def make(subject: Subject, seed: int = 0, x0: np.ndarray | None = None) -> Strategy:
    return subject.make_strategy(seed=seed, x0=start_point(subject.strategy_dim) if x0 is None else x0)


def step(strategy: Strategy, fitness: Callable[[np.ndarray], np.ndarray] = fitness_of) -> Population:
    population = strategy.ask()
    strategy.tell(fitness(population.params))
    return population


def expect_same_run(reference: Any, other: Strategy, generations: int, what: str,
                    recorded: list[np.ndarray] | None = None) -> None:
    """``other`` must ask exactly what ``reference`` asks (or what was ``recorded``), generation after generation."""
    for g in range(generations):
        expected = recorded[g] if recorded is not None else reference.ask().params
        got = other.ask().params
        if not same(expected, got):
            raise fail(f"{what}: population {g + 1} differs ({describe_difference(expected, got)})")
        if recorded is None:
            reference.tell(fitness_of(expected))
        other.tell(fitness_of(got))
        if recorded is None and not same(reference.center, other.center):
            raise fail(f"{what}: center after generation {g + 1} differs "
                       f"({describe_difference(reference.center, other.center)})")


def record_run(strategy: Strategy, generations: int) -> list[np.ndarray]:
    out = []
    for _ in range(generations):
        out.append(step(strategy).params.copy())
    return out


def expect_error(kind: type[BaseException], action: Callable[[], object], what: str, mention: tuple[str, ...] = ()) -> None:
    try:
        action()
    except kind as exc:
        for word in mention:
            if word not in str(exc):
                raise fail(f"{what} raised {kind.__name__} as it should, but its message does not say "
                           f"{word!r}: {exc}") from None
        return
    except Exception as exc:  # noqa: BLE001
        raise fail(f"{what} raised {type(exc).__name__} ({exc}); expected blackbox.{kind.__name__}") from exc
    raise fail(f"{what} did not raise; expected blackbox.{kind.__name__}")


@contextmanager
def errors_on_warnings(what: str) -> Iterator[None]:
    """A context that turns RuntimeWarnings (0/0, overflow), and a tell() refused because its
    update left the center or sigma non-finite, into a failure naming ``what``."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            yield
        except RuntimeWarning as exc:
            raise fail(f"{what} raised RuntimeWarning: {exc}") from exc
        except TellError as exc:
            if "diverged" in str(exc):
                raise fail(f"{what} made the center or sigma non-finite ({exc})") from exc
            raise


# -- the protocol ---------------------------------------------------------------------------------
@check
def check_protocol(subject: Subject) -> None:
    """ask/tell/state_dict/load_state_dict, dim, popsize, generation, sigma and center are there and sane."""
    x0 = start_point(subject.strategy_dim)
    strategy = make(subject, x0=x0)
    for name in ("ask", "tell", "state_dict", "load_state_dict"):
        if not callable(getattr(strategy, name, None)):
            raise fail(f"strategy has no method {name}()")
    if getattr(strategy, "dim", None) != subject.dim:
        raise fail(f"strategy.dim is {getattr(strategy, 'dim', None)!r}; it was built with dim={subject.dim}")
    popsize = getattr(strategy, "popsize", None)
    if not isinstance(popsize, (int, np.integer)) or popsize < 1:
        raise fail(f"strategy.popsize must be a positive int, got {popsize!r}")
    if getattr(strategy, "generation", None) != 0:
        raise fail(f"a new strategy must have generation 0, got {getattr(strategy, 'generation', None)!r}")
    sigma = getattr(strategy, "sigma", None)
    try:
        sigma_ok = bool(np.all(np.isfinite(np.asarray(sigma, dtype=np.float64))) and np.all(np.asarray(sigma) >= 0))
    except (TypeError, ValueError):
        sigma_ok = False
    if not sigma_ok:
        raise fail(f"strategy.sigma must be a finite non-negative number (or vector), got {sigma!r}")
    center = np.asarray(strategy.center)
    if center.shape != (subject.dim,) or center.dtype != np.float64:
        raise fail(f"strategy.center must be a float64 vector of shape ({subject.dim},), "
                   f"got {center.dtype} of shape {center.shape}")
    if not same(center, x0):
        raise fail(f"before the first tell(), center must be x0 ({describe_difference(x0, center)})")
    step(strategy)
    stop_reason = getattr(strategy, "stop_reason", None)  # optimize() calls it after every generation
    if not callable(stop_reason):
        raise fail(f"strategy.stop_reason must be a method returning None or a reason (Strategy's returns None), "
                   f"got {stop_reason!r}")
    reason = stop_reason()
    if reason is not None and not isinstance(reason, str):
        raise fail(f"strategy.stop_reason() must return None or a string, got {reason!r}")


@check
def check_ask_shape_and_dtype(subject: Subject) -> None:
    """ask() returns a Population of popsize x dim finite float64 rows that rebuild identically anywhere."""
    strategy = make(subject)
    for generation in range(3):
        population = strategy.ask()
        if not isinstance(population, Population):
            raise fail(f"ask() must return a blackbox.Population, got {type(population).__name__}")
        n, dim = strategy.popsize, subject.strategy_dim
        if len(population) != n or population.dim != dim:
            raise fail(f"ask() returned {len(population)} rows of dim {population.dim}; expected {n} x {dim}")
        params = population.params
        if not isinstance(params, np.ndarray) or params.shape != (n, dim) or params.dtype != np.float64:
            raise fail(f"population.params must be a float64 array of shape ({n}, {dim}), "
                       f"got {getattr(params, 'dtype', type(params))} {getattr(params, 'shape', '')}")
        if not np.all(np.isfinite(params)):
            raise fail(f"population {generation + 1} holds non-finite values")
        groups = np.asarray(population.groups)
        if groups.shape != (n,) or not np.issubdtype(groups.dtype, np.integer) or (n and groups.min() < 0):
            raise fail(f"population.groups must be {n} non-negative integers, got {groups!r}")
        index = np.arange(n)[::-1]
        if not same(population.rows(index), params[index]):
            raise fail("population.rows(i) differs from population.params[i] "
                       f"({describe_difference(population.rows(index), params[index])})")
        if not same(population.take(index[:3]).params, params[index[:3]]):
            raise fail("population.take(i).params differs from population.params[i]")
        shipped = pickle.loads(pickle.dumps(population))
        if not same(shipped.params, params):
            raise fail("a pickled population (as a worker receives it) rebuilds different rows "
                       f"({describe_difference(shipped.params, params)})")
        extended = population.with_center(strategy.center)
        if len(extended) != n + 1 or not same(extended.params[-1], strategy.center):
            raise fail("population.with_center(center) must add one row equal to the center")
        strategy.tell(fitness_of(params))


@check
def check_generation_counter(subject: Subject) -> None:
    """generation counts tell() calls: 0 at first, +1 per tell, unchanged by ask."""
    strategy = make(subject)
    for g in range(3):
        population = strategy.ask()
        if strategy.generation != g:
            raise fail(f"ask() changed generation to {strategy.generation}; expected {g}")
        strategy.tell(fitness_of(population.params))
        if strategy.generation != g + 1:
            raise fail(f"after {g + 1} tell() calls generation is {strategy.generation}")


@check
def check_tell_leaves_inputs_alone(subject: Subject) -> None:
    """tell() neither writes into the fitness array given to it nor changes populations already returned."""
    strategy = make(subject)
    for _ in range(3):
        population = strategy.ask()
        params = population.params.copy()
        fitness = fitness_of(params)
        given = fitness.copy()
        strategy.tell(fitness)
        if not same(fitness, given):
            raise fail("tell() modified the fitness array it was given")
        if not same(population.params, params):
            raise fail("tell() changed the rows of the population it was told about "
                       f"({describe_difference(params, population.params)})")
    center = np.asarray(strategy.center)
    kept = center.copy()
    try:
        center[...] = 123.0
    except (ValueError, TypeError):
        return  # read-only: fine
    if same(np.asarray(strategy.center), np.full_like(kept, 123.0)):
        raise fail("writing into strategy.center changed the strategy; return a copy or a read-only view")


@check
def check_tell_keeps_the_old_center(subject: Subject) -> None:
    """tell() gives the center a new array: a center read before tell() keeps its values."""
    strategy = make(subject)
    for generation in range(3):
        before = strategy.center
        kept = np.array(before, dtype=np.float64, copy=True)
        step(strategy)
        if not same(np.asarray(before, dtype=np.float64), kept):
            raise fail(f"tell() in generation {generation + 1} wrote the new center into the old center array "
                       f"({describe_difference(kept, np.asarray(before))}): a center read before tell(), or a "
                       f"population built on it, changed; assign a new array (self._center = ...) instead")


# -- reproducibility --------------------------------------------------------------------------------
@check
def check_seed_determinism(subject: Subject) -> None:
    """The same seed gives bit-identical populations and centers; another seed gives other ones."""
    a, b = make(subject, seed=11), make(subject, seed=11)
    expect_same_run(a, b, 5, "two strategies built with seed 11")
    first = make(subject, seed=11).ask().params
    other = make(subject, seed=12).ask().params
    if same(first, other):
        raise fail("seeds 11 and 12 give the same first population; the seed must drive the sampling")


@check
def check_state_dict_plain_data(subject: Subject) -> None:
    """state_dict() holds numpy arrays and JSON-able values only (no pickle needed), also mid-generation."""
    strategy = make(subject)
    step(strategy)
    for when in ("after tell()", "between ask() and tell()"):
        if when.startswith("between"):
            strategy.ask()
        state = strategy.state_dict()
        if not isinstance(state, dict):
            raise fail(f"state_dict() must return a dict, got {type(state).__name__}")
        faults = plain_data_faults(state)
        if faults:
            raise fail(f"state_dict() {when} is not plain data: " + "; ".join(faults[:5]))
        try:
            json.dumps({k: v for k, v in state.items() if not isinstance(v, np.ndarray)}, default=_arrays_only)
        except (TypeError, ValueError) as exc:
            raise fail(f"state_dict() {when} is not JSON-able apart from its arrays: {exc}") from exc


def _arrays_only(value: object) -> None:
    if isinstance(value, np.ndarray):
        return None
    raise TypeError(f"{type(value).__name__} is not JSON-able")


def _scramble_arrays(value: object) -> None:
    """Overwrite every array of a loaded state: a strategy must not keep references into it."""
    if isinstance(value, np.ndarray) and value.flags.writeable and value.size:
        if np.issubdtype(value.dtype, np.floating):
            value[...] = np.nan
        elif np.issubdtype(value.dtype, np.integer):
            value[...] = 7
    elif isinstance(value, dict):
        for item in value.values():
            _scramble_arrays(item)
    elif isinstance(value, list):
        for item in value:
            _scramble_arrays(item)


@check
def check_state_dict_round_trip(subject: Subject) -> None:
    """A state_dict saved to files and loaded into a strategy with another seed continues bit-identically."""
    reference = make(subject, seed=5)
    record_run(reference, 3)
    state = reference.state_dict()
    generation = reference.generation
    after = record_run(reference, 4)  # the saved state must not change as the strategy goes on
    restored = make(subject, seed=999)
    loaded = through_files(state)
    restored.load_state_dict(loaded)
    _scramble_arrays(loaded)
    if restored.generation != generation:
        raise fail(f"after load_state_dict() generation is {restored.generation}; the state was taken at {generation}")
    expect_same_run(None, restored, 4, "after a state_dict() round trip", recorded=after)
    if not same(restored.center, reference.center):
        raise fail("after a state_dict() round trip the center drifts from the original's")


@check
def check_state_dict_between_ask_and_tell(subject: Subject) -> None:
    """A state_dict taken between ask() and tell() makes the next ask() return that population again."""
    reference = make(subject, seed=5)
    record_run(reference, 2)
    pending = reference.ask().params.copy()
    state = reference.state_dict()
    reference.tell(fitness_of(pending))
    after = record_run(reference, 3)
    restored = make(subject, seed=999)
    loaded = through_files(state)
    restored.load_state_dict(loaded)
    _scramble_arrays(loaded)
    again = restored.ask().params
    if not same(again, pending):
        raise fail("after loading a state taken between ask() and tell(), ask() returns another population "
                   f"({describe_difference(pending, again)})")
    restored.tell(fitness_of(again))
    expect_same_run(None, restored, 3, "after loading a state taken between ask() and tell()", recorded=after)


@check
def check_pickle(subject: Subject) -> None:
    """A pickled strategy (after tell, and between ask and tell) continues bit-identically."""
    reference = make(subject, seed=3)
    record_run(reference, 2)
    clone = pickle.loads(pickle.dumps(reference))
    expect_same_run(reference, clone, 3, "a pickled copy")
    population = reference.ask()
    clone = pickle.loads(pickle.dumps(reference))
    reference.tell(fitness_of(population.params))
    clone.tell(fitness_of(population.params))
    expect_same_run(reference, clone, 3, "a copy pickled between ask() and tell()")


# -- robustness -------------------------------------------------------------------------------------
@check
def check_nan_fitness(subject: Subject) -> None:
    """NaN fitness (some rows, then all) is accepted without warnings and keeps everything finite."""
    strategy = make(subject)

    def with_nans(x: np.ndarray) -> np.ndarray:
        f = fitness_of(x)
        f[1::4] = np.nan
        return f

    with errors_on_warnings("tell() with NaN fitness"):
        for _ in range(5):
            step(strategy, with_nans)
        step(strategy, lambda x: np.full(len(x), np.nan))
        population = strategy.ask()
    if not np.all(np.isfinite(np.asarray(strategy.center))):
        raise fail("NaN fitness made the center non-finite")
    if not np.all(np.isfinite(population.params)):
        raise fail("NaN fitness made the next population non-finite")
    if not np.all(np.isfinite(np.asarray(strategy.sigma, dtype=np.float64))):
        raise fail(f"NaN fitness made sigma non-finite: {strategy.sigma!r}")


@check
def check_nan_row_never_the_center(subject: Subject) -> None:
    """A row whose fitness is NaN never becomes the center, even the row that would have been the best."""
    strategy = make(subject)
    for generation in range(5):
        previous = np.array(strategy.center, dtype=np.float64, copy=True)
        population = strategy.ask()
        x = population.params.copy()
        f = fitness_of(x)
        nan_rows = np.argsort(-f, kind="stable")[: max(1, len(f) // 4)]  # the best quarter
        f[nan_rows] = np.nan
        strategy.tell(f)
        center = np.asarray(strategy.center, dtype=np.float64)
        if same(center, previous):
            continue
        for row in nan_rows:
            if same(center, x[row]):
                raise fail(f"after generation {generation + 1} the center is row {int(row)}, whose fitness was NaN; "
                           f"NaN ranks worst (np.argmax and max() pick NaN: use np.nan_to_num(f, nan=-np.inf) first)")


@check
def check_constant_fitness(subject: Subject) -> None:
    """Equal fitness for every row (a flat landscape) is accepted without warnings and stays finite."""
    strategy = make(subject)
    with errors_on_warnings("tell() with constant fitness"):
        for _ in range(5):
            step(strategy, lambda x: np.full(len(x), 1.5))
        population = strategy.ask()
    if not np.all(np.isfinite(np.asarray(strategy.center))) or not np.all(np.isfinite(population.params)):
        raise fail("constant fitness made the center or the next population non-finite")
    if not np.all(np.isfinite(np.asarray(strategy.sigma, dtype=np.float64))):
        raise fail(f"constant fitness made sigma non-finite: {strategy.sigma!r}")


@check
def check_tell_wrong_length(subject: Subject) -> None:
    """tell() with too few, too many or 2-d values raises TellError naming both counts, and changes nothing."""
    reference, strategy = make(subject, seed=4), make(subject, seed=4)
    record_run(reference, 1)
    record_run(strategy, 1)
    population = strategy.ask()
    n = len(population)
    f = fitness_of(population.params)
    expect_error(TellError, lambda: strategy.tell(f[:-1]), f"tell() with {n - 1} values for {n} rows",
                 (str(n - 1), str(n)))
    expect_error(TellError, lambda: strategy.tell(np.append(f, 0.0)), f"tell() with {n + 1} values for {n} rows",
                 (str(n + 1), str(n)))
    expect_error(TellError, lambda: strategy.tell(f[:, None]), f"tell() with fitness of shape ({n}, 1)")
    expect_error(TellError, lambda: strategy.tell(["a"] * n), "tell() with strings")
    strategy.tell(f)
    reference.tell(fitness_of(reference.ask().params))
    expect_same_run(reference, strategy, 2, "after refused tell() calls")


@check
def check_call_order(subject: Subject) -> None:
    """tell() before ask(), ask() twice and tell() twice raise StateError and change nothing."""
    reference, strategy = make(subject, seed=4), make(subject, seed=4)
    n = strategy.popsize
    expect_error(StateError, lambda: strategy.tell(np.zeros(n)), "tell() before ask()")
    population = strategy.ask()
    expect_error(StateError, strategy.ask, "ask() twice without tell()")
    strategy.tell(fitness_of(population.params))
    expect_error(StateError, lambda: strategy.tell(fitness_of(population.params)), "tell() twice for one ask()")
    reference.tell(fitness_of(reference.ask().params))
    expect_same_run(reference, strategy, 2, "after refused calls")


# -- progress ---------------------------------------------------------------------------------------
@check
def check_converges_on_quadratic(subject: Subject) -> None:
    """On -|x - x*|^2 from x* + 1 the loss drops 100-fold within 1000 generations and 200,000 evaluations."""
    dim = subject.strategy_dim
    solution = np.resize(np.array(BLOG_SOLUTION), dim)
    x0 = solution + 1.0
    strategy = make(subject, seed=0, x0=x0)
    start = float(np.sum((x0 - solution) ** 2))
    goal = CONVERGENCE_FACTOR * start
    evaluations = generation = 0
    loss = start
    while generation < CONVERGENCE_GENERATIONS and evaluations < CONVERGENCE_EVALUATIONS:
        population = strategy.ask()
        x = population.params
        strategy.tell(-np.sum((x - solution) ** 2, axis=1))
        evaluations += len(x)
        generation += 1
        loss = float(np.sum((np.asarray(strategy.center) - solution) ** 2))
        if loss <= goal:
            return
    raise fail(f"the center's loss went from {start:.4g} to {loss:.4g} in {generation} generations "
               f"({evaluations} evaluations); the check asks for <= {goal:.4g} ({CONVERGENCE_FACTOR:g} x the "
               f"start) within {CONVERGENCE_GENERATIONS} generations and {CONVERGENCE_EVALUATIONS} evaluations "
               f"in dim {dim}")
