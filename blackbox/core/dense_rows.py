"""A compact population's rows made dense: the arithmetic every path shares, bit for bit.

Row i of a compact population is ``float64(noise_i) * (sign_i * sigma) + base``, element by
element, whichever path builds it (one gather for small blocks, row by row in cache-sized chunks
for large ones, one row into a caller's buffer), so any split of the rows among workers gives the
same bits; a float32 population builds its rows as ``noise * float32(sign * sigma) + float32(base)``.
:class:`~blackbox.core.population.Population` calls these from ``params``, ``rows``, ``dense``,
``blocks`` and ``row_into``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import DTypeLike

from ..errors import ConfigError
from . import mapped

if TYPE_CHECKING:
    from .population import Population

__all__ = ["fill32", "compact_rows", "row_into", "blocks", "check_dtype"]

#: Up to this many values, rows() gathers the noise into one block; beyond, it builds row by row.
_ROWS_GATHER_MAX = 2**18
#: Columns per step when building rows one by one: a chunk of noise, base and output stays in cache.
_ROW_CHUNK = 2**15


def fill32(population: Population, indices: np.ndarray, out: np.ndarray) -> None:
    """Rows ``indices`` into the float32 ``out``, row by row (each noise slice read once)."""
    if population._dense is not None or population.table is None:
        out[...] = population.params[indices]
        return
    table, bases, parents, all_offsets, all_signs = population._compact("dense(float32)")
    dim = population.dim
    scalar = np.ndim(population.sigma) == 0
    sigma32 = np.float32(population.sigma) if scalar else np.asarray(population.sigma, dtype=np.float32)
    if len(indices) * dim <= _ROWS_GATHER_MAX:  # small blocks: one gather, no Python loop
        signs = all_signs[indices]
        offsets = np.where(signs == 0, 0, all_offsets[indices])
        np.multiply(table.gather(offsets, dim), signs.astype(np.float32)[:, None] * sigma32, out=out)
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
            np.multiply(data[offset : offset + dim], sigma32 if sign > 0 else -sigma32, out=out[i])
            np.add(out[i], base, out=out[i])


def compact_rows(population: Population, indices: np.ndarray, what: str) -> np.ndarray:
    """Rows ``indices`` of a compact float64 population; ``what`` names the caller in the message
    of a dense buffer limit too small."""
    table, bases, parents, offsets, signs = population._compact("rows")
    parents, signs, offsets = parents[indices], signs[indices], offsets[indices]
    if len(indices) * population.dim > _ROWS_GATHER_MAX:
        return _rows_one_by_one(population, parents, signs, offsets, what)
    dead = np.flatnonzero(signs == 0)  # rows with sign 0 are their base exactly
    if len(dead):
        offsets = offsets.copy()
        offsets[dead] = 0
    # base + coefficient * noise, with the float32 noise widened exactly by the multiply and
    # the base added after it (IEEE addition commutes): one gather and two passes over the rows.
    noise = table.gather(offsets, population.dim)
    coefficient = signs.astype(np.float64)[:, None] * population.sigma
    out: np.ndarray = np.multiply(noise, coefficient, dtype=np.float64,
                                  out=mapped.empty(noise.shape, np.float64))
    if len(parents) and parents.min() == parents.max():
        out += bases[parents[0]]  # one base for every row: broadcast
    elif len(parents):
        out += np.take(bases, parents, axis=0, out=mapped.empty(out.shape, bases.dtype))
    if len(dead):
        out[dead] = bases[parents[dead]]
    return out


def _rows_one_by_one(population: Population, parents: np.ndarray, signs: np.ndarray, offsets: np.ndarray,
                     what: str) -> np.ndarray:
    """Large blocks: row by row in cache-sized column chunks, reading each slice and base once.

    The arithmetic is the vectorized path's, element for element; only the memory traffic
    differs (no gathered float32 copy, no gathered copy of the bases, no second pass).
    """
    table, bases = population._compact("rows")[:2]
    dim, data = population.dim, table.data
    live = offsets[signs != 0]
    if len(live) and (live.min() < 0 or live.max() + dim > table.size):
        raise IndexError(f"a noise offset + dim {dim} falls outside a table of {table.size}")
    out = mapped.large((len(signs), dim), np.float64, what)
    scalar = np.ndim(population.sigma) == 0
    sigma = np.asarray(population.sigma, dtype=np.float64)  # per-dimension sigma; unused when scalar
    negative = -sigma
    for i, (parent, sign, offset) in enumerate(zip(parents.tolist(), signs.tolist(), offsets.tolist())):
        base = bases[parent]
        if sign == 0:
            out[i] = base
            continue
        row = out[i]
        coefficient = float(sign) * float(population.sigma) if scalar else 0.0
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


def row_into(population: Population, index: int, out: np.ndarray) -> np.ndarray:
    """:meth:`Population.row_into <blackbox.core.population.Population.row_into>`: row ``index``
    into the float64 ``out``, with the bits of ``rows([index])[0]``."""
    if population._dense is not None or population.table is None:
        out[...] = population.params[index]
        return out
    if population.dtype == np.float32:  # a float32 population's row, built as rows() builds it, widened exactly
        out[...] = population._rows32(np.array([index], dtype=np.int64), "population.row_into")[0]
        return out
    table, bases, parents, offsets, signs = population._compact("row_into")
    parent, sign, offset = int(parents[index]), int(signs[index]), int(offsets[index])
    base = bases[parent]
    if sign == 0:
        out[...] = base
        return out
    dim, data = population.dim, table.data
    if offset < 0 or offset + dim > table.size:
        raise IndexError(f"a noise offset + dim {dim} falls outside a table of {table.size}")
    scalar = np.ndim(population.sigma) == 0
    coefficient = float(sign) * float(population.sigma) if scalar else 0.0
    per_dimension = np.asarray(population.sigma, dtype=np.float64) * (1.0 if sign > 0 else -1.0)
    for start in range(0, dim, _ROW_CHUNK):  # the arithmetic of rows(), element for element
        stop = min(start + _ROW_CHUNK, dim)
        chunk = out[start:stop]
        np.multiply(data[offset + start : offset + stop],
                    coefficient if scalar else per_dimension[start:stop], out=chunk, dtype=np.float64)
        np.add(chunk, base[start:stop], out=chunk)
    return out


def blocks(population: Population, rows: int, dtype: DTypeLike) -> Iterator[tuple[slice, np.ndarray]]:
    """:meth:`Population.blocks <blackbox.core.population.Population.blocks>`: ``(rows slice, dense
    block)`` pairs in order; the float32 blocks share one buffer, valid until the next block."""
    if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) or rows < 1:
        raise ConfigError(f"rows must be a positive integer (rows per block), got {rows!r}")
    kind, n = check_dtype(dtype), len(population)
    if kind == np.float64:
        for start in range(0, n, int(rows)):
            where = slice(start, min(start + int(rows), n))
            block = population.rows(np.arange(where.start, where.stop))
            yield where, block.astype(np.float64, copy=False)
        return
    buffer = np.empty((min(int(rows), n), population.dim), dtype=np.float32)
    for start in range(0, n, int(rows)):
        stop = min(start + int(rows), n)
        block = buffer[: stop - start]
        fill32(population, np.arange(start, stop), block)
        yield slice(start, stop), block


def check_dtype(dtype: DTypeLike) -> np.dtype:
    """``dtype`` as a numpy dtype, float32 or float64 (ConfigError otherwise)."""
    try:
        kind = np.dtype(dtype)
    except TypeError:
        kind = None
    if kind not in (np.float32, np.float64):
        raise ConfigError(f"dtype must be float32 or float64 (the noise is float32), got {dtype!r}")
    checked: np.dtype = kind  # numpy leaves np.dtype(<anything>) untyped
    return checked
