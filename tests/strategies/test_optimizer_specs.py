"""The optimizer as a spec or an object: same bits as the flat options, refusals that name the option."""

import warnings

import numpy as np
import pytest

import blackbox as bb
from blackbox.errors import ConfigError
from blackbox.strategies.optim import (
    SGD,
    Adam,
    ClipUp,
    Momentum,
    WeightDecay,
    make_optimizer,
    parse_optimizer,
)
from blackbox.strategies.search_gradient import OpenAIES


def run(strategy, generations=6):
    """Centers and the final state after a few generations on a shifted sphere."""
    centers = []
    for _ in range(generations):
        x = strategy.ask().params
        strategy.tell(-np.sum((x - 0.5) ** 2, axis=1))
        centers.append(strategy.center.copy())
    return np.array(centers), strategy.state_dict()


def same_run(a, b):
    (ca, sa), (cb, sb) = run(a), run(b)
    np.testing.assert_array_equal(ca, cb)
    assert sa.keys() == sb.keys()
    for key in sa["optimizer"]:
        np.testing.assert_array_equal(sa["optimizer"][key], sb["optimizer"][key])


SPELLINGS = [  # strategy, flat options (0.1.0's spelling), spec string, object
    ("openai-es", {"beta1": 0.8, "beta2": 0.99}, "adam:beta1=0.8,beta2=0.99", Adam(beta1=0.8, beta2=0.99)),
    ("openai-es", {"optimizer": "momentum", "momentum": 0.5}, "momentum:momentum=0.5", Momentum(momentum=0.5)),
    ("openai-es", {"optimizer": "sgd"}, "sgd", SGD()),
    ("nes", {"optimizer": "adam", "beta1": 0.7}, "adam:beta1=0.7", Adam(beta1=0.7)),
    ("pgpe", {"max_speed": 0.3, "momentum": 0.5}, "clipup:momentum=0.5,max_speed=0.3",
     ClipUp(momentum=0.5, max_speed=0.3)),
    ("pgpe", {"optimizer": "adam", "beta2": 0.9}, "adam:beta2=0.9", Adam(beta2=0.9)),
]


@pytest.mark.parametrize("name,flat,spec,obj", SPELLINGS, ids=[f"{s[0]}-{s[2]}" for s in SPELLINGS])
def test_flat_options_spec_string_and_object_give_the_same_bits(name, flat, spec, obj):
    reference = bb.make_strategy(name, dim=7, seed=3, popsize=10, **flat)
    same_run(reference, bb.make_strategy(name, dim=7, seed=3, popsize=10, optimizer=spec))
    same_run(bb.make_strategy(name, dim=7, seed=3, popsize=10, **flat),
             bb.make_strategy(name, dim=7, seed=3, popsize=10, optimizer=obj))
    same_run(bb.make_strategy(name, dim=7, seed=3, popsize=10, **flat),
             bb.make_strategy(f"{name}:optimizer=\"{spec}\",popsize=10", dim=7, seed=3))
    assert parse_optimizer(spec) == obj and parse_optimizer(str(obj)) == obj


def test_weight_decay_and_lr_on_the_object_are_the_strategys():
    reference = OpenAIES(dim=5, seed=1, weight_decay=0.02, lr=0.05)
    same_run(reference, OpenAIES(dim=5, seed=1, optimizer=WeightDecay(Adam(lr=0.05), 0.02)))
    same_run(OpenAIES(dim=5, seed=1, weight_decay=0.02, lr=0.05),
             OpenAIES(dim=5, seed=1, optimizer="adam:lr=0.05,weight_decay=0.02"))
    assert OpenAIES(dim=5, optimizer=Adam(lr=0.05)).optimizer == WeightDecay(Adam(lr=0.05), 0.005)
    decoupled = OpenAIES(dim=5, seed=1, weight_decay=0.0, optimizer="adam:weight_decay=0.1,decoupled=true")
    assert decoupled.optimizer == WeightDecay(Adam(lr=0.01), 0.1, decoupled=True)


def test_an_object_is_copied_not_shared():
    adam = Adam(beta1=0.8)
    a, b = OpenAIES(dim=4, seed=0, optimizer=adam), OpenAIES(dim=4, seed=0, optimizer=adam)
    run(a)
    assert b.optimizer.t == 0 and not np.any(b.optimizer.optimizer.m) and adam == Adam(beta1=0.8)


def test_weight_decay_wraps_any_optimizer_with_todays_bits():
    theta, grad = np.array([2.0, -2.0, 0.5]), np.array([0.1, 0.3, -0.2])
    for name, options in (("sgd", {}), ("momentum", {"momentum": 0.5}), ("adam", {}), ("clipup", {})):
        for decoupled in (False, True):
            wrapped = make_optimizer(name, 3, lr=0.1, weight_decay=0.05, decoupled=decoupled, **options)
            plain = make_optimizer(name, 3, lr=0.1, **options)
            g = grad if decoupled else grad - 0.05 * theta
            step = plain.update(np.asarray(g, dtype=np.float64), theta)
            want = theta + (step - 0.1 * 0.05 * theta if decoupled else step)
            np.testing.assert_array_equal(wrapped.step(theta, grad)[0], want)


