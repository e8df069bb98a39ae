"""Do the Gymnasium presets solve their tasks? Success over seeds, steps and wall time to the goal.

    python benchmarks/rl_presets.py --seeds 100-109                  # every task's preset on the fresh seeds
    python benchmarks/rl_presets.py --seeds 100-109 --tasks CartPole-v1 Acrobot-v1   # some tasks
    python benchmarks/rl_presets.py --task Pendulum-v1 --seeds 5 --json out.json
    python benchmarks/rl_presets.py --task Hopper-v5 --label openai-es \\
        --args "--strategy openai-es --max-steps 5000000"          # other settings than the preset's

Each trial is exactly ``blackbox run --problem gym:TASK [ARGS] --seed S`` (parsed by the command's
own parser, resolved by the same code, run in this process; the run directory goes to a temporary
folder, or to ``--runs DIR``): with no ARGS it is the task's preset, which is what a user gets. "Solved" is the preset's
goal as ``blackbox run`` judges it (:class:`blackbox.driver.stop.ConfirmGoal`: the center's mean
return over ``goal_episodes`` fresh episodes, checked whenever the center's training return reaches
the goal; under ``episode_cap="fixed"`` the center row plays full episodes). Steps are the training's environment
steps when the run stopped, wall time is the driver's: the generations' time. Neither counts the
confirmation episodes; each trial's noted ``elapsed`` (rl_trials.jsonl) is the whole run with them.

Every trial is appended as one JSON line to ``benchmarks/results/rl_trials.jsonl`` (git-ignored):
command, seed, outcome, load average, so that exploration leaves notes. The table prints per task
and label: solved/seeds, median and worst steps and wall time to the goal over the solved seeds,
and the median best center return of the unsolved ones.

``--results`` (default: the committed ``blackbox/problems/gym/preset_results.json``; ``--no-results``
leaves it alone) gets one row per task as soon as the task's seeds are done: per-seed solved, steps
and wall time, with the commit, date and load they were measured at. ``blackbox list presets`` and
the table in docs/rl.md read it; ``tests/problems/gym/test_preset_table.py`` re-runs the cheap
tasks on one seed against it.

Long tasks (Walker2d, Ant: hours a seed on 2 cores) outlive a session. With ``--runs DIR`` every
trial keeps its run directory, ``DIR/TASK-SEED`` (``DIR/TASK-LABEL-SEED`` for other settings than
the preset's), and a trial whose directory already holds the same run (the same resolved config;
executor, logging and checkpointing aside) is not started over: a finished one is read back, an
interrupted one continues from its newest checkpoint (``blackbox resume``, bit for bit the run it
would have been). So ``python benchmarks/rl_presets.py --tasks Ant-v5 --seeds 100-104 --runs DIR``
can be stopped and run again, and a seed run by hand as ``blackbox run --problem gym:Ant-v5 --seed
100 --out DIR/Ant-v5-100`` counts as that trial.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchmarks._common import machine, version  # noqa: E402

#: The tasks of issue 22, cheapest first (their goals are the presets' standard ones: presets.standard_goal).
TASKS = ["CartPole-v1", "Acrobot-v1", "MountainCarContinuous-v0", "Pendulum-v1", "LunarLander-v3", "Swimmer-v5",
         "InvertedPendulum-v5", "Reacher-v5", "InvertedDoublePendulum-v5", "Hopper-v5", "HalfCheetah-v5",
         "BipedalWalker-v3", "Walker2d-v5", "Ant-v5", "Humanoid-v5"]
#: Points of each trial's learning curve kept in the results (the figures need no more).
CURVE_POINTS = 120
#: The committed results (blackbox list presets reads them) and the learning curves beside them.
RESULTS = Path(__file__).resolve().parent.parent / "blackbox" / "problems" / "gym" / "preset_results.json"
CURVES = Path(__file__).resolve().parent / "rl_curves.json"
TRIALS = Path(__file__).resolve().parent / "results" / "rl_trials.jsonl"



def command(task: str, extra: list[str], seed: int) -> list[str]:
    """The ``blackbox run`` arguments of one trial (without the output folder)."""
    return ["run", "--problem", f"gym:{task}", *extra, "--seed", str(seed)]


def _progress(every: int):
    """A callback printing generation, steps, center return and time every ``every`` generations."""
    from blackbox.driver.loop import Callback

    class Progress(Callback):
        def on_generation(self, run, record):
            if every and record.generation % every == 0:
                print(f"  gen {record.generation} steps {record.steps:,} center {record.center} "
                      f"best {record.best:.1f} time {record.time:.0f} s", flush=True)

    return Progress()


def trial_dir(runs: Path, task: str, label: str, seed: int) -> Path:
    """Where ``--runs`` keeps one trial's run directory."""
    slug = "".join(c if c.isalnum() or c in "-_.=" else "_" for c in label)
    name = task.replace("/", "_") + ("" if label == "preset" else f"-{slug}")
    return runs / f"{name}-{seed}"


