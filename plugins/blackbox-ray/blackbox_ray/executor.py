"""Evaluate on a Ray cluster: one aggregator per node owning the node's cores, one call per node a
generation, the noise-weighted sums reduced among the nodes.

- At ``start``, one :class:`~blackbox_ray.node.NodeAggregator` per node with CPUs, pinned to the node
  (node affinity) and holding all of its CPUs; it starts a node-local loky pool and loads the problem
  (cloudpickle bytes, put in the object store once). A node whose blackbox or numpy version, or
  whose arithmetic, differs from the driver's, or that cannot import the problem, is refused with
  one line naming it.
- Each generation, the population (33 bytes a row and the center) is put in the object store once
  and each node gets **one call** (``stats.node_calls`` counts them): it evaluates its share of the
  rows a few at a time, steals from peers and backs up the last rows, exchanges fitness with its
  peers and, when the strategy is bound (``optimize`` binds it), computes the strategy's
  coefficients on a replica and sums its fixed blocks; the sums go up a binary tree of nodes and node
  0 returns the total. The driver checks that its own coefficients give the same plan and uses the
  total (otherwise it sums in-process: same bits, only slower). Each node returns its rows'
  results; observation statistics travel only for the rows that sampled them.
- Completions arrive by callback (``ObjectRef.future()``): nothing loops over every ref.

Faults: a worker process that dies is retried inside its node; a node (or its aggregator) lost in
a generation raises on the driver's call and on its peers' calls, and the generation's missing rows
are redone on the survivors at once, never waiting for a replacement that may never be placed. The
driver runs a generation through blackbox's pool loop (``blackbox.executors.pool.TaskLoop``), each
node's call a task: a lost node is a lost worker, a silent one (the heartbeat) an overdue task. A node
that joins, or a node whose aggregator died, gets an aggregator, used from the generation after it is
ready. Results are bit-identical to ``serial`` in every case.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import os
import pickle
import sys
import time
import uuid
import warnings
from dataclasses import dataclass
from typing import Any

import cloudpickle
import numpy as np

from blackbox.core.executor import Executor, Submitted
from blackbox.core.population import Population
from blackbox.core.problem import EvalResult, Problem
from blackbox.core.reduce import REDUCTION, PartialSums, plan_sums
from blackbox.errors import ConfigError, WorkerError
from blackbox.executors.pool import RetryRule, Task, TaskLoop
from blackbox.executors.wire import DispatchStats, pickle_problem
from blackbox.validate import check_float, check_int

from .checks import check_heartbeat, check_node, driver_facts, probe_address, unreachable
from .node import BUNDLE_CHUNK, NodeAggregator, decode_info

__all__ = ["RayExecutor", "ClusterStats", "ClusterSizeWarning"]


@dataclass
class ClusterStats(DispatchStats):
    """Dispatch statistics of the cluster executor (cumulative; see the "Run on a cluster" guide)."""

    node_calls: int = 0  # driver -> node calls: one per node a generation, plus redo rounds
    rounds: int = 0  # rounds of calls (one a generation unless a node was lost)
    nodes_lost: int = 0  # aggregators lost in a generation (their node, or their process); also in worker_failures
    nodes_joined: int = 0
    rows_stolen: int = 0
    rows_lent: int = 0  # rows of a node's queue run by a node that had finished its own (results sent back)
    rows_backed_up: int = 0
    rows_delivered: int = 0
    node_reductions: int = 0  # generations whose sums the nodes computed
    driver_reductions: int = 0  # generations the driver summed itself
    info_rows: int = 0  # rows whose per-row info (observation statistics) travelled
    nodes_fenced: int = 0  # aggregators declared lost by the heartbeat (silent for `heartbeat` s); also in nodes_lost
    late_replies: int = 0  # replies of fenced aggregators that came after all (dropped, never mixed in)
    late_rows_dropped: int = 0  # rows those late replies carried


class ClusterSizeWarning(UserWarning):
    """A generation has fewer rows than the cluster has cores: the others wait."""


class _Submitted(Submitted, TaskLoop):
    """A generation on the nodes, run by the pool's submit/collect/retry loop (one task a node's call).

    A round gives each node one call for its share of the rows still missing; a reply's rows are
    kept as they come (a row done twice is identical: the first is kept). A node lost (its call
    raises ``RayActorError``) or silent for ``heartbeat`` seconds (fenced, and the round abandoned on
    the others, which reply at once with what they have) leaves rows missing: once the round's calls
    are all in, the next round gives the survivors the missing rows, until every row is present and
    a round completes (so the nodes' total reaches the strategy's reduction)."""

    def __init__(self, executor: RayExecutor, ray, number: int, n: int, bundle: list, capture: bool):
        TaskLoop.__init__(self, RetryRule(0, "a node was lost"), poll=max(0.05, executor.heartbeat / 20))
        self.executor, self.ray, self.number, self.n, self.bundle, self.capture = executor, ray, number, n, bundle, capture
        self.fitness, self.steps = np.zeros(n), np.zeros(n, dtype=np.int64)
        self.present = np.zeros(n, dtype=bool)
        self.info_parts: list = []
        self.rounds = 0
        self.members: dict[str, Any] = {}  # node id -> aggregator, of the latest round
        self.replied = 0  # replies of the latest round (none: every call was lost, a round more)
        self.again = False  # a reply of the latest round was incomplete: a round more
        self.dispatch()  # the first round starts now; result() collects it

    def result(self) -> EvalResult:
        executor, now = self.executor, time.monotonic()
        for node_id in self.members:  # the wait's start counts as an answer (a pipelined round started earlier)
            executor._seen[node_id] = now
        self.run()
        executor.stats.info_rows += int(sum(len(keep) for _, info in self.info_parts for keep, _, _, _ in info.values()))
        return EvalResult(self.fitness, self.steps, decode_info(self.info_parts, self.n))

    # -- the loop's hooks ------------------------------------------------------------------------
    def outstanding(self) -> bool:
        """Rows missing, or the latest round is over with a reply incomplete or no reply at all."""
        return not self.present.all() or self.again or (not self.running and self.replied == 0)

    def dispatch(self) -> None:
        """A round once the previous one is all in and rows are missing or a reply was incomplete:
        one call per node for its share of the missing rows (the rows known go with it)."""
        if self.running or not self.outstanding():
            return
        executor, ray = self.executor, self.ray
        while not executor._nodes:
            executor._wait_for_a_node(ray)
        self.rounds += 1
        self.replied, self.again = 0, False
        self.members = dict(executor._nodes)
        todo = np.flatnonzero(~self.present)
        # rows known from an earlier round travel once through the object store (a ref); a first round sends None
        known = np.flatnonzero(self.present)
        known_arg = ray.put((known, self.fitness[known])) if len(known) else None
        actors = list(self.members.values())
        peers = executor._peers_ref(ray, actors)  # the list of peers: put once while the nodes stay the same
        started = time.monotonic()
        for rank, ((node_id, actor), share) in enumerate(zip(self.members.items(), np.array_split(todo, len(actors)))):
            ref = actor.generation.remote(((self.number, self.rounds), self.bundle, share.tolist(), peers, rank,
                                           known_arg, self.capture))  # one argument: one serialization
            executor._seen[node_id] = started  # the round's start counts as an answer
            self.start(ref.future(), _Call(share, domain=actor, node=node_id))
        executor.stats.node_calls += len(actors)
        executor.stats.rounds += 1

    def accept(self, task: Task, value: Any) -> None:
        reply, present = value, self.present
        if reply.get("error") is not None:
            error, cause = reply["error"]
            raise error.restore() from (cause.restore() if cause is not None else None)
        index = reply["index"]
        new = ~present[index]
        self.fitness[index[new]], self.steps[index[new]] = reply["fitness"][new], reply["steps"][new]
        present[index[new]] = True
        self.info_parts.append((index, reply["info"]))
        self.executor._count(reply)
        self.replied += 1
        self.again |= reply["incomplete"] is not None  # a round more, even with every row present (the total)
        if "total" in reply:
            self.executor._keep_total(reply["key"], reply["total"])

    def is_lost(self, error: BaseException) -> bool:
        return isinstance(error, self.ray.exceptions.RayActorError)  # the node or its aggregator is gone

    def failed(self, task: Task, error: BaseException) -> BaseException:
        if isinstance(error, self.ray.exceptions.RayTaskError):
            raise error.as_instanceof_cause() from None
        return error

    def replace(self, domain: object, cause: BaseException, task: Task) -> None:
        """The node is dropped (an aggregator is started there again if it is alive, at a later submit)."""
        assert isinstance(task, _Call)
        self.executor._drop(task.node)

    def redo(self, task: Task, cause: BaseException) -> None:
        """Nothing to queue: the rows it did not deliver are missing, and the next round has them."""

    def overdue(self) -> None:
        """Fence the nodes of the round silent for ``heartbeat`` seconds, and abandon the round."""
        running = {task.node: future for future, task in self.running.items() if isinstance(task, _Call)}
        silent = self.executor._silent(self.members, set(running))
        if not silent:
            return
        for node_id in silent:
            future = running[node_id]
            task = self.running.pop(future)
            self.released(future)
            self.executor._fence(node_id, task.domain, future)
        for actor in self.members.values():
            actor.abandon.remote((self.number, self.rounds))  # the fenced too: it replies at once if it wakes up

    def abandon(self, running: list[cf.Future[Any]]) -> None:
        """A node's error ends the generation: the other calls finish on their own (nothing to cancel)."""


