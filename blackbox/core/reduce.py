"""Noise-weighted sums whose bits do not depend on how the work is split.

A search-gradient update needs ``sum_i w_i s_i eps_i`` (and the adaptive strategies also
``sum_i v_i eps_i**2``) over a population's rows, where ``eps_i`` is row i's slice of the noise
table and ``s_i`` its sign. A float sum's bits depend on its order, so a sum split over threads,
processes or machines would change with the split. Here it does not:

1. **Coefficients.** Rows sharing a noise offset (a mirrored pair) are combined in float64 in row
   order and cast to float32, as the float32 sum has always done. Rows with sign 0 (the center,
   elites) add nothing.
2. **Fixed blocks.** The distinct offsets, in ascending order, are cut into blocks of
   ``BLOCK_SLICES`` consecutive ones. The boundaries depend only on the population, never on who
   computes what, and a block keeps the order (and memory locality) of the one float32 pass.
3. **Block sums in float32, in a fixed order.** Each slice is multiplied by its coefficient and
   added to the block's accumulator, in ascending offset order, column chunk by column chunk; a
   zero coefficient (``-0.0`` included) is skipped, which changes no bit of a sequential sum. Only
   elementwise float32 multiplies and adds are used (no BLAS, no fused multiply-add, no reduction
   whose order numpy or the CPU picks), so the bits are the same on any IEEE machine.
4. **Fixed point.** Each block sum becomes int64 on the grid ``2**-k``, where ``k`` is fixed for
   the whole sum by the coefficients alone: ``2**k`` times a bound on ``sum |c_j| max|eps|`` stays
   below ``2**61``, so the integers cannot overflow for any subset of blocks, and the grid is as
   fine as that headroom allows (about 61 bits below the bound, far below float32's rounding).
5. **Integer combination.** Blocks and partial sums are added as int64: integer addition is
   associative and commutative, so any partition, order or reduction tree gives the same total.
6. **Finish.** ``float64(total) * 2**-k``.

Against an exactly rounded reference the result is more accurate than one float32 pass over all
rows (rounding errors grow with a block's length, not with the population's); ``benchmarks/reduction.py``
measures both, and the cost. Non-finite coefficients, and sums that could leave float32's range,
are refused with :class:`~blackbox.errors.SumOverflowError`; partial sums that do not make one whole
(another plan, a block twice or missing, integers beyond the bound) with
:class:`~blackbox.errors.ReductionError`. Never wrapped, never silently infinite.

Assumes IEEE float32 with subnormals (no flush-to-zero mode), as numpy runs by default.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ..errors import ReductionError, SumOverflowError
from .noise import NoiseTable

if TYPE_CHECKING:
    from .population import Population

__all__ = [
    "REDUCTION", "BLOCK_SLICES", "ReductionPlan", "PartialSums", "plan_sums", "block_count",
    "combine", "weighted_sum", "weighted_sums", "block_sums", "add_checked",
]

#: The name of this reduction, recorded in a strategy's state: blocks, order, fixed point.
REDUCTION = "fixed-blocks-v1"
#: Distinct noise slices per block (64 mirrored pairs). Fixed by the reduction's version, never by the cluster.
BLOCK_SLICES = 64
#: |total| * 2**k stays below 2**_HEADROOM_BITS; a legitimate integer never exceeds _LIMIT.
_HEADROOM_BITS = 61
_LIMIT = 2**62 - 1  # two values within it add without wrapping int64; beyond it: refused
#: Columns summed at once: the float32 accumulators and the int64 totals of a chunk stay in cache.
_CHUNK = 32768
#: A block's slices are summed gathered (:func:`_gathered_sums`, at most ``_GATHER_ELEMENTS`` noise
#: values at a time) where the chunk is at most this wide and at most twice as wide as the block has
#: slices (there the loop's cost is Python's, a call per slice); else slice by slice, where each call
#: adds a long run of columns. Measured on this project's 2-core machine (CHANGELOG, issue 27).
_GATHER_WIDTH = 4096
_GATHER_ELEMENTS = 1 << 16
#: Narrow blocks of a chunk are gathered together (:func:`_gathered_blocks`) up to this many noise values.
_GATHER_BLOCK_ELEMENTS = 1 << 18
_FLOAT32_MAX = float(np.finfo(np.float32).max)

_max_abs: dict[tuple[int, int], float] = {}
_max_abs_lock = threading.Lock()


def block_count(slices: int, block_slices: int = BLOCK_SLICES) -> int:
    """How many blocks ``slices`` distinct noise slices make (the last one may be short)."""
    return -(-int(slices) // block_slices)


def table_max_abs(table: NoiseTable) -> float:
    """``max |table|``, computed once per process and table (one pass, no temporary)."""
    key = (table.size, table.seed)
    with _max_abs_lock:
        value = _max_abs.get(key)
    if value is None:
        value = max(float(table.data.max()), -float(table.data.min()))
        with _max_abs_lock:
            _max_abs[key] = value
    return value


@dataclass(frozen=True)
class ReductionPlan:
    """What every participant needs to sum any subset of blocks: the same everywhere.

    Entry ``j`` (a distinct offset with its float32 coefficients, ascending) belongs to block
    ``j // block_slices``. Build it with :func:`plan_sums`.
    """

    table: NoiseTable
    dim: int
    block_slices: int
    offsets: np.ndarray  # int64, distinct, ascending
    linear: np.ndarray  # float32 coefficients
    squares: np.ndarray | None  # float32 coefficients of eps**2, or None
    linear_exponent: int  # k: the linear sum's grid is 2**-k
    square_exponent: int | None
    key: bytes  # digest of all of the above: partial sums of different plans never mix

    @property
    def n_blocks(self) -> int:
        return block_count(len(self.offsets), self.block_slices)

    @property
    def all_blocks(self) -> int:
        """The bitmask of every block (what a finished sum must cover)."""
        return (1 << self.n_blocks) - 1

    def block_sums(self, blocks: Iterable[int] | None = None, *, threads: int = 1) -> PartialSums:
        """The int64 sums of ``blocks`` (default: all), in any order: same integers either way.

        ``threads`` > 1 splits the columns among threads (numpy releases the GIL): every element is
        computed by the same operations in the same order, so the integers do not change.
        """
        return _block_sums(self, range(self.n_blocks) if blocks is None else blocks, threads)

    def zeros(self) -> PartialSums:
        """The sum of no block (the neutral element of :func:`combine`)."""
        squares = None if self.squares is None else np.zeros(self.dim, dtype=np.int64)
        return PartialSums(self.key, 0, np.zeros(self.dim, dtype=np.int64), squares)

    def finish(self, total: PartialSums) -> tuple[np.ndarray, np.ndarray | None]:
        """``(sum_i w_i s_i eps_i, sum_i v_i eps_i**2 or None)`` in float64 from the total of all blocks."""
        self._check_own(total)
        if total.blocks != self.all_blocks:
            missing = [b for b in range(self.n_blocks) if not total.blocks >> b & 1]
            raise ReductionError(
                f"the noise-weighted sum is missing blocks {_listed(missing)} of {self.n_blocks}; "
                f"every block must be summed exactly once before finishing"
            )
        linear = _from_fixed(total.linear, self.linear_exponent, "linear")
        squares = None
        if self.squares is not None and total.squares is not None and self.square_exponent is not None:
            squares = _from_fixed(total.squares, self.square_exponent, "squared")
        elif self.squares is not None:
            raise ReductionError("the partial sums lack the squared sums this plan has; sum the blocks of this plan")
        return linear, squares

    def _check_own(self, part: PartialSums) -> None:
        if part.key != self.key:
            raise ReductionError(
                "partial noise-weighted sums were made for other coefficients than this plan's "
                "(another generation, or weights that differ between processes); sum the blocks "
                "of this generation's plan"
            )


@dataclass(frozen=True)
class PartialSums:
    """int64 fixed-point sums of a set of blocks (``blocks`` is a bitmask), for one plan's key."""

    key: bytes
    blocks: int
    linear: np.ndarray
    squares: np.ndarray | None