REFUSED = [
    ("pgpe", {"optimizer": "adam", "max_speed": 0.3},
     "optimizer 'adam' does not use max_speed (got max_speed=0.3); max_speed is an option of 'clipup': "
     "drop it or choose optimizer=clipup"),
    ("openai-es", {"optimizer": "sgd", "beta1": 0.1},
     "optimizer 'sgd' does not use beta1 (got beta1=0.1); beta1 is an option of 'adam': drop it or choose optimizer=adam"),
    ("pgpe", {"optimizer": "adam", "momentum": 0.1},
     "optimizer 'adam' does not use momentum (got momentum=0.1); momentum is an option of 'momentum' and 'clipup': "
     "drop it or choose one of those optimizers"),
    ("openai-es", {"optimizer": "adam:max_speed=0.3"},
     "optimizer 'adam' does not use max_speed (got max_speed=0.3); max_speed is an option of 'clipup': "
     "drop it or choose optimizer=clipup"),
    ("openai-es", {"optimizer": "adam:beta3=0.1"},
     "optimizer 'adam' has no option 'beta3'. Did you mean 'beta2'? Options: lr, beta1, beta2, eps, weight_decay, decoupled"),
    ("openai-es", {"optimizer": "adam:beta1=0.8", "beta1": 0.7},
     "beta1 is given twice, as beta1=0.7 and in optimizer='adam:beta1=0.8'; give it once"),
    ("openai-es", {"optimizer": Adam(), "beta1": 0.7},
     "beta1=0.7 goes with an optimizer name; set it on the optimizer object Adam(lr=None, beta1=0.9, beta2=0.999, "
     "eps=1e-08) instead"),
    ("openai-es", {"optimizer": Adam(lr=0.1), "lr": 0.2},
     "the learning rate is given twice, lr=0.2 and optimizer='adam:lr=0.1'; give it once"),
    ("openai-es", {"optimizer": WeightDecay(Adam(), 0.1), "weight_decay": 0.2},
     "weight decay is given twice, weight_decay=0.2 and optimizer='adam:weight_decay=0.1'; give it once"),
    ("nes", {"optimizer": "adam:1"}, "optimizer options need names, as in 'adam:beta1=0.9'; got 'adam:1'"),
    ("nes", {"optimizer": 3}, "optimizer must be a name such as 'adam', a spec such as 'adam:beta1=0.9' or an "
                              "optimizer object (blackbox.strategies.optim), got 3"),
]


@pytest.mark.parametrize("name,options,message", REFUSED, ids=[f"{r[0]}-{i}" for i, r in enumerate(REFUSED)])
def test_an_option_the_optimizer_does_not_use_is_refused(name, options, message):
    with pytest.raises(bb.ConfigError) as info:
        bb.make_strategy(name, dim=3, **options)
    assert str(info.value) == message


def test_the_refusal_reaches_the_command_line(tmp_path, capsys):
    from blackbox.cli import main

    code = main(["run", "--strategy", "pgpe:optimizer=adam,max_speed=0.3", "--problem", "sphere:dim=3",
                 "--generations", "1", "--quiet", "--out", str(tmp_path / "run")])
    assert code == 2
    assert ("pgpe: optimizer 'adam' does not use max_speed (got max_speed=0.3); max_speed is an option of "
            "'clipup': drop it or choose optimizer=clipup") in capsys.readouterr().err


def test_an_unused_option_is_refused_even_at_010s_default():
    # 0.1.0 ignored it silently; its run configs are upgraded by upgrade_v010 (tests/config/test_legacy.py)
    with pytest.raises(ConfigError) as caught:
        bb.make_strategy("openai-es:optimizer=sgd,momentum=0.9", dim=3)
    assert str(caught.value) == (
        "optimizer 'sgd' does not use momentum (got momentum=0.9); momentum is an option of 'momentum' and "
        "'clipup': drop it or choose one of those optimizers")
    es = bb.make_strategy("openai-es:optimizer=sgd", dim=3)
    assert es.optimizer == WeightDecay(SGD(lr=0.01), 0.005)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bb.make_strategy("openai-es", dim=3)  # the defaults say nothing


def test_optimizer_objects_check_their_options():
    for make, message in ((lambda: Adam(beta1=1.0), "beta1 must be in \\[0, 1\\), got 1.0"),
                          (lambda: ClipUp(max_speed=0), "max_speed must be a finite number > 0, got 0.0"),
                          (lambda: Momentum(momentum=-0.1), "momentum must be a finite number >= 0, got -0.1"),
                          (lambda: SGD(lr=0), "lr must be a finite number > 0, got 0.0"),
                          (lambda: WeightDecay(WeightDecay(SGD(), 0.1), 0.1), "WeightDecay wraps an optimizer without")):
        with pytest.raises(bb.ConfigError, match=message):
            make()
    with pytest.raises(TypeError):
        Adam(3, 0.1)  # 0.1.0's Adam(dim, lr) is gone: the dimension comes from bind()
    with pytest.raises(bb.StateError, match="is not bound to a dimension; call bind\\(dim\\) first"):
        Adam(lr=0.1).step(np.zeros(2), np.ones(2))
    with pytest.raises(bb.ConfigError, match="optimizer 'adam' has no learning rate"):
        Adam().bind(2)