@dataclass(eq=False)
class _Call(Task):
    """A node's call in a round: ``rows`` its share (row positions), ``domain`` its aggregator."""

    node: str = ""


class _NodeReducer:
    """The reducer a bound strategy calls: the nodes' total for this generation, checked."""

    def __init__(self, executor: RayExecutor):
        self.executor = executor

    def __call__(self, population, coefficients, square_coefficients=None):
        return self.executor._reduce(population, coefficients, square_coefficients)


def _import_ray():
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - ray is this distribution's dependency
        raise WorkerError("the ray executor needs Ray: pip install blackbox-ray (or ray)") from exc
    return ray


def _bind_to_localhost() -> None:
    """Make a Ray instance started here listen on 127.0.0.1 only (Ray binds there where it does not
    support clusters; this is the variable that chooses that behaviour)."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None:
        constants.ENABLE_RAY_CLUSTER = False  # type: ignore[attr-defined]  # ray's private flag, not declared


def _token_auth_where_a_token_exists() -> None:
    """As ``ray start`` does (Ray 2.60): a driver joining a cluster authenticates with the token of
    ``~/.ray/auth_token`` or ``RAY_AUTH_TOKEN`` where one exists and ``RAY_AUTH_MODE`` is not set
    (``ray.init`` alone would connect without it, and be refused with ``InvalidAuthToken``)."""
    if "RAY_AUTH_MODE" in os.environ:
        return
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:  # a Ray without token authentication
        return
    log = logging.getLogger("ray._private.authentication.authentication_token_setup")
    level = log.level
    log.setLevel(logging.ERROR)  # its "token authentication is enabled" line is for clusters started here
    try:
        maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
    finally:
        log.setLevel(level)


class RayExecutor(Executor):
    """A Ray cluster: one aggregator per node with a node-local pool; one call per node a generation.

    ``address``: a running cluster (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``); None starts
    a local Ray with ``num_cpus`` CPUs (default: all) on 127.0.0.1 unless ``localhost=False``; a Ray
    already initialized in this process is used as it is. ``actors``: worker processes in all (default:
    every CPU of the cluster). ``chunks_per_actor``: a worker's first take is 1/(chunks_per_actor x
    workers) of its node's rows, later takes smaller, the last single rows. ``threads``: torch/BLAS
    threads per worker (default 1). ``max_retries``: re-runs of rows whose worker process died.
    ``batch_size``: rows per ``problem.evaluate`` call. ``node_timeout``: seconds to wait for an
    aggregator when no node has one (then a WorkerError). ``heartbeat``: seconds an aggregator may
    answer none of the executor's pings while a generation waits on it before it is declared lost
    (from ``HEARTBEAT_MIN`` to ``HEARTBEAT_MAX``, default 10): its rows are redone on the other nodes
    and it is fenced (a late reply is dropped and counted in ``stats.late_replies``).
    """

    name = "ray"

    def __init__(self, address: str | None = None, *, num_cpus: int | None = None, actors: int | None = None,
                 localhost: bool = True, chunks_per_actor: int = 2, threads: int | None = 1, max_retries: int = 3,
                 batch_size: int | None = None, node_timeout: float = 60.0, heartbeat: float = 10.0):
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
        self.node_timeout = check_float("node_timeout", node_timeout, positive=True)
        self.heartbeat = check_heartbeat(heartbeat)
        self.stats = ClusterStats()
        self._owns_ray = False
        self._nodes: dict[str, Any] = {}  # node id -> admitted aggregator
        self._workers: dict[str, int] = {}  # node id -> its pool's workers
        self._pending: dict[str, tuple[Any, Any, float]] = {}  # node id -> (actor, info ref, since)
        self._refused: dict[str, str] = {}
        self._facts: dict[str, Any] = {}
        self._problem_ref = None
        self._replica_ref = None
        self._strategy = None
        self._capture = False
        self._totals: dict[bytes, np.ndarray] = {}  # plan key -> the nodes' total, until told
        self._number = 0
        self._polled = 0.0
        self._actor_class: Any = None  # ray.remote(NodeAggregator), made on first use
        self._budget: int | None = None
        self._fenced: dict[str, list[Any]] = {}  # node id -> its fenced aggregators (never asked again)
        self._pings: dict[str, tuple[Any, float]] = {}  # node id -> (ping future, sent at)
        self._seen: dict[str, float] = {}  # node id -> when it last answered (or its round started)
        self._warned_small = False
        self._doomed: list[Any] = []  # fenced aggregators whose late reply came: killed at the next submit
        self._peers: tuple[list[Any], Any] | None = None  # (the aggregators of a round, the ref of their list)

    def __repr__(self) -> str:
        where = self.address or f"local, num_cpus={self.num_cpus}"
        return f"RayExecutor({where}, nodes={len(self._nodes)})"

    @property
    def workers(self) -> int:
        return sum(self._workers[n] for n in self._nodes) or self.actors or self.num_cpus or os.cpu_count() or 1

    @property
    def nodes(self) -> int:
        """Nodes with an aggregator in use."""
        return len(self._nodes)

    # -- cluster and aggregators -------------------------------------------------------------
    def _connect(self):
        if "ray" not in sys.modules and self.address is None and self.localhost:
            _bind_to_localhost()
        ray = _import_ray()
        if not ray.is_initialized():
            if self.address is None:
                if self.localhost:
                    _bind_to_localhost()
                ray.init(num_cpus=self.num_cpus, include_dashboard=False, logging_level="ERROR")
            else:
                probe_address(self.address)
                _token_auth_where_a_token_exists()
                try:
                    ray.init(address=self.address, logging_level="ERROR")
                except (ConnectionError, RuntimeError, ValueError) as exc:
                    raise unreachable(self.address, exc) from None
            self._owns_ray = True
        return ray

    def start(self, problem: Problem) -> None:
        problem_bytes = pickle_problem(problem)
        super().start(problem)
        ray = self._connect()
        self._kill_all(ray)
        self._token = uuid.uuid4().hex
        self._facts = driver_facts()
        self.stats.problem_bytes += len(problem_bytes)
        self._problem_ref = ray.put(problem_bytes)
        self._budget = self.actors
        self._warned_small = False
        self._launch_missing(ray)
        deadline = time.monotonic() + self.node_timeout
        # At start, wait for every node once (and relaunch on a node whose aggregator died starting)
        while (self._pending or not self._nodes) and time.monotonic() < deadline:
            if not self._pending:
                self._launch_missing(ray)
            self._admit_ready(ray, timeout=min(1.0, max(0.0, deadline - time.monotonic())), strict=True)
        if not self._nodes:
            self._no_node()
        self._number = 0

    def _launch_missing(self, ray) -> None:
        """An aggregator (pending until it answers) on every live node with CPUs that has none."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self._polled = time.monotonic()
        while self._doomed:  # fenced aggregators that woke up: their node's CPUs go to a new one
            ray.kill(self._doomed.pop())
        for node in ray.nodes():
            node_id, cpus = node["NodeID"], int(node.get("Resources", {}).get("CPU", 0))
            if not node.get("Alive") or cpus < 1 or node_id in self._nodes or node_id in self._pending \
                    or node_id in self._refused:
                continue
            workers = cpus if self._budget is None else min(cpus, self._budget)
            if workers < 1:
                continue
            if self._budget is not None:
                self._budget -= workers
            if self._actor_class is None:
                self._actor_class = ray.remote(NodeAggregator)
            actor = self._actor_class.options(
                num_cpus=cpus, max_restarts=0, max_concurrency=1000,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
            ).remote(self._token, self._problem_ref, workers, self.threads, self.batch_size, self.max_retries,
                     self.chunks_per_actor, self.heartbeat)
            self._workers[node_id] = workers
            self._pending[node_id] = (actor, actor.info.remote(), time.monotonic())

    def _admit_ready(self, ray, timeout: float = 0.0, strict: bool = False) -> None:
        """Admit the pending aggregators that answered (checked against the driver's facts)."""
        if not self._pending:
            return
        refs = {ref: node_id for node_id, (_, ref, _) in self._pending.items()}
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=timeout)
        for ref in ready:
            node_id = refs[ref]
            actor, _, _ = self._pending.pop(node_id)
            try:
                facts = ray.get(ref)
                check_node(facts, self._facts)
            except WorkerError as exc:
                ray.kill(actor)
                if strict:
                    raise
                self._refused[node_id] = str(exc)
                continue
            except ray.exceptions.RayError:  # it died before answering: its node may be gone
                self._restore_budget(node_id)
                self.stats.worker_failures += 1  # an aggregator that died (docs/cluster.md), admitted or not
                continue
            if self._replica_ref is not None:
                actor.load_replica.remote(self._replica_ref)
            self._nodes[node_id] = actor
            self.stats.nodes_joined += self._number > 0

    def _peers_ref(self, ray, actors: list[Any]) -> Any:
        """The object ref of the list of a round's aggregators, put again only when the list changes: in
        each node's call K handles cost the driver K pickles a call (K^2 a generation), one ref costs one."""
        if self._peers is None or len(self._peers[0]) != len(actors) \
                or any(a is not b for a, b in zip(self._peers[0], actors)):
            self._peers = (list(actors), ray.put(actors))
        return self._peers[1]

    def _restore_budget(self, node_id: str) -> None:
        if self._budget is not None:
            self._budget += self._workers.get(node_id, 0)

    def _no_node(self) -> None:
        waiting = ", ".join(f"{n[:8]}" for n in self._pending) or "none"
        raise WorkerError(
            f"no Ray node could start an aggregator within node_timeout={self.node_timeout:g} s (pending: "
            f"{waiting}); each needs all of its node's CPUs free. {' '.join(self._refused.values())}".strip()
        )

    def _kill_all(self, ray) -> None:
        fenced = [a for actors in self._fenced.values() for a in actors]
        for actor in [*self._nodes.values(), *(a for a, _, _ in self._pending.values()), *fenced, *self._doomed]:
            ray.kill(actor)
        self._nodes, self._pending, self._workers, self._refused = {}, {}, {}, {}
        self._fenced, self._pings, self._seen, self._doomed = {}, {}, {}, []
        self._peers = None

    def close(self) -> None:
        ray = sys.modules.get("ray")
        if ray is not None and ray.is_initialized():
            self._kill_all(ray)
            if self._owns_ray:
                ray.shutdown()
                self._owns_ray = False
        self.bind(None)
        self._problem_ref = None
        super().close()

    def actor_pids(self) -> list[int]:
        """Process ids of the aggregators (for tests and diagnostics)."""
        ray = _import_ray()
        return ray.get([actor.pid.remote() for actor in self._nodes.values()])

    # -- the strategy's reduction --------------------------------------------------------------
    def bind(self, strategy) -> None:
        """Let the nodes compute ``strategy``'s noise-weighted sums (a replica finds the coefficients);
        the driver checks them against its own and falls back to summing in-process. ``None``: give
        the previous strategy its own reducer back."""
        previous = self._strategy
        if previous is not None and isinstance(previous.__dict__.get("reducer"), _NodeReducer):
            del previous.reducer
        self._strategy, self._replica_ref, self._capture = strategy, None, False
        if strategy is None:
            return
        ray = _import_ray()
        if getattr(strategy, "reduction", None) != REDUCTION or "reducer" in strategy.__dict__:
            return  # a run of 0.1.0 reduces in-process; a reducer set by the user stays
        try:
            replica = cloudpickle.dumps(strategy)
        except Exception:  # noqa: BLE001 - a strategy that cannot travel is reduced by the driver
            return
        self._replica_ref = ray.put(replica)
        for actor in self._nodes.values():  # runs before its next call; a dead one shows in that call
            actor.load_replica.remote(self._replica_ref)
        strategy.reducer = _NodeReducer(self)
        self._capture = True

    def _keep_total(self, key: bytes, total: np.ndarray) -> None:
        self._totals[key] = total
        while len(self._totals) > 4:  # a generation's total is told at once; keep a few at most
            self._totals.pop(next(iter(self._totals)))

    def _reduce(self, population: Population, coefficients: np.ndarray, square_coefficients=None):
        plan = plan_sums(population, coefficients, square_coefficients)
        vector = self._totals.pop(plan.key, None)
        if vector is not None:
            dim = plan.dim
            squares = None if square_coefficients is None else vector[dim:].copy()
            self.stats.node_reductions += 1
            return plan.finish(PartialSums(plan.key, plan.all_blocks, vector[:dim].copy(), squares))
        if self._totals:  # the nodes summed other coefficients than the driver's: stop asking them
            self._capture = False
            self._totals.clear()
        self.stats.driver_reductions += 1
        return plan.finish(plan.block_sums())

    # -- a generation ----------------------------------------------------------------------------
    def evaluate(self, population: Population, seeds: np.ndarray, state: dict[str, Any] | None = None) -> EvalResult:
        return self.submit(population, seeds, state).result()

    def submit(self, population: Population, seeds: np.ndarray, state: dict[str, Any] | None = None) -> _Submitted:
        """Start a generation now (one call per node); ``result()`` collects it. Two generations in
        flight share the nodes' workers, the older first (the pipelined mode)."""
        self._require_started()
        ray = _import_ray()
        self._number += 1
        self.stats.generations += 1
        if self._doomed or time.monotonic() - self._polled > 1.0:
            self._launch_missing(ray)
        self._admit_ready(ray)
        shared, parts = population.split(1, seeds=seeds, state=state, number=self._number)
        payload = pickle.dumps((shared, parts[0]), protocol=5)
        bundle = [ray.put(payload[i:i + BUNDLE_CHUNK]) for i in range(0, len(payload), BUNDLE_CHUNK)]
        self.stats.broadcast_bytes += len(payload)
        capture = self._capture and population.is_compact and population.table is not None
        self._warn_small(len(parts[0]))
        return _Submitted(self, ray, self._number, len(parts[0]), bundle, capture)

    def _warn_small(self, rows: int) -> None:
        """Warn once a run when a generation has fewer rows than the cluster has cores."""
        cores = sum(self._workers[n] for n in self._nodes)
        if self._warned_small or rows >= cores:
            return
        self._warned_small = True
        warnings.warn(
            f"a generation of {rows} rows (popsize {rows - 1} and the center) leaves {cores - rows} of the cluster's "
            f"{cores} cores idle; scale the strategy to the cluster with popsize >= {cores - 1} "
            f"(docs/cluster.md, Populations sized to the cluster)", ClusterSizeWarning, stacklevel=3)

    def _silent(self, members: dict, waiting: set[str]) -> set[str]:
        """Nodes of ``waiting`` fenced already, or that have answered nothing for ``heartbeat`` seconds
        (a ping goes to each every ``heartbeat/4`` seconds; the round's start counts as an answer)."""
        now, silent = time.monotonic(), set()
        for node_id in waiting:
            actor = members[node_id]
            if any(a is actor for a in self._fenced.get(node_id, ())):
                silent.add(node_id)
                continue
            ping = self._pings.get(node_id)
            if ping is not None and ping[0].done():  # answered (an error shows on the generation's call)
                self._seen[node_id] = now
                del self._pings[node_id]
                ping = None
            seen = self._seen.setdefault(node_id, now)
            if ping is None and now - seen >= self.heartbeat / 4:
                self._pings[node_id] = (actor.ping.remote().future(), now)
            if now - seen > self.heartbeat:
                silent.add(node_id)
        return silent

    def _fence(self, node_id: str, actor: Any, future: cf.Future) -> None:
        """Declare ``actor`` lost: never asked again; its reply, if it comes, is dropped and counted."""
        if not any(a is actor for a in self._fenced.get(node_id, ())):
            self._fenced.setdefault(node_id, []).append(actor)
            self._pings.pop(node_id, None)
            self._seen.pop(node_id, None)
            if self._nodes.get(node_id) is actor:
                del self._nodes[node_id]
                self._restore_budget(node_id)
            self.stats.nodes_lost += 1
            self.stats.nodes_fenced += 1
            self.stats.worker_failures += 1

        def late(done: cf.Future) -> None:
            self.stats.late_replies += 1
            if not done.cancelled() and done.exception() is None:
                self.stats.late_rows_dropped += len(done.result().get("index", ()))
            self._doomed.append(actor)

        future.add_done_callback(late)

    def _drop(self, node_id: str) -> None:
        """The node's aggregator is gone: no more calls to it; its CPUs count for a new one."""
        if self._nodes.pop(node_id, None) is not None:
            self._restore_budget(node_id)
            self.stats.nodes_lost += 1
            self.stats.worker_failures += 1

    def _wait_for_a_node(self, ray) -> None:
        """Every aggregator is gone: start them where nodes have room, wait up to node_timeout."""
        deadline = time.monotonic() + self.node_timeout
        while not self._nodes and time.monotonic() < deadline:
            self._launch_missing(ray)
            self._admit_ready(ray, timeout=0.5)
        if not self._nodes:
            self._no_node()

    def _count(self, reply: dict) -> None:
        s = reply.get("stats", {})
        self.stats.rows_stolen += s.get("stolen", 0)
        self.stats.rows_lent += s.get("lent", 0)
        self.stats.rows_backed_up += s.get("backups", 0)
        self.stats.rows_delivered += s.get("delivered", 0)
        self.stats.worker_failures += s.get("worker_failures", 0)
        self.stats.problem_loads += s.get("problem_loads", 0)
        self.stats.broadcast_reads += s.get("broadcast_reads", 0)
        self.stats.worker_seconds += s.get("worker_seconds", 0.0)
        self.stats.worker_cpu_seconds += s.get("worker_cpu_seconds", 0.0)
        self.stats.resubmitted += s.get("resubmitted", 0)
        self.stats.result_bytes += reply["fitness"].nbytes + reply["steps"].nbytes + sum(
            np.asarray(v).nbytes for _, v, _, _ in reply["info"].values())
