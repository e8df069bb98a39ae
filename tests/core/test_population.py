import pickle

import numpy as np
import pytest

import blackbox as bb
from blackbox.core.noise import NoiseTable


def test_dense_rows_equal_center_plus_sigma_times_table_slice():
    es = bb.make_strategy("openai-es", dim=20, popsize=8, sigma=0.3, seed=1, x0=np.arange(20.0))
    pop = es.ask()
    assert len(pop) == 8 and pop.params.shape == (8, 20)
    for i in range(8):
        noise = es.table.slice(pop.offsets[i], 20).astype(np.float64)
        expected = np.arange(20.0) + pop.signs[i] * 0.3 * noise
        np.testing.assert_array_equal(pop.params[i], expected)


def test_mirrored_rows_are_exact_negatives():
    es = bb.make_strategy("openai-es", dim=50, popsize=10, seed=3)
    pop = es.ask()
    assert np.array_equal(pop.offsets[0::2], pop.offsets[1::2])
    assert np.all(pop.signs[0::2] == 1) and np.all(pop.signs[1::2] == -1)
    perturb = pop.params - es.center  # center is zeros: perturbations are exact
    np.testing.assert_array_equal(perturb[0::2], -perturb[1::2])
    assert np.array_equal(pop.groups, np.repeat(np.arange(5), 2))


def test_take_and_with_center_keep_rows():
    es = bb.make_strategy("nes", dim=6, popsize=9, seed=0, x0=np.ones(6))
    pop = es.ask()
    part = pop.take([2, 5, 7])
    np.testing.assert_array_equal(part.params, pop.params[[2, 5, 7]])
    plus = pop.with_center(es.center)
    assert len(plus) == 10
    np.testing.assert_array_equal(plus.params[:9], pop.params)
    np.testing.assert_array_equal(plus.params[9], np.ones(6))
    assert plus.groups[9] == pop.groups.max() + 1


def test_compact_population_pickles_small_and_dense_on_demand():
    table = NoiseTable.get(2**20, seed=0)
    pop = bb.Population.compact(table, np.zeros(10000), np.arange(256) * 7, np.ones(256, np.int8), 0.1)
    _ = pop.params  # materialize: 20 MB
    payload = pickle.dumps(pop)
    assert len(payload) < 100000 + 10 * 256 * 3 + 2000  # the base vector and ints, not the dense rows
    back = pickle.loads(payload)
    np.testing.assert_array_equal(back.params, pop.params)


def test_dense_population():
    params = np.arange(12.0).reshape(4, 3)
    pop = bb.Population.from_dense(params)
    assert not pop.is_compact
    np.testing.assert_array_equal(pop.params, params)
    np.testing.assert_array_equal(pop.take(slice(1, 3)).params, params[1:3])


def test_noise_weighted_sum_combines_mirrored_pairs():
    es = bb.make_strategy("openai-es", dim=30, popsize=6, seed=4)
    pop = es.ask()
    w = np.array([0.5, -0.25, 0.1, 0.3, -0.2, 0.0])
    expected = sum(w[i] * pop.signs[i] * es.table.slice(pop.offsets[i], 30).astype(np.float64) for i in range(6))
    np.testing.assert_allclose(pop.noise_weighted_sum(w), expected, rtol=1e-6, atol=1e-6)


# -- the dense population in the dtype asked for, whole or in blocks ----------------------------

def _populations():
    x0 = np.linspace(-3.0, 3.0, 40)
    for name, options in (("openai-es", {"sigma": 0.3}), ("snes", {}), ("ga", {}), ("cma-es", {})):
        es = bb.make_strategy(name, dim=40, popsize=10, seed=2, x0=x0, **options)
        es.ask()
        es.tell(np.random.default_rng(0).standard_normal(10))  # a moved center (GA: parents and elites)
        yield name, es.ask()


def test_float32_rows_are_built_in_float32_within_a_rounding_of_the_float64_ones():
    for name, pop in _populations():
        d32 = pop.dense(np.float32)
        assert d32.dtype == np.float32 and d32.shape == (10, 40), name
        expected = pop.params.astype(np.float32)
        ulp = np.spacing(np.float32(np.abs(pop.params).max()))  # three float32 roundings at most
        assert np.abs(d32 - expected).max() <= 3 * ulp, name
        if not pop.is_compact:  # a dense population: its float64 rows cast
            np.testing.assert_array_equal(d32, expected)
    assert pop.dense() is pop.params and pop.dense("float64") is pop.params


def test_blocks_cover_the_rows_in_order_in_one_reused_buffer():
    for name, pop in _populations():
        seen, buffers = [], set()
        for where, block in pop.blocks(rows=4, dtype=np.float32):
            assert block.shape == (where.stop - where.start, 40) and block.dtype == np.float32
            buffers.add(block.base is None and id(block) or id(block.base))
            seen.append((where, block.copy()))
        assert [(w.start, w.stop) for w, _ in seen] == [(0, 4), (4, 8), (8, 10)], name
        np.testing.assert_array_equal(np.concatenate([b for _, b in seen]), pop.dense(np.float32))
        assert len(buffers) == 1, name
        float64 = np.concatenate([b for _, b in pop.blocks(rows=3)])
        np.testing.assert_array_equal(float64, pop.params)  # bit for bit


def test_dense_and_blocks_refuse_what_they_cannot_give():
    pop = bb.make_strategy("openai-es", dim=5, popsize=4, seed=0).ask()
    with pytest.raises(bb.ConfigError) as info:
        pop.dense(np.float16)
    assert str(info.value) == ("dtype must be float32 or float64 (the noise is float32), "
                               "got <class 'numpy.float16'>")
    for rows in (0, 2.5, True):
        with pytest.raises(bb.ConfigError) as info:
            next(pop.blocks(rows=rows))
        assert str(info.value) == f"rows must be a positive integer (rows per block), got {rows!r}"
