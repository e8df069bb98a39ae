"""Checks every problem passes: shapes, finite fitness, determinism per seed, row independence,
untouched inputs, pickling, and the state the driver syncs to workers.

Rows are drawn around ``problem.initial_params`` (the region a strategy starts in), with seeds in
``[0, 2^32)`` as the driver makes them.
"""

from __future__ import annotations

import json
import pickle

import numpy as np

from ..core.problem import EvalResult, Problem
from .plain import plain_data_faults, through_files
from .subject import Subject, describe_difference, fail, register_check, same, same_result

__all__: list[str] = []

check = register_check("problem")


def sample(problem: Problem, m: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``m`` rows near the problem's initial point and ``m`` evaluation seeds."""
    rng = np.random.default_rng(seed)
    center = np.asarray(problem.initial_params(np.random.default_rng(seed)), dtype=np.float64)
    params = center + 0.1 * rng.standard_normal((m, len(center)))
    seeds = rng.integers(0, 2**32, size=m, dtype=np.int64)
    return params, seeds


def evaluate(problem: Problem, params: np.ndarray, seeds: np.ndarray, what: str = "evaluate()") -> EvalResult:
    result = problem.evaluate(params, seeds)
    m = len(params)
    if not isinstance(result, EvalResult):
        raise fail(f"{what} must return a blackbox.EvalResult, got {type(result).__name__}")
    fitness, steps = np.asarray(result.fitness), np.asarray(result.steps)
    if fitness.shape != (m,) or not np.issubdtype(fitness.dtype, np.floating):
        raise fail(f"{what} returned fitness {fitness.dtype} of shape {fitness.shape} for {m} rows; "
                   f"expected floats of shape ({m},)")
    if steps.shape != (m,) or not np.issubdtype(steps.dtype, np.integer) or (m and steps.min() < 0):
        raise fail(f"{what} returned steps {steps.dtype} of shape {steps.shape} for {m} rows; "
                   f"expected non-negative integers of shape ({m},)")
    if not isinstance(result.info, dict):
        raise fail(f"{what} returned info of type {type(result.info).__name__}; expected a dict of arrays")
    for key, value in result.info.items():
        if not isinstance(key, str) or np.asarray(value).shape[:1] != (m,):
            raise fail(f"{what} returned info[{key!r}] of shape {np.asarray(value).shape}; "
                       f"its first axis must have one entry per row ({m})")
    return result


@check
def check_protocol(subject: Subject) -> None:
    """dim is a positive int; evaluate/initial_params exist; shared_seed is a bool; describe() is JSON."""
    problem = subject.make_problem()
    dim = getattr(problem, "dim", None)
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool) or dim < 1:
        raise fail(f"problem.dim must be a positive int, got {dim!r}")
    for name in ("evaluate", "initial_params"):
        if not callable(getattr(problem, name, None)):
            raise fail(f"problem has no method {name}()")
    if not isinstance(getattr(problem, "shared_seed", False), bool):
        raise fail(f"problem.shared_seed must be a bool, got {problem.shared_seed!r}")
    describe = getattr(problem, "describe", None)
    if callable(describe):
        try:
            json.dumps(describe())
        except (TypeError, ValueError) as exc:
            raise fail(f"problem.describe() must be JSON-able: {exc}") from exc


@check
def check_initial_params(subject: Subject) -> None:
    """initial_params(rng) is a finite float64 vector of length dim, fixed by the rng's seed."""
    problem = subject.make_problem()
    a = problem.initial_params(np.random.default_rng(3))
    a = np.array(a, copy=True)
    if a.shape != (problem.dim,) or a.dtype != np.float64 or not np.all(np.isfinite(a)):
        raise fail(f"initial_params() must return finite float64 of shape ({problem.dim},), "
                   f"got {a.dtype} of shape {a.shape}")
    b = np.asarray(problem.initial_params(np.random.default_rng(3)))
    if not same(a, b):
        raise fail(f"initial_params() differs for two generators with the same seed ({describe_difference(a, b)})")


@check
def check_evaluate_shapes(subject: Subject) -> None:
    """evaluate() returns one fitness and step count per row (1, 2 or 7 rows), info with one entry per row."""
    problem = subject.make_problem()
    for m in (1, 2, 7):
        params, seeds = sample(problem, m)
        evaluate(problem, params, seeds, f"evaluate() of {m} rows")


