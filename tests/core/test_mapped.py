"""Large short-lived arrays live on reused anonymous mappings, never on the heap (core/mapped.py)."""

from __future__ import annotations

import ctypes
import gc
import subprocess
import sys
import threading

import numpy as np
import pytest

from blackbox.core import mapped
from blackbox.core.noise import NoiseTable
from blackbox.core.population import Population
from tests.helpers import subprocess_env


@pytest.fixture(autouse=True)
def fresh_pool():
    mapped._pools.__dict__.pop("pool", None)
    yield
    mapped._pools.__dict__.pop("pool", None)


def _mapping_of(array: np.ndarray):
    return [m for m in mapped._pools.pool if np.shares_memory(array, np.frombuffer(m.buffer, dtype=np.uint8))]


def test_small_arrays_come_from_malloc_and_large_ones_from_a_mapping():
    small = mapped.empty((10, 10), np.float64)
    assert small.flags.owndata and "pool" not in mapped._pools.__dict__
    large = mapped.empty((300, 1000), np.float32)
    assert large.shape == (300, 1000) and large.dtype == np.float32 and large.flags.writeable
    assert len(_mapping_of(large)) == 1
    assert len(mapped._pools.pool[0].buffer) == 2**21  # 1.2 MB rounded up to a power of two


def test_a_mapping_is_reused_once_the_array_and_its_views_are_gone():
    first = mapped.empty((129, 4610), np.float64)
    first[:] = 1.0
    view = first[3:5]
    del first
    gc.collect()
    second = mapped.empty((128, 4610), np.float64)  # the view still holds the first mapping
    assert not np.shares_memory(second, view) and np.all(view == 1.0)
    del second, view
    gc.collect()
    third = mapped.empty((129, 4610), np.float64)  # both free now: one of them is reused, none made
    assert len(_mapping_of(third)) == 1 and len(mapped._pools.pool) == 2


def test_the_next_slightly_larger_array_fits_the_same_mapping():
    a = mapped.empty((128, 4610), np.float64)
    del a
    b = mapped.empty((129, 4610), np.float64)
    assert len(mapped._pools.pool) == 1 and len(_mapping_of(b)) == 1


def test_at_most_keep_free_spare_mappings_are_kept_largest_first():
    arrays = [mapped.empty((2**18 * (i + 1),), np.float32) for i in range(mapped.KEEP_FREE + 3)]
    assert len(mapped._pools.pool) == mapped.KEEP_FREE + 3
    sizes = sorted(len(m.buffer) for m in mapped._pools.pool)
    del arrays
    gc.collect()
    kept = mapped.empty((2**18,), np.float32)  # takes the smallest (1 MB); the 4 largest others stay
    assert sizes == [2**20, 2**21, 2**22, 2**22, 2**23, 2**23, 2**23]
    assert sorted(len(m.buffer) for m in mapped._pools.pool) == [2**20, 2**22, 2**23, 2**23, 2**23]
    assert len(_mapping_of(kept)) == 1


def test_arrays_above_keep_max_bytes_are_never_kept():
    big = mapped.empty((mapped.KEEP_MAX_BYTES // 8 + 1,), np.float64)
    big[-1] = 2.0
    assert "pool" not in mapped._pools.__dict__ and big[-1] == 2.0


def test_each_thread_has_its_own_mappings():
    here = mapped.empty((300, 1000), np.float32)
    there: list[np.ndarray] = []
    thread = threading.Thread(target=lambda: there.append(mapped.empty((300, 1000), np.float32)))
    thread.start()
    thread.join()
    assert not np.shares_memory(here, there[0]) and len(mapped._pools.pool) == 1


def test_population_rows_are_built_on_a_mapping():
    table = NoiseTable.get(2**16, 3)
    dim, n = 3000, 129
    offsets = np.random.default_rng(0).integers(0, table.size - dim, n)
    signs = np.where(np.arange(n) % 2 == 0, 1, -1).astype(np.int8)
    population = Population.compact(table, np.zeros((1, dim)), offsets, signs, 0.05)
    rows = population.rows(np.arange(n))
    assert len(_mapping_of(rows)) == 1


_HEAP_PROBE = """
import ctypes, sys
import numpy as np
from blackbox.core import mapped

class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = Info
make = mapped.empty if sys.argv[1] == "mapped" else (lambda shape, dtype: np.empty(shape, dtype))
before = libc.mallinfo2().arena
for rows in (128, 129, 128, 129, 128):
    chunk = make((rows, 4610), np.float64)
    chunk[:] = 1.0
    del chunk
print(libc.mallinfo2().arena - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallinfo2")
@pytest.mark.parametrize("make", ["mapped", "np.empty"])
def test_chunks_of_rows_leave_the_heap_as_it_was(make):
    """In a fresh process: after glibc frees the first 4.8 MB block it raises its mmap threshold, and
    np.empty's later blocks grow the heap (kept after they are freed); mapped.empty's never do."""
    if not hasattr(ctypes.CDLL("libc.so.6"), "mallinfo2"):
        pytest.skip("not glibc 2.33+")
    done = subprocess.run([sys.executable, "-c", _HEAP_PROBE, make], capture_output=True, text=True,
                          env=subprocess_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    growth = int(done.stdout.split()[-1])
    if make == "mapped":
        assert growth < 2**20
    else:  # what the mappings avoid, shown on the same probe
        assert growth >= 4_000_000
