"""Evaluate on a Ray cluster: one actor per CPU, each holding the run's problem.

- The problem goes once into Ray's object store (as cloudpickle bytes, unpickled by each actor on
  its first task, so a problem the actors cannot import is a WorkerError that says how to fix it)
  and once to each actor (its constructor); the actor keeps it, and whatever it builds lazily, for
  the whole run.
- Each generation's shared part (base vectors, sigma, noise table ``(size, seed)``, the problem's
  state as plain data) is put in the object store once; Ray copies it once to each node and every
  actor on the node reads it from shared memory without a copy.
- Each task is a set of rows (offsets, signs, parents, seed groups, seeds: 33 bytes a row). Actors
  pull tasks from a queue as they finish (two in flight each, so none waits for the driver); the
  loop (:mod:`blackbox.executors.pool`) learns of each completion by a callback, without scanning
  what is in flight.
- The noise table is built once per node: it is a memory-mapped cache file made from its seed on
  first use (``blackbox/core/noise.py``), shared by every actor there. Regenerating it from the seed on
  each node costs about a second once and no network traffic, where the object store would ship
  256 MB to every node; the file also outlives the run, so later runs map it at once.

An actor that dies (its process killed, its node lost) is replaced and its tasks run again, up to
``max_retries`` times; results are identical to an undisturbed run. An exception inside an
evaluation is an EvaluationError naming the row and seed, chained to the original exception.
"""

from __future__ import annotations

import collections
import concurrent.futures as cf
import os
import pickle
import sys
import uuid
from typing import Any

from blackbox._validate import check_int
from blackbox.core.problem import Problem
from blackbox.core.rows import Rows, Shared
from blackbox.errors import ConfigError, WorkerError
from blackbox.executors.pool import PoolExecutor
from blackbox.executors.wire import pickle_problem
from blackbox.executors.worker import Outcome, WorkerCache, evaluate_task, limit_threads, thread_env

__all__ = ["RayExecutor"]

#: Tasks kept in flight per actor, so that an actor never idles while its next task travels.
IN_FLIGHT = 2


class ProblemActor:
    """A Ray actor holding the run's problem; evaluates sets of rows."""

    def __init__(self, token: str, problem_bytes: bytes, threads: int | None, batch_size: int | None):
        os.environ.update(thread_env(threads))
        limit_threads(threads)
        self.token, self.problem_bytes = token, problem_bytes
        self.threads, self.batch_size = threads, batch_size
        self.cache = WorkerCache()

    def evaluate(self, shared: Shared, rows: Rows) -> Outcome:
        return evaluate_task(
            self.cache, self.token, rows, lambda: pickle.loads(self.problem_bytes), lambda: shared,
            key=shared.number, threads=self.threads, batch_size=self.batch_size,
        )

    def pid(self) -> int:
        return os.getpid()


def _import_ray():
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - ray is this distribution's dependency
        raise WorkerError("the ray executor needs Ray: pip install blackbox-ray (or ray)") from exc
    return ray


def _bind_to_localhost() -> None:
    """Make a Ray instance started here listen on 127.0.0.1 only.

    Ray has no public switch for this; it binds to the loopback address where it does not support
    clusters (macOS, Windows), and this is the variable that chooses that behaviour.
    """
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None:
        constants.ENABLE_RAY_CLUSTER = False  # type: ignore[attr-defined]  # ray's private flag, not declared


