"""A shared table of Gaussian noise, made once per machine from a seed.

Drawing fresh normals costs far more than reading them (about 13 ns per float32 draw against a
fraction of a nanosecond to stream one through memory), so, as in Salimans et al. 2017, every
perturbation is a slice ``table[offset : offset + dim]`` of one large block of float32 noise.
A population is then a handful of integers per row, and workers exchange offsets, not vectors.

Large tables are cached as a memory-mapped ``.npy`` file named by seed and size, so later runs and
every worker process on the machine map the same pages instead of holding a copy each; each process
verifies the whole file when it maps it, and a damaged one is rebuilt (:mod:`blackbox.core.noise_cache`). Pickling a
table sends only ``(size, seed)``; the receiving process opens its own mapping.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from .._validate import check_int_between, check_nonnegative_int
from ..errors import ConfigError
from . import mapped
from .noise_cache import mapped_table

__all__ = ["NoiseTable", "default_table_size", "cache_dir"]

MIN_TABLE_SIZE = 2**16
MAX_TABLE_SIZE = 2**31
# Tables at least this large are cached on disk and memory-mapped; smaller ones are made in memory.
DISK_CACHE_THRESHOLD = 2**22
# Columns processed at once by weighted_sum: the accumulator chunk stays in cache.
_CHUNK = 32768
# At most this many values are gathered into one temporary block instead of looping over rows.
_GATHER_MAX = 2**18
_GENERATE_CHUNK = 2**22

_tables: dict[tuple[int, int], NoiseTable] = {}
_tables_lock = threading.Lock()


def default_table_size(dim: int) -> int:
    """A table size for ``dim`` parameters: 32 x dim rounded up to a power of two, in [2^22, 2^26]."""
    want = max(int(dim), 1) * 32
    size = 1 << (want - 1).bit_length()
    return int(min(max(size, 2**22), 2**26))


def cache_dir() -> Path:
    """Where noise tables are cached: ``$BLACKBOX_CACHE_DIR`` or ``~/.cache/blackbox/noise``."""
    root = os.environ.get("BLACKBOX_CACHE_DIR")
    if root:
        return Path(root)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "blackbox" / "noise"


class NoiseTable:
    """``size`` float32 standard normals drawn from ``numpy.random.default_rng(seed)``.

    Use :meth:`get` rather than the constructor: it returns the one table of the process for a
    given ``(size, seed)``, mapped from the machine's cache file when the table is large.
    """

    def __init__(self, size: int, seed: int = 0, *, data: np.ndarray | None = None):
        size = check_int_between("noise table size", size, MIN_TABLE_SIZE, MAX_TABLE_SIZE)
        seed = check_nonnegative_int("noise table seed", seed)
        self.size = size
        self.seed = seed
        data = data if data is not None else _load_or_generate(size, seed)
        #: The values as a plain ndarray (a view of the mapping when cached on disk): slicing a
        #: np.memmap subclass costs microseconds per slice, a plain view nanoseconds.
        self.data: np.ndarray = data.view(np.ndarray)
        self.data.flags.writeable = False
        self.mapped = isinstance(data, np.memmap)
        self._window_views: dict[int, np.ndarray] = {}

    @classmethod
    def get(cls, size: int, seed: int = 0) -> NoiseTable:
        """The process-wide table for ``(size, seed)``, made or mapped on first use."""
        key = (check_int_between("noise table size", size, MIN_TABLE_SIZE, MAX_TABLE_SIZE),
               check_nonnegative_int("noise table seed", seed))
        with _tables_lock:
            table = _tables.get(key)
            if table is None:
                table = _tables[key] = cls(*key)
            return table

    @classmethod
    def for_dim(cls, dim: int, seed: int = 0, size: int | None = None) -> NoiseTable:
        """The table a strategy of ``dim`` parameters uses by default (``size`` overrides)."""
        if size is not None:
            size = check_int_between("noise table size", size, MIN_TABLE_SIZE, MAX_TABLE_SIZE)
        size = default_table_size(dim) if size is None else size
        if size < int(dim):
            raise ConfigError(
                f"noise table size {size} is smaller than the dimension {dim}; "
                f"pass noise_size >= {dim} (default for this dim: {default_table_size(dim)})"
            )
        return cls.get(size, seed)

    def __reduce__(self) -> tuple[Callable[[int, int], NoiseTable], tuple[int, int]]:
        return (_shared_table, (self.size, self.seed))

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        where = "mmap" if self.mapped else "memory"
        return f"NoiseTable(size={self.size}, seed={self.seed}, {where})"

    def _windows(self, dim: int) -> np.ndarray:
        """Zero-copy ``(size - dim + 1, dim)`` view whose row k is ``table[k : k + dim]`` (made once per dim:
        building the view costs tens of microseconds, a small generation's whole gather)."""
        windows = self._window_views.get(dim)
        if windows is None:
            windows = self._window_views[dim] = np.lib.stride_tricks.sliding_window_view(self.data, dim)
        return windows

    # -- sampling -------------------------------------------------------------------------
    def sample_offsets(self, rng: np.random.Generator, count: int, dim: int) -> np.ndarray:
        """``count`` uniform offsets at which a slice of length ``dim`` fits in the table."""
        if dim > self.size:
            raise ConfigError(f"dimension {dim} exceeds the noise table size {self.size}")
        return rng.integers(0, self.size - dim + 1, size=count, dtype=np.int64)

    def slice(self, offset: int, dim: int) -> np.ndarray:
        """The read-only view ``table[offset : offset + dim]`` (no copy)."""
        offset = int(offset)
        if offset < 0 or offset + dim > self.size:
            raise IndexError(f"noise offset {offset} + dim {dim} is outside a table of {self.size}")
        return self.data[offset : offset + dim]

    def gather(self, offsets: Sequence[int] | np.ndarray, dim: int) -> np.ndarray:
        """The slices at ``offsets`` stacked into a new ``(len(offsets), dim)`` float32 array (one of
        more than ``_GATHER_MAX`` values on a reused mapping, :func:`~blackbox.core.mapped.empty`)."""
        offsets = np.asarray(offsets, dtype=np.int64)
        if len(offsets) and (offsets.min() < 0 or offsets.max() + dim > self.size):
            raise IndexError(f"a noise offset + dim {dim} falls outside a table of {self.size}")
        if len(offsets) * dim <= _GATHER_MAX:
            gathered: np.ndarray = self._windows(dim)[offsets]  # numpy leaves the fancy index untyped
            return gathered
        out = mapped.empty((len(offsets), dim), np.float32)
        for i, offset in enumerate(offsets.tolist()):
            out[i] = self.data[offset : offset + dim]
        return out

    def weighted_sum(
        self, weights: np.ndarray, offsets: np.ndarray, dim: int, out: np.ndarray | None = None
    ) -> np.ndarray:
        """``sum_i weights[i] * table[offsets[i] : offsets[i] + dim]`` in float32, no dense matrix.

        Columns are processed in cache-sized chunks so the accumulator never leaves the cache and
        each slice is read from memory exactly once.
        """
        weights = np.asarray(weights, dtype=np.float32)
        offsets = np.asarray(offsets, dtype=np.int64)
        if weights.shape != offsets.shape or weights.ndim != 1:
            raise ValueError(f"weights {weights.shape} and offsets {offsets.shape} must be equal 1-d")
        if len(offsets) and (offsets.min() < 0 or offsets.max() + dim > self.size):
            raise IndexError(f"a noise offset + dim {dim} falls outside a table of {self.size}")
        acc = np.zeros(dim, dtype=np.float32) if out is None else out
        acc[...] = 0.0
        if len(offsets) * dim <= _GATHER_MAX:
            # Small case: one gather, then a row-by-row reduction (numpy adds rows in order).
            if len(offsets):
                block = self._windows(dim)[offsets]
                np.multiply(block, weights[:, None], out=block)
                np.sum(block, axis=0, out=acc)
            return acc
        pairs = [(o, w) for o, w in zip(offsets.tolist(), weights) if w != 0.0]
        data = self.data
        tmp = np.empty(min(dim, _CHUNK), dtype=np.float32)
        for start in range(0, dim, _CHUNK):
            stop = min(start + _CHUNK, dim)
            acc_chunk = acc[start:stop]
            tmp_chunk = tmp[: stop - start]
            for offset, weight in pairs:
                np.multiply(data[offset + start : offset + stop], weight, out=tmp_chunk)
                np.add(acc_chunk, tmp_chunk, out=acc_chunk)
        return acc


    def weighted_sums(
        self, weights: np.ndarray, square_weights: np.ndarray, offsets: np.ndarray, dim: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(sum_i w_i e_i, sum_i v_i e_i**2)`` with ``e_i = table[offsets[i] : offsets[i] + dim]``.

        Both sums in one pass (float32), each slice read from memory once: what diagonal
        strategies (PGPE, SNES, sep-CMA-ES, CEM) need to update a mean and per-dimension variances.
        """
        weights = np.asarray(weights, dtype=np.float32)
        square_weights = np.asarray(square_weights, dtype=np.float32)
        offsets = np.asarray(offsets, dtype=np.int64)
        if not (weights.shape == square_weights.shape == offsets.shape) or weights.ndim != 1:
            raise ValueError(
                f"weights {weights.shape}, square_weights {square_weights.shape} and offsets "
                f"{offsets.shape} must be equal 1-d"
            )
        if len(offsets) and (offsets.min() < 0 or offsets.max() + dim > self.size):
            raise IndexError(f"a noise offset + dim {dim} falls outside a table of {self.size}")
        linear = np.zeros(dim, dtype=np.float32)
        squares = np.zeros(dim, dtype=np.float32)
        if len(offsets) * dim <= _GATHER_MAX:
            if len(offsets):
                block = self._windows(dim)[offsets]
                np.sum(block * weights[:, None], axis=0, out=linear)
                np.multiply(block, block, out=block)
                np.multiply(block, square_weights[:, None], out=block)
                np.sum(block, axis=0, out=squares)
            return linear, squares
        triples = [(o, w, v) for o, w, v in zip(offsets.tolist(), weights, square_weights) if w != 0.0 or v != 0.0]
        data = self.data
        tmp = np.empty(min(dim, _CHUNK), dtype=np.float32)
        for start in range(0, dim, _CHUNK):
            stop = min(start + _CHUNK, dim)
            lin_chunk, sq_chunk, tmp_chunk = linear[start:stop], squares[start:stop], tmp[: stop - start]
            for offset, weight, square_weight in triples:
                noise = data[offset + start : offset + stop]
                if weight != 0.0:
                    np.multiply(noise, weight, out=tmp_chunk)
                    np.add(lin_chunk, tmp_chunk, out=lin_chunk)
                if square_weight != 0.0:
                    np.multiply(noise, square_weight, out=tmp_chunk)
                    np.multiply(tmp_chunk, noise, out=tmp_chunk)
                    np.add(sq_chunk, tmp_chunk, out=sq_chunk)
        return linear, squares


def _shared_table(size: int, seed: int) -> NoiseTable:
    """``NoiseTable.get`` as a module-level function: what a pickled table calls when loaded.
    (cloudpickle, which Ray and loky use, would pickle a classmethod by value, with the lock
    it refers to, and fail.)"""
    return NoiseTable.get(size, seed)


def _generate_into(out: np.ndarray, seed: int) -> None:
    """Fill ``out`` with the table's values, chunk by chunk (same stream as one big draw)."""
    rng = np.random.default_rng(seed)
    for start in range(0, len(out), _GENERATE_CHUNK):
        stop = min(start + _GENERATE_CHUNK, len(out))
        rng.standard_normal(stop - start, dtype=np.float32, out=out[start:stop])


def _probe(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(256, dtype=np.float32)


def _load_or_generate(size: int, seed: int) -> np.ndarray:
    if size < DISK_CACHE_THRESHOLD or os.environ.get("BLACKBOX_NOISE_CACHE", "1") == "0":
        data = np.empty(size, dtype=np.float32)
        _generate_into(data, seed)
        return data
    return mapped_table(cache_dir(), size, seed, lambda out: _generate_into(out, seed), _probe(seed))
