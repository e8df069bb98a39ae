"""The population's wire format: :class:`Shared`, what every worker needs once per generation, and
:class:`Rows`, any set of rows with their evaluation seeds.

``Population.split`` makes them and ``Population.join`` turns them back into a population, bit for
bit. A compact row is four integers (noise offset, sign, parent, seed group) plus its seed, so a
chunk of rows costs 33 bytes a row on the wire; a dense population's rows (CMA-ES) travel as their
float64 values. Any set of rows is a valid unit of work: a single row, or the two halves of a
mirrored pair in different tasks; a row's result depends only on its own entries and ``Shared``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Shared", "Rows", "plain_nbytes"]


def plain_nbytes(value: object) -> int:
    """Bytes of the data in plain ``value`` (arrays, numbers, strings, and dicts and lists of them),
    counted without serializing it: what a problem state costs on the wire, framing aside."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, (str, bytes, bytearray)):
        return len(value)
    if isinstance(value, dict):
        return sum(plain_nbytes(k) + plain_nbytes(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return sum(plain_nbytes(v) for v in value)
    return 8


@dataclass(frozen=True, eq=False)
class Shared:
    """What every worker needs once per generation to rebuild any of its rows.

    ``number`` names the generation for the workers' caches (an executor counts its ``evaluate``
    calls). A compact population shares its base vectors, sigma and the noise table's
    ``(size, seed)`` (workers regenerate or map the table, it never travels); a dense one shares
    nothing but the state. ``center_row`` is the index of the unperturbed center row, if any.
    ``state`` is the problem's state as plain data (a dict of arrays and scalars), which each
    worker installs once per generation. ``dtype`` is the rows' (``"float32"`` where the strategy
    was asked for it).
    """

    dim: int
    number: int = 0
    bases: np.ndarray | None = None
    sigma: float | np.ndarray = 0.0
    table: tuple[int, int] | None = None
    center_row: int | None = None
    state: dict[str, Any] | None = None
    dtype: str = "float64"

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays and the state every reader receives."""
        total = 0 if self.bases is None else self.bases.nbytes
        return total + np.asarray(self.sigma).nbytes + (plain_nbytes(self.state) if self.state else 0)


class Rows:
    """Some rows of a population, in increasing row order, with what a worker needs per row.

    ``index`` holds each row's position in the whole population, ``seeds`` its evaluation seed and
    ``groups`` its seed group. A compact row adds its noise ``offsets``, ``signs`` and ``parents``
    (an index into ``Shared.bases``); a dense row its values (``dense``, shape ``(m, dim)``).
    Rows pickle to one block of integers (33 bytes a compact row; the index is sent only when the
    rows are not consecutive), so a transport serializes them once and cheaply.
    """

    __slots__ = ("index", "seeds", "groups", "offsets", "signs", "parents", "dense")

    def __init__(
        self,
        index: np.ndarray,
        groups: np.ndarray,
        seeds: np.ndarray | None = None,
        *,
        offsets: np.ndarray | None = None,
        signs: np.ndarray | None = None,
        parents: np.ndarray | None = None,
        dense: np.ndarray | None = None,
    ):
        self.index = np.asarray(index, dtype=np.int64)
        self.groups = np.asarray(groups, dtype=np.int64)
        self.seeds = None if seeds is None else np.asarray(seeds, dtype=np.int64)
        self.offsets = None if offsets is None else np.asarray(offsets, dtype=np.int64)
        self.signs = None if signs is None else np.asarray(signs, dtype=np.int8)
        self.parents = None if parents is None else np.asarray(parents, dtype=np.int64)
        self.dense = None if dense is None else np.asarray(dense, dtype=np.float64)

    @classmethod
    def _of(cls, index: np.ndarray, groups: np.ndarray, seeds: np.ndarray | None, offsets: np.ndarray | None,
            signs: np.ndarray | None, parents: np.ndarray | None, dense: np.ndarray | None) -> Rows:
        """Rows from arrays already of the right dtypes (the hot path: no conversions)."""
        rows = cls.__new__(cls)
        rows.index, rows.groups, rows.seeds, rows.dense = index, groups, seeds, dense
        rows.offsets, rows.signs, rows.parents = offsets, signs, parents
        return rows

    @property
    def is_compact(self) -> bool:
        return self.offsets is not None

    def __len__(self) -> int:
        return len(self.index)

    def __repr__(self) -> str:
        return f"Rows({self.spans()}, {'compact' if self.is_compact else 'dense'})"

    def spans(self) -> str:
        """The row numbers as runs, ``"0..3"`` or ``"0..3, 7..7"``, for messages."""
        if not len(self):
            return "none"
        cuts = np.flatnonzero(np.diff(self.index) != 1) + 1
        starts = np.concatenate([[0], cuts])
        stops = np.concatenate([cuts, [len(self)]]) - 1
        return ", ".join(f"{self.index[a]}..{self.index[b]}" for a, b in zip(starts.tolist(), stops.tolist()))

    def subset(self, positions: Sequence[int] | np.ndarray | slice) -> Rows:
        """The rows at ``positions`` of this set (kept in row order)."""
        if isinstance(positions, slice):
            positions = np.arange(len(self))[positions]
        positions = np.sort(np.asarray(positions, dtype=np.int64))

        def pick(values: np.ndarray | None) -> np.ndarray | None:
            return None if values is None else values[positions]

        return Rows._of(self.index[positions], self.groups[positions], pick(self.seeds), pick(self.offsets),
                        pick(self.signs), pick(self.parents), pick(self.dense))

    def singles(self) -> list[Rows]:
        """One set per row (to find which row of a chunk hangs, or to schedule row by row)."""
        return [self.subset([i]) for i in range(len(self))]

    # -- the wire -------------------------------------------------------------------------------
    def _int_fields(self) -> list[np.ndarray]:
        fields = [self.groups]
        if self.seeds is not None:
            fields.append(self.seeds)
        if self.offsets is not None and self.parents is not None:
            fields += [self.offsets, self.parents]
        if not self._consecutive():
            fields.append(self.index)
        return fields

    def _consecutive(self) -> bool:
        m = len(self)
        return m == 0 or int(self.index[-1]) - int(self.index[0]) == m - 1

    @property
    def nbytes(self) -> int:
        """Bytes this set pickles to, framing aside; computed, not measured by pickling."""
        m = len(self)
        total = 8 * m * len(self._int_fields()) + (m if self.signs is not None else 0)
        return total + (0 if self.dense is None else self.dense.nbytes)

    def __reduce__(self) -> tuple[Callable[..., Rows], tuple[int, int, bool, bool, bytes, np.ndarray | None]]:
        m = len(self)
        blob = b"".join(np.ascontiguousarray(f, dtype=np.int64).tobytes() for f in self._int_fields())
        if self.signs is not None:
            blob += np.ascontiguousarray(self.signs, dtype=np.int8).tobytes()
        start = int(self.index[0]) if m and self._consecutive() else (0 if not m else -1)
        return (_unpack_rows, (m, start, self.seeds is not None, self.offsets is not None, blob, self.dense))


def _unpack_rows(m: int, start: int, has_seeds: bool, compact: bool, blob: bytes, dense: np.ndarray | None) -> Rows:
    """The inverse of ``Rows.__reduce__``: views of ``blob``, no copies."""
    count = 1 + has_seeds + 2 * compact + (start < 0)
    ints = np.frombuffer(blob, dtype=np.int64, count=count * m).reshape(count, m)
    fields = iter(ints)
    groups = next(fields)
    seeds = next(fields) if has_seeds else None
    offsets = parents = signs = None
    if compact:
        offsets, parents = next(fields), next(fields)
        signs = np.frombuffer(blob, dtype=np.int8, count=m, offset=8 * count * m)
    index = next(fields) if start < 0 else np.arange(start, start + m, dtype=np.int64)
    return Rows._of(index, groups, seeds, offsets, signs, parents, dense)


def chunk_bounds(groups: np.ndarray, n_chunks: int) -> list[tuple[int, int]]:
    """``n_chunks`` near-equal runs of consecutive rows, cut only between seed groups where
    possible (a mirrored pair then shares a task; nothing requires it)."""
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
