"""The worker's side of the parallel executors (loky, futures, Ray): evaluate a set of rows.

A worker keeps the run's problem and the current generation's :class:`~blackbox.core.rows.Shared`
in a thread-local cache (thread-local so that thread pools and Dask's threaded workers give each
thread its own problem), rebuilds its rows with ``Population.join`` exactly as the driver would,
and returns an :class:`Outcome`: the result, or the error with its traceback text, plus what it
loaded and how long it took. The outcome is a plain object that the transport pickles once.
"""

from __future__ import annotations

import os
import pickle
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypedDict

import cloudpickle
import numpy as np

from ..core.executor import describe_exception, evaluate_rows
from ..core.population import Population
from ..core.problem import EvalResult, Problem
from ..core.rows import Rows, Shared
from ..errors import BlackboxError, WorkerError

__all__ = [
    "THREAD_VARIABLES", "thread_env", "limit_threads", "WorkerCache", "RemoteTraceback", "RemoteCause",
    "Failure", "Outcome", "evaluate_task", "decode_outcome", "describe_exception",
]

#: Environment variables that cap the threads of BLAS, OpenMP (torch), MKL, numexpr in workers.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS", "BLIS_NUM_THREADS",
)


# -- thread limits ------------------------------------------------------------------------------
def thread_env(threads: int | None) -> dict[str, str]:
    """Environment variables that cap native thread pools at ``threads`` (None: leave alone)."""
    return {} if threads is None else {name: str(int(threads)) for name in THREAD_VARIABLES}


_limits: list[object] = []


def limit_threads(threads: int | None) -> None:
    """Cap torch's and the BLAS libraries' threads in this process (workers call this once)."""
    if threads is None:
        return
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(int(threads))
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    _limits.append(threadpool_limits(limits=int(threads)))


# -- the cache ----------------------------------------------------------------------------------
def _writable(state: Mapping[str, object]) -> dict[str, object]:
    """The state with read-only arrays (views of a mapped file or of Ray's object store) copied,
    so a problem may keep and change what it installs, as in the driver."""
    return {k: v.copy() if isinstance(v, np.ndarray) and not v.flags.writeable else v for k, v in state.items()}


class WorkerCache(threading.local):
    """A worker's problem (per run ``token``) and shared part (per generation), one set per thread."""

    token: str | None = None
    problem: Problem | None = None
    key: object = None
    shared: Shared | None = None

    def problem_for(self, token: str, load: Callable[[], Problem], threads: int | None) -> tuple[Problem, bool]:
        """The run's problem, loaded on first use; also says whether it was loaded now."""
        if self.token == token and self.problem is not None:
            return self.problem, False
        self.token = self.problem = self.key = self.shared = None
        problem = load()
        limit_threads(threads)
        self.token, self.problem = token, problem
        return problem, True

    def shared_for(self, key: object, load: Callable[[], Shared]) -> tuple[Shared, bool]:
        """The shared part called ``key`` (a generation), read once; installs the problem's state."""
        if self.key == key and self.shared is not None:
            return self.shared, False
        self.shared = None
        shared = load()
        if shared.state and self.problem is not None:
            self.problem.load_state_dict(_writable(shared.state))
        self.key, self.shared = key, shared
        return shared, True


# -- errors that cross the wire -------------------------------------------------------------------
class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker, chained below the exception itself."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return f'\n"""\n{self.text}"""'

    def __reduce__(self) -> tuple[type[RemoteTraceback], tuple[str]]:
        return (RemoteTraceback, (self.text,))


class RemoteCause(Exception):
    """Stands for an exception raised in a worker that could not be sent back: its type and message."""

    def __init__(self, type_name: str, message: str):
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message

    def __reduce__(self) -> tuple[type[RemoteCause], tuple[str, str]]:  # the default would call
        # RemoteCause(one_string) and fail to unpickle
        return (RemoteCause, (self.type_name, self.message))


def _rebuilt(cls: type[BaseException], args: tuple[object, ...], state: dict[str, object]) -> BaseException:
    """An exception of class ``cls`` with ``args`` and attributes ``state``, made without calling
    its ``__init__`` (whose signature may differ from ``args``: ``EnvError(code, msg)`` keeps only
    ``msg`` in its args, so the default pickling cannot make it again)."""
    try:
        exc = cls.__new__(cls, *args)
    except Exception:  # noqa: BLE001 - a __new__ with its own signature: make it bare
        exc = cls.__new__(cls)
    exc.args = args
    for key, value in state.items():
        try:
            setattr(exc, key, value)
        except Exception:  # noqa: BLE001 - read-only attributes stay as __new__ made them
            pass
    return exc


class _Portable:
    """Pickles as the exception it wraps, rebuilt by :func:`_rebuilt` from its class, args and the
    attributes that pickle; used when the exception's own pickling cannot be undone."""

    def __init__(self, exc: BaseException, dumps: Callable[[object], bytes]):
        self.exc = exc
        self.state: dict[str, object] = {}
        for key, value in getattr(exc, "__dict__", {}).items():
            try:
                dumps(value)
            except Exception:  # noqa: BLE001 - an attribute that cannot travel is left behind
                continue
            self.state[key] = value

    def __reduce__(self) -> tuple[Callable[[type[BaseException], tuple[object, ...], dict[str, object]], BaseException],
                                  tuple[type[BaseException], tuple[object, ...], dict[str, object]]]:
        return (_rebuilt, (type(self.exc), tuple(self.exc.args), self.state))


