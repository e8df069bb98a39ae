"""Deliberately broken strategies, problems and executors: each breaks one promise of its protocol.

``tests/testing/test_testing_kit.py`` runs the conformance kit on them to show that every check fails
when it should. ``ToyES`` (dense, like CMA-ES) and the built-ins are the correct baselines.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from blackbox import EvalResult, Population, Strategy
from blackbox.executors.serial import SerialExecutor
from blackbox.problems.functions import Sphere
from blackbox.strategies.search_gradient import OpenAIES


class ToyES(Strategy):
    """A correct dense strategy: Gaussian samples, mean of the better half, shrinking sigma."""

    name = "toy-es"

    def __init__(self, dim=None, *, popsize=12, sigma=0.5, x0=None, seed=None):
        super().__init__(dim=dim, popsize=popsize, x0=x0, seed=seed)
        self.sigma = float(sigma)

    def _ask(self) -> Population:
        return Population.from_dense(self._center + self.sigma * self.rng.standard_normal((self.popsize, self.dim)))

    def _tell(self, population, fitness):
        ranked = np.argsort(-np.where(np.isnan(fitness), -np.inf, fitness), kind="stable")
        self._center = population.params[ranked[: self.popsize // 2]].mean(axis=0)
        self.sigma *= 0.97
        return None


# -- strategies, one fault each -------------------------------------------------------------------
class IgnoresX0(ToyES):
    def __init__(self, dim=None, *, x0=None, seed=None, **kw):
        super().__init__(dim=dim, x0=None, seed=seed, **kw)


class ShortPopulation(ToyES):
    def _ask(self):
        return Population.from_dense(super()._ask().params[:-1])


class CountsAsks(ToyES):
    def _ask(self):
        self.generation += 1
        return super()._ask()

    def _tell(self, population, fitness):
        self.generation -= 1
        return super()._tell(population, fitness)


class RanksInPlace(ToyES):
    def _tell(self, population, fitness):
        fitness[:] = np.argsort(np.argsort(fitness))
        return super()._tell(population, fitness)


class GlobalRandom(ToyES):
    def _ask(self):
        return Population.from_dense(self._center + self.sigma * np.random.standard_normal((self.popsize, self.dim)))


class GeneratorInState(ToyES):
    def _state_dict(self):
        return {"generator": self.rng, "count": np.int64(3)}


class ForgetsSigma(ToyES):
    """Sigma shrinks every generation but is left out of the state."""

    def state_dict(self):
        state = super().state_dict()
        state["sigma"] = 0.5
        return state


class AliasedState(OpenAIES):
    """Hands out its optimizer moments without copying them, then updates them in place."""

    def _state_dict(self):
        adam = self.optimizer.optimizer  # inside OpenAI-ES's weight decay
        return {"optimizer": {"t": adam.t, "m": adam.m, "v": adam.v}}

    def _tell(self, population, fitness):
        adam = self.optimizer.optimizer
        m, v = adam.m, adam.v
        norm = super()._tell(population, fitness)
        m[...] = adam.m
        v[...] = adam.v
        adam.state.m, adam.state.v = m, v
        return norm


class KeepsLoadedArrays(ToyES):
    """Keeps the loaded center array itself: whoever owns the state can change the strategy."""

    def load_state_dict(self, state):
        super().load_state_dict(state)
        self._center = state["center"]


class StateAfterAsk(ToyES):
    """Saves the generator as it is after ask(), so a mid-generation state skips a population."""

    def state_dict(self):
        state = super().state_dict()
        state["rng"] = self.rng.bit_generator.state
        return state


class Unpicklable(ToyES):
    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.schedule = lambda g: 0.97**g


class WritesCenterInPlace(ToyES):
    """Writes the new center into the old array: a center read before tell() changes under its reader."""

    def _tell(self, population, fitness):
        old = self._center
        super()._tell(population, fitness)
        old[...] = self._center
        self._center = old
        return None


class NaNRowElite(ToyES):
    """Takes the best row as its center with np.argmax, which picks a NaN (NaN compares as the largest)."""

    def _tell(self, population, fitness):
        self._center = population.params[int(np.argmax(fitness))].copy()
        self.sigma *= 0.97
        return None


class NaNPoisoned(ToyES):
    def _tell(self, population, fitness):
        weights = (fitness - np.mean(fitness)) / np.std(fitness)
        self._center = self._center + 0.1 * weights @ (population.params - self._center)
        return None


class DividesBySpread(ToyES):
    def _tell(self, population, fitness):
        finite = np.where(np.isnan(fitness), np.nanmin(fitness) if np.any(~np.isnan(fitness)) else 0.0, fitness)
        z = (finite - finite.mean()) / finite.std()
        self._center = self._center + 0.01 * z @ (population.params - self._center)
        return None


class PadsFitness(ToyES):
    def tell(self, fitness):
        f = np.resize(np.asarray(fitness, dtype=np.float64).ravel(), self.popsize)
        super().tell(f)


class AsksTwice(ToyES):
    def ask(self):
        self._pending = None
        return super().ask()


class WalksAway(ToyES):
    def _tell(self, population, fitness):
        return super()._tell(population, -fitness)


class StopReasonAttribute(ToyES):
    stop_reason = None  # a value where optimize() calls a method


BROKEN_STRATEGIES = {  # class: (the check that must fail, a fragment of its message)
    IgnoresX0: ("check_protocol", "center must be x0"),
    ShortPopulation: ("check_ask_shape_and_dtype", "ask() returned 11 rows"),
    CountsAsks: ("check_generation_counter", "ask() changed generation"),
    RanksInPlace: ("check_tell_leaves_inputs_alone", "modified the fitness array"),
    GlobalRandom: ("check_seed_determinism", "two strategies built with seed 11"),
    GeneratorInState: ("check_state_dict_plain_data", "numpy.random._generator.Generator"),
    ForgetsSigma: ("check_state_dict_round_trip", "after a state_dict() round trip"),
    AliasedState: ("check_state_dict_round_trip", "after a state_dict() round trip"),
    KeepsLoadedArrays: ("check_state_dict_round_trip", "after a state_dict() round trip"),
    StateAfterAsk: ("check_state_dict_between_ask_and_tell", "ask() returns another population"),
    Unpicklable: ("check_pickle", "Can't pickle"),
    WritesCenterInPlace: ("check_tell_keeps_the_old_center", "wrote the new center into the old center array"),
    NaNPoisoned: ("check_nan_fitness", "NaN fitness"),
    NaNRowElite: ("check_nan_row_never_the_center", "whose fitness was NaN"),
    DividesBySpread: ("check_constant_fitness", "RuntimeWarning"),
    PadsFitness: ("check_tell_wrong_length", "did not raise; expected blackbox.TellError"),
    AsksTwice: ("check_call_order", "ask() twice without tell() did not raise"),
    WalksAway: ("check_converges_on_quadratic", "the check asks for <="),
    StopReasonAttribute: ("check_protocol", "strategy.stop_reason must be a method returning None or a reason"),
}


# -- problems -------------------------------------------------------------------------------------
class ToyProblem(Sphere):
    """A correct problem with a seed-dependent noise term and synced state (a shift)."""

    name = "toy-problem"

    def __init__(self, dim: int = 4):
        super().__init__(dim)
        self.shift = 0.0

    def evaluate(self, params, seeds):
        noise = np.array([np.random.default_rng(int(s)).normal() for s in seeds])
        fitness = -np.sum((np.asarray(params) - self.shift) ** 2, axis=1) + 0.01 * noise
        return EvalResult(fitness, np.full(len(params), 3, dtype=np.int64), {"noise": noise})

    def observe(self, result):
        self.shift += 0.5

    def state_dict(self) -> dict[str, Any]:
        return {"shift": self.shift}

    def load_state_dict(self, state):
        self.shift = float(state["shift"])


class NoDim(ToyProblem):
    def __init__(self):
        super().__init__()
        self.dim = 4.0


class DrawsGlobalStart(ToyProblem):
    def initial_params(self, rng):
        return np.random.standard_normal(self.dim)


class ColumnFitness(ToyProblem):
    def evaluate(self, params, seeds):
        result = super().evaluate(params, seeds)
        return EvalResult(result.fitness[:, None], result.steps, result.info)


class InfiniteFitness(ToyProblem):
    def evaluate(self, params, seeds):
        result = super().evaluate(params, seeds)
        result.fitness[-1] = -np.inf
        return result


class Unseeded(ToyProblem):
    def evaluate(self, params, seeds):
        return super().evaluate(params, np.random.randint(0, 2**31, size=len(seeds)))


class BatchNormalized(ToyProblem):
    def evaluate(self, params, seeds):
        result = super().evaluate(params, seeds)
        return EvalResult(result.fitness - result.fitness.mean(), result.steps, result.info)


class ClipsInPlace(ToyProblem):
    def evaluate(self, params, seeds):
        np.clip(params, -1, 1, out=params)
        return super().evaluate(params, seeds)


class LazyLock(ToyProblem):
    def evaluate(self, params, seeds):
        self.lock = threading.Lock()  # built lazily and kept in the pickle: breaks shipping
        return super().evaluate(params, seeds)


class StatelessShift(ToyProblem):
    """Its shift changes the fitness but is left out of the synced state."""

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        self.shift = float(state.get("shift", 0.0))


BROKEN_PROBLEMS = {
    NoDim: ("check_protocol", "problem.dim must be a positive int"),
    DrawsGlobalStart: ("check_initial_params", "differs for two generators with the same seed"),
    ColumnFitness: ("check_evaluate_shapes", "of shape (1, 1) for 1 rows"),
    InfiniteFitness: ("check_finite_fitness", "non-finite fitness"),
    Unseeded: ("check_deterministic_per_seed", "different results"),
    BatchNormalized: ("check_rows_independent", "must not depend on the batch"),
    ClipsInPlace: ("check_does_not_mutate_input", "writes into its input"),
    LazyLock: ("check_pickle", "no longer pickles"),
    StatelessShift: ("check_state_sync", "evaluates differently from the original"),
}


# -- executors ------------------------------------------------------------------------------------
class ReversedChunks(SerialExecutor):
    """Evaluates in two chunks and joins them the wrong way round."""

    def evaluate(self, population, seeds, state=None):
        n = len(population)
        half = n // 2
        if half == 0:
            return super().evaluate(population, seeds, state)
        first = super().evaluate(population.take(slice(half, n)), seeds[half:], state)
        second = super().evaluate(population.take(slice(0, half)), seeds[:half], state)
        return EvalResult.concatenate([first, second])


class FirstParentOnly(SerialExecutor):
    """Rebuilds compact rows from the first base vector only (forgets the parents)."""

    def evaluate(self, population, seeds, state=None):
        if population.is_compact and population.table is not None:
            population = Population.compact(population.table, population.bases[:1], population.offsets,
                                            population.signs, population.sigma, groups=population.groups)
        return super().evaluate(population, seeds, state)


class StateOnce(SerialExecutor):
    """Ships the problem state with the first call only."""

    def evaluate(self, population, seeds, state=None):
        if getattr(self, "_sent", False):
            state = None
        self._sent = True
        return super().evaluate(population, seeds, state)


class SwallowsErrors(SerialExecutor):
    def evaluate(self, population, seeds, state=None):
        try:
            return super().evaluate(population, seeds, state)
        except Exception:  # noqa: BLE001
            return EvalResult(np.full(len(population), np.nan), np.zeros(len(population), dtype=np.int64))


class LocalRowNumbers(SerialExecutor):
    """Evaluates in chunks of 4 but numbers rows from 0 in each chunk."""

    def evaluate(self, population, seeds, state=None):
        problem = self._require_started()
        if state:
            problem.load_state_dict(state)
        from blackbox.core.executor import evaluate_rows

        parts = [evaluate_rows(problem, population.take(slice(i, i + 4)), seeds[i : i + 4])
                 for i in range(0, len(population), 4)]
        return EvalResult.concatenate(parts)


class NeverStarted(SerialExecutor):
    def evaluate(self, population, seeds, state=None):
        if self.problem is None:
            return EvalResult(np.zeros(len(population)), np.zeros(len(population), dtype=np.int64))
        return super().evaluate(population, seeds, state)


class OneShot(SerialExecutor):
    def close(self):
        super().close()
        self.closed_for_good = True

    def start(self, problem):
        if getattr(self, "closed_for_good", False):
            raise RuntimeError("this executor cannot be started twice")
        super().start(problem)


class ObserveInWorker(SerialExecutor):
    """Folds each result into the worker's problem too, so runs drift from the driver's state."""

    def evaluate(self, population, seeds, state=None):
        result = super().evaluate(population, seeds, None)
        if state and len(population) > 6:
            self.problem.observe(result)
        return result


BROKEN_EXECUTORS = {
    ReversedChunks: ("check_order_kept", "out of row order"),
    FirstParentOnly: ("check_same_as_serial", "compact rows"),
    StateOnce: ("check_state_reaches_workers", "state offset=-2.0"),
    SwallowsErrors: ("check_errors_surface", "did not raise"),
    LocalRowNumbers: ("check_errors_surface", "names row 0"),
    NeverStarted: ("check_evaluate_before_start", "did not raise; expected StateError"),
    OneShot: ("check_close_and_restart", "cannot be started twice"),
    ObserveInWorker: ("check_run_matches_serial", "with the serial executor"),
}
