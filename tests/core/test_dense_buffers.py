"""A population's whole dense matrix reuses a kept buffer, bounded by a limit (core/mapped.py: large)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from blackbox.core import mapped
from blackbox.core.noise import NoiseTable
from blackbox.core.population import Population
from blackbox.errors import ConfigError

DIM, ROWS = 50_000, 100  # 40 MB of float64: above mapped.KEEP_MAX_BYTES


@pytest.fixture(autouse=True)
def fresh_pools():
    mapped._large_pools.__dict__.pop("pool", None)
    yield
    mapped.set_dense_limit(None)
    mapped._large_pools.__dict__.pop("pool", None)


def _population(seed: int, rows: int = ROWS) -> Population:
    table = NoiseTable.get(2**17, 3)
    rng = np.random.default_rng(seed)
    offsets = rng.integers(0, table.size - DIM, rows)
    signs = np.where(np.arange(rows) % 2 == 0, 1, -1).astype(np.int8)
    return Population.compact(table, rng.standard_normal((1, DIM)), offsets, signs, 0.05)


def _buffers() -> list:
    return mapped._large_pools.__dict__.get("pool", [])


def test_params_reuses_the_buffer_of_a_matrix_no_one_holds():
    first = _population(0)
    rows = first.params
    assert rows.nbytes > mapped.KEEP_MAX_BYTES and len(_buffers()) == 1
    del first, rows
    gc.collect()
    second = _population(1)
    again = second.params
    assert len(_buffers()) == 1 and np.shares_memory(again, np.frombuffer(_buffers()[0].buffer, np.uint8))
    assert np.array_equal(again, second.rows(np.arange(ROWS)))


def test_a_kept_params_is_never_overwritten_and_two_buffers_take_turns():
    kept = _population(0).params  # the user keeps last generation's matrix
    snapshot = kept.copy()
    fresh = _population(1).params
    assert not np.shares_memory(kept, fresh) and np.array_equal(kept, snapshot)
    del kept
    gc.collect()
    third = _population(2).params  # the first buffer is free again: reused, no third one made
    assert len(_buffers()) == 2 and not np.shares_memory(third, fresh)
    assert np.array_equal(third, _population(2).rows(np.arange(ROWS)))


def test_float32_dense_reuses_a_buffer_too():
    first = _population(0, 2 * ROWS).dense(np.float32)  # 40 MB of float32
    first[0, 0] = 0.0  # writable
    del first
    gc.collect()
    again = _population(1, 2 * ROWS)
    rows = again.dense(np.float32)
    assert len(_buffers()) == 1 and rows.dtype == np.float32
    assert np.array_equal(rows, np.concatenate([block.copy() for _, block in again.blocks(rows=64, dtype=np.float32)]))


def test_a_limit_smaller_than_one_population_says_how_much_is_needed():
    mapped.set_dense_limit(10**7)
    with pytest.raises(ConfigError) as error:
        _ = _population(0).params
    assert str(error.value) == (
        "population.params (100 x 50000 float64) needs 40000000 bytes (38.1 MiB) but the dense buffer limit is "
        "10000000 bytes (9.5 MiB); raise it with blackbox.core.mapped.set_dense_limit(40000000) or more, "
        "or take the rows a block at a time with population.blocks(rows=...)"
    )
    mapped.set_dense_limit(40_000_000)
    assert _population(0).params.shape == (ROWS, DIM)


def test_free_buffers_beyond_the_limit_go_back():
    mapped.set_dense_limit(40_000_000)
    a, b = _population(0).params, _population(1).params
    assert len(_buffers()) == 2
    del a, b
    gc.collect()
    _ = _population(2).params  # reuses one; the other free one would exceed the limit with it kept
    assert len(_buffers()) == 1


def test_under_the_default_limit_a_larger_matrix_gets_a_buffer_of_its_own(monkeypatch):
    monkeypatch.setattr(mapped, "_default_dense_limit", lambda: 10**7)
    rows = _population(0).params
    assert rows.shape == (ROWS, DIM) and not _buffers()


@pytest.mark.parametrize("bad", [-1, 2.5, "1GB", True])
def test_a_bad_limit_is_one_line(bad):
    with pytest.raises(ConfigError) as error:
        mapped.set_dense_limit(bad)
    assert str(error.value) == f"dense buffer limit must be a number of bytes >= 0 or None (the default), got {bad!r}"
