"""The one driver: ``optimize(strategy, problem, executor, ...) -> Result``.

Each generation: ``ask()``, append the unperturbed center, derive one seed per seed group from
(run seed, generation, group), evaluate through the executor, fold the problem's statistics in,
``tell()`` the population's fitness, emit a :class:`Record` to the callbacks, check the stop
conditions. The CLI and the experiment runner are thin layers on this function.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validate import check_float, check_int
from ..core.executor import Executor, Submitted
from ..core.population import Population
from ..core.problem import PARTIAL, EvalResult, Problem
from ..core.seeding import evaluation_seeds
from ..core.strategy import Strategy
from ..errors import ConfigError
from ..registry.component import Component
from ..registry.parts import resolve_run_parts
from .record import Record, RecordLog
from .stop import BUDGETS, Condition, EnvSteps, StopCondition, stop_conditions

__all__ = ["optimize", "Record", "Result", "Callback", "Run", "MAX_COUNTER"]

#: The largest generation, evaluation or step count (and seed) a loaded state may hold: records keep
#: them as int64.
MAX_COUNTER = 2**63 - 1


@dataclass
class Result:
    """The outcome of :func:`optimize`."""

    center: np.ndarray
    best_params: np.ndarray
    best_fitness: float
    generations: int
    evaluations: int
    steps: int
    wall_time: float
    stop_reason: str
    records: Sequence[Record] = field(default_factory=RecordLog)
    strategy: Strategy | None = None

    @property
    def center_fitness(self) -> float | None:
        """The unperturbed center's fitness in the last generation (None if not evaluated)."""
        return self.records[-1].center if self.records else None


class Callback:
    """Hooks into a run; override what you need. ``on_generation`` returning True stops the run."""

    def on_start(self, run: Run) -> None:
        """Called once before the first generation."""

    def on_generation(self, run: Run, record: Record) -> bool | None:
        """Called after every generation."""

    def on_end(self, run: Run, result: Result) -> None:
        """Called once with the result (also after an error, with what was done so far)."""


class _FunctionCallback(Callback):
    """A plain function ``(record) -> bool`` as a callback; the stop reason names the function."""

    def __init__(self, fn: Callable[[Record], object]):
        self.fn = fn
        self.stop_reason = f"callback {getattr(fn, '__qualname__', None) or type(fn).__name__} asked to stop"

    def on_generation(self, run: Run, record: Record) -> bool:
        return bool(self.fn(record))


