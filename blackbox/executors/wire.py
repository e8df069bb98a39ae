"""What the parallel executors (loky, futures, Ray) share: splitting a generation into a broadcast
and compact tasks, evaluating a task in a worker, carrying errors back, and counting bytes.

A generation crosses to the workers in two parts:

- a :class:`Broadcast`, once per worker (or once per machine) per generation: the distinct base
  vectors (the center; the GA's parents), sigma, the noise table's ``(size, seed)``, the problem's
  state, and for a dense population (CMA-ES) its rows;
- one :class:`Task` per chunk of rows: noise offsets, signs, parent indices and evaluation seeds,
  32 bytes a row; a dense population's task carries only the seeds.

A worker keeps the problem of the current run and the broadcast of the current generation in a
thread-local cache (thread-local so that thread pools and Dask's threaded workers give each thread
its own problem), rebuilds its rows exactly as the driver would, and returns fitness, steps and
per-row info. Results are joined in row order, so they never depend on how rows were split.
"""

from __future__ import annotations

import os
import pickle
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

import cloudpickle
import numpy as np

from ..core.executor import evaluate_rows
from ..core.noise import NoiseTable
from ..core.population import Population
from ..core.problem import EvalResult, Problem
from ..errors import BlackboxError, ConfigError, EvaluationError, WorkerError

__all__ = [
    "Broadcast", "Task", "DispatchStats", "RemoteTraceback", "chunk_bounds", "split_generation",
    "WorkerCache", "run_task", "encode_outcome", "decode_outcome", "thread_env", "limit_threads",
    "join_results", "pickle_problem",
]

#: Environment variables that cap the threads of BLAS, OpenMP (torch), MKL, numexpr in workers.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS", "BLIS_NUM_THREADS",
)


# -- what is sent ------------------------------------------------------------------------------
@dataclass
class Broadcast:
    """What every worker needs once per generation."""

    number: int
    dim: int
    bases: np.ndarray | None = None
    sigma: float | np.ndarray = 0.0
    table: tuple[int, int] | None = None
    dense: np.ndarray | None = None
    state: bytes | None = None
    #: Row index of ``dense[0]`` when a broadcast carries only some rows (one task's).
    dense_start: int = 0

    def for_task(self, task: Task) -> Broadcast:
        """A copy holding only what ``task`` needs (a dense population: just its rows)."""
        if self.dense is None:
            return self
        return Broadcast(self.number, self.dim, dense=self.dense[task.start : task.stop],
                         state=self.state, dense_start=task.start)

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays and state every reader receives (dense rows are counted per task)."""
        total = 0 if self.bases is None else self.bases.nbytes
        total += np.asarray(self.sigma).nbytes + (len(self.state) if self.state else 0)
        return total


@dataclass
class Task:
    """A chunk of consecutive rows ``[start, stop)`` of generation ``number``.

    ``rows`` is int64 of shape (4, m): offsets, signs, parents, seeds (compact populations), or
    (1, m): seeds (dense populations, whose rows travel in the broadcast).
    """

    number: int
    start: int
    stop: int
    rows: np.ndarray
    attempt: int = 0

    def __len__(self) -> int:
        return self.stop - self.start

    @property
    def seeds(self) -> np.ndarray:
        return self.rows[-1]

    def pack(self) -> tuple:
        """Plain values for a compact pickle (about 100 bytes plus 32 a row)."""
        return (self.number, self.start, self.stop, len(self.rows), self.rows.tobytes(), self.attempt)

    @staticmethod
    def unpack(packed: tuple) -> Task:
        number, start, stop, kinds, data, attempt = packed
        rows = np.frombuffer(data, dtype=np.int64).reshape(kinds, stop - start)
        return Task(number, start, stop, rows, attempt)

    def split(self) -> list[Task]:
        """One task per row (to find which row of a chunk hangs)."""
        return [Task(self.number, self.start + i, self.start + i + 1, self.rows[:, i : i + 1].copy(), self.attempt)
                for i in range(len(self))]


def chunk_bounds(groups: np.ndarray, n_chunks: int) -> list[tuple[int, int]]:
    """Split rows into ``n_chunks`` near-equal runs of consecutive rows, cutting only between seed
    groups where possible so that a mirrored pair stays in one task."""
    n = len(groups)
    n_chunks = max(1, min(int(n_chunks), n))
    cuts = [0]
    for c in range(1, n_chunks):
        cut = int(round(c * n / n_chunks))
        while 0 < cut < n and groups[cut] == groups[cut - 1]:
            cut += 1
        if cuts[-1] < cut < n:
            cuts.append(cut)
    cuts.append(n)
    return list(zip(cuts[:-1], cuts[1:]))


def _distinct_bases(bases: np.ndarray, parents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop bit-identical base rows (``with_center`` appends the center that is already base 0)."""
    if len(bases) == 1:
        return bases, parents
    keep: list[int] = []
    remap = np.empty(len(bases), dtype=np.int64)
    bits = bases.view(np.int64)
    for i in range(len(bases)):
        for j, k in enumerate(keep):
            if bits[i, 0] == bits[k, 0] and np.array_equal(bits[i], bits[k]):
                remap[i] = j
                break
        else:
            remap[i] = len(keep)
            keep.append(i)
    if len(keep) == len(bases):
        return bases, parents
    return bases[keep], remap[parents]


