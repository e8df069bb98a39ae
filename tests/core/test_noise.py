import pickle

import numpy as np
import pytest

import blackbox as bb
from blackbox.core import noise as noise_module
from blackbox.core.noise import NoiseTable, default_table_size


def test_table_is_deterministic_from_seed_and_differs_across_seeds():
    a = NoiseTable(2**16, seed=3)
    b = NoiseTable(2**16, seed=3)
    c = NoiseTable(2**16, seed=4)
    assert np.array_equal(a.data, b.data)
    assert not np.array_equal(a.data, c.data)
    assert a.data.dtype == np.float32
    # the values are the stream numpy draws for that seed, not something else
    ref = np.random.default_rng(3).standard_normal(2**16, dtype=np.float32)
    assert np.array_equal(a.data, ref)


def test_chunked_generation_equals_one_draw(monkeypatch):
    monkeypatch.setattr(noise_module, "_GENERATE_CHUNK", 1000)
    chunked = NoiseTable(2**16, seed=9)
    assert np.array_equal(chunked.data, np.random.default_rng(9).standard_normal(2**16, dtype=np.float32))


def test_slice_is_a_readonly_view_without_rng():
    table = NoiseTable.get(2**16, seed=1)
    view = table.slice(100, 50)
    assert view.base is not None and np.shares_memory(view, table.data)
    with pytest.raises(ValueError):
        view[0] = 1.0
    with pytest.raises(IndexError):
        table.slice(2**16 - 10, 50)


def test_get_returns_one_table_per_process_and_pickles_as_key():
    t1 = NoiseTable.get(2**16, seed=5)
    assert NoiseTable.get(2**16, seed=5) is t1
    payload = pickle.dumps(t1)
    assert len(payload) < 200  # only (size, seed) travels, not 256 KB of floats
    assert pickle.loads(payload) is t1


def test_a_table_and_a_population_pickle_with_cloudpickle_as_the_key():
    """cloudpickle (Ray, loky, Dask) pickles a classmethod by value with the lock it uses: the
    table must reduce to a module-level function."""
    import cloudpickle

    t1 = NoiseTable.get(2**16, seed=5)
    payload = cloudpickle.dumps(t1)
    assert len(payload) < 200 and pickle.loads(payload) is t1
    pop = bb.make_strategy("openai-es", dim=5, popsize=4, seed=0).ask()
    assert pickle.loads(cloudpickle.dumps(pop)).table is pop.table


def test_weighted_sum_matches_dense_computation(rng):
    table = NoiseTable.get(2**18, seed=2)
    dim = 70000  # more than one cache chunk
    offsets = rng.integers(0, table.size - dim, 9)
    weights = rng.standard_normal(9).astype(np.float32)
    dense = table.gather(offsets, dim)
    expected = (weights[:, None].astype(np.float64) * dense).sum(axis=0)
    got = table.weighted_sum(weights, offsets, dim)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_large_table_is_cached_on_disk_and_mapped(tmp_path, monkeypatch):
    monkeypatch.setenv("BLACKBOX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(noise_module, "DISK_CACHE_THRESHOLD", 2**16)
    table = NoiseTable(2**17, seed=11)
    files = list(tmp_path.glob("noise-*.npy"))
    assert len(files) == 1
    assert table.mapped and not isinstance(table.data, np.memmap)
    again = NoiseTable(2**17, seed=11)
    assert np.array_equal(again.data, np.random.default_rng(11).standard_normal(2**17, dtype=np.float32))


def test_corrupt_cache_file_is_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("BLACKBOX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(noise_module, "DISK_CACHE_THRESHOLD", 2**16)
    NoiseTable(2**17, seed=12)
    path = next(tmp_path.glob("noise-*.npy"))
    path.write_bytes(path.read_bytes()[:1000])  # truncated
    table = NoiseTable(2**17, seed=12)
    assert np.array_equal(table.data, np.random.default_rng(12).standard_normal(2**17, dtype=np.float32))


def test_default_size_and_bad_sizes():
    assert default_table_size(3) == 2**22
    assert default_table_size(10**6) == 2**25
    assert default_table_size(10**8) == 2**26
    with pytest.raises(bb.ConfigError, match="noise table size must be between"):
        NoiseTable(10)
    with pytest.raises(bb.ConfigError, match="smaller than the dimension 100000"):
        NoiseTable.for_dim(100000, size=2**16)
