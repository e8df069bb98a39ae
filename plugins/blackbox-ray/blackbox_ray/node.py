"""One Ray node's aggregator: it owns the node's cores through a node-local loky pool.

Per generation the driver makes one call per node (:meth:`NodeAggregator.generation`). Inside it:

1. the generation's bundle (its shared part and rows) comes down a binary tree of nodes in chunks;
2. the node takes its contiguous share of the rows into a queue; its workers take a few rows at a
   time (guided: fewer as the queue empties, one at the end), so a mirrored pair may split;
3. an idle node steals half of a peer's queue from the back; when nothing is left to steal it runs a
   backup of the rows that have run longest on a peer and delivers the result (first wins: both
   are bit-identical);
4. once every row it took has a result, it pulls every peer's fitness (16 bytes a row);
5. with ``capture``, it runs the strategy's ``tell`` on a replica up to the reduction, to get the
   coefficients (the same function of the same fitness: the same bits as the driver's), sums its
   fixed blocks ``b mod K == rank`` as int64 and adds its children's sums up the tree in chunks;
   node 0 returns the total. Integer sums: any tree gives the same bits.

Two generations may run at once (the pipelined mode): one scheduler fills the node's workers from
the oldest generation that has work, so cores freed by a generation's tail go to the next one.

A peer that dies surfaces as ``RayActorError`` on the calls to it; the node then reports the
generation incomplete with what it has, and the driver redoes the missing rows on the survivors.
"""

from __future__ import annotations

import asyncio
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
from blackbox.executors.pool import RetryRule, WorkerLost
from blackbox.executors.worker import Failure, decode_outcome, limit_threads, thread_env

from .checks import node_facts
from .generation import Generation, decode_info, encode_info

__all__ = ["NodeAggregator", "CHUNK", "BUNDLE_CHUNK", "encode_info", "decode_info"]

#: Integers a reduction-tree message carries (256 KiB): the levels of the tree overlap chunk by chunk;
#: smaller chunks shorten each level's wait, and a chunk's three actor calls bound how small they pay
#: (benchmarks/scaling_model.py's ``tree_s``: at 40 nodes 256 KiB is within 0.1 point of the best of 64 KiB to 1 MiB).
CHUNK = 2**15
#: Bytes of a chunk of the generation's bundle on its way down the tree (the same trade-off).
BUNDLE_CHUNK = 2**18
#: Generations a node remembers for its peers' late calls.
KEEP = 4


class _PeerLost(Exception):
    """A peer failed: the generation is reported incomplete."""


async def _awaited(ref: Any) -> Any:
    return await ref