def split_generation(
    number: int, population: Population, seeds: np.ndarray, state: dict[str, Any] | None, n_chunks: int
) -> tuple[Broadcast, list[Task]]:
    """The broadcast and the tasks for one generation."""
    seeds = np.asarray(seeds, dtype=np.int64)
    state_bytes = cloudpickle.dumps(state) if state else None
    if population.table is not None:
        bases = np.ascontiguousarray(population.bases, dtype=np.float64)
        bases, parents = _distinct_bases(bases, population.parents)
        table = population.table
        broadcast = Broadcast(number, population.dim, bases=bases, sigma=population.sigma,
                              table=(table.size, table.seed), state=state_bytes)
        rows = np.stack([population.offsets, population.signs.astype(np.int64), parents, seeds])
    else:
        dense = np.ascontiguousarray(population.params, dtype=np.float64)
        broadcast = Broadcast(number, population.dim, dense=dense, state=state_bytes)
        rows = seeds[None, :]
    tasks = [Task(number, a, b, np.ascontiguousarray(rows[:, a:b]))
             for a, b in chunk_bounds(population.groups, n_chunks)]
    return broadcast, tasks


def task_population(broadcast: Broadcast, task: Task) -> Population:
    """The rows of ``task`` as a population, built exactly as in the driver."""
    m = len(task)
    groups = np.zeros(m, dtype=np.int64)
    if broadcast.dense is not None:
        first = task.start - broadcast.dense_start
        return Population(dim=broadcast.dim, groups=groups, dense=broadcast.dense[first : first + m])
    offsets, signs, parents = task.rows[0], task.rows[1].astype(np.int8), task.rows[2]
    return Population(
        dim=broadcast.dim, groups=groups, bases=broadcast.bases, parents=parents, offsets=offsets,
        signs=signs, sigma=broadcast.sigma, table=NoiseTable.get(*broadcast.table),
    )


def task_row_bytes(broadcast: Broadcast, task: Task) -> int:
    """Bytes of a dense population's rows that a task reads from the broadcast (0 when compact)."""
    return 0 if broadcast.dense is None else len(task) * broadcast.dim * 8


def pickle_problem(problem: Problem) -> bytes:
    """The problem as cloudpickle bytes, or a ConfigError saying how to make it shippable."""
    try:
        return cloudpickle.dumps(problem)
    except Exception as exc:  # noqa: BLE001 - any pickling failure gets the same advice
        raise ConfigError(
            f"the problem {type(problem).__name__} cannot be sent to worker processes: "
            f"{type(exc).__name__}: {exc}. Keep a problem a small recipe and build environments, "
            f"datasets and networks lazily inside evaluate()"
        ) from exc


# -- thread limits ------------------------------------------------------------------------------
def thread_env(threads: int | None) -> dict[str, str]:
    """Environment variables that cap native thread pools at ``threads`` (None: leave alone)."""
    return {} if threads is None else {name: str(int(threads)) for name in THREAD_VARIABLES}


