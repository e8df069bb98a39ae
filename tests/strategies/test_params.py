"""Hyperparameters declared once (Params), state declared once (state_fields), a strategy's own minimum popsize."""

import dataclasses
import inspect
import json
import math
from pathlib import Path

import numpy as np
import pytest

import blackbox as bb
from blackbox._validate import check_float
from blackbox.core.params import Params
from blackbox.core.strategy import Strategy
from blackbox.strategies.search_gradient import NES, IsotropicSearchGradient, OpenAIES
from blackbox.testing import check_strategy

BUILTINS = ("openai-es", "nes", "ga", "pgpe", "snes", "xnes", "cma-es", "sep-cma-es", "ars", "cem")


def test_params_defaults_are_declared_once_and_read_by_every_path():
    assert OpenAIES.Params() == OpenAIES.Params(popsize=64, sigma=0.02, lr=0.01, weight_decay=0.005, optimizer="adam",
                                                shaping="centered_ranks", mirrored=True)
    nes = NES.Params()
    assert (nes.popsize, nes.sigma, nes.lr, nes.weight_decay, nes.optimizer, nes.shaping, nes.mirrored) == (
        50, 0.1, 0.001, 0.0, "sgd", "zscore", False)
    assert NES.__bases__ == OpenAIES.__bases__ == (IsotropicSearchGradient,)  # one class, two sets of defaults
    assert not [v for c in (NES, OpenAIES) for v in vars(c).values() if inspect.isfunction(v)]
    signature = inspect.signature(NES)
    assert signature.parameters["popsize"].default == 50 and signature.parameters["optimizer"].default == "sgd"
    assert list(signature.parameters)[:4] == ["dim", "params", "popsize", "sigma"]
    assert list(signature.parameters)[-5:] == ["x0", "seed", "noise_size", "noise_seed", "dtype"]
    from blackbox.registry import resolved_config

    resolved = resolved_config(NES, (), {"sigma": 0.2})
    assert resolved["sigma"] == 0.2 and resolved["lr"] == 0.001 and resolved["momentum"] is None


@pytest.mark.parametrize("name", BUILTINS)
def test_every_option_of_010_keeps_its_spelling(name):
    old = {  # the constructor options of 0.1.0 (git show 8e4f0e8:blackbox/strategies/...)
        "openai-es": "popsize sigma sigma_decay sigma_min lr weight_decay optimizer momentum beta1 beta2 shaping "
                     "mirrored x0 seed noise_size noise_seed",
        "nes": "popsize sigma sigma_decay sigma_min lr shaping mirrored optimizer momentum weight_decay x0 seed "
               "noise_size noise_seed",
        "ga": "popsize sigma sigma_decay sigma_min truncation elitism x0 seed noise_size noise_seed",
        "pgpe": "popsize sigma radius lr optimizer momentum max_speed beta1 beta2 weight_decay sigma_lr "
                "sigma_max_change sigma_min sigma_max shaping mirrored x0 seed noise_size noise_seed",
        "snes": "popsize sigma lr sigma_lr shaping x0 seed noise_size noise_seed",
        "xnes": "popsize sigma lr sigma_lr cov_lr shaping x0 seed",
        "cma-es": "popsize sigma mu active eigen_interval x0 seed",
        "sep-cma-es": "popsize sigma mu x0 seed noise_size noise_seed",
        "ars": "popsize sigma lr top std_scaling sigma_decay sigma_min x0 seed noise_size noise_seed",
        "cem": "popsize sigma elite_fraction smoothing extra_noise extra_noise_decay sigma_min x0 seed noise_size "
               "noise_seed",
    }[name].split()
    factory = type(bb.make_strategy(name, dim=3))
    assert set(old) <= set(inspect.signature(factory).parameters)


@pytest.mark.parametrize("make,message", [
    (lambda: OpenAIES.Params(sigma=0), "sigma must be > 0, got 0.0"),
    (lambda: OpenAIES.Params(sigma_decay=1.5), "sigma_decay must be <= 1.0, got 1.5"),
    (lambda: NES.Params(shaping="rank"), "shaping must be one of 'centered_ranks', 'zscore', 'raw', 'nes', got 'rank'."),
    (lambda: OpenAIES.Params(lr=-1), "lr must be a finite number > 0, got -1.0"),
    (lambda: OpenAIES(dim=3, sigmaa=1), "strategy 'openai-es' has no option 'sigmaa'. Did you mean 'sigma'? Options: "
     "popsize, sigma, sigma_decay, sigma_min, lr, weight_decay, optimizer, momentum, beta1, beta2, max_speed, shaping, "
     "mirrored"),
    (lambda: OpenAIES(dim=3, params=NES), "params of strategy 'openai-es' must be a OpenAIES.Params (or a dict of "
     "its fields), got ABCMeta"),
])
def test_params_check_their_values_once(make, message):
    with pytest.raises(bb.ConfigError) as info:
        make()
    assert str(info.value) == message


