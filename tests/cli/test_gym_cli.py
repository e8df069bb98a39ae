"""`blackbox run` on Gymnasium tasks (presets, goal on fresh episodes), `blackbox play`, the README's main job."""

import json
import re
import shlex
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install blackbox-es[gym])")

from blackbox.cli import main  # noqa: E402
from blackbox.files import load_npz, save_npz  # noqa: E402
from tests.helpers import ROOT


def test_run_uses_the_preset_and_confirms_the_goal(tmp_path, capsys):
    out = tmp_path / "cartpole"
    assert main(["run", "--problem", "gym:CartPole-v1", "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["goal_check"]["solved"] and summary["goal_check"]["goal_episodes"] == 100
    assert summary["goal_check"]["confirmed_mean"] >= 475
    assert summary["stop_reason"].startswith("center's mean over 100 fresh episodes")
    config = (out / "config.toml").read_text()
    assert "popsize = 256" in config and "goal_episodes = 100" in config and "preset = true" in config


def test_user_settings_override_the_preset(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["run", "--problem", "gym:CartPole-v1,episodes=2", "--set", "popsize=8", "--generations", "2",
                 "--out", str(out), "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["generations"] == 2 and summary["evaluations"] == 2 * 9
    config = (out / "config.toml").read_text()
    assert "popsize = 8" in config and "episodes = 2" in config and "generations = 2" in config
    assert main(["run", "--problem", "gym:CartPole-v1", "--no-preset", "--out", str(tmp_path / "x")]) == 2
    assert "the run has no budget and could never stop" in capsys.readouterr().err


def test_problem_state_is_saved_and_play_uses_it(tmp_path, capsys):
    out = tmp_path / "pendulum"
    assert main(["run", "--problem", "gym:Pendulum-v1,obs_norm=true,obs_norm_prob=1.0,max_episode_steps=30",
                 "--no-preset", "--set", "popsize=4", "--generations", "2", "--out", str(out),
                 "--quiet"]) == 0
    solution = load_npz(out / "solution.npz")
    assert solution["problem/obs_count"] == 2 * 5 * 30
    capsys.readouterr()
    assert main(["play", str(out), "--episodes", "3", "--seed", "5", "--json"]) == 0
    played = json.loads(capsys.readouterr().out)
    assert played["env"] == "Pendulum-v1" and len(played["returns"]) == 3
    # without the statistics the same parameters behave differently: they were applied
    save_npz(tmp_path / "bare.npz", {"center": solution["center"]})
    assert main(["play", str(out), "--checkpoint", str(tmp_path / "bare.npz"), "--episodes", "3", "--seed", "5",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["returns"] != played["returns"]


def test_play_records_a_gif_from_a_checkpoint_file(tmp_path, capsys):
    out = tmp_path / "cp"
    assert main(["run", "--problem", "gym:CartPole-v1,max_episode_steps=40", "--set", "popsize=4",
                 "--generations", "1", "--out", str(out), "--quiet"]) == 0
    checkpoint = out / "checkpoints" / "gen-000001.npz"
    center = load_npz(out / "solution.npz")["center"]
    save_npz(checkpoint, {"strategy/center": center, "strategy/generation": 1})
    gif = tmp_path / "episode.gif"
    assert main(["play", str(checkpoint), "--episodes", "2", "--gif", str(gif), "--every", "2", "--json"]) == 0
    played = json.loads(capsys.readouterr().out)
    assert played["parameters"] == str(checkpoint) and played["recorded"]["files"] == [str(gif)]
    assert played["recorded"]["return"] == played["returns"][0]
    from PIL import Image

    with Image.open(gif) as image:
        assert image.size == (600, 400) and image.n_frames >= 2


def test_play_renders_only_the_frames_kept_into_the_run_directory(tmp_path, capsys, monkeypatch):
    from gymnasium.envs.classic_control.cartpole import CartPoleEnv
    from PIL import Image

    out = tmp_path / "cp"
    assert main(["run", "--problem", "gym:CartPole-v1,max_episode_steps=60", "--set", "popsize=4",
                 "--generations", "1", "--out", str(out), "--quiet"]) == 0
    rendered = []
    render = CartPoleEnv.render
    monkeypatch.setattr(CartPoleEnv, "render", lambda env: rendered.append(1) or render(env))
    capsys.readouterr()
    assert main(["play", str(out), "--episodes", "1", "--gif", "--every", "4"]) == 0
    printed = capsys.readouterr()
    gif = out / "play-seed0.gif"  # no path given: into the run directory, not where the command ran
    steps = int(re.search(r"recorded episode 0 \(return \S+, (\d+) steps\) to (\S+)", printed.out).group(1))
    assert f"recorded episode 0 (return {steps:g}, {steps} steps) to {gif}" in printed.out
    assert printed.err.startswith("playing 1 episode of CartPole-v1 ...\n")
    assert len(rendered) == 1 + steps // 4  # the reset frame, then one every 4 steps: nothing rendered in vain
    with Image.open(gif) as image:
        assert image.n_frames == len(rendered)


def test_play_errors(tmp_path, capsys):
    assert main(["play", str(tmp_path)]) == 2
    assert "is not a run directory of `blackbox run` (no config.toml)" in capsys.readouterr().err
    out = tmp_path / "q"
    assert main(["run", "--problem", "quadratic:dim=3", "--generations", "1", "--out", str(out), "--quiet"]) == 0
    assert main(["play", str(out)]) == 2
    assert "has nothing to play (only Gymnasium tasks do)" in capsys.readouterr().err
    cp = tmp_path / "cp"
    assert main(["run", "--problem", "gym:CartPole-v1,policy=linear", "--generations", "1", "--set", "popsize=2",
                 "--out", str(cp), "--quiet"]) == 0
    save_npz(tmp_path / "odd.npz", {"weights": np.zeros(3)})
    assert main(["play", str(cp), "--checkpoint", str(tmp_path / "odd.npz")]) == 2
    assert "holds no center parameters (looked for center, strategy/center, strategy.center); it has: weights" \
        in capsys.readouterr().err
    save_npz(tmp_path / "short.npz", {"center": np.zeros(3)})
    assert main(["play", str(cp), "--checkpoint", str(tmp_path / "short.npz")]) == 2
    assert "holds 3 parameters, but the run's problem takes 10" in capsys.readouterr().err


def readme_main_job() -> str:
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    line = next(b.strip() for b in blocks if "blackbox run" in b and "gym:CartPole-v1" in b and "pip install" in b)
    return line.split("&&")[-1].strip()


def test_readme_main_job_trains_and_solves_cartpole(tmp_path):
    command = shlex.split(readme_main_job())
    assert command[0] == "blackbox" and command[1] == "run"  # in the environment the line activates
    assert "--problem" in command and "gym:CartPole-v1" in command
    out = command.index("--out")
    command[out + 1] = str(tmp_path / "cartpole")
    done = subprocess.run([sys.executable, "-m", "blackbox", *command[1:]], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "cartpole" / "result.json").read_text())
    assert result["goal_check"]["solved"] is True
    assert "run saved in" in done.stdout


# -- presets that choose their strategy --------------------------------------------------------

def test_a_preset_picks_its_strategy_when_none_is_named(tmp_path, capsys):
    pytest.importorskip("mujoco")
    out = tmp_path / "hopper"
    assert main(["run", "--problem", "gym:Hopper-v5", "--generations", "1", "--out", str(out), "--quiet"]) == 0
    config = (out / "config.toml").read_text()
    assert 'name = "snes"' in config and "sigma = 0.1" in config and "popsize" not in config
    assert 'policy = "linear"' in config and "reward_shift = -1.0" in config and "goal = 3120.0" in config
    ars = tmp_path / "ars"
    assert main(["run", "--problem", "gym:Hopper-v5", "--strategy", "ars", "--generations", "1",
                 "--out", str(ars), "--quiet"]) == 0
    config = (ars / "config.toml").read_text()
    assert 'name = "ars"' in config and "popsize = 16" in config and "top = 4" in config
    assert 'policy = "linear"' in config and "reward_shift = -1.0" in config
    named = tmp_path / "named"
    assert main(["run", "--problem", "gym:Hopper-v5", "--strategy", "openai-es", "--generations", "1",
                 "--out", str(named), "--quiet"]) == 0
    config = (named / "config.toml").read_text()
    assert 'name = "openai-es"' in config and "weight_decay = 0.005" in config and "reward_shift = 0.0" in config
    options = tmp_path / "options"
    assert main(["run", "--problem", "gym:Hopper-v5", "--set", "popsize=8", "--generations", "1",
                 "--out", str(options), "--quiet"]) == 0
    assert 'name = "snes"' in (options / "config.toml").read_text()
    assert "popsize = 8" in (options / "config.toml").read_text()


def test_an_option_the_chosen_strategy_lacks_says_which_strategy_the_preset_chose(tmp_path, capsys):
    pytest.importorskip("mujoco")
    assert main(["run", "--problem", "gym:Walker2d-v5", "--set", "weight_decay=0", "--generations", "1",
                 "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.startswith(
        "blackbox run: error: --set weight_decay: unknown key 'weight_decay' in [strategy]: strategy 'ars' has no "
        "option 'weight_decay'. Did you mean 'sigma_decay'?")
    assert main(["run", "--problem", "gym:Walker2d-v5", "--set", "weight_decay=0", "--generations", "1",
                 "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.rstrip().endswith(
        "(the preset of gym:Walker2d-v5 runs strategy 'ars' when none is named; name one with --strategy, "
        "e.g. --strategy openai-es)")


def test_an_option_only_the_preset_strategy_has_is_checked_against_that_strategy(tmp_path, capsys):
    """``--set top=4`` on Walker2d (whose preset runs ARS) is an ARS option, not an unknown openai-es one."""
    pytest.importorskip("mujoco")
    run = tmp_path / "top"
    assert main(["run", "--problem", "gym:Walker2d-v5", "--set", "top=4", "--generations", "1",
                 "--out", str(run), "--quiet"]) == 0
    config = (run / "config.toml").read_text()
    assert 'name = "ars"' in config and "top = 4" in config
    assert main(["run", "--problem", "gym:Walker2d-v5", "--no-preset", "--set", "top=4", "--generations", "1",
                 "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.startswith(
        "blackbox run: error: --set top: unknown key 'top' in [strategy]: strategy 'openai-es' has no option 'top'.")
    assert main(["run", "--problem", "gym:CartPole-v1", "--set", "top=4", "--generations", "1",
                 "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.startswith(
        "blackbox run: error: --set top: unknown key 'top' in [strategy]: strategy 'openai-es' has no option 'top'.")


def test_a_task_without_a_preset_says_so(tmp_path, capsys):
    assert main(["run", "--problem", "gym:MountainCar-v0", "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.rstrip().endswith(
        "a target or goal alone may never be reached (gym:MountainCar-v0 has no preset to give one)")
    assert main(["run", "--problem", "gym:MountainCar-v0,max_episode_steps=20", "--set", "popsize=4",
                 "--generations", "1", "--out", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    assert err.count("note: gym:MountainCar-v0 has no preset") == 1
    assert "note: gym:MountainCar-v0 has no preset: using openai-es (its defaults where no option is given)\n" in err