_limits: list[Any] = []


def limit_threads(threads: int | None) -> None:
    """Cap torch's and the BLAS libraries' threads in this process (workers call this once)."""
    if threads is None:
        return
    import sys

    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(int(threads))
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    _limits.append(threadpool_limits(limits=int(threads)))


# -- the worker side ----------------------------------------------------------------------------
class WorkerCache(threading.local):
    """A worker's problem (per run ``token``) and broadcast (per generation), one set per thread."""

    token: str | None = None
    problem: Problem | None = None
    number: int | None = None
    broadcast: Broadcast | None = None

    def problem_for(self, token: str, load: Callable[[], Problem], threads: int | None) -> tuple[Problem, bool]:
        """The run's problem, loaded on first use; also says whether it was loaded now."""
        if self.token == token and self.problem is not None:
            return self.problem, False
        self.token = self.problem = self.number = self.broadcast = None
        problem = load()
        limit_threads(threads)
        self.token, self.problem = token, problem
        return problem, True

    def broadcast_for(self, key: Any, load: Callable[[], Broadcast]) -> tuple[Broadcast, bool]:
        """The broadcast called ``key`` (a generation), read once; installs the problem's state."""
        if self.number == key and self.broadcast is not None:
            return self.broadcast, False
        self.broadcast = None
        broadcast = load()
        if broadcast.state is not None:
            self.problem.load_state_dict(pickle.loads(broadcast.state))
        self.number, self.broadcast = key, broadcast
        return broadcast, True


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker, chained below the exception itself."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return f'\n"""\n{self.text}"""'


class RemoteCause(Exception):
    """Stands for an exception raised in a worker that could not be pickled: type and message."""

    def __init__(self, type_name: str, message: str):
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message


def _portable(exc: BaseException | None) -> Any:
    """``exc`` pickled with its traceback text, or a RemoteCause with its type and message."""
    if exc is None:
        return None
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        data = cloudpickle.dumps(exc)
        pickle.loads(data)
    except Exception:  # noqa: BLE001 - any unpicklable exception is described instead
        data = cloudpickle.dumps(RemoteCause(type(exc).__qualname__, str(exc)))
    return data, text


def _restore(portable: Any) -> BaseException | None:
    if portable is None:
        return None
    data, text = portable
    exc = pickle.loads(data)
    if exc.__cause__ is None:
        exc.__cause__ = RemoteTraceback(text)
    return exc


def run_task(
    cache: WorkerCache, token: str, task: Task, load_problem: Callable[[], Problem],
    load_broadcast: Callable[[], Broadcast], threads: int | None, batch_size: int | None,
    before: Callable[[], None] | None = None, key: Any = None,
) -> tuple[str, Any, dict[str, Any]]:
    """Evaluate ``task`` in this worker; never raises. Returns ``(status, value, meta)``.

    ``key`` names the broadcast for the cache (default: the generation number). ``status`` is ``"ok"`` (value: EvalResult), ``"error"`` (value: the evaluation's error, ready
    for :func:`decode_outcome`), or ``"crash"`` (the worker could not load the problem or the
    broadcast). ``meta`` says what was loaded, how long the evaluation took and the worker's pid.
    """
    meta: dict[str, Any] = {"pid": os.getpid()}
    try:
        problem, meta["loaded_problem"] = cache.problem_for(token, load_problem, threads)
        key = task.number if key is None else key
        broadcast, meta["loaded_broadcast"] = cache.broadcast_for(key, load_broadcast)
        meta["broadcast_bytes"] = broadcast.nbytes if meta["loaded_broadcast"] else 0
        population = task_population(broadcast, task)
    except BaseException as exc:  # noqa: BLE001 - reported to the driver as a worker failure
        if not isinstance(exc, Exception):
            raise
        return "crash", _portable(exc), meta
    if before is not None:
        before()
    started, cpu_started = time.perf_counter(), time.thread_time()
    try:
        result = evaluate_rows(problem, population, task.seeds, task.start, batch_size)
    except BlackboxError as exc:
        return "error", (_portable(exc), _portable(exc.__cause__)), meta
    except Exception as exc:  # noqa: BLE001 - evaluate_rows reports user errors; this is ours
        return "crash", _portable(exc), meta
    meta["seconds"] = time.perf_counter() - started
    meta["cpu_seconds"] = time.thread_time() - cpu_started
    return "ok", result, meta


def encode_outcome(outcome: tuple[str, Any, dict[str, Any]]) -> bytes:
    """Pickle an outcome in the worker (so the driver can count the bytes that come back)."""
    return cloudpickle.dumps(outcome, protocol=5)


def decode_outcome(data: bytes | tuple, task: Task, where: str) -> tuple[EvalResult, dict[str, Any]]:
    """The result of a task, or the worker's error raised here with its cause chained."""
    status, value, meta = pickle.loads(data) if isinstance(data, (bytes, bytearray)) else data
    if status == "ok":
        return value, meta
    if status == "error":
        error, cause = _restore(value[0]), _restore(value[1])
        if cause is not None:
            raise error from cause
        raise error
    cause = _restore(value)
    raise WorkerError(
        f"a {where} worker failed before evaluating rows {task.start}..{task.stop - 1}: "
        f"{type(cause).__name__}: {cause}. If the problem's class lives in a module the workers "
        f"cannot import, install that module or call cloudpickle.register_pickle_by_value(module)"
    ) from cause