def kept_run(out: Path, run) -> str | None:
    """How a kept run directory ``out`` can serve the trial ``run`` (a resolved config): ``"finished"``
    (read it back), ``"checkpoint"`` (resume it) or None (start over: absent, another run, or nothing saved)."""
    from blackbox.lab.runs import is_finished, run_changes
    from blackbox.store.checkpoint import list_checkpoints

    config = out / "config.toml"
    if not config.is_file() or run_changes(config, run):
        return None
    if is_finished(out):
        return "finished"
    return "checkpoint" if list_checkpoints(out / "checkpoints") else None


def run_trial(task: str, extra: list[str], seed: int, out: Path, progress: int = 0, keep: bool = False) -> dict:
    """One trial through the command's parser and resolver; its outcome as a dict.

    With ``keep`` a run already in ``out`` (see :func:`kept_run`) is read back or resumed, not redone.
    """
    from blackbox.cli import build_parser
    from blackbox.cli.run import apply_flags
    from blackbox.config.run import read_run_config, resolve_run_config
    from blackbox.lab.runs import read_result, resume_run, start_run

    argv = command(task, extra, seed) + ["--out", str(out), "--overwrite", "--quiet", "--no-plot"]
    args = build_parser().parse_args(argv)
    config = read_run_config(None)
    apply_flags(config, args)
    run = resolve_run_config(config)
    resolved = run.to_dict()
    kept = kept_run(out, run) if keep else None
    load_before = os.getloadavg()
    started = time.perf_counter()
    if kept == "finished":
        summary = read_result(out)
        assert summary is not None  # kept_run found it finished
    elif kept == "checkpoint":
        summary = resume_run(out, config=run, callbacks=[_progress(progress)], warn=lambda message: print(
            f"  {task} seed {seed}: {message}", flush=True))
    else:
        summary = start_run(run, out, overwrite=True, callbacks=[_progress(progress)])
    elapsed = time.perf_counter() - started
    check = summary.get("goal_check") or {}
    history = _history(out / "records.csv")
    centers = [center for _, center in history]
    curve = _curve(history)
    return {
        "task": task, "seed": seed, "command": "blackbox " + shlex.join(command(task, extra, seed)),
        "strategy": resolved["strategy"], "problem": resolved["problem"], "executor": resolved["executor"],
        "stop": resolved["stop"], "solved": bool(check.get("solved", False)),
        "goal": check.get("goal"), "confirmed_mean": check.get("confirmed_mean"), "checks": check.get("checks", 0),
        "generations": summary["generations"], "steps": summary["steps"], "wall": summary["wall_time"],
        "elapsed": elapsed, "stop_reason": summary["stop_reason"],
        "best_center": max(centers) if centers else None, "last_center": centers[-1] if centers else None,
        "curve": curve,
        # a trial read back ran unwatched: its load is unknown, its date is when it ended
        "load": None if kept == "finished" else
        [round(x, 2) for x in load_before] + [round(x, 2) for x in os.getloadavg()],
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(
            (out / "result.json").stat().st_mtime if kept == "finished" else None)),
        **({"kept": kept} if kept else {}),
    }


def _history(records: Path) -> list[tuple[int, float]]:
    """``(steps, center return)`` of every generation that scored its center, read once from ``records``."""
    import csv

    if not records.exists():
        return []
    with open(records, newline="") as handle:
        return [(int(row["steps"]), float(row["center"])) for row in csv.DictReader(handle)
                if row.get("center") not in ("", None)]


