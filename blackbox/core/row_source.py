"""Rows of a population handed to a problem without building them: each row made when it is read.

``evaluate_rows`` passes a problem that declares ``takes_row_source = True`` a :class:`RowSource`
instead of the dense ``(m, dim)`` float64 array. ``source[i]`` computes row ``i`` into one reused
float64 buffer (the bits of ``population.rows``, :meth:`Population.row_into`), so a problem that
copies each row once into its own storage (the gym problem's float32 policy slots) reads the noise
table straight into it, and no ``(m, dim)`` float64 array is built or paged in. ``source[a:b]`` is
a source of those rows, and ``np.asarray(source)`` builds the dense rows for code that wants them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from .population import Population

__all__ = ["RowSource"]


class RowSource:
    """Rows ``indices`` of ``population``, computed one at a time when read (see the module)."""

    dtype = np.dtype(np.float64)
    ndim = 2

    def __init__(self, population: Population, indices: np.ndarray):
        self.population = population
        self.indices = np.asarray(indices, dtype=np.int64).reshape(-1)
        self._row: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.indices), self.population.dim

    def __len__(self) -> int:
        return len(self.indices)

    @property
    def center(self) -> int | None:
        """Which of these rows is the population's center row (:mod:`.center_row`), or None."""
        if self.population.center_row is None:
            return None
        at = np.flatnonzero(self.indices == self.population.center_row)
        return int(at[0]) if len(at) else None

    def __getitem__(self, key: Any) -> Any:
        """An int: that row (float64, valid until the next row is read); a slice: a RowSource."""
        if isinstance(key, slice):
            return RowSource(self.population, self.indices[key])
        if self._row is None:
            self._row = np.empty(self.population.dim, dtype=np.float64)
        return self.population.row_into(int(self.indices[int(key)]), self._row)

    def __array__(self, dtype: DTypeLike | None = None, copy: bool | None = None) -> np.ndarray:
        rows = self.population.rows(self.indices)
        return rows if dtype is None else rows.astype(dtype)
