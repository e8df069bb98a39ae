"""Evaluate on a Ray cluster: one actor per CPU, each holding the run's problem.

- The problem goes once into Ray's object store and once to each actor (its constructor); the
  actor keeps it, and whatever it builds lazily, for the whole run.
- Each generation's broadcast (distinct base vectors, sigma, noise table ``(size, seed)``, problem
  state) is put in the object store once; Ray copies it once to each node and every actor on the
  node reads it from shared memory without a copy.
- Each task is a chunk of compact rows (offsets, signs, parents, seeds: 32 bytes a row). Actors
  pull chunks from a queue as they finish (two in flight each, so none waits for the driver).
- The noise table is built once per node: it is a memory-mapped cache file made from its seed on
  first use (``blackbox/noise.py``), shared by every actor there. Regenerating it from the seed on
  each node costs about a second once and no network traffic, where the object store would ship
  256 MB to every node; the file also outlives the run, so later runs map it at once.

An actor that dies (its process killed, its node lost) is replaced and its chunks run again, up to
``max_retries`` times; results are identical to an undisturbed run. An exception inside an
evaluation is an EvaluationError naming the row and seed, chained to the original exception.
"""

from __future__ import annotations

import collections
import os
import pickle
import sys
import uuid
from typing import Any

import numpy as np

from blackbox._validate import check_int
from blackbox.core.executor import Executor
from blackbox.core.population import Population
from blackbox.core.problem import EvalResult, Problem
from blackbox.errors import ConfigError, WorkerError
from blackbox.executors.wire import (
    DispatchStats,
    Task,
    WorkerCache,
    decode_outcome,
    encode_outcome,
    join_results,
    limit_threads,
    pickle_problem,
    run_task,
    split_generation,
    thread_env,
)

__all__ = ["RayExecutor"]

#: Tasks kept in flight per actor, so that an actor never idles while its next task travels.
IN_FLIGHT = 2


class ProblemActor:
    """A Ray actor holding the run's problem; evaluates chunks of compact rows."""

    def __init__(self, token: str, problem_bytes: bytes, threads: int | None, batch_size: int | None):
        os.environ.update(thread_env(threads))
        limit_threads(threads)
        self.token, self.problem_bytes = token, problem_bytes
        self.threads, self.batch_size = threads, batch_size
        self.cache = WorkerCache()

    def evaluate(self, broadcast, packed: tuple) -> bytes:
        task = Task.unpack(packed)
        outcome = run_task(
            self.cache, self.token, task, lambda: pickle.loads(self.problem_bytes), lambda: broadcast,
            self.threads, self.batch_size,
        )
        return encode_outcome(outcome)

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
        constants.ENABLE_RAY_CLUSTER = False


class RayExecutor(Executor):
    """A Ray cluster: one actor per CPU holding the problem; seed-only tasks; actors replaced.

    ``address``: a running cluster (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``); None
    starts a local Ray instance with ``num_cpus`` CPUs (default: all), listening on 127.0.0.1
    unless ``localhost=False``. If Ray is already initialized in this process, that instance is
    used. ``actors``: how many (default: one per CPU of the cluster). ``chunks_per_actor``: tasks
    per actor and generation. ``threads``: torch/BLAS threads per actor (default 1).
    ``max_retries``: re-runs of a chunk after its actor died.
    """

    name = "ray"

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
        self.stats = DispatchStats()
        self._owns_ray = False
        self._actors: list[Any] = []
        self._actor_class = None
        self._problem_ref = None
        self._token = ""
        self._number = 0

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
        self._number = 0

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

    # -- a generation ---------------------------------------------------------------------------
    def evaluate(
        self, population: Population, seeds: np.ndarray, state: dict[str, Any] | None = None
    ) -> EvalResult:
        self._require_started()
        ray = _import_ray()
        self._number += 1
        n_chunks = min(len(population), len(self._actors) * self.chunks_per_actor)
        broadcast, tasks = split_generation(self._number, population, seeds, state, n_chunks)
        broadcast_ref = ray.put(broadcast)
        self.stats.generations += 1
        self.stats.broadcast_bytes += broadcast.nbytes + (0 if broadcast.dense is None else broadcast.dense.nbytes)
        try:
            results = self._schedule(ray, broadcast_ref, broadcast, tasks)
        finally:
            del broadcast_ref
        return join_results(results)

    def _schedule(self, ray, broadcast_ref, broadcast, tasks: list[Task]) -> dict[int, EvalResult]:
        from ray.exceptions import RayActorError, RayTaskError

        queue = collections.deque(tasks)
        in_flight: dict[Any, tuple[int, Any, Task]] = {}
        results: dict[int, EvalResult] = {}

        def submit(slot: int) -> None:
            task = queue.popleft()
            packed = task.pack()
            self.stats.tasks += 1
            self.stats.task_bytes += len(pickle.dumps(packed, protocol=5)) + (
                0 if broadcast.dense is None else len(task) * broadcast.dim * 8)
            actor = self._actors[slot]
            in_flight[actor.evaluate.remote(broadcast_ref, packed)] = (slot, actor, task)

        for _ in range(IN_FLIGHT):
            for slot in range(len(self._actors)):
                if queue:
                    submit(slot)
        try:
            while in_flight:
                ready, _ = ray.wait(list(in_flight), num_returns=1)
                ref = ready[0]
                slot, actor, task = in_flight.pop(ref)
                try:
                    data = ray.get(ref)
                except RayActorError as exc:
                    self._replace(ray, slot, actor, task, exc)
                    queue.appendleft(task)
                except RayTaskError as exc:
                    raise WorkerError(f"Ray could not run rows {task.start}..{task.stop - 1}: {exc}") from exc
                else:
                    self.stats.result_bytes += len(data)
                    result, meta = decode_outcome(data, task, "ray")
                    self.stats.record(meta)
                    results[task.start] = result
                while queue and sum(1 for s, _, _ in in_flight.values() if s == slot) < IN_FLIGHT:
                    submit(slot)
        except BaseException:
            for ref in in_flight:
                try:
                    ray.cancel(ref, force=False)
                except Exception:  # noqa: BLE001 - best effort: the run is stopping anyway
                    pass
            raise
        return results

    def _replace(self, ray, slot: int, actor, task: Task, error: BaseException) -> None:
        """Start a new actor in ``slot`` (once per death) and count an attempt for ``task``."""
        task.attempt += 1
        self.stats.resubmitted += 1
        if task.attempt > self.max_retries:
            raise WorkerError(
                f"rows {task.start}..{task.stop - 1} were in flight when their actor died "
                f"{task.attempt} times (max_retries={self.max_retries}); last failure: {error}"
            ) from error
        if self._actors[slot] is actor:
            self.stats.worker_failures += 1
            ray.kill(actor)
            self._actors[slot] = self._new_actor()