def _curve(rows: list[tuple[int, float]], points: int = CURVE_POINTS) -> list[list[float]]:
    """The center's training return against environment steps, ``[steps, center]`` pairs thinned to at
    most ``points`` (evenly by generation, the last kept): what the per-task figures of docs/rl.md draw."""
    if len(rows) > points:
        keep = sorted({round(i * (len(rows) - 1) / (points - 1)) for i in range(points)})
        rows = [rows[i] for i in keep]
    return [[steps, round(center, 3)] for steps, center in rows]


def summarize(trials: list[dict]) -> dict:
    """Success count and medians over the solved trials of one task and label."""
    solved = [t for t in trials if t["solved"]]
    unsolved = [t for t in trials if not t["solved"]]

    def median(key, rows):
        return statistics.median(r[key] for r in rows) if rows else None

    return {
        "task": trials[0]["task"], "label": trials[0]["label"], "command": trials[0]["command"],
        "solved": len(solved), "seeds": len(trials),
        "steps_median": median("steps", solved), "steps_worst": max((t["steps"] for t in solved), default=None),
        "wall_median": median("wall", solved), "wall_worst": max((t["wall"] for t in solved), default=None),
        "unsolved_best_center": median("best_center", [t for t in unsolved if t["best_center"] is not None]),
        "budget": trials[-1]["stop"],  # the last seed's (an early seed may have had a smaller one)
    }


def _fmt(value, kind: str) -> str:
    if value is None:
        return "-"
    if kind == "steps":
        return f"{value:,.0f}"
    if kind == "time":
        return f"{value:.0f} s" if value >= 10 else f"{value:.1f} s"
    return f"{value:,.1f}"


def table(rows: list[dict]) -> str:
    lines = ["| task | preset | solved | steps to goal (median / worst) | wall time to goal (median / worst) "
             "| unsolved: best center (median) | budget |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        budget = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in r["budget"].items()
                           if k not in ("goal", "goal_episodes"))
        lines.append(
            f"| {r['task']} | {r['label']} | {r['solved']}/{r['seeds']} "
            f"| {_fmt(r['steps_median'], 'steps')} / {_fmt(r['steps_worst'], 'steps')} "
            f"| {_fmt(r['wall_median'], 'time')} / {_fmt(r['wall_worst'], 'time')} "
            f"| {_fmt(r['unsolved_best_center'], 'return')} | {budget} |")
    return "\n".join(lines)


def seed_range(text: str) -> list[int]:
    """``"100-109"`` -> 100..109; ``"5"`` -> 0..4 (the first N seeds)."""
    try:
        if "-" in text:
            first, last = (int(part) for part in text.split("-", 1))
            if last < first:
                raise ValueError
            return list(range(first, last + 1))
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seeds must be N or FIRST-LAST such as 100-109, got {text!r}") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"--seeds {text} names no seed: N counts seeds 0..N-1, so it must be at "
                                         f"least 1; for seed 0 alone give 0-0")
    return list(range(count))


def _commit() -> str:
    import subprocess

    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "blackbox"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def record_results(path: Path, task: str, done: list[dict], commit: str) -> None:
    """Put one task's row into the results file (other rows kept), as soon as its seeds are done."""
    data = json.loads(path.read_text()) if path.exists() else {}
    data.setdefault("about", "Preset trials of benchmarks/rl_presets.py (serial executor, one process per trial, "
                             "on a shared 2-core machine); read by blackbox list presets and docs/rl.md.")
    # the 1-minute load before and after each trial: a long trial's load is not the one it started under
    loads = [x for t in done if t.get("load") for x in (t["load"][0], t["load"][3])]
    data.setdefault("rows", {})[task] = {
        "commit": commit, "date": max(t["date"] for t in done),
        "load": f"{min(loads):.1f}-{max(loads):.1f} (1-min, before and after each trial)" if loads else "unknown",
        "command": done[0]["command"].rsplit(" --seed ", 1)[0], "strategy": done[0]["strategy"]["name"],
        "trials": {str(t["seed"]): {"solved": t["solved"], "steps": t["steps"], "wall": round(t["wall"], 2),
                                    "best_center": t["best_center"]} for t in done},
    }
    data["rows"] = dict(sorted(data["rows"].items()))
    path.write_text(json.dumps(data, indent=1) + "\n")
    record_curves(CURVES if path == RESULTS else path.with_name(path.stem + "-curves.json"), task, done, commit)


