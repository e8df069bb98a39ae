import pickle

import numpy as np

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
