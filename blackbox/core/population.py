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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from ..errors import ConfigError
from . import mapped
from .noise import NoiseTable
from .rows import Rows, Shared, chunk_bounds

__all__ = ["Population", "Shared", "Rows"]

#: Up to this many values, rows() gathers the noise into one block; beyond, it builds row by row.
_ROWS_GATHER_MAX = 2**18
#: Columns per step when building rows one by one: a chunk of noise, base and output stays in cache.
_ROW_CHUNK = 2**15


def _dtype(dtype: DTypeLike) -> np.dtype:
    try:
        kind = np.dtype(dtype)
    except TypeError:
        kind = None
    if kind not in (np.float32, np.float64):
        raise ConfigError(f"dtype must be float32 or float64 (the noise is float32), got {dtype!r}")
    checked: np.dtype = kind  # numpy leaves np.dtype(<anything>) untyped
    return checked


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

    def __init__(
        self,
        *,
        dim: int,
        groups: np.ndarray,
        bases: np.ndarray | None = None,
        parents: np.ndarray | None = None,
        offsets: np.ndarray | None = None,
        signs: np.ndarray | None = None,
        sigma: float | np.ndarray = 0.0,
        table: NoiseTable | None = None,
        dense: np.ndarray | None = None,
        center_row: int | None = None,
        dtype: DTypeLike = np.float64,
    ):
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
    def compact(
        cls,
        table: NoiseTable,
        bases: np.ndarray,
        offsets: np.ndarray,
        signs: np.ndarray,
        sigma: float | np.ndarray,
        parents: np.ndarray | None = None,
        groups: np.ndarray | None = None,
        dtype: DTypeLike = np.float64,
    ) -> Population:
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
        if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) or rows < 1:
            raise ConfigError(f"rows must be a positive integer (rows per block), got {rows!r}")
        kind, n = _dtype(dtype), len(self)
        if kind == np.float64:
            for start in range(0, n, int(rows)):
                where = slice(start, min(start + int(rows), n))
                block = self.rows(np.arange(where.start, where.stop))
                yield where, block.astype(np.float64, copy=False)
            return
        buffer = np.empty((min(int(rows), n), self.dim), dtype=np.float32)
        for start in range(0, n, int(rows)):
            stop = min(start + int(rows), n)
            block = buffer[: stop - start]
            self._fill32(np.arange(start, stop), block)
            yield slice(start, stop), block

    def _fill32(self, indices: np.ndarray, out: np.ndarray) -> None:
        """Rows ``indices`` into the float32 ``out``, row by row (each noise slice read once)."""
        if self._dense is not None or self.table is None:
            out[...] = self.params[indices]
            return
        table, bases, parents, all_offsets, all_signs = self._compact("dense(float32)")
        scalar = np.ndim(self.sigma) == 0
        sigma32 = np.float32(self.sigma) if scalar else np.asarray(self.sigma, dtype=np.float32)
        if len(indices) * self.dim <= _ROWS_GATHER_MAX:  # small blocks: one gather, no Python loop
            signs = all_signs[indices]
            offsets = np.where(signs == 0, 0, all_offsets[indices])
            np.multiply(table.gather(offsets, self.dim), signs.astype(np.float32)[:, None] * sigma32, out=out)
            out *= (signs != 0)[:, None]  # a sign-0 row is its base exactly
            out += bases.astype(np.float32)[parents[indices]]
            return
        data = table.data
        bases32: dict[int, np.ndarray] = {}
        for i, row in enumerate(indices.tolist()):
            parent, sign, offset = int(parents[row]), int(all_signs[row]), int(all_offsets[row])
            base = bases32.get(parent)
            if base is None:
                base = bases32[parent] = bases[parent].astype(np.float32)
            if sign == 0:
                out[i] = base
            else:
                np.multiply(data[offset : offset + self.dim], sigma32 if sign > 0 else -sigma32, out=out[i])
                np.add(out[i], base, out=out[i])

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
        table, bases, parents, offsets, signs = self._compact("rows")
        parents, signs, offsets = parents[indices], signs[indices], offsets[indices]
        if len(indices) * self.dim > _ROWS_GATHER_MAX:
            return self._rows_one_by_one(parents, signs, offsets, what)
        dead = np.flatnonzero(signs == 0)  # rows with sign 0 are their base exactly
        if len(dead):
            offsets = offsets.copy()
            offsets[dead] = 0
        # base + coefficient * noise, with the float32 noise widened exactly by the multiply and
        # the base added after it (IEEE addition commutes): one gather and two passes over the rows.
        noise = table.gather(offsets, self.dim)
        coefficient = signs.astype(np.float64)[:, None] * self.sigma
        out: np.ndarray = np.multiply(noise, coefficient, dtype=np.float64,
                                      out=mapped.empty(noise.shape, np.float64))
        if len(parents) and parents.min() == parents.max():
            out += bases[parents[0]]  # one base for every row: broadcast
        elif len(parents):
            out += np.take(bases, parents, axis=0, out=mapped.empty(out.shape, bases.dtype))
        if len(dead):
            out[dead] = bases[parents[dead]]
        return out

    def _compact(self, needed_by: str) -> tuple[NoiseTable, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(table, bases, parents, offsets, signs)`` of a compact population; a dense one has none."""
        table, bases, parents, offsets, signs = self.table, self.bases, self.parents, self.offsets, self.signs
        if table is None or bases is None or parents is None or offsets is None or signs is None:
            raise ValueError(f"{needed_by} needs a compact population (this one is dense)")
        return table, bases, parents, offsets, signs

    def _rows_one_by_one(self, parents: np.ndarray, signs: np.ndarray, offsets: np.ndarray, what: str) -> np.ndarray:
        """Large blocks: row by row in cache-sized column chunks, reading each slice and base once.

        The arithmetic is the vectorized path's, element for element; only the memory traffic
        differs (no gathered float32 copy, no gathered copy of the bases, no second pass).
        """
        table, bases = self._compact("rows")[:2]
        dim, data = self.dim, table.data
        live = offsets[signs != 0]
        if len(live) and (live.min() < 0 or live.max() + dim > table.size):
            raise IndexError(f"a noise offset + dim {dim} falls outside a table of {table.size}")
        out = mapped.large((len(signs), dim), np.float64, what)
        scalar = np.ndim(self.sigma) == 0
        sigma = np.asarray(self.sigma, dtype=np.float64)  # per-dimension sigma; unused when scalar
        negative = -sigma
        for i, (parent, sign, offset) in enumerate(zip(parents.tolist(), signs.tolist(), offsets.tolist())):
            base = bases[parent]
            if sign == 0:
                out[i] = base
                continue
            row = out[i]
            coefficient = float(sign) * float(self.sigma) if scalar else 0.0
            per_dimension = sigma if sign > 0 else negative
            for start in range(0, dim, _ROW_CHUNK):
                stop = min(start + _ROW_CHUNK, dim)
                chunk = row[start:stop]
                # Widen the noise exactly, then scale and add in place: the bits of
                # multiply(noise, coefficient, dtype=float64) + base, in 1.6x less time than
                # the casting multiply (the chunk stays in cache between the three passes).
                chunk[...] = data[offset + start : offset + stop]
                chunk *= coefficient if scalar else per_dimension[start:stop]
                chunk += base[start:stop]
        return out

    def noise_weighted_sum(self, weights: np.ndarray) -> np.ndarray:
        """``sum_i weights[i] * signs[i] * eps_i`` (float32), each distinct offset read once.

        Rows sharing an offset (a mirrored pair) have their weights combined first, so a mirrored
        population of n rows reads n/2 slices. Rows with sign 0 (elites, the center) add nothing.
        """
        table, _, _, offsets, signs = self._compact("noise_weighted_sum")
        coeff = np.asarray(weights, dtype=np.float64) * signs
        live = signs != 0
        unique, inverse = np.unique(offsets[live], return_inverse=True)
        combined = np.bincount(inverse, weights=coeff[live], minlength=len(unique))
        return table.weighted_sum(combined, unique, self.dim)

    def noise_weighted_sums(
        self, weights: np.ndarray, square_weights: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(sum_i w_i s_i eps_i, sum_i v_i eps_i**2)`` (float32) in one pass over the noise.

        ``eps_i`` is row i's table slice and ``s_i`` its sign; the squares carry no sign. Rows
        sharing an offset are combined first (a mirrored pair: ``w+ - w-`` and ``v+ + v-``), so each
        distinct slice is read once; rows with sign 0 add nothing to either sum.
        """
        table, _, _, offsets, signs = self._compact("noise_weighted_sums")
        live = signs != 0
        linear = np.asarray(weights, dtype=np.float64) * signs
        unique, inverse = np.unique(offsets[live], return_inverse=True)
        combined = np.bincount(inverse, weights=linear[live], minlength=len(unique))
        squares = np.bincount(
            inverse, weights=np.asarray(square_weights, dtype=np.float64)[live], minlength=len(unique)
        )
        return table.weighted_sums(combined, squares, unique, self.dim)

    def take(self, indices: Sequence[int] | np.ndarray | slice) -> Population:
        """The sub-population at ``indices`` (compact stays compact; bases are shared, not copied)."""
        if isinstance(indices, slice):
            indices = np.arange(len(self))[indices]
        indices = np.asarray(indices, dtype=np.int64)
        center = None
        if self.center_row is not None and np.any(indices == self.center_row):
            center = int(np.flatnonzero(indices == self.center_row)[0])
        if self._dense is not None and self.table is None:
            return Population(dim=self.dim, groups=self.groups[indices], dense=self._dense[indices],
                              center_row=center)
        table, bases, parents, offsets, signs = self._compact("take")
        return Population(
            dim=self.dim, groups=self.groups[indices], bases=bases, parents=parents[indices],
            offsets=offsets[indices], signs=signs[indices], sigma=self.sigma, table=table, center_row=center,
            dtype=self.dtype,
        )

    # -- the center row -------------------------------------------------------------------
    def with_center(self, center: np.ndarray) -> Population:
        """This population plus the center row: ``center`` unperturbed, last, in its own seed group.

        When the center is bit for bit the first base (an ES's mean, a GA's elite), the new row is
        a sign-0 row pointing at that base; otherwise the center becomes one more base.
        """
        if self.center_row is not None:
            raise ValueError(f"this population already has its center row (row {self.center_row})")
        center = np.asarray(center, dtype=np.float64).reshape(1, self.dim)
        n = len(self)
        group = np.array([self.groups.max() + 1 if n else 0], dtype=np.int64)
        groups = np.concatenate([self.groups, group])
        if not self.is_compact:
            return Population(dim=self.dim, groups=groups, dense=np.vstack([self.params, center]), center_row=n)
        table, bases, parents, offsets, signs = self._compact("with_center")
        if np.array_equal(bases[0].view(np.int64), center[0].view(np.int64)):
            parent = 0
        else:
            bases, parent = np.vstack([bases, center]), len(bases)
        return Population(
            dim=self.dim, groups=groups, bases=bases,
            parents=np.append(parents, parent),
            offsets=np.append(offsets, 0), signs=np.append(signs, np.int8(0)),
            sigma=self.sigma, table=table, center_row=n, dtype=self.dtype,
        )

    def separate_center(self, values: np.ndarray) -> tuple[np.ndarray, float | None]:
        """``values`` (one per row) split into the other rows' (what the strategy is told, in row
        order) and the center row's value (None when this population has no center row)."""
        values = np.asarray(values)
        c = self.center_row
        if c is None:
            return values, None
        rest = values[:c] if c == len(values) - 1 else np.delete(values, c)
        return rest, float(values[c])

    # -- the wire format ------------------------------------------------------------------
    def split(
        self,
        chunks: int | Iterable[Sequence[int] | np.ndarray] = 1,
        *,
        seeds: np.ndarray | None = None,
        state: dict[str, Any] | None = None,
        number: int = 0,
    ) -> tuple[Shared, list[Rows]]:
        """What every worker shares, and the rows cut into ``chunks``, with each row's seed.

        ``chunks`` is a count (near-equal runs of consecutive rows, cut between seed groups where
        possible) or the row indices of each part: any rows, in any grouping (a single row, or a
        mirrored pair's halves in different parts). ``state`` (the problem's, plain data) and
        ``number`` (which generation) go into the shared part.
        """
        n = len(self)
        seeds = None if seeds is None else np.asarray(seeds, dtype=np.int64)
        if seeds is not None and seeds.shape != (n,):
            raise ValueError(f"split() needs one seed per row: {n} rows, seeds of shape {seeds.shape}")
        parts: list[slice | np.ndarray]
        if isinstance(chunks, (int, np.integer)):  # runs of consecutive rows: views, no copies
            parts = [slice(a, b) for a, b in chunk_bounds(self.groups, int(chunks)) if a < b]
        else:
            indices = [np.unique(np.asarray(part, dtype=np.int64)) for part in chunks]
            for index in indices:
                if len(index) and (index[0] < 0 or index[-1] >= n):
                    raise IndexError(f"split(): a row index falls outside 0..{n - 1}")
            parts = list(indices)
        dense: np.ndarray | None = None
        if self.table is not None:
            table, bases, parents, offsets, signs = self._compact("split")
            shared = Shared(self.dim, number, np.ascontiguousarray(bases, dtype=np.float64), self.sigma,
                            (table.size, table.seed), self.center_row, state, self.dtype.name)
        else:
            shared = Shared(self.dim, number, sigma=self.sigma, center_row=self.center_row, state=state)
            dense = self.params
        everything = np.arange(n, dtype=np.int64)
        rows = []
        for part in parts:  # views of the population's own arrays (dtypes as Rows keeps them)
            index, groups = everything[part], self.groups[part]
            part_seeds = None if seeds is None else seeds[part]
            if dense is not None:
                rows.append(Rows._of(index, groups, part_seeds, None, None, None, dense[part]))
            else:
                rows.append(Rows._of(index, groups, part_seeds, offsets[part], signs[part], parents[part], None))
        return shared, rows

    @classmethod
    def join(cls, shared: Shared, rows: Rows | Iterable[Rows]) -> Population:
        """The population of ``rows`` (one set, or several), in row order, exactly as split.

        Joining every part of a ``split`` gives the population back bit for bit; joining some gives
        the population of just those rows (what a worker evaluates).
        """
        parts = [rows] if isinstance(rows, Rows) else list(rows)
        if not parts:  # no rows at all: an empty population of the same kind
            empty = np.zeros(0, dtype=np.int64)
            parts = [Rows(empty, empty, offsets=empty, signs=empty, parents=empty) if shared.table is not None
                     else Rows(empty, empty, dense=np.zeros((0, shared.dim)))]
        if len(parts) == 1:
            part = parts[0]
            index, groups = part.index, part.groups

            def take(name: str) -> np.ndarray | None:
                field: np.ndarray | None = getattr(part, name)
                return field
        else:
            index = np.concatenate([p.index for p in parts])
            order = np.argsort(index, kind="stable")
            index = index[order]
            if len(index) > 1 and np.any(np.diff(index) == 0):
                raise ValueError("join(): a row appears in more than one part")
            groups = np.concatenate([p.groups for p in parts])[order]

            def take(name: str) -> np.ndarray | None:
                values = [getattr(p, name) for p in parts]
                if values[0] is None:
                    return None
                joined: np.ndarray = np.concatenate(values)[order]  # numpy leaves the fancy index untyped
                return joined

        center = None
        if shared.center_row is not None:
            at = int(np.searchsorted(index, shared.center_row))
            center = at if at < len(index) and index[at] == shared.center_row else None
        if shared.table is None:
            return cls(dim=shared.dim, groups=groups, dense=take("dense"), sigma=shared.sigma,
                       center_row=center)
        return cls(
            dim=shared.dim, groups=groups, bases=shared.bases, parents=take("parents"),
            offsets=take("offsets"), signs=take("signs"), sigma=shared.sigma,
            table=NoiseTable.get(*shared.table), center_row=center, dtype=shared.dtype,
        )

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
        if self._dense is not None or self.table is None:
            out[...] = self.params[index]
            return out
        if self.dtype == np.float32:  # a float32 population's row, built as rows() builds it, widened exactly
            out[...] = self._rows32(np.array([index], dtype=np.int64), "population.row_into")[0]
            return out
        table, bases, parents, offsets, signs = self._compact("row_into")
        parent, sign, offset = int(parents[index]), int(signs[index]), int(offsets[index])
        base = bases[parent]
        if sign == 0:
            out[...] = base
            return out
        dim, data = self.dim, table.data
        if offset < 0 or offset + dim > table.size:
            raise IndexError(f"a noise offset + dim {dim} falls outside a table of {table.size}")
        scalar = np.ndim(self.sigma) == 0
        coefficient = float(sign) * float(self.sigma) if scalar else 0.0
        per_dimension = np.asarray(self.sigma, dtype=np.float64) * (1.0 if sign > 0 else -1.0)
        for start in range(0, dim, _ROW_CHUNK):  # the arithmetic of rows(), element for element
            stop = min(start + _ROW_CHUNK, dim)
            chunk = out[start:stop]
            np.multiply(data[offset + start : offset + stop],
                        coefficient if scalar else per_dimension[start:stop], out=chunk, dtype=np.float64)
            np.add(chunk, base[start:stop], out=chunk)
        return out
