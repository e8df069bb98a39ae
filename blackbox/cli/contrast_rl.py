"""``blackbox contrast rl TASK``: an ES preset against PPO (or blackbox's ars against sb3-contrib's ARS).

ES runs as ``blackbox run --problem gym:TASK`` does (the task's preset; ``--workers N`` puts it on
the loky executor), PPO with RL Baselines3 Zoo's tuned settings for the task from the installed
``rl_zoo3`` package; both to the preset's goal (or ``--goal``) or their budgets. Prints the steps and
wall time to the goal of each, their ratios beside the claims of Salimans et al. 2017, and writes
``contrast-rl.json`` and ``contrast-rl.png`` (return against steps and against wall time).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

from ..errors import ConfigError
from ..files import to_plain, write_json

__all__ = ["build_parser", "run"]

_OUTPUTS = ("contrast-rl.json", "contrast-rl.png")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="blackbox contrast rl",
        description="Train a Gymnasium task by ES (the task's preset) and by PPO from Stable-Baselines3 "
                    "(RL Baselines3 Zoo's tuned settings), to the same return goal, and compare environment "
                    "steps and wall time to the goal. Needs: pip install 'blackbox-es[rl]'.",
    )
    parser.add_argument("task", help="a Gymnasium id, e.g. Pendulum-v1, Hopper-v5, HalfCheetah-v5")
    parser.add_argument("--baseline", choices=("ppo", "ars"), default="ppo",
                        help="ppo: the ES preset against PPO (default); ars: blackbox against sb3-contrib's ARS with "
                             "the zoo's ARS settings")
    parser.add_argument("--es-settings", choices=("preset", "zoo"),
                        help="the ES side's settings with --baseline ars: zoo (default: blackbox's ars with the "
                             "zoo's ARS settings, one algorithm against another implementation) or preset (the task's "
                             "preset against the zoo's tuned ARS); against PPO the ES side is always the preset")
    parser.add_argument("--race", choices=("steps", "time"),
                        help="stop the baseline at the steps (or wall time) ES needed to reach the goal: enough to "
                             "tell which side needed fewer (default: the baseline runs its whole budget)")
    parser.add_argument("--workers", type=int, default=1,
                        help="ES processes (loky executor when > 1) and the baseline's torch threads (default: 1)")
    parser.add_argument("--threads", type=int, help="torch threads of the baseline (default: --workers)")
    parser.add_argument("--es-args", default="", metavar="FLAGS",
                        help="more `blackbox run` flags for the ES side, e.g. \"--set popsize=32\"")
    stop = parser.add_argument_group("goal and budget, for both")
    stop.add_argument("--goal", type=float, help="return goal (default: the preset's)")
    stop.add_argument("--goal-episodes", type=int, help="fresh episodes whose mean must reach the goal "
                                                       "(default: the preset's, or 10 with --goal)")
    stop.add_argument("--max-steps", type=int, help="environment steps of training, each (default: the larger of "
                                                    "the zoo's n_timesteps and the preset's budget, for both)")
    stop.add_argument("--max-time", type=float, help="seconds of training, each (goal confirmations not counted)")
    parser.add_argument("--seed", type=int, default=0, help="seed of both runs (default: 0)")
    parser.add_argument("--out", type=Path, help="output folder (default: runs/contrast-rl-<task>-<time>)")
    parser.add_argument("--overwrite", action="store_true", help="replace the outputs of an earlier contrast")
    parser.add_argument("--no-plot", action="store_true", help="do not draw contrast-rl.png")
    parser.add_argument("--json", action="store_true", help="print the whole report as one JSON object")
    return parser


def _out_dir(out: Path | None, task: str, overwrite: bool) -> Path:
    if out is None:
        out = Path("runs") / f"contrast-rl-{task.replace('/', '_')}-{time.strftime('%Y%m%d-%H%M%S')}"
    taken = [name for name in _OUTPUTS if (out / name).exists()]
    if taken and not overwrite:
        raise ConfigError(f"{out} already holds {', '.join(taken)}; pass --overwrite or choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    return out


def run(args: argparse.Namespace) -> int:
    from ..lab.contrast.rl import check_task, run_rl_contrast
    from ..lab.contrast.rl_report import describe_rl_contrast, plot_rl_contrast
    from ..lab.contrast.zoo import require_sb3
    from .run import run_config_from_flags

    require_sb3()
    check_task(args.task)
    for name in ("workers", "threads", "goal_episodes", "max_steps"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
    out = _out_dir(args.out, args.task, args.overwrite)
    report = run_rl_contrast(
        args.task, run_config_from_flags, baseline=args.baseline, seed=args.seed, workers=args.workers, goal=args.goal,
        goal_episodes=args.goal_episodes, max_steps=args.max_steps, max_time=args.max_time,
        es_flags=shlex.split(args.es_args), threads=args.threads, out=out, es_settings=args.es_settings, race=args.race,
        log=None if args.json else (lambda line: print(line, file=sys.stderr, flush=True)),
    )
    plot = None if args.no_plot else plot_rl_contrast(report, out / "contrast-rl.png")
    summary = {**report.as_dict(), "out": str(out), "plot": None if plot is None else str(plot)}
    write_json(out / "contrast-rl.json", summary)
    if args.json:
        print(json.dumps(to_plain(summary)))
    else:
        print(describe_rl_contrast(report))
        print(f"report saved in {out / 'contrast-rl.json'}" + ("" if plot is None else f", plot in {plot}"))
    return 0