def record_curves(path: Path, task: str, done: list[dict], commit: str) -> None:
    """Put one task's learning curves (per seed: ``[steps, center return]`` pairs) into ``path``, one
    compact line per task, for the per-task figures (``--figures``)."""
    curves = json.loads(path.read_text()) if path.exists() else {}
    curves[task] = {"commit": commit, "seeds": {str(t["seed"]): t.get("curve", []) for t in done}}
    lines = ",\n".join(f" {json.dumps(key)}: {json.dumps(curves[key], separators=(',', ':'))}"
                       for key in sorted(curves))
    path.write_text("{\n" + lines + "\n}\n")


def measure(tasks: list[str], seeds: int | list[int], first_seed: int = 0, extra: str = "", label: str | None = None,
            progress: int = 0, notes: bool = True, stop_after_fail: int = 0, log=print,
            results: Path | None = None, runs: Path | None = None) -> tuple[list, list]:
    """Run every task over the seeds; the summary rows and the trials. With ``runs`` the run
    directories are kept there, and kept runs are read back or resumed (:func:`run_trial`)."""
    flags = shlex.split(extra)
    label = label or (" ".join(flags) if flags else "preset")
    rows, trials = [], []
    chosen = list(seeds) if isinstance(seeds, list) else list(range(first_seed, first_seed + seeds))
    commit = _commit()
    if runs is not None:
        runs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rl-presets-") as scratch:
        for task in tasks:
            done: list[dict] = []
            for seed in chosen:
                out = trial_dir(Path(scratch) if runs is None else runs, task, label, seed)
                trial = run_trial(task, flags, seed, out, progress, keep=runs is not None)
                trial["label"] = label
                done.append(trial)
                how = {"finished": " (read back from its run directory)",
                       "checkpoint": " (resumed from its newest checkpoint)"}.get(trial.get("kept", ""), "")
                log(f"{task} [{label}] seed {seed}: {'solved' if trial['solved'] else 'not solved'} "
                    f"steps {trial['steps']:,} wall {trial['wall']:.1f} s gens {trial['generations']} "
                    f"best center {trial['best_center']} confirmed {trial['confirmed_mean']} ({trial['stop_reason']})"
                    + how)
                if notes:
                    TRIALS.parent.mkdir(parents=True, exist_ok=True)
                    with open(TRIALS, "a") as handle:
                        handle.write(json.dumps(trial) + "\n")
                if stop_after_fail and sum(not t["solved"] for t in done) >= stop_after_fail:
                    break
            trials.extend(done)
            rows.append(summarize(done))
            if results is not None and not flags:  # only the presets themselves are published
                record_results(results, task, done, commit)
    return rows, trials


def from_notes(selection: dict[str, str], path: Path = TRIALS) -> tuple[list, list]:
    """Summary rows from the noted trials: per task, the trials of one label (the last of each seed)."""
    noted = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows, trials = [], []
    for task, label in selection.items():
        by_seed = {t["seed"]: t for t in noted if t["task"] == task and t.get("label") == label}
        done = [by_seed[seed] for seed in sorted(by_seed)]
        if done:
            trials.extend(done)
            rows.append(summarize(done))
    return rows, trials


def markdown(rows: list[dict], trials: list[dict]) -> str:
    """The table with each task's preset source and the load the trials ran under."""
    from blackbox.problems.gym.presets import PRESETS

    loads = [t["load"][0] for t in trials if t.get("load")]
    lines = [table(rows), "",
             f"Solved: the center's mean return over the preset's fresh episodes reached the goal (ConfirmGoal); "
             f"steps are training steps when the run stopped, wall time the driver's, on one core (serial "
             f"executor). Trials ran {min(t['date'] for t in trials)} to {max(t['date'] for t in trials)} under "
             f"1-min load averages {min(loads):.1f}-{max(loads):.1f} on this 2-core machine, so wall times are "
             f"inflated by other work; steps repeat exactly under the seed.", "",
             "| task | strategy the preset picks | where the settings come from |", "|---|---|---|"]
    for row in rows:
        preset = PRESETS.get(row["task"])
        if preset is not None:
            lines.append(f"| {row['task']} | {preset.strategy} | {preset.source} |")
    early = [row for row in rows if row.get("measured_as")]
    if early:
        lines += ["", "Measured before the preset carried these settings, with the same settings given as flags "
                      "(the budget column is that run's; the preset's own budget is larger):"]
        lines += [f"- {row['task']}: `{row['measured_as']}` (seed 0; seeds 1-4 alike)" for row in early]
    return "\n".join(lines)


