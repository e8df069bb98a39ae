"""Every example runs in smoke mode (BLACKBOX_SMOKE=1): scripts, run configs, experiment files."""

import csv
import runpy
from pathlib import Path

import pytest

from blackbox.cli import main
from blackbox.registry.plugins import executors, problems, strategies
from tests.helpers import ROOT
from tests.helpers.extras import missing, requires, requires_problem

EXAMPLES = ROOT / "examples"
TESTED = {"ask_tell.py", "functions.toml", "cartpole.toml", "cartpole_loky.py", "nes_quadratic.toml",
          "cyclic_mdp.toml", "frame_skip.toml", "all_strategies.toml", "simulated_cluster.py", "gym_ask_tell.py"}


def needs(kind, name, what):
    """Skip unless the plugin is registered and, for a built-in problem, its extra is installed."""
    registry = {"problem": problems, "executor": executors}[kind]
    if name not in registry.names():
        return pytest.mark.skipif(True, reason=f"{what}: the {kind} {name!r} is not registered in this install")
    return requires_problem(name) if kind == "problem" else pytest.mark.skipif(False, reason="")


def results(out):
    with open(Path(out) / "results.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def test_every_example_has_a_smoke_test():
    assert {p.name for p in EXAMPLES.iterdir() if p.suffix in (".py", ".toml")} == TESTED


def test_ask_tell(monkeypatch, capsys):
    monkeypatch.setenv("BLACKBOX_SMOKE", "1")
    runpy.run_path(str(EXAMPLES / "ask_tell.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "generation    10" in out and "center:" in out


@requires_problem("gym")
def test_gym_ask_tell_loop_folds_observations_and_repeats_exactly(monkeypatch, capsys):
    monkeypatch.setenv("BLACKBOX_SMOKE", "1")
    printed = []
    for _ in range(2):
        runpy.run_path(str(EXAMPLES / "gym_ask_tell.py"), run_name="__main__")
        printed.append(capsys.readouterr().out)
    assert printed[0] == printed[1]  # the seeds and the start point make it repeat exactly
    lines = printed[0].splitlines()
    counts = [int(line.rsplit(" ", 1)[1]) for line in lines[:3]]
    assert [line.split()[:2] for line in lines[:3]] == [["generation", "1"], ["generation", "2"], ["generation", "3"]]
    assert 0 < counts[0] < counts[1] < counts[2]  # observe() folded every generation's observations
    assert lines[3] == "saved: ['obs_count', 'obs_m2', 'obs_mean']"


def test_run_config_example(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "--config", str(EXAMPLES / "nes_quadratic.toml"), "--generations", "5", "--quiet",
                 "--out", str(out), "--no-plot"]) == 0
    assert main(["run", "--config", str(out / "config.toml"), "--quiet", "--out", str(tmp_path / "again"),
                 "--no-plot"]) == 0
    assert (out / "records.csv").read_text().count("\n") == 6


def test_functions_comparison(tmp_path, monkeypatch):
    monkeypatch.setenv("BLACKBOX_SMOKE", "1")
    out = tmp_path / "functions"
    assert main(["compare", str(EXAMPLES / "functions.toml"), "--out", str(out), "--quiet"]) == 0
    rows = results(out)
    assert len(rows) == 3 * 3 * 2 and {r["status"] for r in rows} == {"finished"}
    assert (out / "summary.md").exists()
    # the plots come with the plot extra (matplotlib); without it the comparison writes none
    assert (out / "plots" / "sphere-evaluations.png").exists() is not bool(missing("matplotlib"))


@needs("problem", "gym", "the CartPole comparison needs gym:CartPole-v1")
def test_cartpole_comparison(tmp_path):
    out = tmp_path / "cartpole"
    assert main(["compare", str(EXAMPLES / "cartpole.toml"), "--smoke", "--out", str(out), "--quiet"]) == 0
    rows = results(out)
    expected = {"openai-es", "nes", "ga"} | ({"cma"} if "cma" in strategies.names() else set())
    assert {r["strategy"] for r in rows} == expected and len(rows) == 2 * len(expected)
    assert all(int(r["steps"]) > 0 for r in rows)
    assert "Environment steps each strategy needs" in (out / "summary.md").read_text()
    assert (out / "plots" / "cartpole-steps.png").exists()


@needs("problem", "gym", "CartPole with loky needs gym:CartPole-v1")
@needs("executor", "loky", "CartPole with loky needs loky:workers=2")
def test_cartpole_with_loky(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BLACKBOX_SMOKE", "1")
    monkeypatch.setenv("BLACKBOX_EXAMPLE_OUT", str(tmp_path))
    runpy.run_path(str(EXAMPLES / "cartpole_loky.py"), run_name="__main__")
    assert "same final center with loky and serial: True" in capsys.readouterr().out
    assert (tmp_path / "loky" / "config.toml").read_text().count('name = "loky"') == 1


@pytest.mark.reliability_long  # a simulated cluster takes 10 to 20 s to start
@needs("executor", "ray", "the simulated cluster needs blackbox-ray")
def test_simulated_cluster(monkeypatch, capsys):
    monkeypatch.setenv("BLACKBOX_SMOKE", "1")
    runpy.run_path(str(EXAMPLES / "simulated_cluster.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "3 nodes, 3 workers; 3 generations, 9 driver calls (3 a generation), 3 sums reduced on the nodes" in out
    assert "same final center on the cluster and serially: True" in out


@needs("problem", "gym", "the cyclic MDP comparison needs the gym problem")
def test_cyclic_mdp_comparison(tmp_path):
    out = tmp_path / "cyclic"
    assert main(["compare", str(EXAMPLES / "cyclic_mdp.toml"), "--smoke", "--out", str(out), "--quiet"]) == 0
    rows = results(out)
    assert {r["strategy"] for r in rows} == {"openai-es", "pgpe", "snes", "cma-es", "ars", "cem"}
    assert len(rows) == 6 * 2 and {r["status"] for r in rows} == {"finished"}
    config = (out / "runs" / "cyclic" / "cem" / "seed-0" / "config.toml").read_text()
    assert "blackbox/CyclicMDP-v0" in config and "state_dependent = true" in config


@pytest.mark.slow  # over 8 s: the default run stays under 10 minutes; CI runs -m slow
@needs("problem", "gym", "the frame-skip experiment needs gym:Acrobot-v1")
def test_frame_skip_experiment(tmp_path):
    out = tmp_path / "frame_skip"
    assert main(["compare", str(EXAMPLES / "frame_skip.toml"), "--smoke", "--out", str(out), "--quiet"]) == 0
    rows = results(out)
    assert {r["problem"] for r in rows} == {"skip-1", "skip-2", "skip-4", "skip-8"} and len(rows) == 8
    assert "Acrobot-v1,frame_skip=8" in (out / "summary.md").read_text()
    assert all(int(r["steps"]) > 0 for r in rows)


@needs("problem", "gym", "the all-strategies comparison needs the gym problem")
@requires("mujoco")  # the all-strategies comparison runs Hopper-v5
def test_all_strategies_comparison(tmp_path):
    out = tmp_path / "all"
    assert main(["compare", str(EXAMPLES / "all_strategies.toml"), "--smoke", "--out", str(out), "--quiet"]) == 0
    rows = results(out)
    builtins = {e.name for e in strategies.entries() if e.distribution == "blackbox-es"}
    expected = builtins | ({"cma"} if "cma" in strategies.names() else set())
    assert {r["strategy"] for r in rows} == expected and {r["problem"] for r in rows} == {"cartpole", "hopper"}
    assert {r["status"] for r in rows} == {"finished"}
