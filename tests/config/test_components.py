"""One Component from the command line to the factory: every error names where the bad value came
from (a flag, a file and line, a problem's preset, a default)."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from blackbox import registry
from blackbox.cli import main
from blackbox.config.component import component_override, read_component
from blackbox.config.toml import load_toml
from blackbox.errors import ConfigError
from blackbox.problems.functions import Sphere


def run_cli(args, capsys) -> tuple[int, str]:
    code = main(["run", "--quiet", "--no-plot", *args])
    return code, capsys.readouterr().err


def write(tmp_path, text):
    path = tmp_path / "run.toml"
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize("args,message", [
    (["--set", "sigmaa=0.1"], "--set sigmaa: unknown key 'sigmaa' in [strategy]: strategy 'openai-es' has no "
                              "option 'sigmaa'. Did you mean 'sigma'?"),
    (["--strategy", "nes:popsize=x"], "--strategy: [strategy] popsize must be an integer (strategy 'nes'), got 'x'"),
    (["--set", "problem.dimm=3"], "--set problem.dimm: unknown key 'dimm' in [problem]: problem 'quadratic' has "
                                  "no option 'dimm'. Did you mean 'dim'?"),
    (["--problem", "sphere:3,4"], "--problem: problem 'sphere' takes at most 1 positional value(s) (dim), "
                                  "got 2: [3, 4]"),
    (["--problem", "sphere:3,dim=4"], "--problem: problem 'sphere' got dim twice: as the positional value 3 and "
                                      "as dim=4; give it once"),
    (["--executor", "serial:batch_size=0"], "--executor: [executor] serial: batch_size must be >= 1, got 0"),
    (["--problem", "sphere:dim=3", "--set", "problem.init_scale=-2"],
     "--set problem.init_scale: [problem] sphere: init_scale must be > 0, got -2.0"),
])
def test_an_error_names_the_flag(tmp_path, capsys, args, message):
    code, err = run_cli(["--generations", "2", "--out", str(tmp_path / "r"), *args], capsys)
    assert code == 2
    assert err.startswith(f"blackbox run: error: {message}")


@pytest.mark.parametrize("text,message", [
    ('strategy = "nes:popsize=x"\n', "run.toml:1: [strategy] popsize must be an integer (strategy 'nes'), got 'x'"),
    ('[strategy]\nspec = "nes:sigmaa=1"\n', "run.toml:2: unknown key 'sigmaa' in [strategy]"),
    ('[strategy]\nname = "nes"\n\nsigma = -1\n', "run.toml:4: [strategy] nes: sigma must be > 0, got -1.0"),
    ('problem = { name = "sphere", dim = 2, init_scale = 0 }\n',
     "run.toml:1: [problem] sphere: init_scale must be > 0, got 0.0"),
])
def test_an_error_names_the_file_and_line(tmp_path, capsys, text, message):
    path = write(tmp_path, text + "[stop]\ngenerations = 2\n")
    code, err = run_cli(["--config", str(path), "--out", str(tmp_path / "r")], capsys)
    assert code == 2
    assert err.startswith(f"blackbox run: error: {path}{message.removeprefix('run.toml')}")


class Recommends(Sphere):
    """A test function whose preset is given by the test."""

    name = "recommends"
    preset: dict[str, Any] = {}

    @classmethod
    def recommended(cls, *args: Any, strategy: str = "openai-es", **options: Any) -> dict[str, Any]:
        return cls.preset


@pytest.fixture
def recommends():
    registry.problems.register("recommends", Recommends)
    try:
        yield Recommends
    finally:
        registry.problems.unregister("recommends")
        Recommends.preset = {}


@pytest.mark.parametrize("preset,message", [
    ({"strategy": {"sigmaa": 0.1}}, "preset of recommends: unknown key 'sigmaa' in [strategy]: strategy "
                                    "'openai-es' has no option 'sigmaa'. Did you mean 'sigma'?"),
    ({"problem": {"init_scale": "wide"}}, "preset of recommends: [problem] init_scale must be a number "
                                          "(problem 'recommends'), got 'wide'"),
    ({"strategy": {"sigma": -0.5}}, "preset of recommends: [strategy] openai-es: sigma must be > 0, got -0.5"),
    ({"run": {"generations": 0}}, "preset of recommends: [stop] generations must be >= 1, got 0"),
])
def test_an_error_names_the_preset(tmp_path, capsys, recommends, preset, message):
    recommends.preset = preset
    code, err = run_cli(["--problem", "recommends:dim=2", "--out", str(tmp_path / "r"), "--generations", "2"]
                        if "run" not in preset else ["--problem", "recommends:dim=2", "--out", str(tmp_path / "r")],
                        capsys)
    assert code == 2
    assert err.startswith(f"blackbox run: error: {message}")


def test_a_preset_fills_in_one_step_and_the_user_wins(tmp_path, recommends):
    recommends.preset = {"strategy": {"sigma": 0.3, "popsize": 12}, "problem": {"init_scale": 2.0},
                         "run": {"generations": 3, "goal": -1e9, "goal_generations": 2}}
    out = tmp_path / "r"
    assert main(["run", "--problem", "recommends:dim=2", "--set", "popsize=10", "--quiet", "--no-plot",
                 "--out", str(out)]) == 0
    written = load_toml(out / "config.toml").data
    assert (written["strategy"]["sigma"], written["strategy"]["popsize"]) == (0.3, 10)
    assert written["problem"] == {"name": "recommends", "dim": 2, "init_scale": 2.0}
    assert written["stop"] == {"generations": 3, "goal": -1e9, "goal_generations": 2}


def test_a_flag_merges_into_the_files_table_by_name_and_position(tmp_path):
    doc = load_toml(write(tmp_path, '[problem]\nname = "sphere"\ndim = 4\ninit_scale = 2.0\n'))
    base = read_component("problem", doc.data["problem"], doc.where("problem"), doc)
    assert base.located("dim") == f"{doc.path}:3" and base.where == f"{doc.path}:1"
    merged = component_override("problem", base, "sphere:3", "--problem")
    assert merged.options == {"dim": 3, "init_scale": 2.0}
    assert (merged.located("dim"), merged.located("init_scale")) == ("--problem", f"{doc.path}:4")
    other = component_override("problem", base, "quadratic", "--problem")
    assert other.options == {} and other.where == "--problem"
    with pytest.raises(ConfigError, match="run.toml:1: unknown problem 'spherre'. Did you mean 'sphere'?"):
        read_component("problem", "spherre", f"{tmp_path / 'run.toml'}:1")