def _round_trip(dumps: Callable[[object], bytes], obj: object) -> bytes | None:
    """``dumps(obj)`` if those bytes load again (by plain pickle) as an exception, else None.

    A ``__reduce__`` may rebuild something that is no exception at all (an int): that way is refused."""
    try:
        data = dumps(obj)
        loaded = pickle.loads(data)
    except Exception:  # noqa: BLE001 - any failure means: try another way
        return None
    return data if isinstance(loaded, BaseException) else None


@dataclass
class Failure:
    """An exception raised in a worker, ready to travel, with its traceback text.

    ``error`` is, in order of preference: the exception itself when the transport can pickle it
    and load it back; cloudpickle bytes of it when only cloudpickle can (a class defined in a
    notebook, sent through a stdlib-pickle pool); the exception rebuilt from its class, args and
    attributes (a class whose ``__init__`` takes other arguments than its args, such as
    ``EnvError(code, msg)``), through the transport or cloudpickle; or a :class:`RemoteCause` with
    its type and message when nothing can carry it.
    """

    error: BaseException | bytes | _Portable
    trace: str

    @classmethod
    def capture(cls, exc: BaseException, dumps: Callable[[object], bytes] | None) -> Failure:
        """``exc`` for a transport that pickles with ``dumps`` (None: none, a thread of this process)."""
        try:
            trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        except Exception:  # noqa: BLE001 - a broken __str__ in the chain
            trace = "".join(traceback.format_tb(exc.__traceback__)) + describe_exception(exc) + "\n"
        if dumps is None:
            return cls(exc, trace)
        candidates: list[BaseException | _Portable] = [exc, _Portable(exc, dumps)]
        for wrapped in candidates:
            for pickler, as_bytes in ((dumps, False), (cloudpickle.dumps, True)):
                data = _round_trip(pickler, wrapped)
                if data is not None:
                    return cls(data if as_bytes else wrapped, trace)
        message = describe_exception(exc).partition(": ")[2]
        return cls(RemoteCause(type(exc).__qualname__, message), trace)

    def restore(self) -> BaseException:
        """The exception, with the worker's traceback chained below it (when nothing else is)."""
        exc: object = self.error
        if isinstance(exc, bytes):
            try:
                exc = pickle.loads(exc)
            except Exception as error:  # noqa: BLE001 - bytes that load in the worker but not here
                exc = RemoteCause("UnreadableError", f"the worker's exception could not be loaded here "
                                                     f"({describe_exception(error)})")
        if isinstance(exc, _Portable):  # never pickled (a pool that ran the task in this process)
            exc = exc.exc
        if not isinstance(exc, BaseException):  # whatever crosses from a worker is checked before use
            exc = RemoteCause("UnreadableError", f"the worker's exception was rebuilt here as a "
                                                 f"{type(exc).__qualname__}, not an exception")
        if exc.__cause__ is None:
            exc.__cause__ = RemoteTraceback(self.trace)
        return exc


class OutcomeMeta(TypedDict, total=False):
    """What a worker reports beside an outcome (read by the pools' stats and the Ray plugin)."""

    #: The worker's process id.
    pid: int
    #: How far the task got: ``problem``, ``state``, ``rows`` or ``evaluate`` (a crash's advice).
    stage: str
    #: Whether the task loaded the problem, and the generation's shared part (not from the cache).
    loaded_problem: bool
    loaded_shared: bool
    #: Bytes of the shared part read (0 when it was cached, or travelled inside the task).
    shared_bytes: int
    #: Wall-clock and CPU seconds of the evaluation.
    seconds: float
    cpu_seconds: float
    #: The worker's own memory after the task, in bytes (loky; None where it cannot be read).
    private_memory: int | None


