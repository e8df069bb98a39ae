"""One update of each new strategy against its paper's formula, computed densely and independently."""

import math
import warnings

import numpy as np
import pytest

import blackbox as bb
from blackbox.strategies.cma_es import cma_parameters
from tests.helpers.extras import import_or_skip


def one_generation(strategy, fitness_fn):
    before = {"center": strategy.center.copy(), "sigma": strategy.sigma}
    for key in ("stdev", "B", "C", "c"):
        if hasattr(strategy, key):
            before[key] = np.array(getattr(strategy, key), dtype=np.float64).copy()
    pop = strategy.ask()
    x = pop.params
    f = fitness_fn(x)
    strategy.tell(f)
    return before, pop, x, f


def bumpy(x):
    return -np.sum((x - 0.7) ** 2, axis=1) + 0.3 * np.sin(5 * x[:, 0])


def centered_ranks(f):
    ranks = np.empty(len(f))
    ranks[np.argsort(f)] = np.arange(len(f))
    return ranks / (len(f) - 1) - 0.5


# -- PGPE ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mirrored", [True, False])
def test_pgpe_update_is_evotorchs(mirrored):
    """EvoTorch SymmetricSeparableGaussian / SeparableGaussian gradients, plain SGD on the center."""
    es = bb.make_strategy("pgpe", dim=5, popsize=12, sigma=[0.1, 0.2, 0.3, 0.4, 0.5], optimizer="sgd",
                          lr=0.7, sigma_lr=0.3, sigma_max_change=0.2, mirrored=mirrored, seed=0)
    for _ in range(3):
        before, pop, x, f = one_generation(es, bumpy)
    mu, sigma = before["center"], before["stdev"]
    u = centered_ranks(f)
    if mirrored:
        scaled = x[0::2] - mu
        up, um = u[0::2], u[1::2]
        g_mu = ((up - um) / 2) @ scaled / 6
        g_sigma = ((up + um) / 2) @ ((scaled**2 - sigma**2) / sigma) / 6
    else:
        scaled = x - mu
        g_mu = u @ scaled / 12
        g_sigma = u @ ((scaled**2 - sigma**2) / sigma) / 12
    np.testing.assert_allclose(es.center, mu + 0.7 * g_mu, rtol=1e-5, atol=1e-7)
    expected_sigma = np.clip(sigma + 0.3 * g_sigma, 0.8 * sigma, 1.2 * sigma)
    np.testing.assert_allclose(es.stdev, expected_sigma, rtol=1e-5)
    assert es.sigma == pytest.approx(np.sqrt(np.mean(expected_sigma**2)), rel=1e-5)


def test_pgpe_default_is_clipup_with_max_speed_twice_lr():
    es = bb.make_strategy("pgpe", dim=4, lr=0.1, seed=0)
    assert type(es.optimizer).__name__ == "ClipUp" and es.optimizer.max_speed == pytest.approx(0.2)
    assert es.params.mirrored and es.params.shaping == "centered_ranks" and es.params.sigma_max_change == 0.2
    before, _, _, _ = one_generation(es, bumpy)
    assert np.linalg.norm(es.center - before["center"]) == pytest.approx(0.1)  # first step: lr exactly


def test_pgpe_radius_and_bounds():
    es = bb.make_strategy("pgpe", dim=16, radius=2.0, seed=0)
    np.testing.assert_allclose(es.stdev, np.full(16, 0.5))
    assert es.sigma == pytest.approx(0.5)
    es = bb.make_strategy("pgpe", dim=4, sigma=0.1, sigma_lr=50.0, sigma_max_change=None,
                          sigma_min=0.05, sigma_max=0.15, seed=0)
    for _ in range(5):
        one_generation(es, bumpy)
        assert np.all(es.stdev >= 0.05) and np.all(es.stdev <= 0.15)


# -- NES family ------------------------------------------------------------------------------


def nes_u(f):
    n = len(f)
    table = np.maximum(0, np.log(n / 2 + 1) - np.log(np.arange(1, n + 1)))
    table = table / table.sum() - 1 / n
    u = np.empty(n)
    u[np.argsort(-f)] = table
    return u


