import numpy as np
import pytest

import blackbox as bb
from blackbox.strategies.optim import make_optimizer


def test_adam_matches_reference_formula():
    opt = make_optimizer("adam", 3, lr=0.1)
    theta = np.array([1.0, -2.0, 0.5])
    m = v = np.zeros(3)
    ref = theta.copy()
    rng = np.random.default_rng(0)
    for t in range(1, 6):
        g = rng.standard_normal(3)
        theta, _ = opt.step(theta, g)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        a = 0.1 * np.sqrt(1 - 0.999**t) / (1 - 0.9**t)
        ref = ref + a * m / (np.sqrt(v) + 1e-8)
    np.testing.assert_allclose(theta, ref, rtol=1e-12)


def test_weight_decay_pulls_toward_zero_coupled_and_decoupled():
    theta = np.array([2.0, -2.0])
    new, _ = make_optimizer("sgd", 2, lr=0.5, weight_decay=0.1).step(theta, np.zeros(2))
    np.testing.assert_allclose(new, theta - 0.5 * 0.1 * theta)
    new, _ = make_optimizer("adam", 2, lr=0.5, weight_decay=0.1, decoupled=True).step(theta, np.zeros(2))
    np.testing.assert_allclose(new, theta - 0.5 * 0.1 * theta)


def test_momentum_accumulates_and_state_round_trips():
    a = make_optimizer("momentum", 2, lr=1.0, momentum=0.5)
    theta = np.zeros(2)
    theta, _ = a.step(theta, np.ones(2))
    theta, _ = a.step(theta, np.ones(2))
    np.testing.assert_allclose(theta, [0.5 + 0.75, 0.5 + 0.75])
    b = make_optimizer("momentum", 2, lr=1.0, momentum=0.5)
    b.load_state_dict(a.state_dict())
    np.testing.assert_array_equal(a.step(theta, np.ones(2))[0], b.step(theta, np.ones(2))[0])


@pytest.mark.parametrize("kwargs,message", [
    (dict(name="adamw"), "unknown optimizer 'adamw'. Did you mean 'adam'"),
    (dict(lr=0.0), "lr must be a finite number > 0, got 0.0"),
    (dict(lr=0.1, beta1=1.0), "beta1 must be in \\[0, 1\\), got 1.0"),
])
def test_bad_optimizer_settings(kwargs, message):
    name = kwargs.pop("name", "adam")
    kwargs.setdefault("lr", 0.1)
    with pytest.raises(bb.ConfigError, match=message):
        make_optimizer(name, 2, **kwargs)