def test_params_are_frozen_and_one_object_builds_the_same_strategy():
    params = OpenAIES.Params(sigma=0.05, popsize=10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.sigma = 1.0
    a = OpenAIES(4, params, seed=2)
    b = OpenAIES(dim=4, sigma=0.05, popsize=10, seed=2)
    c = bb.make_strategy("openai-es:sigma=0.05,popsize=10", dim=4, seed=2)
    d = OpenAIES(4, {"sigma": 0.05}, popsize=10, seed=2)
    first = a.ask().params
    for other in (b, c, d):
        assert other.params == a.params
        np.testing.assert_array_equal(other.ask().params, first)
    assert params.replace(sigma=0.1).sigma == 0.1 and params.sigma == 0.05


# -- the generic state --------------------------------------------------------------------------------
class OnePlusOneES(Strategy):
    """The (1+1)-ES with the 1/5th success rule (Rechenberg 1973; Kern et al. 2004): one row per generation."""

    name = "one-plus-one"
    min_popsize = 1

    @dataclasses.dataclass(frozen=True)
    class Params(Params):
        popsize: int = 1
        sigma: float = 0.5

        def __post_init__(self):
            self._check("sigma", check_float, positive=True)

    state_fields = ("parent_fitness", "successes")

    def _setup(self):
        self.sigma = self.params.sigma
        self.parent_fitness = -1e300  # the start point is not evaluated: the first offspring replaces it
        self.successes = np.zeros(2)

    def _ask(self):
        return bb.Population.from_dense(self._center + self.sigma * self.rng.standard_normal((1, self.dim)))

    def _tell(self, population, fitness):
        success = bool(fitness[0] > self.parent_fitness)
        self.successes = self.successes + [success, 1]
        if success:
            self._center = population.params[0].copy()
            self.parent_fitness = float(fitness[0])
        self.sigma *= math.exp(1 / 3) if success else math.exp(-1 / 12)


def test_a_one_plus_one_es_runs_with_popsize_one():
    es = OnePlusOneES(dim=5, seed=0, x0=np.full(5, 2.0))
    assert es.popsize == 1 and inspect.signature(OnePlusOneES).parameters["popsize"].default == 1
    result = bb.optimize(es, "sphere:dim=5", generations=600, seed=0)
    assert float(np.sum(result.center**2)) < 1e-10
    assert 0.1 < es.successes[0] / es.successes[1] < 0.3  # the 1/5th rule holds sigma near its balance
    state = es.state_dict()
    assert state["parent_fitness"] == es.parent_fitness and set(state) >= {"parent_fitness", "successes"}
    report = check_strategy(OnePlusOneES, raise_on_failure=False)
    assert report.ok, str(report)
    with pytest.raises(bb.ConfigError, match="popsize must be >= 2, got 1"):
        bb.make_strategy("openai-es", dim=3, popsize=1)


def test_the_generic_state_round_trips_and_refuses_what_does_not_fit():
    es = bb.make_strategy("pgpe", dim=4, seed=1, popsize=8)
    for _ in range(3):
        es.tell(-np.sum(es.ask().params ** 2, axis=1))
    state = es.state_dict()
    assert set(state) == {"strategy", "dim", "popsize", "seed", "generation", "rng", "center", "sigma", "update_norm",
                          "reduction",
                          "stdev", "optimizer"}
    assert set(state["optimizer"]) == {"t", "velocity"} and state["optimizer"]["t"] == 3
    other = bb.make_strategy("pgpe", dim=4, seed=9, popsize=8)
    other.load_state_dict(json.loads(json.dumps(state, default=lambda a: a.tolist())))
    for _ in range(3):
        x = es.ask().params
        np.testing.assert_array_equal(other.ask().params, x)
        es.tell(-np.sum(x**2, axis=1))
        other.tell(-np.sum(x**2, axis=1))
    np.testing.assert_array_equal(other.stdev, es.stdev)
    for key, value, message in (("stdev", np.ones(5), "state_dict/stdev has shape \\(5,\\), expected \\(4,\\)"),
                                ("optimizer", {"t": "x", "velocity": np.ones(4)}, "state_dict/optimizer/t must be a number"),
                                ("stdev", None, "state_dict has no 'stdev'")):
        broken = dict(state)
        if value is None:
            del broken[key]
        else:
            broken[key] = value
        with pytest.raises(bb.ConfigError, match=message):
            other.load_state_dict(broken)


def test_rows_that_change_in_number_are_declared():
    ga = bb.make_strategy("ga", dim=3, seed=0, popsize=20, truncation=0.2)
    fresh = bb.make_strategy("ga", dim=3, seed=0, popsize=20, truncation=0.2)
    ga.tell(-np.sum(ga.ask().params ** 2, axis=1))
    state = ga.state_dict()
    assert state["parents"].shape == (4, 3) and fresh.parents.shape == (1, 3)
    fresh.load_state_dict(state)
    np.testing.assert_array_equal(fresh.parents, ga.parents)
    with pytest.raises(bb.ConfigError, match="state_dict/parents must be a finite \\(k, 3\\) array, got shape \\(4, 2\\)"):
        fresh.load_state_dict({**state, "parents": np.zeros((4, 2))})


# -- state layouts written by 0.1.0 ---------------------------------------------------------------------
#: The keys that 0.1.0's hand-written _state_dict of each strategy added (git show 8e4f0e8:blackbox/strategies/).
LAYOUT_010 = {
    "openai-es": {"optimizer": {"t": 0, "m": "dim", "v": "dim"}},
    "nes": {"optimizer": {"t": 0, "velocity": "dim"}},  # 0.1.0's SGD kept a velocity even without momentum
    "pgpe": {"stdev": "dim", "optimizer": {"t": 0, "velocity": "dim"}},
    "snes": {"stdev": "dim"},
    "cem": {"stdev": "dim"},
    "xnes": {"B": "dim,dim"},
    "cma-es": {"C": "dim,dim", "B": "dim,dim", "D": "dim", "p_sigma": "dim", "p_c": "dim", "eigen_generation": 0},
    "sep-cma-es": {"c": "dim", "p_sigma": "dim", "p_c": "dim"},
    "ga": {"parents": "k,dim"},
    "ars": {},
}


def _layout_010(strategy, layout):
    """The strategy's state as 0.1.0 wrote it: the base keys, then the hand-written keys with the values
    (or, for keys the new layout lacks, zeros) the strategy has now."""
    new = strategy.state_dict()
    state = {key: new[key] for key in ("strategy", "dim", "popsize", "seed", "generation", "rng", "center", "sigma",
                                       "update_norm")}
    for key, kind in layout.items():
        if isinstance(kind, dict):
            state[key] = {sub: new[key].get(sub, np.zeros(strategy.dim)) for sub in kind}
        else:
            state[key] = new[key]
    return state


@pytest.mark.parametrize("name", BUILTINS)
def test_state_layouts_of_010_load_and_continue(name):
    reference = bb.make_strategy(name, dim=4, seed=3)
    reference.reduction = "float32"  # the run as 0.1.0 computed it: its one float32 pass
    for _ in range(2):
        reference.tell(-np.sum((reference.ask().params - 1) ** 2, axis=1))
    old = _layout_010(reference, LAYOUT_010[name])
    # nothing new is required: the one new key, the reduction, is absent from a 0.1.0 state and
    # then means 0.1.0's own reduction
    assert {k for k in reference.state_dict() if k not in old} == {"reduction"}
    restored = bb.make_strategy(name, dim=4, seed=77)
    restored.load_state_dict(old)
    for _ in range(3):
        x = reference.ask().params
        np.testing.assert_array_equal(restored.ask().params, x)
        reference.tell(-np.sum((x - 1) ** 2, axis=1))
        restored.tell(-np.sum((x - 1) ** 2, axis=1))
    np.testing.assert_array_equal(restored.center, reference.center)


@pytest.mark.parametrize("run", ["openai-es-cartpole", "pgpe-pendulum-obsnorm", "cma-es-rosenbrock",
                                 "sep-cma-es-quadratic"])
def test_checkpoints_written_by_010_load_into_the_strategy(run):
    from blackbox.config.legacy import upgrade_v010
    from blackbox.registry import make_strategy
    from blackbox.store.checkpoint import load_checkpoint

    folder = Path(__file__).parents[1] / "golden" / "data" / "v0.1.0-runs" / run / "checkpoints" / "gen-000002"
    checkpoint = load_checkpoint(folder)
    state = checkpoint.state["strategy"]
    table = dict(upgrade_v010(checkpoint.config)["strategy"])
    strategy = make_strategy(table.pop("name"), dim=state["dim"], seed=0, **table)
    strategy.load_state_dict(state)
    np.testing.assert_array_equal(strategy.center, state["center"])
    assert strategy.generation == 2 and strategy.sigma == state["sigma"]
    if "optimizer" in state:
        for key, value in state["optimizer"].items():
            np.testing.assert_array_equal(strategy.state_dict()["optimizer"][key], value)


# -- the one place tell() reduces ----------------------------------------------------------------------
class RecordingReducer:
    """Delegates to the default reduction and records what each call was given."""

    def __init__(self):
        self.calls = []

    def __call__(self, population, coefficients, square_coefficients=None):
        from blackbox.core.reduce import block_sums

        self.calls.append((len(population), square_coefficients is not None))
        return block_sums(population, coefficients, square_coefficients)


@pytest.mark.parametrize("name,squares", [("openai-es", False), ("nes", False), ("ars", False), ("pgpe", True),
                                          ("snes", True), ("sep-cma-es", True), ("cem", True)])
def test_tell_reduces_through_the_strategys_reducer(name, squares):
    plain, watched = bb.make_strategy(name, dim=6, seed=4), bb.make_strategy(name, dim=6, seed=4)
    watched.reducer = RecordingReducer()
    for _ in range(3):
        x = plain.ask().params
        np.testing.assert_array_equal(watched.ask().params, x)
        plain.tell(-np.sum((x - 1) ** 2, axis=1))
        watched.tell(-np.sum((x - 1) ** 2, axis=1))
    np.testing.assert_array_equal(watched.center, plain.center)
    assert watched.reducer.calls == [(plain.popsize, squares)] * 3
