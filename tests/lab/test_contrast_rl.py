"""ES against reinforcement learning: the zoo's settings, the ARS translation, the ratios, bad input."""

import importlib.machinery
import importlib.util
import json

import pytest

from blackbox.cli import main
from blackbox.errors import ConfigError

pytest.importorskip("gymnasium")
needs_sb3 = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("stable_baselines3", "sb3_contrib", "rl_zoo3", "yaml")),
    reason="needs the rl extra (stable-baselines3, sb3-contrib, rl-zoo3)")


@needs_sb3
def test_zoo_entry_reads_the_installed_yaml_and_maps_v5_to_the_tuned_v4():
    from torch import nn

    from blackbox.lab.contrast.zoo import zoo_entry

    entry = zoo_entry("ppo", "HalfCheetah-v5")
    assert entry.key == "HalfCheetah-v4" and entry.task == "HalfCheetah-v5"
    assert entry.n_envs == 1 and entry.n_timesteps == 1_000_000 and entry.normalize == {}
    assert entry.kwargs["policy_kwargs"]["activation_fn"] is nn.ReLU
    assert entry.kwargs["policy_kwargs"]["net_arch"] == {"pi": [256, 256], "vf": [256, 256]}
    assert entry.describe() == "RL Baselines3 Zoo ppo.yml (the zoo's HalfCheetah-v4 entry)"
    cartpole = zoo_entry("ppo", "CartPole-v1")
    assert cartpole.kwargs["learning_rate"](1.0) == pytest.approx(0.001)
    assert cartpole.kwargs["learning_rate"](0.5) == pytest.approx(0.0005)
    assert "n_envs" not in cartpole.kwargs and "n_timesteps" not in cartpole.kwargs
    assert zoo_entry("ars", "Hopper-v5").normalize == {"norm_obs": True, "norm_reward": False}


@needs_sb3
def test_zoo_entry_refuses_a_task_the_zoo_does_not_tune():
    from blackbox.lab.contrast.zoo import zoo_entry

    with pytest.raises(ConfigError, match=r"RL Baselines3 Zoo has no tuned PPO settings for 'NoSuchTask-v0' "
                                          r"\(closest entries: .*\); choose a task it tunes"):
        zoo_entry("ppo", "NoSuchTask-v0")


@needs_sb3
def test_ars_settings_translate_the_zoo_entry_and_name_what_differs():
    from blackbox.lab.contrast.rl import ars_settings
    from blackbox.lab.contrast.zoo import zoo_entry

    flags, notes = ars_settings(zoo_entry("ars", "Hopper-v5"))
    # LinearPolicy: no bias, clipped actions; alive_bonus_offset -> reward_shift; zero_policy -> x0=0
    assert flags == ["--strategy", "ars", "--set", "popsize=16", "--set", "top=4", "--set", "sigma=0.025",
                     "--set", "lr=0.01", "--set", "problem.policy=linear", "--set", "problem.bias=false",
                     "--set", "problem.action_bounds=clip", "--set", "problem.obs_norm=true",
                     "--set", "problem.obs_norm_prob=1.0", "--set", "problem.reward_shift=-1", "--set", "x0=0"]
    assert notes == ["sb3-contrib divides ARS's step by the unbiased standard deviation of the 8 best returns, "
                     "blackbox's ars (as Mania et al.'s code) by the biased one: a step 1.07x sb3-contrib's"]
    flags, notes = ars_settings(zoo_entry("ars", "Swimmer-v5"))
    assert "problem.obs_norm=true" not in flags and "popsize=2" in flags and "x0=0" in flags
    assert not any("reward_shift" in flag for flag in flags) and "a step 1.41x" in notes[0]
    flags, _ = ars_settings(zoo_entry("ars", "Pendulum-v1"))  # MlpPolicy (with biases), zero_policy=False
    assert "problem.hidden=[16]" in flags and "problem.bias=false" not in flags and "x0=0" not in flags