def write_section(path: Path, rows: list[dict], trials: list[dict], command: str) -> None:
    """The rows as ``benchmarks/run_all.py`` saves its rl-presets section (BENCHMARKS.md is assembled from it)."""
    import run_all

    loads = [t["load"] for t in trials if t.get("load")]
    record = {"section": "rl-presets", "title": run_all.TITLES["rl-presets"], "quick": False, "command": command,
              "date": max(t["date"] for t in trials), "seconds": sum(t["elapsed"] for t in trials),
              "machine": machine(),
              "load": f"{max(x[0] for x in loads):.2f} at most, {min(x[0] for x in loads):.2f} at least (1-min, "
                      f"at the start of the {len(trials)} trials)",
              "versions": {k: version(v) for k, v in run_all.PEERS.items()},
              **run_all.rl_presets_body(rows, trials)}
    path.write_text(json.dumps(record, indent=1))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", action="append", help=f"a Gymnasium id (repeatable; default: {', '.join(TASKS)})")
    parser.add_argument("--args", default="", help="more `blackbox run` flags for every trial (default: none, "
                                                   "i.e. the preset)")
    parser.add_argument("--label", help="name of these settings in the table (default: preset, or the flags)")
    parser.add_argument("--tasks", nargs="+", help="Gymnasium ids (the same as --task, several at once)")
    parser.add_argument("--seeds", type=seed_range, default=seed_range("5"),
                        help="FIRST-LAST (e.g. 100-109: the fresh seeds) or N: seeds 0..N-1 (default 5)")
    parser.add_argument("--first-seed", type=int, default=None, help="with --seeds N: seeds FIRST..FIRST+N-1")
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="the committed results file to update per task (default: %(default)s)")
    parser.add_argument("--no-results", action="store_true", help="do not write the results file")
    parser.add_argument("--stop-after-fail", type=int, default=0,
                        help="give up on a task after this many unsolved seeds (0: never)")
    parser.add_argument("--progress", type=int, default=0, metavar="K",
                        help="print a line every K generations (default: 0, none)")
    parser.add_argument("--runs", type=Path, metavar="DIR",
                        help="keep each trial's run directory in DIR (DIR/TASK-SEED); a trial already there is "
                             "read back if finished, resumed from its newest checkpoint if not (default: a "
                             "temporary folder, nothing kept)")
    parser.add_argument("--json", type=Path, help="write the summary rows and every trial here")
    parser.add_argument("--no-notes", action="store_true", help=f"do not append the trials to {TRIALS}")
    parser.add_argument("--from-notes", nargs="+", metavar="TASK=LABEL",
                        help=f"run nothing: summarize the trials noted in {TRIALS.name} under these labels")
    parser.add_argument("--section", type=Path, help="also write the rows as run_all.py's rl-presets section "
                                                     "(e.g. docs/benchmarks/rl-presets.json)")
    args = parser.parse_args(argv)
    if args.from_notes:
        rows, trials = from_notes(dict(pair.split("=", 1) for pair in args.from_notes))
        for row in rows:
            if row["label"] != "preset":
                row["measured_as"] = row["command"]
            row["label"] = "preset"
        print(markdown(rows, trials))
        if args.section:
            write_section(args.section, rows, trials, "python benchmarks/rl_presets.py " + shlex.join(argv or sys.argv[1:]))
        return 0

    print(f"# {machine()}; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    seeds = args.seeds if args.first_seed is None else [args.first_seed + s for s in range(len(args.seeds))]
    rows, trials = measure((args.task or []) + (args.tasks or []) or list(TASKS), seeds, 0, args.args, args.label,
                           args.progress, not args.no_notes, args.stop_after_fail,
                           log=lambda text: print(text, flush=True),
                           results=None if args.no_results else args.results, runs=args.runs)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "rows": rows, "trials": trials}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