@check
def check_finite_fitness(subject: Subject) -> None:
    """Fitness near the initial point is finite floats."""
    problem = subject.make_problem()
    params, seeds = sample(problem, 8)
    fitness = np.asarray(evaluate(problem, params, seeds).fitness)
    bad = np.flatnonzero(~np.isfinite(fitness))
    if len(bad):
        raise fail(f"evaluate() returned non-finite fitness {fitness[bad[0]]!r} for row {bad[0]} "
                   f"near the initial point")


@check
def check_deterministic_per_seed(subject: Subject) -> None:
    """The same rows and seeds give bit-identical results, again and in a fresh copy of the problem."""
    problem = subject.make_problem()
    params, seeds = sample(problem, 6)
    first = evaluate(problem, params, seeds)
    again = evaluate(problem, params.copy(), seeds.copy())
    diff = same_result(first, again)
    if diff:
        raise fail(f"evaluating the same rows with the same seeds twice gives different results: {diff}")
    fresh = evaluate(subject.make_problem(), params.copy(), seeds.copy())
    diff = same_result(first, fresh)
    if diff:
        raise fail(f"a fresh copy of the problem gives different results for the same rows and seeds: {diff}")


@check
def check_rows_independent(subject: Subject) -> None:
    """A row's result depends on its own params and seed only, not on the batch it came in."""
    problem = subject.make_problem()
    params, seeds = sample(problem, 6)
    batch = evaluate(problem, params, seeds)
    order = np.array([3, 0, 5, 1, 4, 2])
    shuffled = evaluate(problem, params[order], seeds[order])
    for i, row in enumerate(order):
        alone = evaluate(problem, params[row : row + 1], seeds[row : row + 1])
        if not same(alone.fitness[0], batch.fitness[row]) or not same(shuffled.fitness[i], batch.fitness[row]):
            raise fail(f"row {row} scores {batch.fitness[row]!r} in a batch, {alone.fitness[0]!r} alone and "
                       f"{shuffled.fitness[i]!r} in another order; executors split populations freely, "
                       f"so results must not depend on the batch")


@check
def check_does_not_mutate_input(subject: Subject) -> None:
    """evaluate() accepts read-only params and seeds and leaves them as they were."""
    problem = subject.make_problem()
    params, seeds = sample(problem, 5)
    kept_params, kept_seeds = params.copy(), seeds.copy()
    params.flags.writeable = False
    seeds.flags.writeable = False
    try:
        evaluate(problem, params, seeds)
    except ValueError as exc:
        if "read-only" in str(exc):
            raise fail(f"evaluate() writes into its input: {exc}") from exc
        raise
    writable = kept_params.copy(), kept_seeds.copy()
    evaluate(problem, *writable)
    if not same(writable[0], kept_params) or not same(writable[1], kept_seeds):
        raise fail("evaluate() modified the params or seeds it was given")


@check
def check_pickle(subject: Subject) -> None:
    """A problem pickles (fresh and after evaluating) and the copy gives bit-identical results."""
    problem = subject.make_problem()
    params, seeds = sample(problem, 4)
    clone = pickle.loads(pickle.dumps(problem))
    reference = evaluate(problem, params, seeds)
    diff = same_result(reference, evaluate(clone, params, seeds))
    if diff:
        raise fail(f"a pickled copy of a fresh problem evaluates differently: {diff}")
    try:
        used = pickle.loads(pickle.dumps(problem))
    except Exception as exc:  # noqa: BLE001
        raise fail(f"after evaluate() the problem no longer pickles ({type(exc).__name__}: {exc}); "
                   f"build heavy things lazily and leave them out of the pickle") from exc
    diff = same_result(reference, evaluate(used, params, seeds))
    if diff:
        raise fail(f"a pickled copy of a used problem evaluates differently: {diff}")


@check
def check_state_sync(subject: Subject) -> None:
    """observe() folds results in; state_dict() is plain data that makes a fresh copy evaluate the same."""
    problem = subject.make_problem()
    params, seeds = sample(problem, 6)
    for _ in range(2):
        problem.observe(evaluate(problem, params, seeds))
    state = problem.state_dict()
    if not isinstance(state, dict):
        raise fail(f"problem.state_dict() must return a dict, got {type(state).__name__}")
    faults = plain_data_faults(state)
    if faults:
        raise fail("problem.state_dict() is not plain data: " + "; ".join(faults[:5]))
    worker = subject.make_problem()
    worker.load_state_dict(through_files(state))
    diff = same_result(evaluate(problem, params, seeds), evaluate(worker, params, seeds))
    if diff:
        raise fail(f"a fresh problem loaded with state_dict() evaluates differently from the original: {diff}")