@dataclass
class Outcome:
    """What a worker returns for a set of rows.

    ``status`` is ``"ok"`` (``result`` holds the rows' EvalResult), ``"error"`` (the evaluation
    raised: ``failure`` is the EvaluationError, ``cause`` what the problem raised) or ``"crash"``
    (the worker could not load the problem or the shared part: ``failure``). ``meta`` says what
    was loaded, how long the evaluation took and the worker's pid.
    """

    status: str
    result: EvalResult | None = None
    failure: Failure | None = None
    cause: Failure | None = None
    meta: OutcomeMeta = field(default_factory=OutcomeMeta)  # an empty dict

    @property
    def nbytes(self) -> int:
        """Bytes of the result's arrays (a failure: of its traceback text), computed, not pickled."""
        if self.result is None:
            return sum(len(f.trace) for f in (self.failure, self.cause) if f is not None)
        r = self.result
        return (np.asarray(r.fitness).nbytes + np.asarray(r.steps).nbytes
                + sum(np.asarray(v).nbytes for v in r.info.values()))


def evaluate_task(
    cache: WorkerCache, token: str, rows: Rows, load_problem: Callable[[], Problem],
    load_shared: Callable[[], Shared], *, key: object, threads: int | None = None,
    batch_size: int | None = None, before: Callable[[], None] | None = None,
    dumps: Callable[[object], bytes] | None = cloudpickle.dumps,
) -> Outcome:
    """Evaluate ``rows`` in this worker; never raises (except Ctrl-C and exits).

    ``key`` names the shared part for the cache (the generation). ``before`` runs just before the
    evaluation (loky marks the start for its timeouts). ``dumps`` is the transport's pickler, so
    that errors are packed in a form it can carry (None: the outcome is not pickled).
    """
    meta: OutcomeMeta = {"pid": os.getpid()}
    if rows.seeds is None:
        raise ValueError("evaluate_task() needs rows with their seeds: split(..., seeds=...)")
    try:
        meta["stage"] = "problem"
        problem, meta["loaded_problem"] = cache.problem_for(token, load_problem, threads)
        meta["stage"] = "state"
        shared, meta["loaded_shared"] = cache.shared_for(key, load_shared)
        meta["shared_bytes"] = shared.nbytes if meta["loaded_shared"] else 0
        meta["stage"] = "rows"
        population = Population.join(shared, rows)
    except Exception as exc:  # noqa: BLE001 - reported to the driver as a worker failure
        return Outcome("crash", failure=Failure.capture(exc, dumps), meta=meta)
    meta["stage"] = "evaluate"
    if before is not None:
        before()
    started, cpu_started = time.perf_counter(), time.thread_time()
    try:
        result = evaluate_rows(problem, population, rows.seeds, batch_size=batch_size, index=rows.index)
    except BlackboxError as exc:
        cause = None if exc.__cause__ is None else Failure.capture(exc.__cause__, dumps)
        return Outcome("error", failure=Failure.capture(exc, dumps), cause=cause, meta=meta)
    except Exception as exc:  # noqa: BLE001 - evaluate_rows reports user errors; this is ours
        return Outcome("crash", failure=Failure.capture(exc, dumps), meta=meta)
    meta["seconds"] = time.perf_counter() - started
    meta["cpu_seconds"] = time.thread_time() - cpu_started
    return Outcome("ok", result=result, meta=meta)


#: What a worker was doing when it failed outside an evaluation, and what to do about it.
_CRASH_ADVICE = {
    "state": "while installing the generation's problem state (the problem's load_state_dict raised)",
    "rows": "while rebuilding its rows from the generation's shared part; this is a bug in blackbox, "
            "please report it",
    "evaluate": "while evaluating; this is a bug in blackbox, please report it",
}


def decode_outcome(outcome: Outcome, rows: Rows, where: str) -> tuple[EvalResult, OutcomeMeta]:
    """The result of ``rows``, or the worker's error raised here with its cause chained."""
    if outcome.result is not None:
        return outcome.result, outcome.meta
    if outcome.failure is None:
        raise WorkerError(f"a {where} worker returned neither a result nor an error for rows {rows.spans()}")
    if outcome.status == "error":
        error = outcome.failure.restore()
        if outcome.cause is not None:
            raise error from outcome.cause.restore()
        raise error
    cause = outcome.failure.restore()
    described = str(cause) if isinstance(cause, RemoteCause) else describe_exception(cause)
    stage = outcome.meta.get("stage", "problem")
    if stage in _CRASH_ADVICE:
        raise WorkerError(f"a {where} worker failed on rows {rows.spans()} {_CRASH_ADVICE[stage]}: "
                          f"{described}") from cause
    if isinstance(cause, (ImportError, AttributeError)) or (
            isinstance(cause, RemoteCause) and cause.type_name.endswith(("ImportError", "AttributeError"))):
        advice = ("If the problem's class lives in a module the workers cannot import, install that module "
                  "or call cloudpickle.register_pickle_by_value(module)")
    else:
        advice = "The problem could not be rebuilt from its pickled form there (its __reduce__ or __setstate__)"
    raise WorkerError(
        f"a {where} worker failed before evaluating rows {rows.spans()}: {described}. {advice}"
    ) from cause
