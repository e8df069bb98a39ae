"""A population cut into the wire format and joined back, bit for bit.

``Population.split`` cuts a population into :class:`~blackbox.core.rows.Shared` (what every worker
needs once per generation: the bases, sigma, the table's size and seed) and
:class:`~blackbox.core.rows.Rows` (any set of rows, down to single rows, each with its seed: a
parent, an offset and a sign, or the dense row); ``Population.join`` rebuilds the population, or
the part of it a worker got. A compact population travels compact, pickled too; ``take`` cuts
out any rows as a population of their own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .noise import NoiseTable
from .rows import Rows, Shared, chunk_bounds

if TYPE_CHECKING:
    from .population import Population

__all__ = ["split", "join", "take"]


def split(population: Population, chunks: int | Iterable[Sequence[int] | np.ndarray] = 1, *,
          seeds: np.ndarray | None = None, state: dict[str, Any] | None = None,
          number: int = 0) -> tuple[Shared, list[Rows]]:
    """:meth:`Population.split <blackbox.core.population.Population.split>`."""
    n = len(population)
    seeds = None if seeds is None else np.asarray(seeds, dtype=np.int64)
    if seeds is not None and seeds.shape != (n,):
        raise ValueError(f"split() needs one seed per row: {n} rows, seeds of shape {seeds.shape}")
    parts: list[slice | np.ndarray]
    if isinstance(chunks, (int, np.integer)):  # runs of consecutive rows: views, no copies
        parts = [slice(a, b) for a, b in chunk_bounds(population.groups, int(chunks)) if a < b]
    else:
        indices = [np.unique(np.asarray(part, dtype=np.int64)) for part in chunks]
        for index in indices:
            if len(index) and (index[0] < 0 or index[-1] >= n):
                raise IndexError(f"split(): a row index falls outside 0..{n - 1}")
        parts = list(indices)
    dense: np.ndarray | None = None
    if population.table is not None:
        table, bases, parents, offsets, signs = population._compact("split")
        shared = Shared(population.dim, number, np.ascontiguousarray(bases, dtype=np.float64), population.sigma,
                        (table.size, table.seed), population.center_row, state, population.dtype.name)
    else:
        shared = Shared(population.dim, number, sigma=population.sigma, center_row=population.center_row,
                        state=state)
        dense = population.params
    everything = np.arange(n, dtype=np.int64)
    rows = []
    for part in parts:  # views of the population's own arrays (dtypes as Rows keeps them)
        index, groups = everything[part], population.groups[part]
        part_seeds = None if seeds is None else seeds[part]
        if dense is not None:
            rows.append(Rows._of(index, groups, part_seeds, None, None, None, dense[part]))
        else:
            rows.append(Rows._of(index, groups, part_seeds, offsets[part], signs[part], parents[part], None))
    return shared, rows


def join(cls: type[Population], shared: Shared, rows: Rows | Iterable[Rows]) -> Population:
    """:meth:`Population.join <blackbox.core.population.Population.join>`."""
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


def take(population: Population, indices: Sequence[int] | np.ndarray | slice) -> Population:
    """:meth:`Population.take <blackbox.core.population.Population.take>`: the sub-population at
    ``indices`` (compact stays compact; bases are shared, not copied)."""
    from .population import Population  # the module that imports this one

    if isinstance(indices, slice):
        indices = np.arange(len(population))[indices]
    indices = np.asarray(indices, dtype=np.int64)
    center = None
    if population.center_row is not None and np.any(indices == population.center_row):
        center = int(np.flatnonzero(indices == population.center_row)[0])
    if population._dense is not None and population.table is None:
        return Population(dim=population.dim, groups=population.groups[indices], dense=population._dense[indices],
                          center_row=center)
    table, bases, parents, offsets, signs = population._compact("take")
    return Population(
        dim=population.dim, groups=population.groups[indices], bases=bases, parents=parents[indices],
        offsets=offsets[indices], signs=signs[indices], sigma=population.sigma, table=table, center_row=center,
        dtype=population.dtype,
    )
