"""Large short-lived arrays on anonymous memory mappings that are kept and reused, never on the heap.

A generation's dense parameter rows (a worker's chunk of 129 CartPole rows: 4.8 MB of float64) are
allocated and freed once a generation, or once a batch. glibc serves such blocks from a fresh
mapping only until it frees the first one; it then raises its mmap threshold to that size and takes
later ones from the heap, where they fall among small objects. The heap keeps its high-water mark,
and where the blocks fall changes with the data and the timing: a worker's resident memory stepped
up by one block (4.9 MB) after 20 generations of CartPole, and a serial run's by 8.8 MB after 180,
the live memory unchanged. :func:`empty` gives such arrays a mapping of their own, kept (per
thread) once the array and all its views are gone and handed to the next array that fits (mappings
are made a power of two in size, of which only the touched pages become resident): the heap holds
only small objects, and the pages, once touched, stay mapped, as the heap's would.

Fixing glibc's threshold instead (``mallopt``) would send every large temporary a problem makes to
fresh mappings: torch's batched MNIST forward ran 1.45x slower that way; fresh mappings for our own
arrays alone cost 1.38x on a 100,000-dimension quadratic (page faults every batch).

A population's whole dense matrix (``population.params``: 2 GB of float64 at a million dimensions
and 256 rows) is above that range. Made afresh every generation, its pages were faulted in and
zeroed by the kernel each time (32 s of system time in a 150 s user loop). :func:`large` keeps such
buffers too, once their arrays and all views are gone, up to :func:`dense_limit` bytes of buffers
per thread, and hands them to the next array that fits. A buffer is reused only when nothing
refers to its array any more, so an array a user keeps (last generation's ``params``) is never
overwritten: a loop that holds one generation's matrix while the next is built uses two buffers in
turn, the peak it had before, and no new mapping after the second generation.
"""

from __future__ import annotations

import math
import mmap
import os
import threading
import weakref
from collections.abc import Callable

import numpy as np
from numpy.typing import DTypeLike

from ..errors import ConfigError

__all__ = ["MAPPED_MIN_BYTES", "KEEP_MAX_BYTES", "KEEP_FREE", "empty", "large", "dense_limit", "set_dense_limit"]

#: Arrays of at least this many bytes get a mapping; smaller ones come from malloc.
MAPPED_MIN_BYTES = 1 << 20

#: Larger arrays get a mapping of their own that goes back to the system with them, as glibc does
#: above its largest threshold (32 MB): keeping one would hold that much for the process's life.
KEEP_MAX_BYTES = 32 << 20

#: Mappings whose arrays are gone that a thread keeps for later arrays (the largest are kept).
KEEP_FREE = 4

#: Unkept mappings of at least this size ask for transparent huge pages (numpy's own threshold), as
#: each is touched afresh. Kept ones do not: reused, they fault once, and 4 KB pages keep their
#: resident part to what their arrays touched (a huge page makes a 2 MB region resident at a touch).
HUGE_PAGES_MIN_BYTES = 1 << 22

_FLAGS = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)


class _Mapping:
    """An anonymous mapping and a weak reference to the array that uses it (None: free)."""

    def __init__(self, nbytes: int, huge_pages: bool = False):
        self.buffer = mmap.mmap(-1, nbytes, flags=_FLAGS) if _FLAGS else mmap.mmap(-1, nbytes)
        if huge_pages and nbytes >= HUGE_PAGES_MIN_BYTES and hasattr(mmap, "MADV_HUGEPAGE"):
            try:  # as numpy does for its own large arrays: a fault maps 2 MB instead of 4 KB
                self.buffer.madvise(mmap.MADV_HUGEPAGE)
            except OSError:  # transparent huge pages not built into this kernel
                pass
        self.user: weakref.ref[np.ndarray] | None = None

    def free(self) -> bool:
        return self.user is None or self.user() is None


_pools = threading.local()


def _take(pools: threading.local, nbytes: int,
          make: Callable[[], _Mapping]) -> tuple[list[_Mapping], list[_Mapping], _Mapping]:
    """This thread's pool in ``pools``, its free mappings, and the one to use for ``nbytes``: the
    smallest free mapping that fits, else a new one from ``make`` (added to the pool)."""
    pool: list[_Mapping] = pools.__dict__.setdefault("pool", [])
    free = [m for m in pool if m.free()]
    fits = [m for m in free if len(m.buffer) >= nbytes]
    if fits:
        return pool, free, min(fits, key=lambda m: len(m.buffer))
    mapping = make()
    pool.append(mapping)
    return pool, free, mapping


