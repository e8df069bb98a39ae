"""Row layouts shared by the Gaussian strategies: mirrored pairs and plain samples from the table."""

from __future__ import annotations

import numpy as np

from .errors import ConfigError
from .noise import NoiseTable

__all__ = ["sample_rows", "check_mirrored_popsize"]


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
