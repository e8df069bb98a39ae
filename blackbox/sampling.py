"""Row layouts shared by the Gaussian strategies: mirrored pairs and plain samples from the table,
and the summary sigma of a per-dimension standard deviation."""

from __future__ import annotations

import numpy as np

from .errors import ConfigError
from .noise import NoiseTable

__all__ = ["sample_rows", "check_mirrored_popsize", "root_mean_square"]


def root_mean_square(values: np.ndarray) -> float:
    """``sqrt(mean(values**2))``, the scalar ``sigma`` of a per-dimension stdev, without overflowing
    when the values are beyond 1e154 (their squares would be infinite)."""
    with np.errstate(over="ignore"):
        result = float(np.sqrt(np.mean(values * values)))
    if not np.isfinite(result):
        largest = float(np.max(np.abs(values)))
        result = largest * float(np.sqrt(np.mean((values / largest) ** 2)))
    return result


def check_mirrored_popsize(popsize: int, mirrored: bool) -> None:
    """Mirrored sampling needs pairs: refuse an odd population with a fix in the message."""
    if mirrored and popsize % 2:
        raise ConfigError(
            f"popsize must be even for mirrored sampling, got {popsize}; "
            f"use {popsize + 1} or pass mirrored=False"
        )


def sample_rows(
    table: NoiseTable, rng: np.random.Generator, popsize: int, dim: int, mirrored: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Offsets, signs and seed groups for ``popsize`` rows.

    Mirrored (antithetic) sampling lays pairs out as ``+eps, -eps`` on adjacent rows that share one
    offset and one seed group, so both members of a pair meet the same episode.
    """
    check_mirrored_popsize(popsize, mirrored)
    if mirrored:
        half = table.sample_offsets(rng, popsize // 2, dim)
        offsets = np.repeat(half, 2)
        signs = np.tile(np.array([1, -1], dtype=np.int8), popsize // 2)
        groups = np.arange(popsize, dtype=np.int64) // 2
    else:
        offsets = table.sample_offsets(rng, popsize, dim)
        signs = np.ones(popsize, dtype=np.int8)
        groups = np.arange(popsize, dtype=np.int64)
    return offsets, signs, groups