def plan_sums(population: Population, weights: np.ndarray, square_weights: np.ndarray | None = None,
              *, block_slices: int = BLOCK_SLICES) -> ReductionPlan:
    """The plan of ``sum_i w_i s_i eps_i`` (and ``sum_i v_i eps_i**2`` when ``square_weights``
    is given) over a compact population's rows: blocks, float32 coefficients, fixed-point grids.

    Refuses (:class:`SumOverflowError`) a weight that is not finite, a combined coefficient beyond
    float32, and sums whose bound leaves float32's range.
    """
    if population.table is None or population.offsets is None:
        raise ValueError("a noise-weighted sum needs a compact population (this one is dense)")
    rows = len(population)
    signs = np.asarray(population.signs)
    table, dim = population.table, int(population.dim)
    live = signs != 0
    weights = _row_weights("weights", weights, rows, live)
    square_rows = None if square_weights is None else _row_weights("square_weights", square_weights, rows, live)
    offsets = np.asarray(population.offsets, dtype=np.int64)[live]
    if len(offsets) and (offsets.min() < 0 or offsets.max() + dim > table.size):
        raise IndexError(f"a noise offset + dim {dim} falls outside a table of {table.size}")
    unique, inverse = np.unique(offsets, return_inverse=True)
    # Rows sharing an offset are combined in row order (bincount adds in input order).
    linear64 = np.bincount(inverse, weights=(weights * signs)[live], minlength=len(unique))
    squares64 = None if square_rows is None else np.bincount(
        inverse, weights=square_rows[live], minlength=len(unique))
    linear32 = _to_float32("coefficient", linear64, unique, block_slices)
    squares32 = None if squares64 is None else _to_float32("square coefficient", squares64, unique, block_slices)
    peak = table_max_abs(table)
    k_linear = _exponent("linear", linear32, peak)
    k_squares = None if squares32 is None else _exponent("squared", squares32, peak * peak)
    digest = hashlib.blake2b(digest_size=16)
    header = [dim, block_slices, table.size, table.seed, k_linear, -1 if k_squares is None else k_squares]
    for part in (np.array(header, dtype=np.int64), unique, linear32,
                 squares32 if squares32 is not None else np.empty(0)):
        digest.update(np.ascontiguousarray(part).tobytes())
    return ReductionPlan(table, dim, block_slices, unique, linear32, squares32, k_linear, k_squares,
                         digest.digest())


