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


def test_each_rule_declares_its_state_as_a_dataclass_saved_in_todays_layout():
    from blackbox.core.state import NONNEGATIVE, state_layout
    from blackbox.strategies.optim import SGD, Adam, ClipUp, Momentum

    layouts = {rule: state_layout(rule.State) for rule in (SGD, Momentum, Adam, ClipUp)}
    assert {rule.name: layout.fields for rule, layout in layouts.items()} == {
        "sgd": ("t",), "momentum": ("t", "velocity"), "adam": ("t", "m", "v"), "clipup": ("t", "velocity")}
    assert dict(layouts[Adam].bounds) == {"t": NONNEGATIVE, "v": NONNEGATIVE}
    assert not any(hasattr(rule, "state_fields") or hasattr(rule, "state_bounds") for rule in layouts)
    adam = Adam(beta1=0.8).bind(3, lr=0.1)
    adam.step(np.zeros(3), np.ones(3))
    saved = adam.state_dict()
    assert list(saved) == ["t", "m", "v"] and type(saved["t"]) is int and saved["m"].dtype == np.float64
    assert adam.m is adam.state.m and adam.t == adam.state.t == 1
    assert adam == Adam(lr=0.1, beta1=0.8) and "state" not in repr(adam) and adam.spec == "adam:lr=0.1,beta1=0.8"
    with pytest.raises(AttributeError, match=r"^m is read from the optimizer's state; set state.m instead$"):
        adam.m = np.zeros(3)
    fresh = adam.bind(3)  # a fresh state, not shared
    assert fresh.t == 0 and not np.any(fresh.m) and fresh.state is not adam.state and adam.t == 1
