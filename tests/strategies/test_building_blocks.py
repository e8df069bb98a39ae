"""ClipUp, NES utilities, rank weights, the fused noise sums, per-dim sigma checks, sigma schedules."""

import pickle

import numpy as np
import pytest

import blackbox as bb
from blackbox._validate import check_stdev
from blackbox.core import noise as noise_module
from blackbox.strategies.optim import ClipUp, make_optimizer
from blackbox.strategies.shaping import get_shaping, nes_utilities, nes_utility_values, rank_weights

# -- ClipUp ---------------------------------------------------------------------------------


def test_clipup_matches_the_paper():
    """v <- clip(m v + lr g / ||g||, max_speed); theta <- theta + v (Toklu et al. 2020, Alg. 1)."""
    opt = make_optimizer("clipup", 3, lr=0.1, momentum=0.9)
    assert isinstance(opt, ClipUp) and opt.max_speed == pytest.approx(0.2)
    theta, v, ref = np.zeros(3), np.zeros(3), np.zeros(3)
    rng = np.random.default_rng(0)
    for _ in range(12):
        g = rng.standard_normal(3) * 100
        theta, norm = opt.step(theta, g)
        v = 0.9 * v + 0.1 * g / np.linalg.norm(g)
        if np.linalg.norm(v) > 0.2:
            v = v * 0.2 / np.linalg.norm(v)
        ref = ref + v
        assert norm == pytest.approx(np.linalg.norm(v))
    np.testing.assert_allclose(theta, ref, rtol=1e-12)


def test_clipup_step_ignores_gradient_scale_and_is_capped():
    a, b = make_optimizer("clipup", 2, lr=0.5), make_optimizer("clipup", 2, lr=0.5)
    g = np.array([3.0, 4.0])
    for _ in range(30):
        ta, na = a.step(np.zeros(2), g)
        tb, nb = b.step(np.zeros(2), g * 1e6)
    np.testing.assert_allclose(ta, tb)
    assert na == pytest.approx(1.0)  # max_speed = 2 lr, reached after a few steps in one direction
    np.testing.assert_allclose(ta / na, g / 5)


def test_clipup_zero_gradient_only_decays_and_state_round_trips():
    a = make_optimizer("clipup", 2, lr=0.1, momentum=0.5, max_speed=1.0)
    theta, _ = a.step(np.zeros(2), np.array([1.0, 0.0]))
    theta, norm = a.step(theta, np.zeros(2))
    assert norm == pytest.approx(0.05) and np.all(np.isfinite(theta))
    b = make_optimizer("clipup", 2, lr=0.1, momentum=0.5, max_speed=1.0)
    b.load_state_dict(pickle.loads(pickle.dumps(a.state_dict())))
    g = np.array([0.3, -2.0])
    np.testing.assert_array_equal(a.step(theta, g)[0], b.step(theta, g)[0])


@pytest.mark.parametrize("kwargs,message", [
    (dict(momentum=1.0), "momentum must be in \\[0, 1\\), got 1.0"),
    (dict(max_speed=0.0), "max_speed must be a finite number > 0, got 0.0"),
])
def test_clipup_bad_settings(kwargs, message):
    with pytest.raises(bb.ConfigError, match=message):
        make_optimizer("clipup", 2, lr=0.1, **kwargs)


def test_openai_es_accepts_clipup():
    es = bb.make_strategy("openai-es", dim=3, optimizer="clipup", lr=0.05, seed=0)
    for _ in range(200):
        x = es.ask().params
        es.tell(-np.sum((x - 1) ** 2, axis=1))
    assert np.sum((es.center - 1) ** 2) < 0.05


# -- NES utilities and rank weights ----------------------------------------------------------


def test_nes_utilities_are_the_papers():
    """u_k = max(0, log(n/2 + 1) - log k) / sum_j max(0, log(n/2 + 1) - log j) - 1/n."""
    for n in (2, 5, 10, 17, 100):
        k = np.arange(1, n + 1)
        raw_u = np.maximum(0, np.log(n / 2 + 1) - np.log(k))
        np.testing.assert_allclose(nes_utility_values(n), raw_u / raw_u.sum() - 1 / n, rtol=1e-12)
        assert abs(nes_utility_values(n).sum()) < 1e-12
        assert np.all(np.diff(nes_utility_values(n)) <= 0)
    np.testing.assert_allclose(nes_utility_values(10)[:3], [0.3295440, 0.1633737, 0.0661703], atol=1e-7)


def test_nes_utilities_follow_ranks_ties_and_nan():
    f = np.array([3.0, 1.0, 2.0, np.nan, 2.0])
    u = nes_utilities(f)
    table = nes_utility_values(5)
    assert u[0] == table[0] and u[3] == table[4]
    assert u[2] == u[4] == pytest.approx((table[1] + table[2]) / 2)
    np.testing.assert_array_equal(get_shaping("nes")(f), u)
    for n in range(1, 30):
        np.testing.assert_array_equal(nes_utilities(np.full(n, 4.0)), np.zeros(n))
    np.testing.assert_array_equal(nes_utilities(np.full(3, np.nan)), np.zeros(3))