def test_snes_update_is_the_papers():
    es = bb.make_strategy("snes", dim=6, sigma=[0.5, 0.4, 0.3, 0.2, 0.1, 1.0], seed=1)
    assert es.popsize == 4 + math.floor(3 * math.log(6)) and es.params.lr == 1.0
    assert es.sigma_lr == pytest.approx((3 + math.log(6)) / (5 * math.sqrt(6)))
    for _ in range(2):
        before, pop, x, f = one_generation(es, bumpy)
    mu, sigma = before["center"], before["stdev"]
    s = (x - mu) / sigma
    u = nes_u(f)
    np.testing.assert_allclose(es.center, mu + sigma * (u @ s), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(es.stdev, sigma * np.exp(es.sigma_lr / 2 * (u @ (s**2 - 1))), rtol=1e-5)


def expm_taylor(m, terms=40):
    """An independent matrix exponential: scaling and squaring with a Taylor series."""
    k = max(0, int(np.ceil(np.log2(max(np.abs(m).sum(), 1e-12)))) + 1)
    a = m / 2**k
    out, term = np.eye(len(m)), np.eye(len(m))
    for i in range(1, terms):
        term = term @ a / i
        out = out + term
    for _ in range(k):
        out = out @ out
    return out


def test_xnes_update_is_the_papers():
    es = bb.make_strategy("xnes", dim=4, sigma=0.3, seed=2)
    d = 4
    assert es.popsize == 4 + math.floor(3 * math.log(d))
    assert es.sigma_lr == es.cov_lr == pytest.approx(3 * (3 + math.log(d)) / (5 * d * math.sqrt(d)))
    for _ in range(3):
        before, pop, x, f = one_generation(es, bumpy)
    mu, sigma, b = before["center"], before["sigma"], before["B"]
    s = np.linalg.solve(b, ((x - mu) / sigma).T).T
    u = nes_u(f)
    g_delta = u @ s
    g_m = sum(uk * (np.outer(sk, sk) - np.eye(d)) for uk, sk in zip(u, s))
    g_sigma = np.trace(g_m) / d
    g_b = g_m - g_sigma * np.eye(d)
    np.testing.assert_allclose(es.center, mu + sigma * b @ g_delta, rtol=1e-10)
    assert es.sigma == pytest.approx(sigma * math.exp(es.sigma_lr / 2 * g_sigma), rel=1e-12)
    np.testing.assert_allclose(es.B, b @ expm_taylor(es.cov_lr / 2 * g_b), rtol=1e-9, atol=1e-12)
    assert np.linalg.det(es.B) == pytest.approx(1.0)


# -- CMA-ES ----------------------------------------------------------------------------------


def test_cma_parameters_are_table_1():
    n, lam = 10, 10
    p = cma_parameters(n, lam, lam // 2, active=True)
    prime = np.log((lam + 1) / 2) - np.log(np.arange(1, lam + 1))
    mu_eff = prime[:5].sum() ** 2 / (prime[:5] ** 2).sum()
    assert p.mu == 5 and p.mu_eff == pytest.approx(mu_eff)
    np.testing.assert_allclose(p.weights[:5], prime[:5] / prime[:5].sum())
    c1 = 2 / ((n + 1.3) ** 2 + mu_eff)
    cmu = min(1 - c1, 2 * (mu_eff - 2 + 1 / mu_eff) / ((n + 2) ** 2 + mu_eff))
    assert p.c_1 == pytest.approx(c1) and p.c_mu == pytest.approx(cmu)
    assert p.c_c == pytest.approx((4 + mu_eff / n) / (n + 4 + 2 * mu_eff / n))
    assert p.c_sigma == pytest.approx((mu_eff + 2) / (n + mu_eff + 5))
    assert p.d_sigma == pytest.approx(1 + 2 * max(0, math.sqrt((mu_eff - 1) / (n + 1)) - 1) + p.c_sigma)
    neg = prime[5:]
    mu_eff_neg = neg.sum() ** 2 / (neg**2).sum()
    alpha = min(1 + c1 / cmu, 1 + 2 * mu_eff_neg / (mu_eff + 2), (1 - c1 - cmu) / (n * cmu))
    np.testing.assert_allclose(p.weights[5:], alpha * neg / np.abs(neg).sum())
    assert p.chi_n == pytest.approx(math.sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n * n)))
    classic = cma_parameters(n, lam, 5, active=False)
    assert np.all(classic.weights[5:] == 0) and classic.weights.sum() == pytest.approx(1.0)
    sep = cma_parameters(n, lam, 5, active=False, diagonal=True)
    assert sep.c_1 == pytest.approx(c1 * (n + 2) / 3)
    assert sep.c_mu == pytest.approx(min(1 - sep.c_1, cmu * (n + 2) / 3))


