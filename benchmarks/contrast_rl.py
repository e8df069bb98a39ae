"""ES against PPO (and blackbox against sb3-contrib's ARS) over tasks and seeds: the table of BENCHMARKS.md.

    python benchmarks/contrast_rl.py                                  # Pendulum, Hopper, HalfCheetah + ARS
    python benchmarks/contrast_rl.py --tasks Pendulum-v1 --max-time 300
    python benchmarks/contrast_rl.py --tasks --ars --ars-preset Swimmer-v5 Pendulum-v1 --seeds 100-102 \
        --out runs/ars-efficiency                                     # the presets against the zoo's ARS
    python benchmarks/contrast_rl.py --from runs/c1/contrast-rl.json runs/c2/contrast-rl.json \\
        --section docs/benchmarks/contrast-rl.json                    # tabulate saved contrasts

Each contrast is ``blackbox contrast rl TASK --max-time S`` (the ES preset against PPO with RL
Baselines3 Zoo's tuned settings, same goal, same machine); ``--ars TASK`` adds
``blackbox contrast rl TASK --baseline ars`` (blackbox's ars and sb3-contrib's ARS, both with the zoo's ARS
settings), ``--ars-preset TASK`` ``blackbox contrast rl TASK --baseline ars --es-settings preset --race steps``
(the task's preset against the zoo's tuned ARS, the baseline stopped at the steps the preset needed: enough
to tell which needed fewer). ``--race-ppo`` races PPO on wall time the same way. ``--seeds`` runs each
contrast on each seed; ``--out`` keeps each contrast's ``contrast-rl.json`` and plot. ``--section`` writes
the table as ``benchmarks/run_all.py``'s contrast-rl section, from which BENCHMARKS.md is assembled.
``--from`` reads contrasts' own ``contrast-rl.json`` files or saved sections, or both. Below the table, a
task run on several seeds gets one line over them (``seed_summary``): how often each side reached the goal,
on how many seeds ES needed no more steps and, unraced, both medians and the probability of improvement.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _common import machine, version  # noqa: E402

from blackbox.lab.contrast.rl_report import seed_summary  # noqa: E402


def _loads(reports: list[dict]) -> str:
    """The runs' own 1-minute load averages, highest first (as run_all reads a section's load)."""
    values = [v for r in reports for v in (r.get("measured", {}).get("load_before"),
                                          r.get("measured", {}).get("load_after")) if v is not None]
    return f"{max(values):.2f} at most, {min(values):.2f} at least (1-min, before and after each contrast)" \
        if values else ""


def _seeds(text: str) -> list[int]:
    """``N`` (one seed) or ``A-B`` (A to B inclusive)."""
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def _read_saved(paths: list[Path]) -> tuple[list[dict], list[str], list[str]]:
    """The reports of saved contrasts, when each was measured and its plot's name. A path is a contrast's
    own ``contrast-rl.json`` (its plot named after its folder) or a section this script wrote (its reports
    and date; each plot named after the task, baseline and seed), so a table can pool both."""
    reports, dates, names = [], [], []
    for path in paths:
        saved = json.loads(path.read_text())
        if saved.get("section") == "contrast-rl":
            reports += saved["data"]["reports"]
            dates.append(saved["date"])
            names += [f"{r['task']}-{r.get('baseline', 'rl')}-{r.get('seed', 0)}.png" for r in saved["data"]["reports"]]
        else:
            reports.append(saved)
            dates.append(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(path.stat().st_mtime)))
            names.append(f"{path.parent.name}.png")  # the contrast's own folder name: one plot each
    return reports, dates, names


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="*", default=["Pendulum-v1", "Hopper-v5", "HalfCheetah-v5"])
    parser.add_argument("--ars", nargs="*", default=["HalfCheetah-v5"], help="tasks of the ARS comparison")
    parser.add_argument("--ars-preset", nargs="*", default=[],
                        help="tasks of the preset against sb3-contrib's ARS (zoo settings), raced on steps")
    parser.add_argument("--race-ppo", action="store_true", help="stop PPO at the wall time ES needed to the goal")
    parser.add_argument("--seeds", default="0", help="seeds of every contrast: N or A-B (default: 0)")
    parser.add_argument("--workers", type=int, default=1,
                        help="ES processes (loky executor when > 1) and the baseline's torch threads (default: 1)")
    parser.add_argument("--out", type=Path, help="keep each contrast's contrast-rl.json and plot here")
    parser.add_argument("--max-time", type=float, default=600.0,
                        help="seconds of training per method (0: no time cap, the step budgets only)")
    parser.add_argument("--from", dest="saved", nargs="+", type=Path, help="tabulate these contrast-rl.json files")
    parser.add_argument("--section", type=Path, help="write run_all.py's contrast-rl section here")
    args = parser.parse_args(argv)
    import run_all

    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    started = time.perf_counter()
    if args.saved:
        reports, dates, names = _read_saved(args.saved)
    else:
        from blackbox.cli.run import run_config_from_flags as read
        from blackbox.lab.contrast.rl import run_rl_contrast

        cap = args.max_time or None
        plan = ([(task, "ppo", {"race": "time" if args.race_ppo else None}) for task in args.tasks]
                + [(task, "ars-zoo", {"baseline": "ars"}) for task in args.ars]
                + [(task, "ars-preset", {"baseline": "ars", "es_settings": "preset", "race": "steps"})
                   for task in args.ars_preset])
        reports = []
        for task, kind, options in plan:
            for seed in _seeds(args.seeds):
                name = f"{task}-{kind}-{seed}"
                out = None if args.out is None else args.out / name
                report = run_rl_contrast(task, read, seed=seed, max_time=cap, out=out, workers=args.workers,
                                         log=lambda line: print(line, file=sys.stderr, flush=True), **options)
                reports.append(report.as_dict())
                print(f"{name}: ES {report.es.steps_to_goal}, baseline {report.rl.steps_to_goal} "
                      f"({report.rl.total_steps:,} steps run)", flush=True)
                if out is not None:
                    from blackbox.files import write_json
                    from blackbox.lab.contrast.rl_report import plot_rl_contrast

                    plot_rl_contrast(report, out / "contrast-rl.png")
                    write_json(out / "contrast-rl.json", report.as_dict())
        dates = [time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())]
    body = run_all.contrast_rl_body(reports, args.max_time)
    summary = seed_summary(reports)
    if summary:
        body["markdown"] += "\n\nOver the seeds (a miss counts as needing more than any reach):\n" + "\n".join(
            f"- {line}" for line in summary)
    print(body["markdown"])
    if args.section:
        record = {"section": "contrast-rl", "title": run_all.TITLES["contrast-rl"], "quick": False,
                  "command": "python benchmarks/contrast_rl.py " + shlex.join(argv or sys.argv[1:]),
                  "date": max(dates), "machine": machine(),
                  "seconds": sum(r["es"]["total_time"] + r["rl"]["total_time"] for r in reports) if args.saved
                  else time.perf_counter() - started,
                  "load": _loads(reports) or f"{load_before} -> {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
                  "versions": {**{k: version(v) for k, v in run_all.PEERS.items()},
                               "stable-baselines3": version("stable_baselines3"),
                               "sb3-contrib": version("sb3_contrib"), "rl-zoo3": version("rl_zoo3")},
                  **body}
        plots = []
        from blackbox.lab.contrast.rl import RLContrastReport
        from blackbox.lab.contrast.rl_report import plot_rl_contrast

        for name, report in zip(names if args.saved else [], reports):
            # Drawn again from the saved report, so every plot follows the current plotting code.
            plot_rl_contrast(RLContrastReport.from_dict(report), args.section.parent / name)
            plots.append(name)
        record["plots"] = plots
        args.section.write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
