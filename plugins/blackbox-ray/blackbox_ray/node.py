"""One Ray node's aggregator: it owns the node's cores through a node-local loky pool.

Per generation the driver makes one call per node (:meth:`NodeAggregator.generation`). Inside it:

1. the node takes its contiguous share of the rows into a queue; its workers take a few rows at a
   time (guided: fewer as the queue empties, one at the end), so a mirrored pair may split;
2. an idle node steals half of a peer's queue from the back; when nothing is left to steal it runs a
   backup of the rows that have run longest on a peer and delivers the result (first wins: both
   are bit-identical);
3. once every row it took has a result, it pulls every peer's fitness (16 bytes a row);
4. with ``capture``, it runs the strategy's ``tell`` on a replica up to the reduction, to get the
   coefficients (the same function of the same fitness: the same bits as the driver's), sums its
   fixed blocks ``b mod K == rank`` as int64 and adds its children's sums up a fixed binary tree of
   nodes in chunks; node 0 returns the total. Integer sums: any tree gives the same bits.

A peer that dies surfaces as ``RayActorError`` on the calls to it; the node then reports the
generation incomplete with what it has, and the driver redoes the missing rows on the survivors.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures as cf
import os
import pickle
import platform
import time
from typing import Any

import cloudpickle
import numpy as np

from blackbox.core import reduce
from blackbox.core.population import Population
from blackbox.core.problem import EvalResult
from blackbox.core.rows import Rows, Shared
from blackbox.errors import WorkerError
from blackbox.executors.loky import LokyExecutor
from blackbox.executors.worker import Failure, decode_outcome, limit_threads, thread_env

from .checks import node_facts

__all__ = ["NodeAggregator", "CHUNK", "BUNDLE_CHUNK", "encode_info", "decode_info"]

#: Integers a reduction-tree message carries (1 MiB): the levels of the tree overlap chunk by chunk.
CHUNK = 2**17
#: Bytes of a chunk of the generation's bundle on its way down the tree.
BUNDLE_CHUNK = 2**20


class _Captured(Exception):
    """Raised by the replica's reducer: the coefficients are what we wanted, not the update."""


class NodePool(LokyExecutor):
    """The node's loky pool, driven row set by row set (the aggregator does the scheduling)."""

    def open(self, shared: Shared) -> None:
        self._publish(shared)

    def submit(self, shared: Shared, rows: Rows) -> tuple[cf.Future, Any]:
        """Start ``rows``: the future of its Outcome, and the pool it went to (one death breaks a
        pool and every task in it, but counts once)."""
        return self._submit(shared, rows)

    def shut(self, shared: Shared) -> None:
        self._retract(shared)


def encode_info(info: dict[str, np.ndarray]) -> dict[str, tuple]:
    """Per-row info with the all-zero rows left out: ``(row positions, values, row shape, dtype)``.
    Observation statistics are zero for the ~99% of rows that did not sample them."""
    out = {}
    for key, values in info.items():
        values = np.asarray(values)
        flat = values.reshape(len(values), -1).view(np.uint8) if values.size else values.reshape(len(values), -1)
        keep = np.flatnonzero(flat.any(axis=1)) if values.size else np.zeros(0, dtype=np.int64)
        out[key] = (keep, values[keep], values.shape[1:], values.dtype.str)
    return out


def decode_info(parts: list[tuple[np.ndarray, dict[str, tuple]]], n: int) -> dict[str, np.ndarray]:
    """Dense per-row info of ``n`` rows from ``(row index, encode_info(...))`` parts (zeros elsewhere)."""
    out: dict[str, np.ndarray] = {}
    for index, info in parts:
        for key, (keep, values, shape, dtype) in info.items():
            if key not in out:
                out[key] = np.zeros((n, *shape), dtype=np.dtype(dtype))
            out[key][index[keep]] = values
    return out