def test_missing_sb3_names_the_install_command(monkeypatch, capsys):
    from blackbox.lab.contrast import zoo

    real = importlib.util.find_spec
    present = importlib.machinery.ModuleSpec("present", None)  # the others count as installed, wherever this runs

    def find_spec(name, *args):
        if name == "stable_baselines3":
            return None
        if name in ("sb3_contrib", "rl_zoo3"):
            return present
        return real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(ConfigError) as info:
        zoo.require_sb3()
    assert str(info.value).endswith("(stable_baselines3 not installed): pip install 'blackbox-es[rl]'")
    assert main(["contrast", "rl", "Pendulum-v1"]) == 2
    assert "pip install 'blackbox-es[rl]'" in capsys.readouterr().err


@needs_sb3
def test_unknown_task_names_the_nearest_ids(capsys, tmp_path):
    assert main(["contrast", "rl", "Pendulm-v1", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("blackbox contrast rl: error: unknown Gymnasium environment 'Pendulm-v1'. "
                          "Did you mean 'Pendulum-v1'?")


def test_ratios_and_report_text():
    from blackbox.lab.contrast.rl import RLContrastReport
    from blackbox.lab.contrast.rl_report import describe_rl_contrast
    from blackbox.lab.contrast.sb3 import RLCurve

    es = RLCurve("blackbox openai-es (preset)", steps=[10, 20], times=[1.0, 2.0], returns=[1.0, 5.0],
                 steps_to_goal=4_000, time_to_goal=20.0, total_steps=4_000, total_time=20.0)
    rl = RLCurve("PPO (Stable-Baselines3)", steps=[10], times=[1.0], returns=[5.0], steps_to_goal=1_000,
                 time_to_goal=100.0, total_steps=1_000, total_time=100.0,
                 config={"source": "RL Baselines3 Zoo ppo.yml", "budget_steps": 5_000, "check_every": 500})
    report = RLContrastReport("Pendulum-v1", -200.0, 20, "ppo", es, rl, "blackbox run --problem gym:Pendulum-v1")
    assert report.data_ratio == pytest.approx(4.0) and report.time_ratio == pytest.approx(5.0)
    text = describe_rl_contrast(report)
    assert ("data: ES used 4.00x the environment steps of PPO (paper, against TRPO on MuJoCo: 3-10x; "
            "this is within that range)") in text
    assert "wall time: ES was 5.00x faster than PPO to the goal (100.0 s / 20.0 s)" in text
    rl.steps_to_goal = rl.time_to_goal = None
    assert report.data_ratio is None and report.time_ratio is None
    assert "no ratio: PPO (Stable-Baselines3) did not reach the goal within the budget" in describe_rl_contrast(report)


@needs_sb3
def test_contrast_rl_end_to_end_on_a_small_budget(tmp_path, capsys):
    out = tmp_path / "c"
    assert main(["contrast", "rl", "CartPole-v1", "--max-steps", "3000", "--out", str(out), "--no-plot"]) == 0
    report = json.loads((out / "contrast-rl.json").read_text())
    assert report["task"] == "CartPole-v1" and report["goal"] == 475.0 and report["goal_episodes"] == 100
    assert report["es_command"] == "blackbox run --problem gym:CartPole-v1 --max-steps 3000 --seed 0"
    assert report["rl"]["total_steps"] >= 3000 and report["rl"]["config"]["zoo_entry"] == "CartPole-v1"
    assert report["es"]["steps"] and report["rl"]["steps"]
    assert any(note.startswith("wall times are training only: ") for note in report["notes"])
    err = capsys.readouterr().err  # a progress line per side while it trains
    assert "blackbox openai-es (preset): training (blackbox run --problem gym:CartPole-v1 --max-steps 3000 --seed 0)\n" in err
    assert "blackbox openai-es (preset): generation 1, " in err
    assert "PPO (Stable-Baselines3): training, budget 3,000 steps (RL Baselines3 Zoo ppo.yml" in err
    assert main(["contrast", "rl", "CartPole-v1", "--max-steps", "3000", "--out", str(out)]) == 2
    assert "already holds contrast-rl.json; pass --overwrite" in capsys.readouterr().err


# -- issue 22: fair and alive --------------------------------------------------------------------

@needs_sb3
def test_the_baselines_clock_leaves_out_its_goal_confirmations():
    import time

    from blackbox.lab.contrast.sb3 import train_sb3
    from blackbox.lab.contrast.zoo import zoo_entry

    lines: list[str] = []
    started = time.perf_counter()
    curve = train_sb3(zoo_entry("ppo", "CartPole-v1"), goal=0.0, goal_episodes=40, max_steps=20_000, max_time=None,
                      seed=0, threads=1, log=lines.append)
    wall = time.perf_counter() - started
    assert curve.reached and curve.steps_to_goal == curve.steps[-1] and curve.time_to_goal == curve.times[-1]
    assert curve.confirm_time > 0 and curve.total_time == pytest.approx(curve.time_to_goal, abs=0.05)
    assert curve.total_time + curve.confirm_time <= wall
    assert lines[0].startswith("PPO (Stable-Baselines3): training, budget 20,000 steps")


def test_the_presets_step_budget():
    from blackbox.cli.run import run_config_from_flags
    from blackbox.config.run import resolve_run_config
    from blackbox.lab.contrast.rl import preset_step_budget

    cartpole = resolve_run_config(run_config_from_flags(["--problem", "gym:CartPole-v1"]))
    assert preset_step_budget(cartpole) == 100 * 257 * 500  # generations x (popsize + center) x horizon
    pendulum = resolve_run_config(run_config_from_flags(["--problem", "gym:Pendulum-v1"]))
    assert preset_step_budget(pendulum) == 10_000_000
    timed = resolve_run_config(run_config_from_flags(["--problem", "gym:CartPole-v1", "--max-time", "5"]))
    assert preset_step_budget(timed) is None


def _budgets_seen(monkeypatch, **contrast) -> tuple[dict, object]:
    """Run a Pendulum contrast with both trainings faked (ES short of its goal); what each side was given,
    and the report."""
    return _raced(monkeypatch, None, None, **contrast)


@needs_sb3
def test_both_sides_get_the_larger_budget_by_default(monkeypatch):
    seen, report = _budgets_seen(monkeypatch)
    assert seen["es_flags"][-2:] == ["--max-steps", "10000000"] and seen["rl"]["max_steps"] == 10_000_000
    assert ("same step budget for both: 10,000,000 steps, the larger of the zoo's n_timesteps (100,000) and the "
            "preset's (10,000,000)") in report.notes


@needs_sb3
def test_a_time_cap_keeps_the_shared_step_budget(monkeypatch):
    """--max-time caps both sides' clocks on top of the step budget: the baseline still gets the
    preset's budget, not the zoo's smaller n_timesteps (it got 100,000 steps on Pendulum before)."""
    seen, _ = _budgets_seen(monkeypatch, max_time=450.0)
    assert seen["es_flags"][-4:] == ["--max-steps", "10000000", "--max-time", "450.0"]
    assert seen["rl"]["max_steps"] == 10_000_000 and seen["rl"]["max_time"] == 450.0


@needs_sb3
def test_reading_the_zoo_leaves_gymnasiums_time_limit_alone():
    """Importing rl_zoo3 replaces gymnasium.wrappers.TimeLimit for the whole process (its
    gym_patches module); the zoo's YAML is read without that import, so every environment made
    afterwards keeps Gymnasium's own TimeLimit."""
    import subprocess
    import sys

    code = ("import gymnasium, sys\n"
            "from blackbox.lab.contrast.zoo import zoo_entry\n"
            "zoo_entry('ppo', 'CartPole-v1'); zoo_entry('ars', 'Hopper-v5')\n"
            "print('rl_zoo3' in sys.modules, gymnasium.wrappers.TimeLimit.__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "TimeLimit"]


# -- issue 22: the preset against the zoo's ARS, and races -----------------------------------------

def _raced(monkeypatch, es_steps: int | None, es_time: float | None, **contrast) -> tuple[dict, object]:
    """A Pendulum contrast with both sides faked, ES reaching its goal at ``es_steps`` / ``es_time``
    (None: not reached); what each side was given, and the report."""
    from blackbox.cli.run import run_config_from_flags
    from blackbox.config.run import resolve_run_config
    from blackbox.lab.contrast import rl
    from blackbox.lab.contrast.sb3 import RLCurve

    seen: dict = {}

    def es_curve(task, flags, seed, out, suffix, read_flags, log=None):
        seen["es_flags"], seen["suffix"] = flags, suffix
        resolved = resolve_run_config(read_flags(["--problem", f"gym:{task}", *flags])).to_dict()
        curve = RLCurve("es", config={"command": "blackbox run"})
        curve.steps_to_goal, curve.time_to_goal = es_steps, es_time
        return curve, resolved

    def train(entry, **kwargs):
        seen["rl"], seen["entry"] = kwargs, entry
        return RLCurve("ars")

    monkeypatch.setattr(rl, "_es_curve", es_curve)
    monkeypatch.setattr(rl, "train_sb3", train)
    return seen, rl.run_rl_contrast("Pendulum-v1", run_config_from_flags, **contrast)


@needs_sb3
def test_the_preset_against_the_zoos_ars_raced_on_steps(monkeypatch):
    seen, report = _raced(monkeypatch, 3_109_500, 45.0, baseline="ars", es_settings="preset", race="steps")
    assert seen["suffix"] == " (preset)" and "--strategy" not in seen["es_flags"]  # the preset's own strategy
    assert seen["entry"].algo == "ars" and seen["rl"]["max_steps"] == 3_109_500 and seen["rl"]["max_time"] is None
    assert report.es_settings == "preset" and report.race == "steps"
    assert ("race on steps: the baseline stopped at the 3,109,500 steps ES needed to reach the goal; 'not reached' "
            "there means it needs more steps than ES") in report.notes
    assert report.as_dict()["es_settings"] == "preset" and report.as_dict()["race"] == "steps"


@needs_sb3
def test_a_race_on_time_caps_the_baselines_clock_and_an_unsolved_es_races_nothing(monkeypatch):
    seen, report = _raced(monkeypatch, 800_000, 69.5, race="time", max_time=450.0)
    assert seen["rl"]["max_time"] == 69.5 and seen["rl"]["max_steps"] == 10_000_000
    assert any(n.startswith("race on time: the baseline stopped at the 69.5 s of training ES needed") for n in report.notes)
    seen, report = _raced(monkeypatch, None, None, race="steps")
    assert seen["rl"]["max_steps"] == 10_000_000
    assert "race on steps: ES did not reach the goal, so the baseline ran the whole budget" in report.notes


@needs_sb3
def test_ars_against_ars_keeps_the_zoos_settings_on_both_sides_by_default(monkeypatch):
    seen, report = _raced(monkeypatch, None, None, baseline="ars")
    assert seen["es_flags"][:2] == ["--strategy", "ars"] and seen["suffix"] == "" and report.es_settings == "zoo"


@needs_sb3
def test_contrast_settings_refused_with_one_line(monkeypatch):
    from blackbox.errors import ConfigError

    with pytest.raises(ConfigError) as error:
        _raced(monkeypatch, None, None, es_settings="zoo")
    assert str(error.value) == ("es_settings must be 'preset' (the zoo has ARS settings only for --baseline ars) with "
                                "baseline 'ppo', got 'zoo'")
    with pytest.raises(ConfigError) as error:
        _raced(monkeypatch, None, None, baseline="ars", race="wall")
    assert str(error.value) == "race must be one of steps, time (or none), got 'wall'"


@needs_sb3
def test_the_baselines_last_check_is_judged_too():
    """A budget that ends before the first interval check (as a race on steps can) still judges the
    check where training ended: reaching the goal there counts, with its confirmation."""
    from blackbox.lab.contrast.sb3 import train_sb3
    from blackbox.lab.contrast.zoo import zoo_entry

    curve = train_sb3(zoo_entry("ppo", "CartPole-v1"), goal=0.0, goal_episodes=3, max_steps=2_000, max_time=None,
                      seed=0, threads=1)
    assert curve.config["check_every"] > curve.total_steps  # no interval check ran
    assert curve.reached and curve.steps_to_goal == curve.total_steps == curve.steps[-1]
    assert len(curve.confirmations) == 1 and curve.stop_reason.startswith("mean over 3 fresh episodes ")


@needs_sb3
def test_a_raced_baselines_time_budget_reads_in_seconds(monkeypatch):
    """A race on time caps the baseline at ES's time to the goal: the table shows it to a tenth of a
    second (it printed 5.14355 s), whole seconds from 100 s on."""
    from blackbox.lab.contrast.rl_report import contrast_markdown

    _, report = _raced(monkeypatch, 195_000, 5.14355, race="time")
    record = report.as_dict()
    record["rl"]["config"].update(budget_steps=3_000_000, max_time=5.14355)
    record["rl"].update(total_steps=18_628, total_time=5.2)
    row = contrast_markdown([record]).splitlines()[2]
    assert row.endswith("| -; 3,000,000 steps, 5.1 s |"), row  # ES's budget: none faked here
    assert "| es: 195,000 / 5.1 s | ars: not reached in 5.2 s (more than ES's) | - | > 1.01x |" in row
    record["rl"]["config"]["max_time"] = 1234.56
    assert contrast_markdown([record]).splitlines()[2].endswith("; 3,000,000 steps, 1,235 s |")


@needs_sb3
def test_the_plot_says_which_return_a_shifted_preset_trains_on(monkeypatch):
    """Hopper's preset trains on rewards shifted by -1 a step, its goal is on the task's own return:
    the legend said only "blackbox ars (preset)" and "goal 3120" over a curve 1,000 below it."""
    from blackbox.lab.contrast.rl_report import curve_labels

    _, report = _raced(monkeypatch, 800_000, 69.5, race="time")
    report.goal, report.es.method = 3120.0, "blackbox ars (preset)"
    report.es.config["problem"] = {"reward_shift": -1.0}
    assert curve_labels(report) == ("blackbox ars (preset), training return (-1 a step)",
                                    "goal 3120 (on the task's own return)")
    report.es.config["problem"] = {"reward_shift": 0.0}
    assert curve_labels(report) == ("blackbox ars (preset)", "goal 3120")


@needs_sb3
def test_a_preset_on_cut_episodes_reports_its_center_on_the_task_s_own_return(monkeypatch):
    """Swimmer's preset cuts its population's episodes at 400 of 1,000 steps, but its center row plays full
    episodes: its best check (351) is on the goal's scale, so neither the legend nor the table marks it;
    a reward shift still is."""
    from blackbox.lab.contrast.rl_report import contrast_markdown, curve_labels

    _, report = _raced(monkeypatch, 88_400, 4.8, race="steps")
    report.goal, report.es.method = 325.0, "blackbox snes (preset)"
    report.es.config["problem"] = {"episode_cap": "fixed", "episode_cap_steps": 400, "reward_shift": -1.0}
    assert curve_labels(report) == ("blackbox snes (preset), training return (-1 a step)",
                                    "goal 325 (on the task's own return)")
    report.es.config["problem"] = {"episode_cap": "fixed", "episode_cap_steps": 400}
    assert curve_labels(report) == ("blackbox snes (preset)", "goal 325")
    record = report.as_dict()
    record["task"], record["notes"] = "Swimmer-v5", []
    record["es"]["best_return"], record["rl"]["best_return"] = 351.2, 129.7
    table = contrast_markdown([record]).splitlines()
    assert "| 351 / 130 |" in table[2], table[2]
    assert not any("cut" in line for line in table), table


@needs_sb3
def test_a_saved_report_reads_back_whole(monkeypatch):
    """benchmarks/contrast_rl.py --from draws each plot again from contrast-rl.json: the report it reads
    back is the one saved (ratios, notes, race and both curves)."""
    import json

    from blackbox.lab.contrast.rl import RLContrastReport

    _, report = _raced(monkeypatch, 800_000, 69.5, race="time")
    report.es.steps, report.es.times, report.es.returns = [1000, 2000], [0.5, 1.0], [-300.0, -150.0]
    saved = json.loads(json.dumps(report.as_dict()))
    again = RLContrastReport.from_dict(saved)
    assert again == report and again.as_dict() == saved


def test_a_table_of_several_tasks_names_the_task_of_each_task_s_own_note():
    """Section 8a listed four "same step budget for both" lines and one reward-shift line without saying
    whose: a note only some tasks' contrasts have is named by its task; one all have stays as it is."""
    from blackbox.lab.contrast.rl_report import _notes

    shared = "wall times are training only"
    reports = [{"task": "Hopper-v5", "notes": [shared, "budget 7M", "shifted by -1", "race on steps: x"]},
               {"task": "Hopper-v5", "notes": [shared, "budget 7M", "shifted by -1"]},
               {"task": "Swimmer-v5", "notes": [shared, "budget 3M", "Swimmer-v5: cut at 400"]}]
    assert _notes(reports) == ["Hopper-v5: budget 7M", "Hopper-v5: shifted by -1", "Swimmer-v5: budget 3M",
                               "Swimmer-v5: cut at 400", shared]
    assert _notes(reports[:2]) == ["budget 7M", "shifted by -1", shared]  # one task: nothing to tell apart


def _seed_report(task, seed, es_steps, rl_steps, race=None, method="ARS (Stable-Baselines3, sb3-contrib)",
                 es_time=None, rl_time=None, rl_total_steps=None, rl_total_time=None):
    return {"task": task, "seed": seed, "race": race,
            "es": {"method": "blackbox snes (preset)", "steps_to_goal": es_steps, "time_to_goal": es_time},
            "rl": {"method": method, "steps_to_goal": rl_steps, "time_to_goal": rl_time,
                   "total_steps": rl_total_steps or rl_steps, "total_time": rl_total_time or rl_time}}


def test_the_seed_summary_compares_the_distributions_over_the_seeds():
    """Which of two stochastic methods needs fewer steps on one seed is partly chance: over several seeds the
    summary counts each side's reaches and per-seed wins, and unraced gives both medians and the probability
    of improvement over every pair of seeds, a miss needing more than any reach and two misses a tie."""
    from blackbox.lab.contrast.rl_report import seed_summary

    reports = [_seed_report("Hopper-v5", 102, None, 50), _seed_report("Hopper-v5", 100, 100, 150),
               _seed_report("Hopper-v5", 101, 200, None)]
    # ES 100, 200, miss against 150, miss, 50: pairs won 2 + 1 + 0.5 (miss against miss) of 9 = 0.39.
    line, = seed_summary(reports)
    assert line.startswith("Hopper-v5, seeds 100-102: ES reached the goal on 2/3, ARS on 2/3; ES needed no more "
                           "steps on 2 of 3 seeds; median steps 200 against 150; probability of improvement "
                           "(ES fewer steps) 0.39 [95% CI ")
    low, high = (float(v) for v in line[line.index("CI ") + 3:-1].split("-"))
    assert 0.0 <= low <= 0.39 <= high <= 1.0
    assert seed_summary(reports) == [line]  # the bootstrap draws from a fixed stream
    better = [_seed_report("Swimmer-v5", s, 10 + s, 1_000 + s) for s in (4, 6)]
    assert seed_summary(better) == ["Swimmer-v5, seeds 4, 6: ES reached the goal on 2/2, ARS on 2/2; ES needed no "
                                    "more steps on 2 of 2 seeds; median steps 15 against 1,005; probability of "
                                    "improvement (ES fewer steps) 1.00 [95% CI 1.00-1.00]"]
    assert seed_summary(reports[:1]) == []  # one seed: nothing over seeds to say


def test_the_seed_summary_of_a_race_counts_a_stopped_baseline_as_needing_more():
    from blackbox.lab.contrast.rl_report import _median, seed_summary

    # The median of a raced baseline is a lower bound: a stopped one counts the steps it had used (6,592,000).
    steps = [_seed_report("HalfCheetah-v5", 100, 6_565_000, None, race="steps", rl_total_steps=6_592_000),
             _seed_report("HalfCheetah-v5", 101, 3_900_000, 2_330_000, race="steps")]
    assert seed_summary(steps) == ["HalfCheetah-v5, seeds 100-101: ES reached the goal on 2/2, ARS on 1/2 by ES's "
                                   "steps (raced); ES needed no more steps on 1 of 2 seeds; median steps 5,232,500 "
                                   "against at least 4,461,000; the seeds estimate the "
                                   "probability of improvement (ES fewer steps) at 0.50 [95% Wilson CI 0.09-0.91]"]
    time = [_seed_report("Pendulum-v1", s, 800_000, rl, race="time", method="PPO (Stable-Baselines3)", es_time=8.5,
                         rl_time=t, rl_total_time=total) for s, rl, t, total in ((100, None, None, 9.25),
                                                                                 (101, 28_676, 12.3, None))]
    assert seed_summary(time) == ["Pendulum-v1, seeds 100-101: ES reached the goal on 2/2, PPO on 1/2 by ES's wall "
                                  "time (raced); ES needed no more wall time on 2 of 2 seeds; median wall time 8.5 s "
                                  "against at least 10.8 s; the seeds estimate the "
                                  "probability of improvement (ES less wall time) at 1.00 [95% Wilson CI 0.34-1.00]"]
    reached = [_seed_report("Hopper-v5", s, 300, rl, race="steps") for s, rl in ((100, 200), (101, 400))]
    assert "median steps 300 against 300;" in seed_summary(reached)[0]  # every baseline reached: its own median
    unraced = [_seed_report("HalfCheetah-v5", 100, 6_565_000, 7_000_000)]
    assert seed_summary(steps + unraced) == seed_summary(steps)  # a race and an unraced run are not pooled
    inf = float("inf")
    assert [_median([1.0, 3.0, inf, inf]), _median([1.0, inf]), _median([inf, inf, 2.0])] == \
        ["more than 3", "more than 1", "not reached"]


def test_a_table_says_when_es_trained_on_cut_episodes_and_until_when():
    from blackbox.lab.contrast.rl import _cut_note

    assert _cut_note("Swimmer-v5", {"episode_cap": "fixed", "episode_cap_steps": 400}) == (
        "Swimmer-v5: ES's population trains on episodes cut at 400 steps (episode_cap=fixed); its curve is the "
        "center row's, which plays whole episodes, counted in its steps")
    lifted = _cut_note("HalfCheetah-v5", {"episode_cap": "fixed", "episode_cap_steps": 500, "episode_cap_lift": 4800.0})
    assert "cut at 500 steps (episode_cap=fixed) until its center row's training return first reached 4800;" in lifted
    assert _cut_note("Hopper-v5", {"episode_cap": "adaptive"}) is None and _cut_note("Hopper-v5", {}) is None