@dataclass
class Run:
    """The driver's running state: what a checkpoint of the loop needs besides the strategy.

    ``stop`` holds the run's stop conditions (attached by :func:`optimize`) so that a checkpoint
    can keep their state, such as a ``GoalHeld`` streak. ``settled`` is False while a generation is
    half done (from ``ask()`` until its stop conditions have seen its record): only a settled run
    can be checkpointed consistently.
    """

    strategy: Strategy
    problem: Problem
    executor: Executor
    seed: int
    evaluate_center: bool = True
    #: Pipelined mode: generation g+1 is sampled (ask_ahead) and its inputs fixed before g is told.
    pipelined: bool = False
    evaluations: int = 0
    steps: int = 0
    elapsed: float = 0.0
    best_fitness: float = -math.inf
    best_params: np.ndarray | None = None
    #: Every generation's record, kept compactly as columns (135 bytes a generation).
    records: RecordLog = field(default_factory=RecordLog)
    stop: list[Condition] = field(default_factory=list)
    settled: bool = True
    _stop_state: list[dict[str, Any]] | None = field(default=None, repr=False)
    #: Pipelined mode: the problem's state and the center when the pending population was asked.
    _pending_state: dict[str, Any] | None = field(default=None, repr=False)
    _pending_center: np.ndarray | None = field(default=None, repr=False)
    #: Pipelined mode: the generation handed to the executor and not collected yet (never saved).
    _inflight: tuple[Population, Submitted] | None = field(default=None, repr=False)

    def state_dict(self) -> dict[str, object]:
        """Counters, the best solution and the stop conditions' state (numpy arrays and JSON-able values)."""
        return {
            "seed": self.seed, "evaluations": self.evaluations, "steps": self.steps,
            "elapsed": self.elapsed, "best_fitness": self.best_fitness,
            "best_params": self.strategy.center.copy() if self.best_params is None else self.best_params,
            "evaluate_center": self.evaluate_center,
            **({"pipelined": True, "pending_state": self._pending_state or {},
                "pending_center": self.strategy.center.copy() if self._pending_center is None else self._pending_center}
               if self.pipelined else {}),
            "stop": [{"type": type(c).__name__, "state": c.state_dict()}
                     for c in self.stop if isinstance(c, StopCondition)],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the counters, the best solution and the stop conditions' state; the counters are
        integers from 0 to MAX_COUNTER, the time finite and >= 0, the best fitness not NaN (NaN never
        ranks best), the best solution finite and the stop list a list of tables, or a ConfigError
        names the key (``run state/steps``)."""
        seed, evaluations, steps = (check_int(f"run state/{key}", state[key], minimum=0, maximum=MAX_COUNTER)
                                    for key in ("seed", "evaluations", "steps"))
        elapsed = check_float("run state/elapsed", state["elapsed"], nonnegative=True)
        best_fitness = float(state["best_fitness"])
        if math.isnan(best_fitness):
            raise ConfigError("run state/best_fitness is NaN, which never ranks best")
        best_params = np.array(state["best_params"], dtype=np.float64)
        if not np.all(np.isfinite(best_params)):
            raise ConfigError("run state/best_params is not finite")
        stop = state.get("stop", [])
        if not isinstance(stop, list) or not all(
                isinstance(e, dict) and isinstance(e.get("type", ""), str) and isinstance(e.get("state", {}), dict)
                for e in stop):
            raise ConfigError("run state/stop must be a list of tables {type = NAME, state = {...}}")
        self.seed, self.evaluations, self.steps, self.elapsed = seed, evaluations, steps, elapsed
        self.best_fitness, self.best_params = best_fitness, best_params
        if "evaluate_center" in state:
            self.evaluate_center = bool(state["evaluate_center"])
        self._inflight = None
        if state.get("pipelined"):
            self.pipelined = True
            self._pending_state = dict(state.get("pending_state") or {})
            self._pending_center = np.array(state["pending_center"], dtype=np.float64)
        self._stop_state = list(stop)
        if self.stop:
            self.attach_stop(self.stop)  # the conditions already attached take the saved state now

    def attach_stop(self, conditions: Sequence[Condition]) -> None:
        """Use ``conditions`` from now on; restore their saved state if this run was loaded.

        The state comes from the last ``load_state_dict``, else from the conditions attached before
        (a Run passed to ``optimize`` again continues). The k-th saved condition of a type restores
        the k-th condition of that type, so adding or dropping a budget on resume keeps, say, a
        ``GoalHeld`` streak. Unmatched ones start fresh.
        """
        entries = self._stop_state
        if entries is None:
            entries = [{"type": type(c).__name__, "state": c.state_dict()}
                       for c in self.stop if isinstance(c, StopCondition)]
        self._stop_state = None
        self.stop = list(conditions)
        saved: dict[str, list[dict[str, Any]]] = {}
        for entry in entries:
            saved.setdefault(entry.get("type", ""), []).append(entry.get("state", {}))
        seen: dict[str, int] = {}
        for condition in self.stop:
            if not isinstance(condition, StopCondition):
                continue
            kind = type(condition).__name__
            index = seen[kind] = seen.get(kind, -1) + 1
            condition.reset()
            if index < len(saved.get(kind, [])):
                try:
                    condition.load_state_dict(saved[kind][index])
                except (KeyError, TypeError, ValueError, OverflowError) as exc:
                    raise ConfigError(f"the saved state of stop condition {kind} does not fit it: "
                                      f"{type(exc).__name__}: {exc}") from None
        for condition in self.stop:
            bind = getattr(condition, "bind", None)
            if callable(bind):
                bind(self)

    def step(self) -> Record:
        """Run one generation and return its record."""
        started = time.perf_counter()
        self.settled = False
        strategy = self.strategy
        if self.pipelined:
            if self._inflight is None:  # the first generation, or the first after a resume
                batch, seeds, state = self._inputs_of_pending()
                self._inflight = (batch, self.executor.submit(batch, seeds, state or None))
            batch, submitted = self._inflight
            following = self._ask_ahead_inputs()  # g+1, around the center of now
            self._inflight = (following[0], self.executor.submit(following[0], following[1], following[2] or None))
            now = self.problem.state_dict()
            result = submitted.result()
            if now:  # an executor that evaluates in this process installed the older state here
                self.problem.load_state_dict(now)
        else:
            population = strategy.ask()
            batch = population.with_center(strategy.center) if self.evaluate_center else population
            seeds = evaluation_seeds(self.seed, strategy.generation, batch.groups, self.problem.shared_seed)
            state = self.problem.state_dict()
            result = self.executor.evaluate(batch, seeds, state or None)
        self.problem.observe(result)
        fitness, center = batch.separate_center(result.fitness)
        strategy.tell(fitness)
        self.evaluations += len(batch)
        self.steps += int(np.sum(result.steps))
        self._track_best(batch, result)
        self.elapsed += time.perf_counter() - started
        record = _make_record(self, fitness, center, time.perf_counter() - started)
        self.records.append(record)
        return record

    def _inputs_of_pending(self):
        """The pending generation's batch, seeds and problem state (sampled before the previous
        generation was told, it evaluates under the problem's state of then)."""
        strategy, problem = self.strategy, self.problem
        if not strategy.pending:  # the first generation: nothing was asked ahead
            strategy.ask()
            self._pending_state, self._pending_center = problem.state_dict(), strategy.center.copy()
        population = strategy.pending_population
        batch = population.with_center(self._pending_center) if self.evaluate_center else population
        seeds = evaluation_seeds(self.seed, strategy.generation, batch.groups, problem.shared_seed)
        return batch, seeds, self._pending_state

    def _ask_ahead_inputs(self):
        """Sample generation g+1 now (one update old when it is told); its batch, seeds and state."""
        strategy, problem = self.strategy, self.problem
        population = strategy.ask_ahead()
        self._pending_state, self._pending_center = problem.state_dict(), strategy.center.copy()
        batch = population.with_center(self._pending_center) if self.evaluate_center else population
        seeds = evaluation_seeds(self.seed, strategy.generation + 1, batch.groups, problem.shared_seed)
        return batch, seeds, self._pending_state

    def _track_best(self, batch, result: EvalResult) -> None:
        """Keep the best row seen so far (the center row included); NaN never wins, nor does a row whose
        fitness is partial (``info[PARTIAL]``) while some row's is not."""
        fitness = np.where(np.isnan(result.fitness), -np.inf, result.fitness)
        partial = result.info.get(PARTIAL)
        if partial is not None and not np.all(partial):
            fitness = np.where(partial, -np.inf, fitness)
        i = int(np.argmax(fitness))
        if fitness[i] > self.best_fitness or self.best_params is None:
            self.best_fitness = float(fitness[i])
            self.best_params = batch.row(i)


def fitness_statistics(finite: np.ndarray) -> tuple[np.ndarray, float, float]:
    """``(sorted values, mean, median)`` of a generation's non-NaN fitness (``[nan]``, nan, nan if none).

    Finite values give a finite mean and median, even when their sum overflows (every row 1e308);
    they are infinite only when a row is (and NaN when rows of both signs are), quietly."""
    ordered = np.sort(finite) if len(finite) else np.array([np.nan])  # one sort for best, median, worst
    half = len(ordered) // 2
    with np.errstate(invalid="ignore", over="ignore"):  # +inf and -inf in one generation: mean/median NaN, quietly
        mean = float(np.mean(ordered))
        median = float(ordered[half] if len(ordered) % 2 else (ordered[half - 1] + ordered[half]) / 2)
    if math.isfinite(ordered[0]) and math.isfinite(ordered[-1]):
        if not math.isfinite(mean):
            mean = _scaled_mean(ordered)  # finite rows whose sum overflows (1e308 each)
        if not math.isfinite(median):
            median = float(ordered[half - 1] / 2 + ordered[half] / 2)
    return ordered, mean, median


def _scaled_mean(ordered: np.ndarray) -> float:
    """The mean of finite ``ordered`` (sorted) values whose plain sum overflows: summed divided by the
    largest magnitude, then multiplied back, so that it cannot overflow (it lies between the extremes).
    Only used when the plain mean is not finite, so that every other record keeps its exact value."""
    scale = max(abs(float(ordered[0])), abs(float(ordered[-1])))
    return float(np.mean(ordered / scale) * scale)


def _make_record(run: Run, fitness: np.ndarray, center: float | None, gen_time: float) -> Record:
    """The generation's record from the strategy's rows' ``fitness`` and the center row's value."""
    n = len(fitness)
    finite = fitness[~np.isnan(fitness)]
    ordered, mean, median = fitness_statistics(finite)
    center_rank = None
    if center is not None:
        center_rank = 1 + int(np.sum(finite > center)) if not math.isnan(center) else n + 1
    return Record(
        generation=run.strategy.generation, evaluations=run.evaluations, steps=run.steps,
        time=run.elapsed, generation_time=gen_time,
        best=float(ordered[-1]), mean=mean, median=median, worst=float(ordered[0]),
        center=center, center_rank=center_rank, above_mean=int(np.sum(finite > mean)),
        sigma=float(run.strategy.sigma), update_norm=float(run.strategy.update_norm),
        best_ever=run.best_fitness,
    )


def _already_met(conditions: Sequence[object], records: Sequence[Record]) -> str | None:
    """For a restored run: the reason a stop condition already holds after its last record."""
    if not records:
        return None
    for condition in conditions:
        if isinstance(condition, StopCondition):
            reason = condition.satisfied(records[-1])
            if reason:
                return reason
    return None


def _check_progress(conditions: Sequence[object], record: Record) -> None:
    """Refuse a run whose only budget counts environment steps on a problem that takes none."""
    budgets = [c for c in conditions if isinstance(c, BUDGETS)]
    step_budgets = [c for c in budgets if isinstance(c, EnvSteps)]
    if record.steps == 0 and budgets and len(step_budgets) == len(budgets):
        raise ConfigError(
            f"max_steps={step_budgets[0].n} can never be reached: the problem took no environment steps in "
            f"generation {record.generation} (it does not count steps); give a budget in generations, "
            f"evaluations or wall time instead"
        )


def optimize(
    strategy: Strategy | str | Component,
    problem: Problem | str | Component,
    executor: Executor | str | Component = "serial",
    *,
    max_generations: int | None = None,
    max_evaluations: int | None = None,
    max_steps: int | None = None,
    max_time: float | None = None,
    target: float | None = None,
    goal: float | None = None,
    goal_generations: int | None = None,
    goal_episodes: int | None = None,
    stop: Sequence[StopCondition | Callable] = (),
    seed: int | None = None,
    evaluate_center: bool = True,
    pipelined: bool = False,
    callbacks: Iterable[Callback | Callable[[Record], object]] = (),
    run: Run | None = None,
    generations: int | None = None,
) -> Result:
    """Optimize ``problem`` with ``strategy`` until a stop condition fires; maximizes fitness.

    Where the run starts, whether ``strategy`` is a name or an object: the ``x0`` the strategy was
    given, else ``problem.initial_params(numpy.random.default_rng(seed))`` (a strategy object whose
    start is still open is moved there with ``Strategy.start_at``; a named one is built there), so
    ``optimize("nes", p, seed=3)`` and ``optimize(make_strategy("nes", dim=p.dim, seed=3), p)`` are
    the same run. ``seed`` (default: the strategy's seed) fixes every evaluation seed. ``target``
    stops once the best ever fitness (of any row scored, the center's included) reaches it.
    ``goal`` stops once the center's fitness reaches it and holds it ``goal_generations``
    generations (default 1), or, with ``goal_episodes``, once the center's mean over that many
    fresh episodes reaches it (the problem needs ``score``), as the command line's ``--goal``,
    ``--goal-generations`` and ``--goal-episodes``. ``stop`` adds conditions such as
    ``GoalHeld(475, 5)``. At least
    one budget (``max_generations``, ``max_evaluations``, ``max_steps``, ``max_time``) is required;
    ``generations`` is the old name of ``max_generations`` and still works. ``run`` continues a
    :class:`Run` (restored from a checkpoint, or from an earlier call) instead of starting afresh:
    its stop conditions' state carries over, and if a condition already holds for its last record
    the run returns at once without another generation.
    """
    if generations is not None:
        if max_generations is not None:
            raise ConfigError(f"give max_generations or generations (its old name), not both; got "
                              f"max_generations={max_generations!r} and generations={generations!r}")
        max_generations = generations
    conditions = stop_conditions(max_generations=max_generations, max_evaluations=max_evaluations,
                                 max_steps=max_steps, max_time=max_time, target=target, goal=goal,
                                 goal_generations=goal_generations, goal_episodes=goal_episodes, extra=stop)
    seed = None if seed is None else check_int("seed", seed, minimum=0)
    if not isinstance(evaluate_center, (bool, np.bool_)):
        raise ConfigError(f"evaluate_center must be true or false, got {evaluate_center!r}")
    if run is not None and not isinstance(run, Run):
        raise ConfigError(f"run must be a Run to continue (from restore_run or an earlier optimize), "
                          f"got {type(run).__name__}")
    hooks = _hooks(callbacks)
    strategy, problem, executor, owned = resolve_run_parts(strategy, problem, executor, seed)
    if run is None:
        run = Run(strategy, problem, executor, strategy.seed if seed is None else int(seed), bool(evaluate_center),
                  pipelined=bool(pipelined))
    if run.pipelined and not strategy.asks_ahead:
        raise ConfigError(
            f"the pipelined mode needs a strategy that can sample its next population before this one is "
            f"told; {strategy.name or type(strategy).__name__} keeps what its last ask() drew for its tell() "
            f"(the table strategies can: openai-es, nes, pgpe, snes, sep-cma-es, ars, cem, ga); run it without "
            f"pipelined"
        )
    run.attach_stop(conditions)
    reason = "interrupted"
    error: BaseException | None = None
    executor.start(problem)
    try:
        executor.bind(strategy)
        for hook in hooks:
            hook.on_start(run)
        met = _already_met(conditions, run.records)
        if met:
            reason = met
        while not met:
            record = run.step()
            _check_progress(conditions, record)
            reasons = [r for r in (c(record) for c in conditions) if r]
            own_reason = strategy.stop_reason()  # e.g. CMA-ES's termination criteria
            if own_reason:
                reasons.append(str(own_reason))
            run.settled = True
            for hook in hooks:
                if hook.on_generation(run, record):
                    reasons.append(getattr(hook, "stop_reason", None) or f"callback {type(hook).__name__} asked to stop")
            if reasons:
                reason = reasons[0]
                break
    except BaseException as exc:
        error = exc
        raise
    finally:
        result = Result(
            center=strategy.center.copy(),
            best_params=strategy.center.copy() if run.best_params is None else run.best_params,
            best_fitness=run.best_fitness, generations=strategy.generation,
            evaluations=run.evaluations, steps=run.steps, wall_time=run.elapsed,
            stop_reason=reason, records=run.records, strategy=strategy,
        )
        run._inflight = None  # a generation handed over and not collected is handed over again next time
        try:
            executor.bind(None)
            _end_hooks(hooks, run, result, error)
        finally:
            if owned:
                executor.close()
    return result


def _hooks(callbacks: object) -> list[Callback]:
    """``callbacks`` as Callback objects (a function becomes one); a ConfigError for anything else."""
    if isinstance(callbacks, (str, bytes, Callback)) or not isinstance(callbacks, Iterable):
        raise ConfigError(f"callbacks must be a list of Callback objects or functions (record) -> bool, "
                          f"got {callbacks!r}")
    hooks = []
    for callback in callbacks:
        if not isinstance(callback, Callback) and not callable(callback):
            raise ConfigError(f"callbacks must be Callback objects or functions (record) -> bool, got {callback!r}")
        hooks.append(callback if isinstance(callback, Callback) else _FunctionCallback(callback))
    return hooks


def _end_hooks(hooks: Sequence[Callback], run: Run, result: Result, error: BaseException | None) -> None:
    """Call every hook's ``on_end``, even after one of them fails. The first failure is raised once
    all have run, unless the run is already failing with ``error``, which must not be masked (a
    full disk fails the record file and then the final checkpoint: the first error is the one to see)."""
    failure: Exception | None = None
    for hook in hooks:
        try:
            hook.on_end(run, result)
        except Exception as exc:  # noqa: BLE001 - every hook gets its on_end
            if error is not None and hasattr(error, "add_note"):
                error.add_note(f"{type(hook).__name__}.on_end also failed: {type(exc).__name__}: {exc}")
            failure = failure or exc
    if failure is not None and error is None:
        raise failure