def empty(shape: tuple[int, ...], dtype: DTypeLike) -> np.ndarray:
    """An uninitialised writable array, like ``np.empty``; on an anonymous mapping, reused from an
    earlier array that is gone, when it takes from :data:`MAPPED_MIN_BYTES` to :data:`KEEP_MAX_BYTES`."""
    dtype = np.dtype(dtype)
    count = math.prod(shape)
    nbytes = count * dtype.itemsize
    if nbytes < MAPPED_MIN_BYTES:
        return np.empty(shape, dtype=dtype)
    if nbytes > KEEP_MAX_BYTES:
        return np.frombuffer(_Mapping(nbytes, huge_pages=True).buffer, dtype=dtype, count=count).reshape(shape)
    # A new mapping is a power of two: the next array a little larger (a chunk of 129 rows after 128)
    # fits too. Only the pages an array touches become resident; the rest is address space.
    pool, free, mapping = _take(_pools, nbytes, lambda: _Mapping(1 << (nbytes - 1).bit_length()))
    # Keep the largest free mappings; the others go back to the system once no array uses them.
    spare = sorted((m for m in free if m is not mapping), key=lambda m: len(m.buffer), reverse=True)
    for extra in spare[KEEP_FREE:]:
        pool.remove(extra)
    flat = np.frombuffer(mapping.buffer, dtype=dtype, count=count)
    mapping.user = weakref.ref(flat)  # every view of the result keeps ``flat`` alive
    return flat.reshape(shape)


# -- whole dense populations ------------------------------------------------------------------------


def _default_dense_limit() -> int:
    """A quarter of the machine's memory, at most 8 GiB (two float64 matrices of 1e6 x 256 rows)."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        physical = 16 << 30
    return int(min(8 << 30, physical // 4))


_dense_limit: int | None = None  # None: the default, and an array above it is no error


def dense_limit() -> int:
    """The most bytes of dense-population buffers, in use or free, a thread keeps for reuse (:func:`large`)."""
    return _default_dense_limit() if _dense_limit is None else _dense_limit


def set_dense_limit(nbytes: int | None) -> None:
    """Bound the freed dense-population buffers a thread keeps (``None``: back to the default, a
    quarter of the machine's memory, at most 8 GiB). Under a limit set here, asking for one array
    larger than it (``population.params``) is a :class:`~blackbox.errors.ConfigError` saying how
    much is needed; under the default such an array gets a mapping of its own, given back with it."""
    global _dense_limit
    if nbytes is not None and (isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes < 0):
        raise ConfigError(f"dense buffer limit must be a number of bytes >= 0 or None (the default), got {nbytes!r}")
    _dense_limit = None if nbytes is None else int(nbytes)
    _large_pools.__dict__.pop("pool", None)  # free buffers kept under the old limit go back


def _size(nbytes: int) -> str:
    return f"{nbytes / 2**30:.2f} GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:.1f} MiB"


_large_pools = threading.local()


def large(shape: tuple[int, ...], dtype: DTypeLike, what: str = "this array") -> np.ndarray:
    """An uninitialised writable array like :func:`empty`; one above :data:`KEEP_MAX_BYTES` (a
    population's whole dense matrix) reuses a freed buffer of this thread that fits, and its own
    buffer is kept for reuse once it and its views are gone: the buffers a thread holds, in use or
    free, stay within :func:`dense_limit` bytes, the largest free ones kept first. ``what`` names the array in the message of a limit too small for it."""
    dtype = np.dtype(dtype)
    count = math.prod(shape)
    nbytes = count * dtype.itemsize
    if nbytes <= KEEP_MAX_BYTES:
        return empty(shape, dtype)
    limit = dense_limit()
    if nbytes > limit:
        if _dense_limit is not None:
            raise ConfigError(
                f"{what} needs {nbytes} bytes ({_size(nbytes)}) but the dense buffer limit is {limit} bytes "
                f"({_size(limit)}); raise it with blackbox.core.mapped.set_dense_limit({nbytes}) or more, "
                f"or take the rows a block at a time with population.blocks(rows=...)"
            )
        return np.frombuffer(_Mapping(nbytes, huge_pages=True).buffer, dtype=dtype, count=count).reshape(shape)
    # A new mapping is exactly the size asked for (a generation's matrix is the same size as the last
    # one's), on huge pages: the first touch of each 2 MB faults once, and the buffer is then reused.
    pool, free, mapping = _take(_large_pools, nbytes, lambda: _Mapping(nbytes, huge_pages=True))
    # Buffers in use count against the limit first; then the largest free ones that still fit are
    # kept, and the others go back to the system.
    kept = len(mapping.buffer) + sum(len(m.buffer) for m in pool if m is not mapping and m not in free)
    for spare in sorted((m for m in free if m is not mapping), key=lambda m: len(m.buffer), reverse=True):
        if kept + len(spare.buffer) <= limit:
            kept += len(spare.buffer)
        else:
            pool.remove(spare)
    flat = np.frombuffer(mapping.buffer, dtype=dtype, count=count)
    mapping.user = weakref.ref(flat)
    return flat.reshape(shape)
