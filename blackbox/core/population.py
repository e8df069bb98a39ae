"""What ``ask()`` returns: a population, compact where it can be and dense where it must.

A compact population stores, per row, a parent index, a noise-table offset and a sign, plus the
base vectors (the center, or the GA's parents) and sigma once:

    row i = bases[parents[i]] + signs[i] * sigma * table[offsets[i] : offsets[i] + dim]

so a generation crosses a process boundary as a few integers per row. ``params`` builds the dense
``(popsize, dim)`` array only when someone asks for it; ``dense(np.float32)`` builds it in float32
(half the memory, where the noise is float32 anyway), and ``blocks(rows=k)`` hands it out k rows
at a time in one reused buffer, so a user's own loop at a million dimensions never holds the whole
matrix. Strategies whose samples are not table noise
(CMA-ES) return a dense population; both kinds work with every executor.

``groups`` says which rows share an evaluation seed: a mirrored pair is one group, so both members
meet the same episode (common random numbers).

Row kinds. A row with sign +1 or -1 is perturbed: ``bases[parent] + sign * sigma * noise``. A row
with sign 0 is its base exactly (a GA's elite). The **center row** is the one row the driver adds
to what ``ask()`` returned (``with_center``): the unperturbed center, in a seed group of its own,
evaluated for the record but not told to the strategy. In a compact population it is a sign-0 row
pointing at base 0 when the center is base 0 (every built-in strategy: the mean, or the GA's
elite), so no vector is copied; ``center_row`` says which row it is and ``separate_center`` takes
its value out of a result.

The wire format. ``split`` cuts a population into :class:`~blackbox.core.rows.Shared` (what every
worker needs once per generation) and :class:`~blackbox.core.rows.Rows` (any set of rows, down to
single rows, each with its seed), and ``Population.join`` rebuilds the population, or the part of
it a worker got, bit for bit.

The class holds the encoding and its public methods; the work is done beside it, one job a module:
:mod:`~blackbox.core.dense_rows` (the rows made dense, every path with the same bits),
:mod:`~blackbox.core.noise_sums` (0.1.0's float32 noise-weighted sums),
:mod:`~blackbox.core.center_row` (the center row added and taken out) and
:mod:`~blackbox.core.population_wire` (``split``, ``join``, ``take``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from . import dense_rows, mapped, noise_sums, population_wire
from .center_row import separate_center as _separate_center
from .center_row import with_center as _with_center
from .dense_rows import check_dtype as _dtype
from .noise import NoiseTable
from .rows import Rows, Shared

__all__ = ["Population", "Shared", "Rows"]


class Population:
    """A population of candidate solutions, compact (noise-table encoded) or dense."""

    __slots__ = ("bases", "parents", "offsets", "signs", "sigma", "table", "groups", "_dense", "dim", "center_row",
                 "dtype", "into")

    #: The noise scale: a float, or one float64 per dimension.
    sigma: Any
    #: The compact encoding (None in a dense population): base vectors, and per row a parent
    #: (index into ``bases``), a noise-table offset and a sign.
    bases: np.ndarray | None
    parents: np.ndarray | None
    offsets: np.ndarray | None
    signs: np.ndarray | None
    table: NoiseTable | None

    def __init__(self, *, dim: int, groups: np.ndarray, bases: np.ndarray | None = None,
                 parents: np.ndarray | None = None, offsets: np.ndarray | None = None, signs: np.ndarray | None = None,
                 sigma: float | np.ndarray = 0.0, table: NoiseTable | None = None, dense: np.ndarray | None = None,
                 center_row: int | None = None, dtype: DTypeLike = np.float64):
        self.dim = int(dim)
        #: The dtype of the rows (``params``, ``rows()``): float64, or float32 where the strategy was
        #: asked for it (a compact population's rows are then built in float32, one pass).
        self.dtype = np.dtype(np.float64) if dense is not None else _dtype(dtype)
        #: Where a float32 strategy's population builds its ``params`` (the strategy's one buffer,
        #: see :class:`~blackbox.strategies._gaussian.NoiseTableStrategy`); None: a buffer of its own.
        self.into: Callable[[Population], np.ndarray] | None = None
        self.groups = np.asarray(groups, dtype=np.int64)
        #: Index of the unperturbed center row (see the module docstring), None if there is none.
        self.center_row = None if center_row is None else int(center_row)
        self._dense: np.ndarray | None = None if dense is None else np.asarray(dense, dtype=np.float64)
        if dense is None:
            self.bases = np.atleast_2d(np.asarray(bases, dtype=np.float64))
            self.parents = np.asarray(parents, dtype=np.int64)
            self.offsets = np.asarray(offsets, dtype=np.int64)
            self.signs = np.asarray(signs, dtype=np.int8)
            self.sigma = sigma if np.isscalar(sigma) else np.asarray(sigma, dtype=np.float64)
            self.table = table
        else:
            self.bases = self.parents = self.offsets = self.signs = None
            self.sigma, self.table = sigma, None

    # -- constructors ---------------------------------------------------------------------
    @classmethod
    def compact(cls, table: NoiseTable, bases: np.ndarray, offsets: np.ndarray, signs: np.ndarray,
                sigma: float | np.ndarray, parents: np.ndarray | None = None, groups: np.ndarray | None = None,
                dtype: DTypeLike = np.float64) -> Population:
        """A population encoded as noise offsets around one or more base vectors, its rows in ``dtype``."""
        bases = np.atleast_2d(np.asarray(bases, dtype=np.float64))
        n = len(offsets)
        parents = np.zeros(n, dtype=np.int64) if parents is None else parents
        groups = np.arange(n, dtype=np.int64) if groups is None else groups
        return cls(
            dim=bases.shape[1], groups=groups, bases=bases, parents=parents, offsets=offsets,
            signs=signs, sigma=sigma, table=table, dtype=dtype,
        )

    @classmethod
    def from_dense(cls, params: np.ndarray, groups: np.ndarray | None = None) -> Population:
        """A population given row by row as a ``(popsize, dim)`` array."""
        params = np.asarray(params, dtype=np.float64)
        if params.ndim != 2:
            raise ValueError(f"dense population must be 2-d (popsize, dim), got shape {params.shape}")
        groups = np.arange(len(params), dtype=np.int64) if groups is None else groups
        return cls(dim=params.shape[1], groups=groups, dense=params)

    # -- inspection -----------------------------------------------------------------------
    @property
    def is_compact(self) -> bool:
        """True when rows are encoded as noise offsets rather than stored densely."""
        return self._dense is None or self.table is not None

    def __len__(self) -> int:
        return len(self.groups)

    def __repr__(self) -> str:
        kind = "compact" if self.is_compact else "dense"
        return f"Population({len(self)} x {self.dim}, {kind})"

    @property
    def params(self) -> np.ndarray:
        """The dense ``(popsize, dim)`` array in the population's :attr:`dtype` (float64 unless the
        strategy was made with ``dtype="float32"``), built on first access and kept.

        A large one is built in a buffer kept from an earlier generation's matrix once nothing
        refers to that one any more (:func:`blackbox.core.mapped.large`): no fresh multi-GB mapping
        per generation, and an array you keep is never overwritten (a loop that holds last
        generation's ``params`` while asking for this one's uses two buffers in turn). The bound on
        kept buffers is :func:`blackbox.core.mapped.set_dense_limit`. A float32 strategy's
        populations share one buffer instead (:attr:`into`): this array is then overwritten when the
        next generation's ``params`` is built.
        """
        if self._dense is None:
            if self.into is not None and self.dtype == np.float32 and self.table is not None:
                out = self.into(self)
                self._fill32(np.arange(len(self)), out)
                self._dense = out
            else:
                self._dense = self._rows(np.arange(len(self)), "population.params")
        return self._dense

    def release(self) -> None:
        """Forget the dense rows built by :attr:`params` (their buffer now holds another
        generation's); asked again, they are built again, in a buffer of their own."""
        self._dense, self.into = None, None

    def _rows32(self, indices: np.ndarray, what: str) -> np.ndarray:
        out = mapped.large((len(indices), self.dim), np.float32, f"{what} ({self._shape('float32', len(indices))})")
        self._fill32(indices, out)
        return out

    def dense(self, dtype: DTypeLike = np.float64) -> np.ndarray:
        """The dense ``(popsize, dim)`` array in ``dtype``: float64 is :attr:`params`; float32 is built
        in float32 (``noise * float32(sign * sigma) + float32(base)``), with half the memory traffic,
        within a float32 rounding or two of ``params.astype(float32)``."""
        kind = _dtype(dtype)
        if kind == self.dtype:
            return self.params
        if kind == np.float64:  # of a float32 population: its rows, widened exactly
            return self.params.astype(np.float64)
        return self._rows32(np.arange(len(self)), "population.dense(float32)")

    def blocks(self, rows: int = 64, dtype: DTypeLike = np.float64) -> Iterator[tuple[slice, np.ndarray]]:
        """``(rows slice, dense block)`` pairs covering the population in order, at most ``rows`` rows
        each, in ``dtype``: ``for where, block in population.blocks(rows=32): fitness[where] = f(block)``.

        The float32 blocks share one buffer, valid until the next block (copy one to keep it), so
        the loop holds ``rows x dim`` values at most; float64 blocks are :meth:`rows` of the slice.
        """
        return dense_rows.blocks(self, rows, dtype)

    def _fill32(self, indices: np.ndarray, out: np.ndarray) -> None:
        """Rows ``indices`` into the float32 ``out`` (:func:`blackbox.core.dense_rows.fill32`)."""
        dense_rows.fill32(self, indices, out)

    def row(self, index: int) -> np.ndarray:
        """One row as a dense ``(dim,)`` array."""
        row: np.ndarray = self.rows(np.array([index]))[0]  # numpy leaves indexing untyped
        return row

    def rows(self, indices: Sequence[int] | np.ndarray) -> np.ndarray:
        """Dense rows at ``indices`` (in :attr:`dtype`), computed the same way in every process.

        Row i is ``float64(noise_i) * (sign_i * sigma) + base``, element by element, whichever path
        builds it, so any split of the rows among workers gives the same bits.
        """
        return self._rows(np.asarray(indices, dtype=np.int64), "population.rows(...)")

    def _shape(self, kind: str, rows: int | None = None) -> str:
        return f"{len(self) if rows is None else rows} x {self.dim} {kind}"

    def _rows(self, indices: np.ndarray, what: str) -> np.ndarray:
        """:meth:`rows`; ``what`` names the caller in the message of a dense buffer limit too small."""
        what = f"{what} ({self._shape('float64', len(indices))})"
        if self._dense is not None:
            return np.take(self._dense, indices, axis=0, out=mapped.large((len(indices),) + self._dense.shape[1:],
                                                                          self._dense.dtype, what))
        if self.dtype == np.float32:
            return self._rows32(indices, what.split(" (")[0])
        return dense_rows.compact_rows(self, indices, what)

    def _compact(self, needed_by: str) -> tuple[NoiseTable, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(table, bases, parents, offsets, signs)`` of a compact population; a dense one has none."""
        table, bases, parents, offsets, signs = self.table, self.bases, self.parents, self.offsets, self.signs
        if table is None or bases is None or parents is None or offsets is None or signs is None:
            raise ValueError(f"{needed_by} needs a compact population (this one is dense)")
        return table, bases, parents, offsets, signs

    def noise_weighted_sum(self, weights: np.ndarray) -> np.ndarray:
        """``sum_i weights[i] * signs[i] * eps_i`` (float32), each distinct offset read once.

        Rows sharing an offset (a mirrored pair) have their weights combined first, so a mirrored
        population of n rows reads n/2 slices. Rows with sign 0 (elites, the center) add nothing.
        """
        return noise_sums.noise_weighted_sum(self, weights)

    def noise_weighted_sums(
        self, weights: np.ndarray, square_weights: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(sum_i w_i s_i eps_i, sum_i v_i eps_i**2)`` (float32) in one pass over the noise.

        ``eps_i`` is row i's table slice and ``s_i`` its sign; the squares carry no sign. Rows
        sharing an offset are combined first (a mirrored pair: ``w+ - w-`` and ``v+ + v-``), so each
        distinct slice is read once; rows with sign 0 add nothing to either sum.
        """
        return noise_sums.noise_weighted_sums(self, weights, square_weights)

    def take(self, indices: Sequence[int] | np.ndarray | slice) -> Population:
        """The sub-population at ``indices`` (compact stays compact; bases are shared, not copied)."""
        return population_wire.take(self, indices)

    # -- the center row -------------------------------------------------------------------
    def with_center(self, center: np.ndarray) -> Population:
        """This population plus the center row: ``center`` unperturbed, last, in its own seed group.

        When the center is bit for bit the first base (an ES's mean, a GA's elite), the new row is
        a sign-0 row pointing at that base; otherwise the center becomes one more base.
        """
        return _with_center(self, center)

    def separate_center(self, values: np.ndarray) -> tuple[np.ndarray, float | None]:
        """``values`` (one per row) split into the other rows' (what the strategy is told, in row
        order) and the center row's value (None when this population has no center row)."""
        return _separate_center(self, values)

    # -- the wire format ------------------------------------------------------------------
    def split(self, chunks: int | Iterable[Sequence[int] | np.ndarray] = 1, *, seeds: np.ndarray | None = None,
              state: dict[str, Any] | None = None, number: int = 0) -> tuple[Shared, list[Rows]]:
        """What every worker shares, and the rows cut into ``chunks``, with each row's seed.

        ``chunks`` is a count (near-equal runs of consecutive rows, cut between seed groups where
        possible) or the row indices of each part: any rows, in any grouping (a single row, or a
        mirrored pair's halves in different parts). ``state`` (the problem's, plain data) and
        ``number`` (which generation) go into the shared part.
        """
        return population_wire.split(self, chunks, seeds=seeds, state=state, number=number)

    @classmethod
    def join(cls, shared: Shared, rows: Rows | Iterable[Rows]) -> Population:
        """The population of ``rows`` (one set, or several), in row order, exactly as split.

        Joining every part of a ``split`` gives the population back bit for bit; joining some gives
        the population of just those rows (what a worker evaluates).
        """
        return population_wire.join(cls, shared, rows)

    def __reduce__(self) -> tuple[Callable[[Shared, list[Rows]], Population], tuple[Shared, list[Rows]]]:
        """Pickled in its own wire format: a compact population travels compact (the shared part
        and 33 bytes a row, never the dense rows it may have built); strategies pickled between
        ask and tell carry their pending population this way."""
        shared, rows = self.split(1)
        return (Population.join, (shared, rows))

    def row_into(self, index: int, out: np.ndarray) -> np.ndarray:
        """Row ``index`` written into the float64 ``out`` ``(dim,)`` (and returned): the bits of
        ``rows([index])[0]``, with no ``(rows, dim)`` array built; a caller that needs one row at
        a time (a policy slot, say) reuses one cache-sized buffer for all of them."""
        return dense_rows.row_into(self, index, out)