class NodeAggregator:
    """A Ray actor (async) owning one node's cores; see the module docstring."""

    def __init__(self, token: str, problem_bytes: bytes, workers: int, threads: int | None,
                 batch_size: int | None, max_retries: int, chunks: int = 2):
        os.environ.update(thread_env(threads))
        limit_threads(threads)
        self.workers, self.threads, self.chunks = int(workers), threads, int(chunks)
        self.pool = NodePool(workers=self.workers, threads=threads, batch_size=batch_size, max_retries=max_retries)
        self.problem_error: str | None = None
        try:
            problem = cloudpickle.loads(problem_bytes)
        except ModuleNotFoundError as exc:
            self.problem_error = f"cannot import module {exc.name!r} of the problem"
        except Exception as exc:  # noqa: BLE001 - reported to the driver as one line
            self.problem_error = f"cannot load the problem: {type(exc).__name__}: {exc}"
        else:
            self.pool.start(problem)
        self.replica = None
        self.g: Any = None
        self._new_state()

    def _new_state(self) -> None:
        self.queue: collections.deque[int] = collections.deque()
        self.have = np.zeros(0, dtype=bool)
        self.parts: list[tuple[np.ndarray, EvalResult]] = []
        self.running: dict[cf.Future, tuple[np.ndarray, float]] = {}
        self.domains: dict[cf.Future, Any] = {}
        self.taken: set[int] = set()
        self.backed_up: set[int] = set()
        self.published = asyncio.Event()
        self.tree: dict[int, asyncio.Future] = {}
        self.copies: dict[int, asyncio.Future] = {}
        self.stats: collections.Counter = collections.Counter()

    # -- what the driver calls ----------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        facts = node_facts()
        facts.update(pid=os.getpid(), host=platform.node(), workers=self.workers, problem_error=self.problem_error)
        return facts

    def pid(self) -> int:
        """This actor's process id (for tests and diagnostics)."""
        return os.getpid()

    def load_replica(self, replica_bytes: bytes) -> bool:
        self.replica = cloudpickle.loads(replica_bytes)
        return True

    async def generation(self, g: Any, bundle: list, share: list[int], peers: list, rank: int,
                         known: tuple[np.ndarray, np.ndarray], capture: bool) -> dict[str, Any]:
        """Evaluate ``share`` (row positions) with the peers' help, exchange fitness, and reduce.

        ``bundle``: object refs of the chunks of the pickled ``(Shared, Rows)`` of the generation;
        node 0 reads them from the driver, every other node from its parent in the tree.
        ``known``: row positions and fitness of the rows done in an earlier round of this
        generation, so that a round after a node loss evaluates only the missing rows.
        """
        try:
            return await self._generation(g, bundle, share, peers, rank, known, capture)
        except Exception as exc:  # noqa: BLE001 - the driver raises it, with its cause
            cause = exc.__cause__
            return {"error": (Failure.capture(exc, cloudpickle.dumps),
                              None if cause is None else Failure.capture(cause, cloudpickle.dumps))}

    async def _generation(self, g, bundle, share, peers, rank, known, capture) -> dict[str, Any]:
        if self.problem_error is not None:
            raise WorkerError(self.problem_error)
        self._new_state()
        self.g, self.peers, self.rank = g, peers, rank
        try:
            shared, rows = await self._receive(bundle)
        except _PeerLost as exc:
            return self._incomplete({"index": np.zeros(0, dtype=np.int64), "fitness": np.zeros(0),
                                     "steps": np.zeros(0, dtype=np.int64), "info": {}}, str(exc))
        self.shared, self.rows = shared, rows
        self.have = np.zeros(len(rows), dtype=bool)
        self.queue.extend(share)
        self.pool.open(shared)
        work = asyncio.ensure_future(self._evaluate())
        try:
            published = asyncio.ensure_future(self.published.wait())
            await asyncio.wait([work, published], return_when=asyncio.FIRST_COMPLETED)
            if work.done() and work.exception() is not None:
                raise work.exception()
            await published
            reply = self._reply()
            fitness, present = np.zeros(len(rows)), np.zeros(len(rows), dtype=bool)
            exchanged = [known] + [(index, result.fitness) for index, result in self.parts]
            for k, peer in enumerate(peers):
                if k != rank:
                    try:
                        exchanged.append(await peer.results.remote(g))
                    except Exception as exc:  # noqa: BLE001 - RayActorError: the peer is gone
                        return self._incomplete(reply, f"node {k} failed: {type(exc).__name__}")
            for index, values in exchanged:
                fitness[index], present[index] = values, True
            if capture and present.all():
                try:
                    reply.update(await self._reduce(fitness))
                except _PeerLost as exc:
                    return self._incomplete(reply, str(exc))
            reply["stats"] = dict(self.stats)
            return reply
        finally:
            work.cancel()
            self.pool.shut(shared)

    # -- what peers call ----------------------------------------------------------------------
    async def steal(self, g: Any, n: int) -> list[int]:
        """Up to ``n`` rows from the back of the queue (never started here): at most half of it."""
        if g != self.g or not self.queue:
            return []
        n = max(1, min(int(n), len(self.queue) // 2))
        rows = [self.queue.pop() for _ in range(n)]
        self.stats["stolen_from"] += len(rows)
        return rows[::-1]

    async def load(self, g: Any) -> int:
        """Rows queued here and not started (what a thief could take)."""
        return len(self.queue) if g == self.g else 0

    async def in_flight(self, g: Any) -> list[tuple[list[int], float]]:
        """The row sets running here that have no result yet, with their age in seconds."""
        if g != self.g:
            return []
        now = time.monotonic()
        return [(index.tolist(), now - started) for index, started in self.running.values()
                if not self.have[index].all()]

    async def deliver(self, g: Any, index: list[int], fitness: np.ndarray, steps: np.ndarray,
                      info: dict[str, np.ndarray]) -> None:
        """A backup's result for rows running here (identical to what they will give)."""
        if g == self.g:
            index = np.asarray(index, dtype=np.int64)
            self._record(index, EvalResult(np.asarray(fitness), np.asarray(steps), dict(info)))
            self.stats["delivered"] += len(index)

    async def results(self, g: Any) -> tuple[np.ndarray, np.ndarray]:
        """Row positions and fitness of every row evaluated here (once this node has published)."""
        while self.g != g or not self.published.is_set():
            await asyncio.sleep(0.002)
        index = np.concatenate([i for i, _ in self.parts]) if self.parts else np.zeros(0, dtype=np.int64)
        values = np.concatenate([r.fitness for _, r in self.parts]) if self.parts else np.zeros(0)
        return index, values

    async def bundle_chunk(self, g: Any, i: int) -> list:
        """``[ref]`` to this node's copy of chunk ``i`` of the generation's bundle (for a child)."""
        while self.g != g or i not in self.copies:
            await asyncio.sleep(0.001)
        return [await self.copies[i]]

    async def partial_chunk(self, g: Any, i: int) -> np.ndarray:
        """Chunk ``i`` of this node's subtree sum (its blocks plus its children's subtrees)."""
        while self.g != g or i not in self.tree:
            await asyncio.sleep(0.001)
        return await self.tree[i]

    # -- the generation's bundle, down the tree ------------------------------------------------------
    async def _receive(self, sources: list) -> tuple[Shared, Rows]:
        """The bundle's chunks from the driver (node 0) or from the parent, each kept as a copy that
        this node's children read: a node sends at most two copies, and the levels overlap."""
        import ray

        loop = asyncio.get_running_loop()
        for i in range(len(sources)):
            self.copies[i] = loop.create_future()
        parent = (self.rank - 1) // 2

        async def chunk(i: int) -> bytes:
            try:
                ref = sources[i] if self.rank == 0 else (await self.peers[parent].bundle_chunk.remote(self.g, i))[0]
                data = await ref
            except Exception as exc:  # noqa: BLE001 - the parent is gone
                self.copies[i].set_exception(_PeerLost(f"node {parent} failed: {type(exc).__name__}"))
                raise _PeerLost(f"node {parent} failed: {type(exc).__name__}") from exc
            self.copies[i].set_result(ray.put(data))
            return data

        parts = await asyncio.gather(*(chunk(i) for i in range(len(sources))))
        return pickle.loads(b"".join(parts))

    # -- evaluation ------------------------------------------------------------------------------
    async def _evaluate(self) -> None:
        """Keep the node's workers busy: own rows, then stolen ones, then backups of peers' rows.

        Sets ``published`` once every row this node took has a result (its own, or a peer's
        backup); it then goes on with backups, delivered to their owners, until nothing is left.
        """
        attempts: dict[cf.Future, int] = {}
        waiting: dict[asyncio.Future, cf.Future] = {}
        backups: dict[cf.Future, int] = {}  # a backup's future -> the peer that owns its rows
        dead: list[Any] = []  # pools seen broken, each counted once
        while True:
            while len(self.running) < self.workers:
                index, owner = self._next_batch()
                if index is None:
                    index, owner = await self._more_work()
                if index is None:
                    break
                future = self._submit(index)
                attempts[future] = 0
                if owner is not None:
                    backups[future] = owner
                waiting[asyncio.wrap_future(future)] = future
            if not self.queue and not self.published.is_set() and all(self.have[i] for i in self.taken):
                self.published.set()
            if not waiting:
                return
            done, _ = await asyncio.wait(list(waiting), timeout=0.05, return_when=asyncio.FIRST_COMPLETED)
            for wrapped in done:
                future = waiting.pop(wrapped)
                index, _ = self.running.pop(future)
                attempt = attempts.pop(future)
                if future.exception() is None:
                    self.domains.pop(future, None)
                owner = backups.pop(future, None)
                error = future.exception()
                if error is not None and self.pool._is_lost(error):  # a worker died: node-local retry
                    domain = self.domains.pop(future, None)
                    if not any(d is domain for d in dead):
                        dead.append(domain)
                        self.stats["worker_failures"] += 1
                    self.stats["resubmitted"] += 1
                    if attempt + 1 > self.pool.max_retries:
                        raise WorkerError(f"rows {self.rows.subset(index).spans()} were in flight when a "
                                          f"worker died {attempt + 1} times (max_retries={self.pool.max_retries})")
                    retry = self._submit(index)
                    attempts[retry] = attempt + 1
                    if owner is not None:
                        backups[retry] = owner
                    waiting[asyncio.wrap_future(retry)] = retry
                    continue
                if error is not None:
                    raise error
                result, meta = decode_outcome(future.result(), self.rows.subset(index), "ray")
                self.stats["problem_loads"] += int(bool(meta.get("loaded_problem")))
                self.stats["broadcast_reads"] += int(bool(meta.get("loaded_shared")))
                self.stats["worker_seconds"] += float(meta.get("seconds", 0.0))
                self.stats["worker_cpu_seconds"] += float(meta.get("cpu_seconds", 0.0))
                self._record(index, result)
                self.stats["rows"] += len(index)
                if owner is not None:
                    await self._deliver(owner, index, result)

    def _submit(self, index: np.ndarray) -> cf.Future:
        future, domain = self.pool.submit(self.shared, self.rows.subset(index))
        self.running[future] = (index, time.monotonic())
        self.domains[future] = domain
        return future

    def _next_batch(self) -> tuple[np.ndarray | None, None]:
        """A few rows from the front of the queue: a share of what is left, one row at the end."""
        if not self.queue:
            return None, None
        size = max(1, len(self.queue) // (self.chunks * self.workers))
        # Rows travel in increasing row order (a stolen run arrives reversed)
        index = np.sort(np.array([self.queue.popleft() for _ in range(min(size, len(self.queue)))], dtype=np.int64))
        self.taken.update(index.tolist())
        return index, None

    async def _more_work(self) -> tuple[np.ndarray | None, int | None]:
        """Steal half of the fullest peer queue (not once this node has published its results);
        else back up the rows that have run longest on a peer."""
        others = [k for k in range(len(self.peers)) if k != self.rank]
        if not self.published.is_set():
            loads = await asyncio.gather(*(self.peers[k].load.remote(self.g) for k in others), return_exceptions=True)
            for _, k in sorted(((n, k) for n, k in zip(loads, others) if isinstance(n, int) and n > 0), reverse=True):
                try:
                    stolen = await self.peers[k].steal.remote(self.g, 1 << 30)
                except Exception:  # noqa: BLE001 - a peer that is gone has nothing to give
                    continue
                if stolen:
                    self.stats["stolen"] += len(stolen)
                    self.queue.extend(stolen)
                    return self._next_batch()
        running = await asyncio.gather(*(self.peers[k].in_flight.remote(self.g) for k in others),
                                       return_exceptions=True)
        best = None
        for k, batches in zip(others, running):
            if isinstance(batches, BaseException):
                continue
            for index, age in batches:
                if not self.backed_up.issuperset(index) and (best is None or age > best[2]):
                    best = (k, index, age)
        if best is None:
            return None, None
        k, index, _ = best
        self.backed_up.update(index)
        self.stats["backups"] += len(index)
        return np.sort(np.asarray(index, dtype=np.int64)), k

    async def _deliver(self, owner: int, index: np.ndarray, result: EvalResult) -> None:
        try:
            await self.peers[owner].deliver.remote(self.g, index.tolist(), result.fitness, result.steps, result.info)
        except Exception:  # noqa: BLE001 - the owner is gone: the driver redoes what it missed
            pass

    def _record(self, index: np.ndarray, result: EvalResult) -> None:
        new = ~self.have[index]
        if new.any():
            keep = np.flatnonzero(new)
            info = {k: np.asarray(v)[keep] for k, v in result.info.items()}
            self.parts.append((index[keep], EvalResult(result.fitness[keep], result.steps[keep], info)))
            self.have[index] = True

    def _reply(self) -> dict[str, Any]:
        if not self.parts:
            return {"index": np.zeros(0, dtype=np.int64), "fitness": np.zeros(0), "steps": np.zeros(0, np.int64),
                    "info": {}, "incomplete": None}
        index = np.concatenate([i for i, _ in self.parts])
        joined = EvalResult.concatenate([r for _, r in self.parts])
        return {"index": index, "fitness": joined.fitness, "steps": joined.steps,
                "info": encode_info(joined.info), "incomplete": None}

    def _incomplete(self, reply: dict[str, Any], why: str) -> dict[str, Any]:
        reply["incomplete"] = why
        reply["stats"] = dict(self.stats)
        return reply

    # -- the reduction -------------------------------------------------------------------------
    async def _reduce(self, fitness: np.ndarray) -> dict[str, Any]:
        """The coefficients from the replica's tell, this node's blocks, and its subtree's sum."""
        shared, rows = self.shared, self.rows
        c = shared.center_row
        keep = np.arange(len(rows)) if c is None else np.delete(np.arange(len(rows)), c)
        population = Population.join(shared, rows.subset(keep))
        captured = self._capture(population, fitness[keep])
        if captured is None:
            return {"reduced": None}
        plan = reduce.plan_sums(population, *captured)
        k = len(self.peers)
        mine = [b for b in range(plan.n_blocks) if b % k == self.rank]
        loop = asyncio.get_running_loop()
        own = await loop.run_in_executor(None, lambda: plan.block_sums(mine, threads=self.workers))
        vector = own.linear if own.squares is None else np.concatenate([own.linear, own.squares])
        children = [c for c in (2 * self.rank + 1, 2 * self.rank + 2) if c < k]
        n_chunks = max(1, -(-len(vector) // CHUNK))
        for i in range(n_chunks):
            self.tree[i] = loop.create_future()
        totals = await asyncio.gather(*(self._chunk(i, vector[i * CHUNK:(i + 1) * CHUNK], children)
                                        for i in range(n_chunks)))
        self.stats["blocks"] += len(mine)
        if self.rank != 0:
            return {"reduced": "node", "key": plan.key}
        total = np.concatenate(totals) if totals else vector
        return {"reduced": "node", "key": plan.key, "total": total}

    async def _chunk(self, i: int, own: np.ndarray, children: list[int]) -> np.ndarray:
        total = own.copy()
        try:
            parts = await asyncio.gather(*(self.peers[c].partial_chunk.remote(self.g, i) for c in children))
        except Exception as exc:  # noqa: BLE001 - a child is gone
            self.tree[i].set_exception(_PeerLost(f"a node of the reduction tree failed: {type(exc).__name__}"))
            raise _PeerLost(f"a node of the reduction tree failed: {type(exc).__name__}") from exc
        for part in parts:
            reduce.add_checked(total, part)
        self.tree[i].set_result(total)
        return total

    def _capture(self, population: Population, fitness: np.ndarray):
        """Run the replica's tell up to its reduction; the coefficients, or None without one."""
        replica = self.replica
        if replica is None:
            return None
        box: list = []

        def capture(pop, coefficients, square_coefficients=None):
            box.append((np.asarray(coefficients, dtype=np.float64),
                        None if square_coefficients is None else np.asarray(square_coefficients, dtype=np.float64)))
            raise _Captured

        replica.reducer = capture
        replica._pending, replica._diverged = population, None
        try:
            replica.tell(fitness)
        except _Captured:
            return box[0]
        except Exception:  # noqa: BLE001 - the driver reduces instead (same bits)
            return None
        return None


class _PeerLost(Exception):
    """A peer of the reduction tree failed: the generation is reported incomplete."""