def combine(*parts: PartialSums) -> PartialSums:
    """The sum of partial sums of one plan over disjoint blocks (any order, any tree: same bits).

    Refuses parts of different plans, a block counted twice, and integers beyond the bound a plan
    guarantees (a corrupted or foreign part): int64 never wraps here.
    """
    if not parts:
        raise ReductionError("combine() needs at least one partial sum")
    first = parts[0]
    blocks = 0
    linear = np.zeros_like(first.linear)
    squares = None if first.squares is None else np.zeros_like(first.squares)
    for part in parts:
        if part.key != first.key:
            raise ReductionError(
                "cannot combine partial noise-weighted sums of different plans (another generation, "
                "or weights that differ between processes)"
            )
        twice = blocks & part.blocks
        if twice:
            raise ReductionError(
                f"block {_lowest_bit(twice)} of the noise-weighted sum is counted twice; combine "
                f"each block once (a backup's duplicate result must be dropped, not added)"
            )
        blocks |= part.blocks
        _add_checked(linear, part.linear)
        if squares is not None:
            if part.squares is None:
                raise ReductionError("cannot combine partial sums with and without squared sums (different plans)")
            _add_checked(squares, part.squares)
    return PartialSums(first.key, blocks, linear, squares)


def weighted_sum(population: Population, weights: np.ndarray) -> np.ndarray:
    """``sum_i w_i s_i eps_i`` (float64) over all blocks, in this process."""
    plan = plan_sums(population, weights)
    return plan.finish(plan.block_sums())[0]


