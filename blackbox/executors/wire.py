"""What crosses the wire between the driver and the workers of the parallel executors, and what it costs.

A generation travels as the population's own wire format (``Population.split``):

- a :class:`~blackbox.core.rows.Shared`, once per worker (or once per machine) per generation: the
  base vectors (the center; the GA's parents), sigma, the noise table's ``(size, seed)``, the
  index of the center row, and the problem's state as plain data (a dict of arrays and scalars);
- :class:`~blackbox.core.rows.Rows`, one set per task: any rows, each with its noise offset, sign,
  parent, seed group and evaluation seed (33 bytes a row), or a dense population's row values;
- back, an :class:`~blackbox.executors.worker.Outcome` per task: fitness, steps and per-row info,
  or the error.

Each is an object the transport (loky's queues, a pool's pickler, Ray's object store) serializes
once; nothing is pickled into bytes that are pickled again, except a problem shipped through a
pool we do not control (futures, Ray), which needs cloudpickle and so travels as its bytes, made
once per run. Results are joined by row number (:func:`join_results`), so they never depend on how
rows were split or where they ran. :class:`DispatchStats` counts the traffic; its byte counts are
the payloads' sizes, computed from the arrays rather than measured by pickling twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.problem import EvalResult, Problem
from ..core.rows import Rows, Shared
from ..errors import ConfigError
from . import shipping

if TYPE_CHECKING:
    from .worker import OutcomeMeta

__all__ = ["Shared", "Rows", "DispatchStats", "join_results", "pickle_problem", "unshippable"]


def unshippable(problem: Problem, exc: BaseException) -> ConfigError:
    """The ConfigError for a problem that cannot be pickled, saying how to make it shippable."""
    return ConfigError(
        f"the problem {type(problem).__name__} cannot be sent to worker processes: "
        f"{type(exc).__name__}: {exc}. Keep a problem a small recipe and build environments, "
        f"datasets and networks lazily inside evaluate()"
    )


def pickle_problem(problem: Problem) -> bytes:
    """The problem as cloudpickle bytes (made once per run; :mod:`.shipping`), or the ConfigError of
    :func:`unshippable`."""
    try:
        return shipping.dumps(problem)
    except Exception as exc:  # noqa: BLE001 - any pickling failure gets the same advice
        raise unshippable(problem, exc) from exc


def join_results(parts: Sequence[tuple[Rows, EvalResult]], worst: Sequence[Rows] = ()) -> EvalResult:
    """The results of every row of ``parts`` and ``worst`` in row order; ``worst`` rows score -inf.

    Rows scored worst (they hung) take no steps and get info filled with zeros shaped like the
    other rows' info.
    """
    parts = list(parts)
    template = next((r for _, r in parts if r.info), None)
    for rows in worst:
        m = len(rows)
        info = {} if template is None else {
            k: np.zeros((m,) + np.shape(v)[1:], dtype=np.asarray(v).dtype) for k, v in template.info.items()
        }
        parts.append((rows, EvalResult(np.full(m, -np.inf), np.zeros(m, dtype=np.int64), info)))
    parts.sort(key=lambda part: int(part[0].index[0]) if len(part[0]) else -1)
    joined = EvalResult.concatenate([result for _, result in parts])
    index = np.concatenate([rows.index for rows, _ in parts]) if parts else np.zeros(0, dtype=np.int64)
    if len(index) > 1 and np.any(np.diff(index) <= 0):  # parts interleave: put every row in its place
        order = np.argsort(index, kind="stable")
        joined = EvalResult(joined.fitness[order], joined.steps[order], {k: v[order] for k, v in joined.info.items()})
    return joined


@dataclass
class DispatchStats:
    """Traffic and work of an executor, cumulative since it was made (``reset()`` to zero).

    ``bytes_to_workers`` is what a generation costs on the wire: task messages, plus each shared
    part counted once per worker that read it (on one machine a mapped file is really read from
    shared memory once; counting it per worker is the conservative figure). Byte counts are the
    payloads (arrays, problem state, row blocks), not the transports' framing of each message.
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
        return type(self)(**{f.name: getattr(self, f.name) for f in fields(self)})

    def record(self, meta: OutcomeMeta) -> None:
        """Count what a worker reported with a result."""
        self.worker_seconds += float(meta.get("seconds", 0.0))
        self.worker_cpu_seconds += float(meta.get("cpu_seconds", 0.0))
        if meta.get("loaded_shared"):
            self.broadcast_reads += 1
            self.broadcast_read_bytes += int(meta.get("shared_bytes", 0))
        if meta.get("loaded_problem"):
            self.problem_loads += 1