def test_cma_es_one_update_is_the_tutorials():
    """Generation 4 recomputed from the state after generation 3, with the tutorial's equations."""
    es2 = bb.make_strategy("cma-es", dim=3, popsize=8, sigma=0.5, seed=4, eigen_interval=1)
    for _ in range(3):
        one_generation(es2, bumpy)
    m, sigma, C = es2.center.copy(), es2.sigma, es2.C.copy()
    ps, pc, p, n = es2.p_sigma.copy(), es2.p_c.copy(), es2.constants, 3
    _, _, x, f = one_generation(es2, bumpy)
    order = np.argsort(-f)
    y = (x[order] - m) / sigma
    vals, vecs = np.linalg.eigh(C)
    inv_sqrt = vecs @ np.diag(vals**-0.5) @ vecs.T
    yw = p.weights[:p.mu] @ y[: p.mu]
    np.testing.assert_allclose(es2.center, m + sigma * yw, rtol=1e-10)
    ps = (1 - p.c_sigma) * ps + math.sqrt(p.c_sigma * (2 - p.c_sigma) * p.mu_eff) * inv_sqrt @ yw
    np.testing.assert_allclose(es2.p_sigma, ps, rtol=1e-8, atol=1e-12)
    sigma_new = sigma * math.exp(p.c_sigma / p.d_sigma * (np.linalg.norm(ps) / p.chi_n - 1))
    assert es2.sigma == pytest.approx(sigma_new, rel=1e-10)
    h = np.linalg.norm(ps) / math.sqrt(1 - (1 - p.c_sigma) ** (2 * 4)) < (1.4 + 2 / (n + 1)) * p.chi_n
    pc = (1 - p.c_c) * pc + h * math.sqrt(p.c_c * (2 - p.c_c) * p.mu_eff) * yw
    w_circ = np.array([w if w >= 0 else w * n / np.sum((inv_sqrt @ yi) ** 2) for w, yi in zip(p.weights, y)])
    C_new = ((1 + p.c_1 * (1 - h) * p.c_c * (2 - p.c_c) - p.c_1 - p.c_mu * p.weights.sum()) * C
             + p.c_1 * np.outer(pc, pc) + p.c_mu * sum(w * np.outer(yi, yi) for w, yi in zip(w_circ, y)))
    np.testing.assert_allclose(es2.C, (C_new + C_new.T) / 2, rtol=1e-8, atol=1e-12)


def test_cma_es_lazy_eigendecomposition():
    big = bb.make_strategy("cma-es", dim=1000, seed=0)
    p = big.constants
    assert big.eigen_interval == int(1 / (10 * 1000 * (p.c_1 + p.c_mu))) == 8
    assert bb.make_strategy("cma-es", dim=50).eigen_interval == 1
    es = bb.make_strategy("cma-es", dim=6, seed=0, eigen_interval=5)
    b0 = es.B.copy()
    for _ in range(es.eigen_interval):
        assert np.array_equal(es.B, b0)
        one_generation(es, bumpy)
    assert not np.array_equal(es.B, b0)
    np.testing.assert_allclose(es.B @ np.diag(es.D**2) @ es.B.T, es.C, atol=1e-12)


def run_to_target(ask_tell, problem, target, budget=100_000):
    evaluations = 0
    while evaluations < budget:
        x = ask_tell.ask()
        f = problem.evaluate(np.asarray(x), None).fitness
        ask_tell.tell(x, f)
        evaluations += len(f)
        if f.max() >= -target:
            break
    return evaluations


class Ours:
    def __init__(self, strategy):
        self.strategy = strategy

    def ask(self):
        return self.strategy.ask().params

    def tell(self, x, f):
        self.strategy.tell(f)


class PyCMA:
    def __init__(self, es):
        self.es = es

    def ask(self):
        return np.array(self.es.ask())

    def tell(self, x, f):
        self.es.tell(list(x), list(-f))


@pytest.mark.parametrize("name,diagonal,problem,dim,sigma", [
    ("cma-es", False, "sphere", 10, 1.0),
    ("sep-cma-es", True, "sphere", 10, 1.0),
    pytest.param("cma-es", False, "rosenbrock", 5, 0.5, marks=pytest.mark.slow),
    pytest.param("cma-es", False, "sphere", 40, 1.0, marks=pytest.mark.slow),
    pytest.param("sep-cma-es", True, "sphere", 40, 1.0, marks=pytest.mark.slow),
])
def test_evaluations_to_target_like_pycma(name, diagonal, problem, dim, sigma):
    """Same start, same sigma, default popsize: median evaluations to 1e-8 within 25% of pycma's."""
    cma = import_or_skip("blackbox-cma", "cma")
    ours, theirs = [], []
    for seed in range(5):
        p = bb.make_problem(problem, dim=dim)
        x0 = p.initial_params(np.random.default_rng(seed))
        ours.append(run_to_target(Ours(bb.make_strategy(name, x0=x0, sigma=sigma, seed=seed)), p, 1e-8))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            es = cma.CMAEvolutionStrategy(x0, sigma, {
                "seed": seed + 1, "verbose": -9, "CMA_diagonal": diagonal, "tolfun": 0, "tolx": 0,
                "tolfunhist": 0, "tolflatfitness": 10**9, "tolstagnation": 10**9})
            theirs.append(run_to_target(PyCMA(es), p, 1e-8))
    assert max(ours) < 100_000
    ratio = np.median(ours) / np.median(theirs)
    assert 0.75 < ratio < 1.25, f"ours {ours} vs pycma {theirs}"