def evaluation_timeout_error(task: Task, timeout: float) -> EvaluationError:
    row, seed = task.start, int(task.seeds[0])
    return EvaluationError(
        f"evaluation of row {row} (seed {seed}) did not finish within the timeout of {timeout:g} s; "
        f"its worker was killed and replaced", row=row, seed=seed,
    )


def join_results(results: dict[int, EvalResult], worst: list[Task] = ()) -> EvalResult:
    """Concatenate results keyed by their first row, in row order; ``worst`` tasks score -inf.

    Rows scored worst (they hung) take no steps and get info filled with zeros shaped like the
    other rows' info.
    """
    parts = dict(results)
    template = next((r for r in results.values() if r.info), None)
    for task in worst:
        m = len(task)
        info = {} if template is None else {
            k: np.zeros((m,) + np.shape(v)[1:], dtype=np.asarray(v).dtype) for k, v in template.info.items()
        }
        parts[task.start] = EvalResult(np.full(m, -np.inf), np.zeros(m, dtype=np.int64), info)
    return EvalResult.concatenate([parts[k] for k in sorted(parts)])


# -- counting -------------------------------------------------------------------------------------
@dataclass
class DispatchStats:
    """Traffic and work of an executor, cumulative since it was made (``reset()`` to zero).

    ``bytes_to_workers`` is what a generation costs on the wire: task messages, plus each
    broadcast counted once per worker that read it (on one machine a mapped file is really read
    from shared memory once; counting it per worker is the conservative figure).
    """

    generations: int = 0
    tasks: int = 0
    task_bytes: int = 0
    broadcast_bytes: int = 0
    broadcast_reads: int = 0
    broadcast_read_bytes: int = 0
    problem_bytes: int = 0
    problem_loads: int = 0
    result_bytes: int = 0
    worker_seconds: float = 0.0
    worker_cpu_seconds: float = 0.0
    resubmitted: int = 0
    worker_failures: int = 0
    timeouts: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def bytes_to_workers(self) -> int:
        return self.task_bytes + self.broadcast_read_bytes

    def reset(self) -> None:
        for f in fields(self):
            setattr(self, f.name, {} if f.name == "extra" else type(getattr(self, f.name))())

    def copy(self) -> DispatchStats:
        return DispatchStats(**{f.name: getattr(self, f.name) for f in fields(self)})

    def record(self, meta: dict[str, Any]) -> None:
        """Count what a worker reported with a result."""
        self.worker_seconds += float(meta.get("seconds", 0.0))
        self.worker_cpu_seconds += float(meta.get("cpu_seconds", 0.0))
        if meta.get("loaded_broadcast"):
            self.broadcast_reads += 1
            self.broadcast_read_bytes += int(meta.get("broadcast_bytes", 0))
        if meta.get("loaded_problem"):
            self.problem_loads += 1
