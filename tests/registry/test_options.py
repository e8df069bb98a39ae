"""The options contract (registry/options.py): what a factory takes, bound and checked in one place.

A factory's options are its keyword parameters, or, for a class with a ``Params`` dataclass, the
fields of ``Params`` in the place of the constructor's ``params`` parameter plus the constructor's
other explicit parameters. Toy plugins are registered in-process.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import blackbox as bb
from blackbox import registry
from blackbox.core.params import Params as BaseParams
from blackbox.registry.component import Component
from blackbox.registry.options import REQUIRED, bind, options_of, resolved_options


class ToyES(bb.Strategy):
    """A strategy whose hyperparameters are a Params dataclass: the best row becomes the center."""

    @dataclass(frozen=True)
    class Params(BaseParams):
        popsize: int = 8
        """Rows sampled each generation."""
        #: Step size of the perturbations.
        sigma: float = 0.1
        lr: float = field(default=0.05, metadata={"doc": "Learning rate of the optimizer.\nMore text."})
        hidden: list[int] = field(default_factory=lambda: [4, 4])
        shaping: str = "centered_ranks"

    def _setup(self) -> None:
        self.sigma = self.params.sigma

    def _ask(self) -> bb.Population:
        return bb.Population.from_dense(self._center + self.sigma * self.rng.standard_normal((self.popsize, self.dim)))

    def _tell(self, population, fitness):
        self._center = population.params[int(np.argmax(fitness))].copy()


class PositionalParams:
    """A problem-like factory whose constructor takes only a Params instance."""

    @dataclass
    class Params:
        env: str = "CartPole-v1"
        episodes: int = 1

    def __init__(self, params=None):
        self.params = params


def plain(x0: float = 0.0, *, scale: float = 1.0, label: str | None = None):
    """A factory function.

    scale: how much to scale by
    :param label: a name for people
    """


@pytest.fixture
def toy():
    registry.strategies.register("toy-es", ToyES)
    try:
        yield "toy-es"
    finally:
        registry.strategies.unregister("toy-es")


def test_options_of_a_params_class_are_its_fields_plus_the_constructors_own():
    known = options_of(ToyES)
    assert known.names == ["dim", "popsize", "sigma", "lr", "hidden", "shaping", "x0", "seed"]
    assert not known.open  # **overrides set the fields: nothing else is passed on
    assert known.positional == ["dim"]
    opts = known.options
    assert (opts["popsize"].default, opts["popsize"].annotation) == (8, int)
    assert opts["hidden"].default == [4, 4] and opts["hidden"].annotation == list[int]
    assert opts["sigma"].doc == "Step size of the perturbations."
    assert opts["popsize"].doc == "Rows sampled each generation."
    assert opts["lr"].doc == "Learning rate of the optimizer."
    assert opts["x0"].default is None and opts["dim"].default is None
    assert opts["x0"].annotation is Any and opts["x0"].describe_type() == ""  # Strategy's x0: Any
    assert "params" not in opts and "overrides" not in opts
    assert opts["popsize"].describe_type() == "an integer"


def test_options_of_a_function_are_its_keyword_parameters_with_docs():
    known = options_of(plain)
    assert known.names == ["x0", "scale", "label"] and not known.open
    assert known.positional == ["x0"]
    assert known.options["scale"].doc == "how much to scale by"
    assert known.options["label"].doc == "a name for people"
    assert known.options["x0"].default == 0.0 and known.options["label"].default is None
    assert options_of(lambda **kw: None).open


def test_a_params_class_without_positional_parameters_takes_its_fields_in_order():
    known = options_of(PositionalParams)
    assert known.positional == ["env", "episodes"]
    component = bind(Component("problem", "toy", ("Acrobot-v1", 3), {}, "--problem"), known)
    assert component.options == {"env": "Acrobot-v1", "episodes": 3} and component.bound
    built = registry.options.call(PositionalParams, component)  # no **overrides: one Params instance
    assert built.params == PositionalParams.Params("Acrobot-v1", 3)
    with pytest.raises(bb.ConfigError) as info:
        bind(Component("problem", "toy", ("a", 1, 2), {}, "--problem"), known)
    assert str(info.value) == ("--problem: problem 'toy' takes at most 2 positional value(s) (env, episodes), "
                               "got 3: ['a', 1, 2]")


def test_make_binds_and_checks_params_fields(toy):
    es = bb.make_strategy("toy-es:popsize=6", dim=3, seed=0, sigma=0.2)
    assert (es.params.popsize, es.params.sigma, es.popsize) == (6, 0.2, 6)
    with pytest.raises(bb.ConfigError) as info:  # from Python: the factory checks the value
        bb.make_strategy("toy-es:popsize=6.5", dim=3)
    assert str(info.value) == "popsize must be an integer, got 6.5"
    with pytest.raises(bb.ConfigError) as info:  # from a flag: checked against the annotation, located
        bb.make_strategy(Component.parse("strategy", "toy-es:sigma=fast", "--strategy"), dim=3)
    assert str(info.value) == "--strategy: [strategy] sigma must be a number (strategy 'toy-es'), got 'fast'"
    assert bb.make_strategy("toy-es", dim=3, popsize=np.int64(4)).popsize == 4  # numpy scalars are numbers


def test_resolved_options_fill_in_params_defaults(toy):
    known = options_of(ToyES)
    assert resolved_options(known, {"sigma": 0.3}) == {
        "dim": None, "popsize": 8, "sigma": 0.3, "lr": 0.05, "hidden": [4, 4], "shaping": "centered_ranks",
        "x0": None, "seed": None}
    assert REQUIRED is not None


def test_a_run_config_takes_params_fields_and_writes_them(toy, tmp_path, capsys):
    from blackbox.cli import main
    from blackbox.config.toml import load_toml

    out = tmp_path / "r"
    assert main(["run", "--strategy", "toy-es:popsize=6", "--problem", "sphere:dim=2", "--generations", "2",
                 "--set", "lr=0.01", "--quiet", "--no-plot", "--out", str(out)]) == 0
    written = load_toml(out / "config.toml").data["strategy"]
    assert written == {"name": "toy-es", "popsize": 6, "sigma": 0.1, "lr": 0.01, "hidden": [4, 4],
                       "shaping": "centered_ranks"}
    assert main(["run", "--strategy", "toy-es:popsiz=6", "--problem", "sphere:dim=2", "--generations", "2",
                 "--quiet", "--out", str(tmp_path / "bad")]) == 2
    assert ("--strategy: unknown key 'popsiz' in [strategy]: strategy 'toy-es' has no option 'popsiz'. "
            "Did you mean 'popsize'?") in capsys.readouterr().err


def test_unknown_option_of_a_closed_factory_lists_the_options():
    with pytest.raises(bb.errors.UnknownNameError) as info:
        bb.make_problem("sphere:dimm=3")
    assert str(info.value) == "problem 'sphere' has no option 'dimm'. Did you mean 'dim'? Options: dim, init_scale"


def test_a_missing_required_option_is_a_config_error():
    def needs(level, *, scale=1.0):
        return None

    component = bind(Component("problem", "needs", (), {"scale": 2.0}, "run.toml:3"), needs)
    with pytest.raises(bb.ConfigError) as info:
        registry.options.call(needs, component)
    assert str(info.value) == "run.toml:3: problem 'needs' needs the option 'level', which has no default"


def test_make_accepts_components_and_refuses_the_wrong_kind():
    problem = registry.make("problem", Component.parse("problem", "sphere:3"))
    assert problem.dim == 3
    assert bb.make_problem(Component("problem", "quadratic", options={"dim": 2})).dim == 2
    with pytest.raises(bb.ConfigError, match="a strategy component \\('nes'\\) was given where a problem belongs"):
        bb.make_problem(Component("strategy", "nes"))
    with pytest.raises(bb.ConfigError, match="problem must be named by a string, got int: 3"):
        bb.make_problem(3)


def test_list_shows_the_options(toy, capsys, monkeypatch):
    import json

    monkeypatch.setenv("COLUMNS", "400")  # one table row per line

    from blackbox.cli import main

    assert main(["list", "strategies", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    options = {o["name"]: o for o in rows["toy-es"]["options"]}
    assert list(options) == ["dim", "popsize", "sigma", "lr", "hidden", "shaping", "x0", "seed"]
    assert options["sigma"] == {"name": "sigma", "default": 0.1, "required": False, "type": "a number",
                                "description": "Step size of the perturbations."}
    assert options["hidden"]["default"] == [4, 4]
    assert main(["list", "strategies", "--options"]) == 0
    table = capsys.readouterr().out
    assert "popsize=8" in table and "Rows sampled each generation." in table


class FieldByPosition:
    """The constructor takes one Params field by position (as the gym problem takes ``env``)."""

    @dataclass
    class Params:
        env: str = "CartPole-v1"
        episodes: int = 1

    def __init__(self, env="CartPole-v1", *, frames=None, **overrides):
        self.params = self.Params(env, **overrides)


def test_a_field_the_constructor_takes_by_position_stays_positional():
    known = options_of(FieldByPosition)
    assert known.names == ["env", "episodes", "frames"] and known.positional == ["env"]
    component = bind(Component.parse("problem", "toy:Acrobot-v1,episodes=2", "--problem"), known)
    assert component.options == {"env": "Acrobot-v1", "episodes": 2}
    assert registry.options.call(FieldByPosition, component).params == FieldByPosition.Params("Acrobot-v1", 2)


# -- resolve: the one pass per component ------------------------------------------------------------
def test_resolve_names_checks_lays_a_preset_under_and_completes_in_one_pass():
    given = Component.parse("strategy", "toy:3,popsize=12,sigma=0.5", "--strategy")
    resolved = registry.options.resolve(given, ToyES, under={"sigma": 0.9, "lr": 0.2}, under_where="preset of x",
                                        unwritten=("dim", "seed", "x0"))
    assert resolved.bound and resolved.args == ()
    # the positional value named (dim, given: written), the user's values win over the preset's,
    # the defaults fill the rest, and the unwritten ones the user did not set are left out
    assert resolved.options == {"dim": 3, "popsize": 12, "sigma": 0.5, "lr": 0.2, "hidden": [4, 4],
                                "shaping": "centered_ranks"}
    # provenance: where each value came from
    assert (resolved.located("dim"), resolved.located("sigma"), resolved.located("lr")) == (
        "--strategy", "--strategy", "preset of x")


def test_resolve_refuses_a_reserved_key_first_and_checks_what_a_preset_adds():
    given = Component.parse("strategy", "toy:dim=3,popsize=lots", "--strategy")
    with pytest.raises(bb.ConfigError) as info:
        registry.options.resolve(given, ToyES, refuse={"dim": "the problem's dimension"})
    assert str(info.value) == "--strategy: dim is the problem's dimension; do not set it as a strategy option"
    bound = registry.options.resolve(Component.parse("strategy", "toy:popsize=4", "--strategy"), ToyES,
                                     complete=False)
    assert bound.bound and bound.options == {"popsize": 4}
    with pytest.raises(bb.ConfigError) as info:
        registry.options.resolve(bound, ToyES, under={"sigma": "wide"}, under_where="preset of p")
    assert str(info.value) == "preset of p: [strategy] sigma must be a number (strategy 'toy'), got 'wide'"


def test_component_parse_is_the_one_door_and_as_component_leads_to_it():
    component = Component.parse("problem", "sphere:3", "--problem")
    assert Component.parse("problem", component) is component
    assert registry.as_component("problem", component) is component
    with pytest.raises(bb.ConfigError, match=r"^a problem component \('sphere'\) was given where a strategy belongs$"):
        Component.parse("strategy", component)
    with pytest.raises(bb.ConfigError, match=r"^strategy must be named by a string, got int: 3$"):
        Component.parse("strategy", 3)
