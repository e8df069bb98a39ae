"""What a node keeps about one generation while it runs (two can overlap in the pipelined mode),
and the per-row info of its reply with the all-zero rows left out."""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures as cf
from typing import Any

import numpy as np

from blackbox.core.problem import EvalResult
from blackbox.core.rows import Rows, Shared
from blackbox.executors.pool import RetryRule

__all__ = ["Generation", "encode_info", "decode_info"]


def encode_info(info: dict[str, np.ndarray]) -> dict[str, tuple]:
    """Per-row info with the all-zero rows left out: ``(row positions, values, row shape, dtype)``.
    Observation statistics are zero for the ~99% of rows that did not sample them."""
    out = {}
    for key, values in info.items():
        values = np.asarray(values)
        if values.size:
            flat = np.ascontiguousarray(values).reshape(len(values), -1).view(np.uint8)
            keep = np.flatnonzero(flat.any(axis=1))
        else:
            keep = np.zeros(0, dtype=np.int64)
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


class Generation:
    """One generation on one node: its rows, its queue, what ran and what came back."""

    def __init__(self, g: Any, peers: list, rank: int):
        self.g, self.peers, self.rank = g, peers, rank
        self.shared: Shared | None = None
        self.rows: Rows | None = None
        self.ready = asyncio.Event()  # the bundle has arrived: rows can be stolen and evaluated
        self.queue: collections.deque[int] = collections.deque()
        self.have = np.zeros(0, dtype=bool)
        self.parts: list[tuple[np.ndarray, EvalResult]] = []
        self.running: dict[cf.Future, tuple[np.ndarray, float]] = {}
        self.taken: set[int] = set()
        self.backed_up: set[int] = set()
        self.lent: dict[tuple[int, ...], float] = {}  # rows of this node's share run by a peer -> since
        self.published = asyncio.Event()  # every row this node took has a result
        self.abandoned = asyncio.Event()  # the driver gave up this round (a peer fell silent): reply now
        self.copies_made = asyncio.Event()  # the bundle's chunk copies exist (children may read them)
        self.tree_made = asyncio.Event()  # the reduction's chunk futures exist (the parent may read them)
        self.error: BaseException | None = None
        self.finished = False  # the generation's call has returned: late results are dropped
        self.tree: dict[int, asyncio.Future] = {}
        self.copies: dict[int, asyncio.Future] = {}
        # counts (int) and seconds (float), sent to the driver as a plain dict
        self.stats: collections.defaultdict[str, float] = collections.defaultdict(int)
        self.retries = RetryRule(3)  # the node sets its pool's max_retries: dead pools counted once
        self.quiet_until = 0.0  # no new steal or backup to ask peers for before then (backoff)
        self.backoff = 0.005

    def start(self, shared: Shared, rows: Rows, share: list[int]) -> None:
        self.shared, self.rows = shared, rows
        self.have = np.zeros(len(rows), dtype=bool)
        self.queue.extend(share)
        self.ready.set()
        self.check_published()

    def inputs(self) -> tuple[Shared, Rows]:
        """The shared part and rows (a generation is scheduled only once :meth:`start` gave them)."""
        if self.shared is None or self.rows is None:
            raise RuntimeError(f"generation {self.g} has not received its rows yet")
        return self.shared, self.rows

    @property
    def others(self) -> list[int]:
        return [k for k in range(len(self.peers)) if k != self.rank]

    def next_batch(self, chunks: int, workers: int) -> np.ndarray | None:
        """A few rows from the front of the queue: a share of what is left, one row at the end.
        ``workers``: the cluster's, so that a slow node never holds a large take others cannot share."""
        if not self.queue:
            return None
        size = max(1, len(self.queue) // (chunks * workers))
        # rows travel in increasing row order (a stolen run arrives reversed)
        index = np.sort(np.array([self.queue.popleft() for _ in range(min(size, len(self.queue)))], dtype=np.int64))
        self.taken.update(index.tolist())
        return index

    def record(self, index: np.ndarray, result: EvalResult) -> None:
        """Keep the rows' results that are new (a backup's duplicate is identical: dropped)."""
        new = ~self.have[index]
        if new.any():
            keep = np.flatnonzero(new)
            info = {k: np.asarray(v)[keep] for k, v in result.info.items()}
            self.parts.append((index[keep], EvalResult(result.fitness[keep], result.steps[keep], info)))
            self.have[index] = True
        self.check_published()

    def check_published(self) -> None:
        if not self.queue and not self.published.is_set() and all(self.have[i] for i in self.taken):
            self.published.set()

    def fitness(self) -> tuple[np.ndarray, np.ndarray]:
        """Row positions and fitness of every row evaluated here."""
        if not self.parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        return np.concatenate([i for i, _ in self.parts]), np.concatenate([r.fitness for _, r in self.parts])

    def reply(self) -> dict[str, Any]:
        if not self.parts:
            return {"index": np.zeros(0, dtype=np.int64), "fitness": np.zeros(0), "steps": np.zeros(0, np.int64),
                    "info": {}, "incomplete": None}
        index = np.concatenate([i for i, _ in self.parts])
        joined = EvalResult.concatenate([r for _, r in self.parts])
        return {"index": index, "fitness": joined.fitness, "steps": joined.steps,
                "info": encode_info(joined.info), "incomplete": None}