def test_rank_weights_do_not_depend_on_row_order():
    rng = np.random.default_rng(0)
    f = rng.integers(0, 5, 20).astype(float)
    values = np.sort(rng.standard_normal(20))[::-1]
    w = rank_weights(f, values)
    perm = rng.permutation(20)
    np.testing.assert_allclose(rank_weights(f[perm], values), w[perm], rtol=0, atol=1e-15)
    assert w.sum() == pytest.approx(values.sum())
    with pytest.raises(ValueError, match="need one value per row"):
        rank_weights(f, values[:3])


# -- the fused noise sums --------------------------------------------------------------------


@pytest.mark.parametrize("dim", [7, 40_000], ids=["gather", "chunked"])
def test_noise_weighted_sums_match_dense(dim, monkeypatch):
    monkeypatch.setattr(noise_module, "_CHUNK", 4096)  # several chunks, one partial
    table = bb.NoiseTable.get(2**17, 3)
    rng = np.random.default_rng(0)
    n = 10
    offsets = np.repeat(table.sample_offsets(rng, n // 2, dim), 2)  # mirrored pairs share an offset
    signs = np.tile(np.array([1, -1], dtype=np.int8), n // 2)
    signs[4] = 0  # an unperturbed row adds nothing
    pop = bb.Population.compact(table, np.zeros(dim), offsets, signs, 1.0)
    w, v = rng.standard_normal(n), rng.standard_normal(n)
    lin, sq = pop.noise_weighted_sums(w, v)
    eps = table.gather(offsets, dim).astype(np.float64)
    live = signs != 0
    np.testing.assert_allclose(lin, (w * signs)[live] @ eps[live], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(sq, v[live] @ eps[live] ** 2, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(lin, pop.noise_weighted_sum(w), rtol=1e-5, atol=1e-5)
    assert lin.dtype == sq.dtype == np.float32


def test_noise_weighted_sums_refuse_dense_and_bad_shapes():
    with pytest.raises(ValueError, match="needs a compact population"):
        bb.Population.from_dense(np.zeros((2, 3))).noise_weighted_sums(np.ones(2), np.ones(2))
    table = bb.NoiseTable.get(2**16, 0)
    with pytest.raises(ValueError, match="must be equal 1-d"):
        table.weighted_sums(np.ones(2), np.ones(3), np.zeros(2, dtype=np.int64), 5)
    with pytest.raises(IndexError, match="falls outside a table"):
        table.weighted_sums(np.ones(1), np.ones(1), np.array([2**16 - 2]), 5)


def test_check_stdev():
    np.testing.assert_array_equal(check_stdev("sigma", 0.5, 3), [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(check_stdev("sigma", np.float32(2), 2), [2.0, 2.0])
    np.testing.assert_array_equal(check_stdev("sigma", [1, 2], 2), [1.0, 2.0])
    with pytest.raises(bb.ConfigError, match="sigma must be finite; entry 1 is inf"):
        check_stdev("sigma", [1, np.inf], 2)


# -- sigma schedules -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["openai-es", "nes", "ga", "ars"])
def test_sigma_decays_to_its_floor_and_shows_in_records(name):
    problem = bb.make_problem("sphere", dim=4)
    strategy = bb.make_strategy(name, dim=4, sigma=0.1, sigma_decay=0.5, sigma_min=0.01, seed=0,
                                popsize=8)
    result = bb.optimize(strategy, problem, generations=6)
    assert [r.sigma for r in result.records] == [0.05, 0.025, 0.0125, 0.01, 0.01, 0.01]
    pop = strategy.ask()
    assert pop.sigma == 0.01


@pytest.mark.parametrize("name", ["openai-es", "nes", "ga", "ars"])
def test_sigma_schedule_survives_state_dict(name):
    def gens(strategy, k):
        for _ in range(k):
            x = strategy.ask().params
            strategy.tell(-np.sum(x * x, axis=1))

    a = bb.make_strategy(name, dim=3, sigma=0.2, sigma_decay=0.9, seed=1, popsize=8)
    gens(a, 5)
    b = bb.make_strategy(name, dim=3, sigma=0.2, sigma_decay=0.9, seed=2, popsize=8)
    b.load_state_dict(a.state_dict())
    gens(a, 5)
    gens(b, 5)
    assert a.sigma == b.sigma == pytest.approx(0.2 * 0.9**10)
    np.testing.assert_array_equal(a.center, b.center)


def test_default_schedule_keeps_sigma_fixed():
    es = bb.make_strategy("openai-es", dim=3, seed=0)
    for _ in range(3):
        es.ask()
        es.tell(np.arange(64.0))
    assert es.sigma == 0.02


@pytest.mark.parametrize("options,message", [
    (dict(sigma_decay=0.0), "sigma_decay must be > 0, got 0.0"),
    (dict(sigma_decay=1.5), "sigma_decay must be <= 1.0, got 1.5"),
    (dict(sigma_min=-0.1), "sigma_min must be >= 0, got -0.1"),
    (dict(sigma=0.1, sigma_min=0.2), "sigma_min must be <= sigma \\(the initial sigma, 0.1\\), got 0.2"),
])
@pytest.mark.parametrize("name", ["openai-es", "nes", "ga", "ars"])
def test_bad_schedule(name, options, message):
    with pytest.raises(bb.ConfigError, match=message):
        bb.make_strategy(name, dim=3, **options)


def test_schedule_from_a_spec_string():
    es = bb.make_strategy("openai-es:sigma=0.1,sigma_decay=0.99,sigma_min=0.05", dim=3)
    assert es.sigma_schedule.decay == 0.99 and es.sigma_schedule.minimum == 0.05