def test_sep_cma_es_update_is_the_diagonal_of_cma():
    es = bb.make_strategy("sep-cma-es", dim=5, popsize=10, sigma=0.4, seed=3)
    for _ in range(3):
        one_generation(es, bumpy)
    m, sigma, c, ps, pc, p, n = es.center.copy(), es.sigma, es.c.copy(), es.p_sigma.copy(), es.p_c.copy(), es.constants, 5
    _, _, x, f = one_generation(es, bumpy)
    order = np.argsort(-f)
    y = (x[order] - m) / sigma
    z = y / np.sqrt(c)
    w = p.weights[: p.mu]
    yw, zw = w @ y[: p.mu], w @ z[: p.mu]
    np.testing.assert_allclose(es.center, m + sigma * yw, rtol=1e-5, atol=1e-8)
    ps = (1 - p.c_sigma) * ps + math.sqrt(p.c_sigma * (2 - p.c_sigma) * p.mu_eff) * zw
    np.testing.assert_allclose(es.p_sigma, ps, rtol=1e-5, atol=1e-7)
    sigma_new = sigma * math.exp(p.c_sigma / p.d_sigma * (np.linalg.norm(ps) / p.chi_n - 1))
    h = np.linalg.norm(ps) / math.sqrt(1 - (1 - p.c_sigma) ** 8) < (1.4 + 2 / (n + 1)) * p.chi_n
    pc = (1 - p.c_c) * pc + h * math.sqrt(p.c_c * (2 - p.c_c) * p.mu_eff) * yw
    c_new = ((1 + p.c_1 * (1 - h) * p.c_c * (2 - p.c_c) - p.c_1 - p.c_mu) * c + p.c_1 * pc**2
             + p.c_mu * w @ y[: p.mu] ** 2)
    # Stored normalized to max(c) = 1 with the factor folded into sigma and p_c.
    scale = math.sqrt(c_new.max())
    np.testing.assert_allclose(es.c, c_new / scale**2, rtol=1e-5)
    assert es.sigma == pytest.approx(sigma_new * scale, rel=1e-5)
    np.testing.assert_allclose(es.p_c, pc / scale, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(es.stdev, sigma_new * np.sqrt(c_new), rtol=1e-5)


# -- ARS -------------------------------------------------------------------------------------


@pytest.mark.parametrize("top,std_scaling", [(3, True), (8, True), (8, False)])
def test_ars_update_is_algorithm_2(top, std_scaling):
    es = bb.make_strategy("ars", dim=4, popsize=16, sigma=0.05, lr=0.3, top=top, std_scaling=std_scaling, seed=5)
    for _ in range(2):
        before, pop, x, f = one_generation(es, bumpy)
    mu = before["center"]
    delta = (x[0::2] - mu) / 0.05
    rp, rm = f[0::2], f[1::2]
    best = np.argsort(-np.maximum(rp, rm))[:top]
    scale = np.std(np.r_[rp[best], rm[best]]) if std_scaling else 1.0
    expected = mu + 0.3 / (top * scale) * ((rp[best] - rm[best]) @ delta[best])
    np.testing.assert_allclose(es.center, expected, rtol=1e-5, atol=1e-8)


# -- CEM -------------------------------------------------------------------------------------


def test_cem_update_is_the_elite_fit():
    es = bb.make_strategy("cem", dim=5, popsize=20, sigma=0.3, elite_fraction=0.25, extra_noise=0, seed=6)
    before, pop, x, f = one_generation(es, bumpy)
    elites = x[np.argsort(-f)[:5]]
    np.testing.assert_allclose(es.center, elites.mean(axis=0), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(es.stdev, elites.std(axis=0), rtol=1e-4)


def test_cem_smoothing_extra_noise_and_floor():
    es = bb.make_strategy("cem", dim=5, popsize=20, sigma=0.3, elite_fraction=0.25, smoothing=0.7,
                          extra_noise=0.04, extra_noise_decay=4, sigma_min=0.12, seed=6)
    assert [es.current_extra_noise()] == [0.04]
    before, pop, x, f = one_generation(es, bumpy)
    elites = x[np.argsort(-f)[:5]]
    center = 0.7 * elites.mean(axis=0) + 0.3 * before["center"]
    stdev = np.sqrt((0.7 * elites.std(axis=0) + 0.3 * before["stdev"]) ** 2 + 0.04)
    np.testing.assert_allclose(es.center, center, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(es.stdev, np.maximum(stdev, 0.12), rtol=1e-4)
    assert es.current_extra_noise() == pytest.approx(0.03)
    for _ in range(5):
        one_generation(es, bumpy)
    assert es.current_extra_noise() == 0.0
    assert np.all(es.stdev >= 0.12)
