"""ES against PPO (and blackbox's ars against sb3-contrib's ARS) over tasks: the table of BENCHMARKS.md.

    python benchmarks/contrast_rl.py                                  # Pendulum, Hopper, HalfCheetah + ARS
    python benchmarks/contrast_rl.py --tasks Pendulum-v1 --max-time 300
    python benchmarks/contrast_rl.py --from runs/c1/contrast-rl.json runs/c2/contrast-rl.json \\
        --section docs/benchmarks/contrast-rl.json                    # tabulate saved contrasts

Each contrast is ``blackbox contrast rl TASK --max-time S`` (the ES preset against PPO with RL
Baselines3 Zoo's tuned settings, same goal, same machine); ``--ars TASK`` adds
``blackbox contrast rl TASK --baseline ars``. ``--section`` writes the table as
``benchmarks/run_all.py``'s contrast-rl section, from which BENCHMARKS.md is assembled.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _common import machine, version  # noqa: E402


def _loads(reports: list[dict]) -> str:
    """The runs' own 1-minute load averages, highest first (as run_all reads a section's load)."""
    values = [v for r in reports for v in (r.get("measured", {}).get("load_before"),
                                          r.get("measured", {}).get("load_after")) if v is not None]
    return f"{max(values):.2f} at most, {min(values):.2f} at least (1-min, before and after each contrast)" \
        if values else ""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=["Pendulum-v1", "Hopper-v5", "HalfCheetah-v5"])
    parser.add_argument("--ars", nargs="*", default=["HalfCheetah-v5"], help="tasks of the ARS comparison")
    parser.add_argument("--max-time", type=float, default=600.0, help="seconds of training per method")
    parser.add_argument("--from", dest="saved", nargs="+", type=Path, help="tabulate these contrast-rl.json files")
    parser.add_argument("--section", type=Path, help="write run_all.py's contrast-rl section here")
    args = parser.parse_args(argv)
    import run_all

    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    started = time.perf_counter()
    if args.saved:
        reports = [json.loads(path.read_text()) for path in args.saved]
        dates = [time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(path.stat().st_mtime)) for path in args.saved]
    else:
        from blackbox.cli.run import run_config_from_flags as read
        from blackbox.lab.contrast.rl import run_rl_contrast

        reports = [run_rl_contrast(task, read, max_time=args.max_time).as_dict() for task in args.tasks]
        reports += [run_rl_contrast(task, read, baseline="ars", max_time=args.max_time).as_dict()
                    for task in args.ars]
        dates = [time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())]
    body = run_all.contrast_rl_body(reports, args.max_time)
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
        for path in args.saved or []:
            png = path.parent / "contrast-rl.png"
            if png.exists():
                name = f"{path.parent.name}.png"  # the contrast's own folder name: one plot each
                shutil.copyfile(png, args.section.parent / name)
                plots.append(name)
        record["plots"] = plots
        args.section.write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