class NodeAggregator:
    """A Ray actor (async) owning one node's cores; see the module docstring."""

    def __init__(self, token: str, problem_bytes: bytes, workers: int, threads: int | None,
                 batch_size: int | None, max_retries: int, chunks: int = 2, heartbeat: float = 10.0):
        os.environ.update(thread_env(threads))
        limit_threads(threads)
        self.workers, self.threads, self.chunks = int(workers), threads, int(chunks)
        # a peer that does not answer a scheduling question (load, steal, in_flight) within this is skipped
        self.peer_timeout = max(0.25, float(heartbeat) / 4)
        # the node's cores, driven row set by row set through the pool's public API (this node schedules)
        self.pool = LokyExecutor(workers=self.workers, threads=threads, batch_size=batch_size, max_retries=max_retries)
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
        self.gens: dict[Any, Generation] = {}  # oldest first
        self.tasks: dict[cf.Future, tuple[Generation, np.ndarray, int, int | None, Any]] = {}
        self.wrapped: dict[cf.Future, asyncio.Future] = {}
        self.wake = asyncio.Event()
        self.scheduler: asyncio.Task | None = None
        self.arrivals: dict[Any, asyncio.Future] = {}  # generations peers asked for before their call came

    # -- what the driver calls ----------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        facts = node_facts()
        facts.update(pid=os.getpid(), host=platform.node(), workers=self.workers, problem_error=self.problem_error)
        return facts

    def pid(self) -> int:
        """This actor's process id (for tests and diagnostics)."""
        return os.getpid()

    async def ping(self) -> bool:
        """The driver's heartbeat: answered by the event loop at once (a frozen node never answers)."""
        return True

    async def abandon(self, g: Any) -> None:
        """The driver declared a peer lost in round ``g``: every wait on a peer ends, and the call
        replies at once with the rows it has (the driver redoes the rest on the survivors)."""
        gen = self.gens.get(g)
        if gen is not None:
            gen.abandoned.set()
            self.wake.set()

    def load_replica(self, replica_bytes: bytes) -> bool:
        self.replica = cloudpickle.loads(replica_bytes)
        return True

    async def generation(self, call: tuple) -> dict[str, Any]:
        """Evaluate ``share`` (row positions) with the peers' help, exchange fitness, and reduce.

        ``call`` is ``(g, bundle, share, peers, rank, known, capture)`` in one argument: Ray serializes
        each argument of a call apart, and one costs the driver less than seven (it makes K a round).
        ``bundle``: object refs of the chunks of the pickled ``(Shared, Rows)`` of the generation;
        node 0 reads them from the driver, every other node from its parent in the tree.
        ``peers``: an object ref of the list of the round's aggregators, this one at ``rank`` (put once
        by the driver while the nodes stay the same: K handles are not pickled in every call).
        ``known``: None, or an object ref of the row positions and fitness of the rows done in an
        earlier round of this generation, so that a round after a node loss evaluates only the missing rows.
        """
        g, bundle, share, peers, rank, known, capture = call
        peers = await peers
        known = None if known is None else await known
        gen = Generation(g, peers, rank)
        gen.retries = RetryRule(self.pool.max_retries)  # the pool loop's rule, for this node's own scheduling
        self.gens[g] = gen
        waiter = self.arrivals.pop(g, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(gen)
        while len(self.gens) > KEEP:
            self.gens.pop(next(iter(self.gens)))
        try:
            return await self._generation(gen, bundle, share, known, capture)
        except Exception as exc:  # noqa: BLE001 - the driver raises it, with its cause
            cause = exc.__cause__
            return {"error": (Failure.capture(exc, cloudpickle.dumps),
                              None if cause is None else Failure.capture(cause, cloudpickle.dumps))}
        finally:
            gen.finished = True
            if gen.shared is not None:
                self.pool.retract(gen.shared)

    async def _generation(self, gen: Generation, bundle, share, known, capture) -> dict[str, Any]:
        if self.problem_error is not None:
            raise WorkerError(self.problem_error)
        try:
            shared, rows = await self._receive(gen, bundle)
        except _PeerLost as exc:
            return self._incomplete(gen, gen.reply(), str(exc))
        self.pool.publish(shared)
        gen.start(shared, rows, share)
        if self.scheduler is None or self.scheduler.done():
            self.scheduler = asyncio.ensure_future(self._schedule())
        self.wake.set()
        published = asyncio.ensure_future(gen.published.wait())
        abandoned = asyncio.ensure_future(gen.abandoned.wait())
        await asyncio.wait([published, abandoned, self.scheduler], return_when=asyncio.FIRST_COMPLETED)
        for waiter in (published, abandoned):
            if not waiter.done():
                waiter.cancel()
        if gen.abandoned.is_set():
            return self._incomplete(gen, gen.reply(), "the driver declared a node lost")
        if not gen.published.is_set():  # the scheduler stopped: it raised
            raise WorkerError(f"the node's scheduler stopped: {self.scheduler.exception()!r}")
        if gen.error is not None:
            raise gen.error
        reply = gen.reply()
        fitness, present = np.zeros(len(rows)), np.zeros(len(rows), dtype=bool)
        exchanged = [gen.fitness()] if known is None else [known, gen.fitness()]
        pulled = await asyncio.gather(*(self._ask(gen, gen.peers[k].results.remote(gen.g)) for k in gen.others),
                                      return_exceptions=True)  # from every peer at once
        for k, got in zip(gen.others, pulled):
            if isinstance(got, BaseException):  # RayActorError: the peer is gone
                return self._incomplete(gen, reply, f"node {k} failed: {type(got).__name__}")
            exchanged.append(got)
        for index, values in exchanged:
            fitness[index], present[index] = values, True
        if capture and present.all():
            try:
                reply.update(await self._reduce(gen, fitness))
            except _PeerLost as exc:
                return self._incomplete(gen, reply, str(exc))
        reply["stats"] = dict(gen.stats)
        return reply

    def _incomplete(self, gen: Generation, reply: dict[str, Any], why: str) -> dict[str, Any]:
        reply["incomplete"] = why
        reply["stats"] = dict(gen.stats)
        return reply

    # -- what peers call ----------------------------------------------------------------------
    async def _gen(self, g: Any) -> Generation:
        """Generation ``g``, waiting for its call to arrive if a peer asks first."""
        gen = self.gens.get(g)
        if gen is not None:
            return gen
        waiter = self.arrivals.get(g)
        if waiter is None:
            waiter = self.arrivals[g] = asyncio.get_running_loop().create_future()
        return await waiter

    async def _ask(self, gen: Generation, ref: Any, timeout: float | None = None) -> Any:
        """A peer's answer; ``_PeerLost`` once the round is abandoned, or after ``timeout`` seconds."""
        answer = asyncio.ensure_future(_awaited(ref))
        abandoned = asyncio.ensure_future(gen.abandoned.wait())
        try:
            await asyncio.wait([answer, abandoned], timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            abandoned.cancel()
        if not answer.done():
            answer.cancel()
            raise _PeerLost("the round was abandoned" if gen.abandoned.is_set() else "a peer did not answer in time")
        return answer.result()

    @staticmethod
    async def _until(gen: Generation, event: asyncio.Event) -> None:
        """Wait for ``event`` of ``gen``; raise once the round is abandoned (the asking peer replies)."""
        if not event.is_set():
            waits = [asyncio.ensure_future(event.wait()), asyncio.ensure_future(gen.abandoned.wait())]
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for waiter in waits:
                waiter.cancel()
        if not event.is_set():
            raise _PeerLost(f"generation {gen.g} was abandoned on this node")

    async def steal(self, g: Any, n: int) -> list[int]:
        """Up to ``n`` rows from the back of the queue (never started here): at most half of it."""
        gen = self.gens.get(g)
        if gen is None or not gen.queue:
            return []
        n = max(1, min(int(n), len(gen.queue) // 2))
        rows = [gen.queue.pop() for _ in range(n)]
        gen.stats["stolen_from"] += len(rows)
        gen.check_published()
        return rows[::-1]

    async def lend(self, g: Any, n: int) -> list[int]:
        """Up to ``n`` rows from the back of the queue for a peer that has published its own: they stay
        this node's (it waits for them, in_flight lists them for backups) and the peer delivers them."""
        gen = self.gens.get(g)
        if gen is None or not gen.queue:
            return []
        n = max(1, min(int(n), len(gen.queue) // 2))
        rows = sorted(gen.queue.pop() for _ in range(n))
        gen.taken.update(rows)
        gen.lent[tuple(rows)] = time.monotonic()
        gen.stats["lent"] += len(rows)
        return rows

    async def load(self, g: Any) -> int:
        """Rows queued here and not started (what a thief could take)."""
        gen = self.gens.get(g)
        return 0 if gen is None else len(gen.queue)

    async def in_flight(self, g: Any) -> list[tuple[list[int], float]]:
        """The row sets running here that have no result yet, with their age in seconds."""
        gen = self.gens.get(g)
        if gen is None:
            return []
        now = time.monotonic()
        mine = [(index.tolist(), now - started) for index, started in gen.running.values() if not gen.have[index].all()]
        return mine + self._lent_out(gen, now)

    @staticmethod
    def _lent_out(gen: Generation, now: float) -> list[tuple[list[int], float]]:
        """Rows lent to peers that have not come back, with their age in seconds."""
        for rows in [r for r in gen.lent if gen.have[list(r)].all()]:
            del gen.lent[rows]
        return [(list(rows), now - since) for rows, since in gen.lent.items()]

    async def deliver(self, g: Any, index: list[int], fitness: np.ndarray, steps: np.ndarray,
                      info: dict[str, np.ndarray]) -> None:
        """A backup's result for rows running here (identical to what they will give)."""
        gen = self.gens.get(g)
        if gen is not None and gen.rows is not None:
            gen.record(np.asarray(index, dtype=np.int64), EvalResult(np.asarray(fitness), np.asarray(steps), dict(info)))
            gen.stats["delivered"] += len(index)

    async def results(self, g: Any) -> tuple[np.ndarray, np.ndarray]:
        """Row positions and fitness of every row evaluated here (once this node has published)."""
        gen = await self._gen(g)
        await self._until(gen, gen.published)
        return gen.fitness()

    async def bundle_chunk(self, g: Any, i: int) -> list:
        """``[ref]`` to this node's copy of chunk ``i`` of the generation's bundle (for a child)."""
        gen = await self._gen(g)
        await self._until(gen, gen.copies_made)
        return [await gen.copies[i]]

    async def partial_chunk(self, g: Any, i: int) -> np.ndarray:
        """Chunk ``i`` of this node's subtree sum (its blocks plus its children's subtrees)."""
        gen = await self._gen(g)
        await self._until(gen, gen.tree_made)
        return await gen.tree[i]

    # -- the generation's bundle, down the tree ------------------------------------------------------
    async def _receive(self, gen: Generation, sources: list) -> tuple[Shared, Rows]:
        """The bundle's chunks from the driver (node 0) or from the parent, each kept as a copy that
        this node's children read: a node sends at most two copies, and the levels overlap."""
        import ray

        loop = asyncio.get_running_loop()
        for i in range(len(sources)):
            gen.copies[i] = loop.create_future()
        gen.copies_made.set()
        parent = (gen.rank - 1) // 2

        async def chunk(i: int) -> bytes:
            try:
                ref = sources[i] if gen.rank == 0 else (
                    await self._ask(gen, gen.peers[parent].bundle_chunk.remote(gen.g, i)))[0]
                data = await self._ask(gen, ref)
            except Exception as exc:  # noqa: BLE001 - the parent is gone
                gen.copies[i].set_exception(_PeerLost(f"node {parent} failed: {type(exc).__name__}"))
                gen.copies[i].exception()  # retrieved: a child that asks gets it; none may ask
                raise _PeerLost(f"node {parent} failed: {type(exc).__name__}") from exc
            gen.copies[i].set_result(ray.put(data))
            return data

        parts = await asyncio.gather(*(chunk(i) for i in range(len(sources))))
        return pickle.loads(b"".join(parts))

    # -- evaluation: one scheduler for every generation of this node -------------------------------
    async def _schedule(self) -> None:
        """Keep the workers busy: the oldest generation's own rows first, then stolen rows, then
        backups of peers' rows; a generation publishes once every row it took has a result."""
        while True:
            while len(self.tasks) < self.workers:
                picked = await self._pick()
                if picked is None:
                    break
                gen, index, owner = picked
                self._submit(gen, index, 0, owner)
            if not self.tasks:
                self.wake.clear()
                try:
                    await asyncio.wait_for(self.wake.wait(), timeout=0.05)
                except asyncio.TimeoutError:
                    pass
                continue
            waiting = {self.wrapped[f]: f for f in self.tasks}
            done, _ = await asyncio.wait(list(waiting), timeout=0.05, return_when=asyncio.FIRST_COMPLETED)
            for wrapped in done:
                await self._completed(waiting[wrapped])

    def _active(self) -> list[Generation]:
        return [gen for gen in self.gens.values()
                if gen.ready.is_set() and not gen.finished and gen.error is None and not gen.abandoned.is_set()]

    async def _pick(self) -> tuple[Generation, np.ndarray, int | None] | None:
        """Work for a free worker, from the oldest generation that has some."""
        for gen in self._active():
            index = gen.next_batch(self.chunks, self.workers * len(gen.peers))
            if index is not None:
                return gen, index, None
            picked = await self._more_work(gen)
            if picked is not None:
                return picked
        return None

    async def _more_work(self, gen: Generation) -> tuple[Generation, np.ndarray, int | None] | None:
        """Steal half of the fullest peer queue (not once this node has published its results);
        else back up the rows that have run longest on a peer. Peers that had nothing are asked
        again after a growing pause (5 ms to 0.2 s), so an idle node does not flood them."""
        if time.monotonic() < gen.quiet_until:
            return None
        picked = await self._ask_peers(gen)
        if picked is None:
            gen.quiet_until = time.monotonic() + gen.backoff
            gen.backoff = min(0.2, gen.backoff * 2)
        else:
            gen.backoff = 0.005
        return picked

    async def _ask_peers(self, gen: Generation) -> tuple[Generation, np.ndarray, int | None] | None:
        others = gen.others
        loads = await asyncio.gather(*(self._ask(gen, gen.peers[k].load.remote(gen.g), self.peer_timeout)
                                       for k in others), return_exceptions=True)
        for load, k in sorted(((n, k) for n, k in zip(loads, others) if isinstance(n, int) and n > 0), reverse=True):
            # the most loaded first: before publishing, take half of its queue as this node's own;
            # after (peers may have read this node's results), borrow a worker's take, run for the owner
            try:
                if not gen.published.is_set():
                    rows = await self._ask(gen, gen.peers[k].steal.remote(gen.g, 1 << 30), 4 * self.peer_timeout)
                else:
                    take = max(1, load // (self.chunks * self.workers * len(gen.peers)))
                    rows = await self._ask(gen, gen.peers[k].lend.remote(gen.g, take), 4 * self.peer_timeout)
            except Exception:  # noqa: BLE001 - a peer that is gone or silent has nothing to give
                continue
            if not rows:
                continue
            if gen.published.is_set():
                gen.stats["borrowed"] += len(rows)
                gen.backed_up.update(rows)  # running here: never backed up from here as well
                return gen, np.asarray(rows, dtype=np.int64), k
            gen.stats["stolen"] += len(rows)
            gen.queue.extend(rows)
            index = gen.next_batch(self.chunks, self.workers * len(gen.peers))
            if index is not None:  # always: the queue holds the stolen rows
                return gen, index, None
        own = self._lent_out(gen, time.monotonic())  # this node's rows lent to a peer that went silent
        running = await asyncio.gather(*(self._ask(gen, gen.peers[k].in_flight.remote(gen.g), self.peer_timeout)
                                         for k in others), return_exceptions=True)
        best: tuple[int | None, list[int], float] | None = None
        for peer, batches in [*zip(others, running), (None, own)]:
            if isinstance(batches, BaseException):
                continue
            for batch, age in batches:
                if not gen.backed_up.issuperset(batch) and (best is None or age > best[2]):
                    best = (peer, batch, age)
        if best is None:
            return None
        owner, batch, _ = best
        gen.backed_up.update(batch)
        gen.stats["backups"] += len(batch)
        return gen, np.sort(np.asarray(batch, dtype=np.int64)), owner

    def _submit(self, gen: Generation, index: np.ndarray, attempt: int, owner: int | None) -> None:
        shared, rows = gen.inputs()
        try:
            future, domain = self.pool.submit_rows(shared, rows.subset(index))
        except WorkerLost as exc:  # the pool was broken before the task went: as a death in flight
            self._lost(gen, index, attempt, owner, exc.domain, exc.cause)
            return
        gen.running[future] = (index, time.monotonic())
        self.tasks[future] = (gen, index, attempt, owner, domain)
        self.wrapped[future] = asyncio.wrap_future(future)

    async def _completed(self, future: cf.Future) -> None:
        gen, index, attempt, owner, domain = self.tasks.pop(future)
        self.wrapped.pop(future, None)
        gen.running.pop(future, None)
        if gen.finished:
            return  # a late backup, or the tail of an abandoned generation
        rows = gen.inputs()[1]
        error = future.exception()
        if error is not None and self.pool.is_lost(error):  # a worker died: node-local retry
            self._lost(gen, index, attempt, owner, domain, error)
            return
        try:
            if error is not None:
                raise error
            result, meta = decode_outcome(future.result(), rows.subset(index), "ray")
        except Exception as exc:  # noqa: BLE001 - the generation's call raises it
            gen.error = exc
            gen.published.set()
            return
        for key, value in (("problem_loads", meta.get("loaded_problem")), ("broadcast_reads", meta.get("loaded_shared"))):
            gen.stats[key] += int(bool(value))
        gen.stats["worker_seconds"] += float(meta.get("seconds", 0.0))
        gen.stats["worker_cpu_seconds"] += float(meta.get("cpu_seconds", 0.0))
        gen.stats["rows"] += len(index)
        gen.record(index, result)
        if owner is not None:  # sent, not awaited: a frozen owner never stalls this scheduler
            gen.peers[owner].deliver.remote(gen.g, index.tolist(), result.fitness, result.steps, result.info)

    def _lost(self, gen: Generation, index: np.ndarray, attempt: int, owner: int | None, domain: Any,
              cause: BaseException) -> None:
        """``index`` was in flight when its worker died: the pool loop's rule (a dead pool counted
        once, at most ``max_retries`` attempts), then the rows again on this node's pool."""
        if gen.retries.first_death(domain):
            gen.stats["worker_failures"] += 1
        gen.stats["resubmitted"] += 1
        failed = gen.retries.give_up(gen.inputs()[1].subset(index), attempt + 1, cause)
        if failed is not None:
            gen.error = failed
            gen.published.set()
            return
        self._submit(gen, index, attempt + 1, owner)

    # -- the reduction -------------------------------------------------------------------------
    async def _reduce(self, gen: Generation, fitness: np.ndarray) -> dict[str, Any]:
        """The coefficients from the replica's tell, this node's blocks, and its subtree's sum."""
        shared, rows = gen.inputs()
        c = shared.center_row
        keep = np.arange(len(rows)) if c is None else np.delete(np.arange(len(rows)), c)
        population = Population.join(shared, rows.subset(keep))
        captured = self._capture(population, fitness[keep])
        if captured is None:
            return {"reduced": None}
        plan = reduce.plan_sums(population, *captured)
        k = len(gen.peers)
        mine = [b for b in range(plan.n_blocks) if b % k == gen.rank]
        loop = asyncio.get_running_loop()
        own = await loop.run_in_executor(None, lambda: plan.block_sums(mine, threads=self.workers))
        vector = own.linear if own.squares is None else np.concatenate([own.linear, own.squares])
        children = [c for c in (2 * gen.rank + 1, 2 * gen.rank + 2) if c < k]
        n_chunks = max(1, -(-len(vector) // CHUNK))
        for i in range(n_chunks):
            gen.tree[i] = loop.create_future()
        gen.tree_made.set()
        totals = await asyncio.gather(*(self._chunk(gen, i, vector[i * CHUNK:(i + 1) * CHUNK], children)
                                        for i in range(n_chunks)))
        gen.stats["blocks"] += len(mine)
        if gen.rank != 0:
            return {"reduced": "node", "key": plan.key}
        return {"reduced": "node", "key": plan.key, "total": np.concatenate(totals)}

    async def _chunk(self, gen: Generation, i: int, own: np.ndarray, children: list[int]) -> np.ndarray:
        total = own.copy()
        try:
            parts = await asyncio.gather(*(self._ask(gen, gen.peers[c].partial_chunk.remote(gen.g, i)) for c in children))
        except Exception as exc:  # noqa: BLE001 - a child is gone
            lost = _PeerLost(f"a node of the reduction tree failed: {type(exc).__name__}")
            gen.tree[i].set_exception(lost)
            gen.tree[i].exception()  # retrieved: the parent that asks gets it; none may ask
            raise lost from exc
        for part in parts:
            reduce.add_checked(total, part)
        gen.tree[i].set_result(total)
        return total

    def _capture(self, population: Population, fitness: np.ndarray):
        """The coefficients the replica's tell would reduce with, or None (the driver reduces)."""
        if self.replica is None:
            return None
        try:
            return self.replica.coefficients(population, fitness)
        except Exception:  # noqa: BLE001 - the driver reduces instead (same bits)
            return None
