"""The center row: the one row the driver adds to what ``ask()`` returned, and takes out again.

It is the unperturbed center, last, in a seed group of its own, evaluated for the record but not
told to the strategy. In a compact population it is a sign-0 row pointing at base 0 when the center
is bit for bit base 0 (every built-in strategy: the mean, or the GA's elite), so no vector is
copied; otherwise the center becomes one more base.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .population import Population

__all__ = ["with_center", "separate_center"]


def with_center(population: Population, center: np.ndarray) -> Population:
    """:meth:`Population.with_center <blackbox.core.population.Population.with_center>`."""
    if population.center_row is not None:
        raise ValueError(f"this population already has its center row (row {population.center_row})")
    from .population import Population  # the module that imports this one

    cls, dim = Population, population.dim
    center = np.asarray(center, dtype=np.float64).reshape(1, dim)
    n = len(population)
    group = np.array([population.groups.max() + 1 if n else 0], dtype=np.int64)
    groups = np.concatenate([population.groups, group])
    if not population.is_compact:
        return cls(dim=dim, groups=groups, dense=np.vstack([population.params, center]), center_row=n)
    table, bases, parents, offsets, signs = population._compact("with_center")
    if np.array_equal(bases[0].view(np.int64), center[0].view(np.int64)):
        parent = 0
    else:
        bases, parent = np.vstack([bases, center]), len(bases)
    return cls(
        dim=dim, groups=groups, bases=bases,
        parents=np.append(parents, parent),
        offsets=np.append(offsets, 0), signs=np.append(signs, np.int8(0)),
        sigma=population.sigma, table=table, center_row=n, dtype=population.dtype,
    )


def separate_center(population: Population, values: np.ndarray) -> tuple[np.ndarray, float | None]:
    """:meth:`Population.separate_center <blackbox.core.population.Population.separate_center>`."""
    values = np.asarray(values)
    c = population.center_row
    if c is None:
        return values, None
    rest = values[:c] if c == len(values) - 1 else np.delete(values, c)
    return rest, float(values[c])