def weighted_sums(population: Population, weights: np.ndarray, square_weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(sum_i w_i s_i eps_i, sum_i v_i eps_i**2)`` (float64) over all blocks, in this process."""
    plan = plan_sums(population, weights, square_weights)
    linear, squares = plan.finish(plan.block_sums())
    assert squares is not None  # a plan with square weights has squared sums
    return linear, squares


def block_sums(population: Population, coefficients: np.ndarray, square_coefficients: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray | None]:
    """The strategies' default reducer: every block of the fixed-block sums, in this process."""
    plan = plan_sums(population, coefficients, square_coefficients)
    return plan.finish(plan.block_sums())


# -- internals ------------------------------------------------------------------------------


def _row_weights(name: str, values: ArrayLike, rows: int, live: np.ndarray) -> np.ndarray:
    """The weights as float64, refusing a non-finite one on a row that adds to the sum."""
    weights = np.asarray(values, dtype=np.float64)
    if weights.shape != (rows,):
        raise ValueError(f"{name} must have one value per row: shape ({rows},), got {weights.shape}")
    bad = np.flatnonzero(~np.isfinite(weights) & live)
    if len(bad):
        raise SumOverflowError(
            f"the noise-weighted sum got {name}[{bad[0]}] = {float(weights[bad[0]])!r}; every weight must be "
            f"finite (a fitness shaping such as centered_ranks gives finite weights)"
        )
    return weights


def _to_float32(what: str, values: np.ndarray, offsets: np.ndarray, block_slices: int) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        out = values.astype(np.float32)
    bad = np.flatnonzero(~np.isfinite(out))
    if len(bad):
        i = int(bad[0])
        raise SumOverflowError(
            f"the noise-weighted sum's {what} of noise offset {int(offsets[i])} (block {i // block_slices}) "
            f"is {float(values[i])!r}, beyond float32's range (3.4e38); scale the weights down"
        )
    return out


def _exponent(what: str, coefficients: np.ndarray, peak: float) -> int:
    """``k`` with ``2**k * sum|c_j| * max|eps| < 2**61`` (0 when every coefficient is zero).

    The bound is exact integer arithmetic on powers of two (``|c| < 2**e``), so it is the same on
    every machine and numpy version, and costs one vectorized pass. Rounding inside a block can
    exceed the exact sum by a factor below ``1 + 2**-17``: the integers stay below ``2**62``.
    """
    _, exponents = np.frexp(coefficients[coefficients != 0])  # |c| < 2**e
    if not len(exponents) or peak == 0.0:
        return 0
    lowest = int(exponents.min())
    counts: list[int] = np.bincount(exponents - lowest).tolist()
    total = sum(count << shift for shift, count in enumerate(counts))  # sum|c| < total * 2**lowest
    _, peak_exponent = math.frexp(peak)  # max|eps| < 2**peak_exponent
    exponent = total.bit_length() + lowest + peak_exponent  # the sum's bound is below 2**exponent
    if exponent > 127:
        bound = math.fsum(np.abs(coefficients).astype(np.float64).tolist()) * peak
        raise SumOverflowError(
            f"the {what} noise-weighted sum could leave float32's range: sum |coefficient| x max |noise| "
            f"= {bound:.4g}, not below 2**127 = 1.7e38; scale the weights down (centered_ranks keeps "
            f"them in [-0.5, 0.5])"
        )
    return _HEADROOM_BITS - exponent


def _block_sums(plan: ReductionPlan, blocks: Iterable[int], threads: int = 1) -> PartialSums:
    dim = plan.dim
    linear_total = np.zeros(dim, dtype=np.int64)
    squares_total = None if plan.squares is None else np.zeros(dim, dtype=np.int64)
    mask = 0
    work: list[Entries] = []  # per block: (offsets, c, v) in order, the zero coefficients left out
    for block in sorted(blocks):  # ascending blocks read the table in ascending order
        block = int(block)
        if not 0 <= block < plan.n_blocks:
            raise ReductionError(f"block {block} does not exist: this sum has blocks 0..{plan.n_blocks - 1}")
        if mask >> block & 1:
            raise ReductionError(f"block {block} is listed twice; sum each block once")
        mask |= 1 << block
        lo, hi = block * plan.block_slices, min((block + 1) * plan.block_slices, len(plan.offsets))
        linear = np.asarray(plan.linear[lo:hi], dtype=np.float64)
        squares = np.zeros(hi - lo) if plan.squares is None else np.asarray(plan.squares[lo:hi], dtype=np.float64)
        kept = (linear != 0.0) | (squares != 0.0)
        if kept.any():
            work.append((np.asarray(plan.offsets[lo:hi], dtype=np.int64)[kept], linear[kept], squares[kept]))
    chunks = [(start, min(start + _CHUNK, dim)) for start in range(0, dim, _CHUNK)]
    threads = max(1, min(int(threads), len(chunks)))
    if threads == 1 or not work:
        _sum_chunks(plan, work, chunks, linear_total, squares_total)
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(threads) as pool:  # each thread owns whole chunks: disjoint columns
            done = [pool.submit(_sum_chunks, plan, work, chunks[i::threads], linear_total, squares_total)
                    for i in range(threads)]
            for future in done:
                future.result()
    return PartialSums(plan.key, mask, linear_total, squares_total)


#: One block's slices to add: their noise offsets (ascending, the block's fixed order), linear and
#: square coefficients (float64), slices whose two coefficients are both zero left out.
Entries = tuple[np.ndarray, np.ndarray, np.ndarray]


def _sum_chunks(plan: ReductionPlan, work: list[Entries], chunks: list[tuple[int, int]],
                linear_total: np.ndarray, squares_total: np.ndarray | None) -> None:
    """Add the blocks of ``work`` to the totals, column chunk by column chunk (columns outermost:
    the accumulators and this chunk of the totals stay in the cache)."""
    data = plan.table.data
    width = max((stop - start for start, stop in chunks), default=0)
    acc, acc_sq, tmp = (np.empty(width, dtype=np.float32) for _ in range(3))
    scratch = np.empty(width, dtype=np.int64)
    for start, stop in chunks:
        a, a_sq, t = acc[: stop - start], acc_sq[: stop - start], tmp[: stop - start]
        windows = None  # the table's slices of this chunk's width, as rows of one view (made once)
        columns = stop - start
        narrow = [columns <= min(_GATHER_WIDTH, 2 * len(entries[0])) for entries in work]  # and many slices
        if any(narrow):
            windows = np.lib.stride_tricks.sliding_window_view(data, columns)
        index = 0
        while index < len(work):
            entries = work[index]
            end, longest = index, 0  # consecutive narrow blocks that fit _GATHER_BLOCK_ELEMENTS together
            while end < len(work) and narrow[end] and (end - index + 1) * max(longest, len(work[end][0])) * columns \
                    <= _GATHER_BLOCK_ELEMENTS:
                longest = max(longest, len(work[end][0]))
                end += 1
            if end > index:
                assert windows is not None
                _gathered_blocks(windows, work[index:end], start, plan, linear_total[start:stop],
                                 None if squares_total is None else squares_total[start:stop])
                index = end
                continue
            index += 1
            a[...] = 0.0
            a_sq[...] = 0.0
            if narrow[index - 1]:  # a block too large to gather with others: gathered alone, in batches
                assert windows is not None
                _gathered_sums(windows, entries, start, a, a_sq)
                _add_fixed(linear_total[start:stop], a, plan.linear_exponent, scratch)
                if squares_total is not None and plan.square_exponent is not None:
                    _add_fixed(squares_total[start:stop], a_sq, plan.square_exponent, scratch)
                continue
            for offset, c, v in zip(*(column.tolist() for column in entries)):  # ascending: the block's order
                noise = data[offset + start : offset + stop]
                if c != 0.0:
                    np.multiply(noise, c, out=t)
                    np.add(a, t, out=a)
                if v != 0.0:
                    np.multiply(noise, v, out=t)
                    np.multiply(t, noise, out=t)
                    np.add(a_sq, t, out=a_sq)
            _add_fixed(linear_total[start:stop], a, plan.linear_exponent, scratch)
            if squares_total is not None and plan.square_exponent is not None:
                _add_fixed(squares_total[start:stop], a_sq, plan.square_exponent, scratch)


def _gathered_sums(windows: np.ndarray, entries: Entries, start: int, a: np.ndarray, a_sq: np.ndarray) -> None:
    """The per-slice loop of :func:`_sum_chunks` for narrow chunks, in whole-array operations with the
    same bits: the slices gathered into a matrix, each row multiplied by its float32 coefficient (as
    ``np.multiply(noise, c)`` does with a Python float), then added in the block's order by
    ``np.add.accumulate`` along the rows (sequential by definition, never pairwise). At small
    dimensions the loop's cost is Python's, one call per slice; this is a few calls per block."""
    batch = max(1, _GATHER_ELEMENTS // windows.shape[1])
    offsets = entries[0] + start  # row i of ``windows`` is the table from i on: a slice is one row
    for accumulator, coefficients, square in ((a, entries[1], False), (a_sq, entries[2], True)):
        nonzero = coefficients != 0.0
        chosen, weights = offsets[nonzero], coefficients[nonzero].astype(np.float32)
        for first in range(0, len(chosen), batch):
            noise = windows[chosen[first: first + batch]]
            terms = np.multiply(noise, weights[first: first + batch, None])
            if square:
                np.multiply(terms, noise, out=terms)
            np.add(accumulator, terms[0], out=terms[0])  # the running sum so far, then this batch in order
            np.add.accumulate(terms, axis=0, out=terms)
            accumulator[...] = terms[-1]


def _gathered_blocks(windows: np.ndarray, group: list[Entries], start: int, plan: ReductionPlan,
                     linear_total: np.ndarray, squares_total: np.ndarray | None) -> None:
    """Several blocks of a narrow chunk summed at once, the bits of :func:`_gathered_sums` block by block.

    The blocks' slices are gathered into one ``(longest, blocks, width)`` array, short blocks padded
    with zero-coefficient slices; each slice is multiplied by its coefficient and the rows are added one
    after the other, in each block's order, into one accumulator per block. A zero-coefficient slice
    adds ``+-0.0``, which changes no bit of a sum that starts from ``+0.0`` (the loop skips them; the
    first row gets ``+0.0`` added, as the loop's accumulator does). Then every block becomes int64 on
    the plan's grid and the integers are added. Otherwise small populations of small vectors pay one
    Python call per block (most of a 1,024-row tell at dimension 114)."""
    longest = max(len(entries[0]) for entries in group)
    offsets = np.zeros((len(group), longest), dtype=np.int64)
    linear = np.zeros((len(group), longest), dtype=np.float32)
    squares = np.zeros((len(group), longest), dtype=np.float32)
    for k, (block_offsets, c, v) in enumerate(group):
        offsets[k, : len(block_offsets)] = block_offsets
        offsets[k, len(block_offsets):] = block_offsets[0]  # a padding slice: any valid one, coefficient 0
        linear[k, : len(c)] = c
        squares[k, : len(v)] = v
    noise = windows[offsets.T + start]  # (longest, blocks, width): a block's running sum adds whole rows
    sums = [(linear_total, linear, plan.linear_exponent, False)]
    if squares_total is not None and plan.square_exponent is not None:
        sums.append((squares_total, squares, plan.square_exponent, True))
    for total, coefficients, exponent, square in sums:
        if not coefficients.any():  # every coefficient zero: the loop adds nothing, all blocks sum to +0
            continue
        terms = np.multiply(noise, coefficients.T[:, :, None])
        if square:
            np.multiply(terms, noise, out=terms)
        block_sums = np.add(terms[0], np.float32(0.0))  # the loop's accumulator starts at +0.0
        for row in terms[1:]:  # in each block's order; whole rows of every block at once
            np.add(block_sums, row, out=block_sums)
        if -126 <= exponent <= 127:
            np.multiply(block_sums, np.float32(math.ldexp(1.0, exponent)), out=block_sums)
            np.rint(block_sums, out=block_sums)
            as_int = block_sums.astype(np.int64)
        else:
            as_int = np.rint(block_sums.astype(np.float64) * math.ldexp(1.0, exponent)).astype(np.int64)
        np.add(total, as_int.sum(axis=0), out=total)


def _add_fixed(total: np.ndarray, block_sum: np.ndarray, exponent: int, as_int: np.ndarray) -> None:
    """``total += rint(block_sum * 2**exponent)`` as int64, exactly (the plan's bound keeps it below
    2**61). ``block_sum`` is overwritten. Scaling a float32 by a power of two is exact unless the
    result is below 2**-126, and then it rounds to 0 either way; float64 only where 2**k is not a
    float32."""
    as_int = as_int[: len(block_sum)]
    if -126 <= exponent <= 127:
        np.multiply(block_sum, np.float32(math.ldexp(1.0, exponent)), out=block_sum)
        np.rint(block_sum, out=block_sum)
        as_int[...] = block_sum
    else:
        as_int[...] = np.rint(block_sum.astype(np.float64) * math.ldexp(1.0, exponent))
    np.add(total, as_int, out=total)


def add_checked(total: np.ndarray, part: np.ndarray) -> None:
    """``total += part`` for int64 fixed-point sums (or chunks of them) of one plan, refusing any
    integer beyond the bound a plan guarantees instead of wrapping: what a reduction tree adds."""
    _add_checked(total, part)


def _add_checked(total: np.ndarray, part: np.ndarray) -> None:
    for values in (total, part):
        if len(values) and (values.max() > _LIMIT or values.min() < -_LIMIT):
            raise ReductionError(
                f"a partial noise-weighted sum holds an integer beyond +-{_LIMIT} (2**62 - 1), which no "
                f"plan can produce: the part is corrupt or comes from elsewhere; refusing to wrap"
            )
    np.add(total, part, out=total)
    if len(total) and (total.max() > _LIMIT or total.min() < -_LIMIT):
        raise ReductionError(
            f"combining partial noise-weighted sums overflows the fixed-point bound +-{_LIMIT} "
            f"(2**62 - 1): the parts are corrupt or come from elsewhere; refusing to wrap"
        )


def _from_fixed(total: np.ndarray, exponent: int, what: str) -> np.ndarray:
    if len(total) and (total.max() > _LIMIT or total.min() < -_LIMIT):
        raise ReductionError(f"the {what} fixed-point total exceeds +-{_LIMIT} (2**62 - 1): refusing to wrap")
    return total.astype(np.float64) * math.ldexp(1.0, -exponent)


def _lowest_bit(mask: int) -> int:
    return (mask & -mask).bit_length() - 1


def _listed(items: list[int]) -> str:
    shown = ", ".join(str(i) for i in items[:8])
    return shown + (f" and {len(items) - 8} more" if len(items) > 8 else "")