class RayExecutor(PoolExecutor):
    """A Ray cluster: one actor per CPU holding the problem; compact row tasks; actors replaced.

    ``address``: a running cluster (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``); None
    starts a local Ray instance with ``num_cpus`` CPUs (default: all), listening on 127.0.0.1
    unless ``localhost=False``. If Ray is already initialized in this process, that instance is
    used. ``actors``: how many (default: one per CPU of the cluster). ``chunks_per_actor``: tasks
    per actor and generation. ``threads``: torch/BLAS threads per actor (default 1).
    ``max_retries``: re-runs of a chunk after its actor died.
    """

    name = "ray"
    died = "their actor died"

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: int | None = None,
        actors: int | None = None,
        localhost: bool = True,
        chunks_per_actor: int = 2,
        threads: int | None = 1,
        max_retries: int = 3,
        batch_size: int | None = None,
    ):
        super().__init__()
        if address is not None and num_cpus is not None:
            raise ConfigError(
                f"num_cpus={num_cpus} only applies to a local Ray started here; a cluster at "
                f"address={address!r} has its own CPUs (use actors= to use fewer)"
            )
        self.address = address
        self.num_cpus = None if num_cpus is None else check_int("num_cpus", num_cpus, minimum=1)
        self.actors = None if actors is None else check_int("actors", actors, minimum=1)
        self.localhost = bool(localhost)
        self.chunks_per_actor = check_int("chunks_per_actor", chunks_per_actor, minimum=1)
        self.threads = None if threads is None else check_int("threads", threads, minimum=1)
        self.max_retries = check_int("max_retries", max_retries, minimum=0)
        self.batch_size = None if batch_size is None else check_int("batch_size", batch_size, minimum=1)
        self._owns_ray = False
        self._actors: list[Any] = []
        self._actor_class = None
        self._problem_ref = None
        self._shared_ref = None
        self._token = ""
        self._free: collections.deque[int] = collections.deque()  # one entry per free in-flight place
        self._running: dict[cf.Future, tuple[int, Any]] = {}  # slot and object ref of each task

    def __repr__(self) -> str:
        where = self.address or f"local, num_cpus={self.num_cpus}"
        return f"RayExecutor({where}, actors={len(self._actors) or self.actors})"

    @property
    def workers(self) -> int:
        return len(self._actors) or self.actors or self.num_cpus or os.cpu_count() or 1

    # -- cluster and actors -------------------------------------------------------------------
    def _connect(self):
        if "ray" not in sys.modules and self.address is None and self.localhost:
            _bind_to_localhost()
        ray = _import_ray()
        if not ray.is_initialized():
            if self.address is None:
                if self.localhost:
                    _bind_to_localhost()
                ray.init(num_cpus=self.num_cpus, include_dashboard=False)
            else:
                ray.init(address=self.address)
            self._owns_ray = True
        return ray

    def _new_actor(self):
        return self._actor_class.options(num_cpus=1).remote(
            self._token, self._problem_ref, self.threads, self.batch_size
        )

    def start(self, problem: Problem) -> None:
        problem_bytes = pickle_problem(problem)
        super().start(problem)
        ray = self._connect()
        if self._actor_class is None:
            self._actor_class = ray.remote(ProblemActor)
        self._kill_actors(ray)
        self._token = uuid.uuid4().hex
        self.stats.problem_bytes += len(problem_bytes)
        self._problem_ref = ray.put(problem_bytes)
        count = self.actors or max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._actors = [self._new_actor() for _ in range(count)]

    def _kill_actors(self, ray) -> None:
        for actor in self._actors:
            ray.kill(actor)
        self._actors = []

    def close(self) -> None:
        ray = sys.modules.get("ray")
        if ray is not None and ray.is_initialized():
            self._kill_actors(ray)
            if self._owns_ray:
                ray.shutdown()
                self._owns_ray = False
        self._problem_ref = None
        super().close()

    def actor_pids(self) -> list[int]:
        """Process ids of the actors (for tests and diagnostics)."""
        ray = _import_ray()
        return ray.get([actor.pid.remote() for actor in self._actors])

    # -- the transport (see PoolExecutor) --------------------------------------------------------
    def _chunks(self, rows: int) -> int:
        return min(rows, len(self._actors) * self.chunks_per_actor)

    def _publish(self, shared: Shared) -> None:
        ray = _import_ray()
        self._shared_ref = ray.put(shared)
        self.stats.broadcast_bytes += shared.nbytes
        # IN_FLIGHT places per actor, handed out actor by actor, so every actor gets work at once.
        self._free = collections.deque(slot for _ in range(IN_FLIGHT) for slot in range(len(self._actors)))
        self._running.clear()

    def _retract(self, shared: Shared) -> None:
        self._shared_ref = None

    def _has_room(self) -> bool:
        return bool(self._free)

    def _submit(self, shared: Shared, rows: Rows) -> tuple[cf.Future, Any]:
        slot = self._free.popleft()
        actor = self._actors[slot]
        self.stats.task_bytes += rows.nbytes
        ref = actor.evaluate.remote(self._shared_ref, rows)
        future = ref.future()
        self._running[future] = (slot, ref)
        return future, actor

    def _released(self, future: cf.Future) -> None:
        slot, _ = self._running.pop(future)
        self._free.append(slot)

    def _is_lost(self, error: BaseException) -> bool:
        from ray.exceptions import RayActorError

        return isinstance(error, RayActorError)

    def _could_not_run(self, rows: Rows, error: BaseException) -> WorkerError:
        return WorkerError(f"Ray could not run rows {rows.spans()}: {error}")

    def _replace(self, domain: Any, cause: BaseException, outstanding: list[Rows]) -> None:
        """Start a new actor in the dead one's place (its queued places go to the new one)."""
        for slot, actor in enumerate(self._actors):
            if actor is domain:
                _import_ray().kill(actor)
                self._actors[slot] = self._new_actor()

    def _abandon(self, running: list[cf.Future]) -> None:
        ray = _import_ray()
        for future in running:
            try:
                ray.cancel(self._running[future][1], force=False)
            except Exception:  # noqa: BLE001 - best effort: the run is stopping anyway
                pass
