"""``blackbox run``: train one strategy on one problem and save the run directory.

The run directory holds ``config.toml`` (the fully resolved configuration), ``records.csv`` (one
row per generation), ``result.json`` (the summary) and ``solution.npz`` (final center and best
parameters, numpy without pickle, plus the problem's state such as observation statistics under
``problem/<name>``). Settings the user leaves out come from the problem's preset
(:mod:`blackbox.presets`) unless ``--no-preset`` is given.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..files import save_npz, to_plain, write_json, write_toml
from ..loop import optimize
from ..presets import empty_preset, problem_preset
from ..records import CSVRecords
from ..registry import (
    executors,
    make_executor,
    make_problem,
    make_strategy,
    problems,
    resolved_config,
    strategies,
)
from ..spec import Spec, parse_spec, parse_value
from ..stop import GoalHeld

__all__ = ["add_parser", "run", "build_run", "prepare_out_dir"]


def add_parser(sub) -> None:
    parser = sub.add_parser("run", help="train a strategy on a problem and save the run")
    parser.add_argument("--strategy", default="openai-es", help="strategy spec (default: openai-es)")
    parser.add_argument("--problem", default="quadratic", help="problem spec, e.g. quadratic:dim=100")
    parser.add_argument("--executor", default="serial", help="executor spec (default: serial)")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="a strategy hyper-parameter, e.g. --set sigma=0.05 (repeatable)")
    parser.add_argument("--generations", type=int, help="stop after this many generations")
    parser.add_argument("--max-evaluations", type=int, help="stop after this many evaluations")
    parser.add_argument("--max-steps", type=int, help="stop after this many environment steps")
    parser.add_argument("--max-time", type=float, help="stop after this many seconds")
    parser.add_argument("--target", type=float, help="stop once the best fitness reaches this")
    parser.add_argument("--goal", type=float, help="stop once the center's fitness holds this ...")
    parser.add_argument("--goal-generations", type=int, help="... for this many generations (default 1)")
    parser.add_argument("--goal-episodes", type=int,
                        help="instead, stop once the center's mean over this many fresh episodes reaches --goal")
    parser.add_argument("--no-preset", action="store_true",
                        help="ignore the problem's recommended settings (budget, goal, options)")
    parser.add_argument("--seed", type=int, default=0, help="run seed (default: 0)")
    parser.add_argument("--out", type=Path, help="run directory (default: runs/<strategy>-<problem>-<time>)")
    parser.add_argument("--overwrite", action="store_true", help="replace a run directory that exists")
    parser.add_argument("--no-center-eval", action="store_true", help="do not evaluate the center each generation")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.set_defaults(func=run)


def _settings(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"--set expects KEY=VALUE, got {pair!r}")
        out[key.strip()] = parse_value(value)
    return out


def build_run(strategy_spec: str, problem_spec: str, executor_spec: str, settings: dict[str, Any], seed: int,
              use_preset: bool = True):
    """Make problem, strategy and executor from specs; return them with the resolved config.

    With ``use_preset`` the problem's recommended settings fill in options not given; what was
    used is recorded under ``config["preset"]`` (its ``run`` section holds the budget and goal).
    """
    problem_parsed = parse_spec(problem_spec)
    strategy_parsed = parse_spec(strategy_spec)
    preset = problem_preset(problem_parsed, strategy_parsed.name) if use_preset else empty_preset()
    problem_parsed = Spec(problem_parsed.name, problem_parsed.args, {**preset["problem"], **problem_parsed.kwargs})
    problem = make_problem(problem_parsed)
    options = {**preset["strategy"], **strategy_parsed.kwargs, **settings}
    for reserved in ("dim", "seed"):
        if reserved in options:
            raise ConfigError(f"{reserved} is set by the run (problem dimension, --seed); do not pass it as an option")
    user_x0 = "x0" in options
    if not user_x0:
        options["x0"] = problem.initial_params(np.random.default_rng(seed))
    strategy = make_strategy(strategy_parsed.name, dim=problem.dim, seed=seed, **options)
    executor_parsed = parse_spec(executor_spec)
    executor = make_executor(executor_parsed)
    strategy_config = resolved_config(strategies.load(strategy_parsed.name), (), {**options, "dim": problem.dim, "seed": seed})
    if not user_x0:
        strategy_config.pop("x0", None)
    config = {
        "seed": seed,
        "strategy": {"name": strategy_parsed.name, **strategy_config},
        "problem": {"name": problem_parsed.name,
                    **resolved_config(problems.load(problem_parsed.name), tuple(problem_parsed.args), problem_parsed.kwargs)},
        "executor": {"name": executor_parsed.name,
                     **resolved_config(executors.load(executor_parsed.name), tuple(executor_parsed.args), executor_parsed.kwargs)},
    }
    if any(preset.values()):
        config["preset"] = preset
    return strategy, problem, executor, config


def prepare_out_dir(out: Path | None, strategy: str, problem: str, overwrite: bool) -> Path:
    """The run directory, refusing one that already holds a run unless ``overwrite``."""
    if out is None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        out = Path("runs") / f"{strategy}-{problem}-{stamp}"
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        if not (out / "config.toml").exists() and not overwrite:
            raise ConfigError(f"{out} exists and is not a blackbox run directory; choose another --out")
        if not overwrite:
            raise ConfigError(f"{out} already holds a run; pass --overwrite to replace it or choose another --out")
        for name in ("config.toml", "records.csv", "result.json", "solution.npz"):
            (out / name).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    return out


def run(args) -> int:
    settings = _settings(args.settings)
    strategy, problem, executor, config = build_run(args.strategy, args.problem, args.executor, settings, args.seed,
                                                    use_preset=not args.no_preset)
    preset_run = config.get("preset", {}).get("run", {})
    budget = {"generations": args.generations, "max_evaluations": args.max_evaluations,
              "max_steps": args.max_steps, "max_time": args.max_time}
    if all(v is None for v in budget.values()):
        budget.update({k: preset_run[k] for k in budget if k in preset_run})
    if all(v is None for v in budget.values()):
        raise ConfigError("give a budget: --generations, --max-evaluations, --max-steps or --max-time")
    if args.goal is None and "goal" in preset_run:
        args.goal = preset_run["goal"]
        args.goal_generations = args.goal_generations or preset_run.get("goal_generations")
        args.goal_episodes = args.goal_episodes or preset_run.get("goal_episodes")
    args.goal_generations = args.goal_generations or 1
    stop, confirm = [], None
    if args.goal is not None and args.goal_episodes:
        from ..confirm import ConfirmGoal

        confirm = ConfirmGoal(args.goal, args.goal_episodes)
    elif args.goal is not None:
        stop = [GoalHeld(args.goal, args.goal_generations)]
    out = prepare_out_dir(args.out, config["strategy"]["name"], config["problem"]["name"], args.overwrite)
    config["stop"] = {**{k: v for k, v in budget.items() if v is not None},
                      **({"target": args.target} if args.target is not None else {}),
                      **({"goal": args.goal, "goal_generations": args.goal_generations} if args.goal is not None else {}),
                      **({"goal_episodes": args.goal_episodes} if confirm is not None else {})}
    config["evaluate_center"] = not args.no_center_eval
    write_toml(out / "config.toml", config)
    callbacks = [CSVRecords(out / "records.csv")]
    if not args.quiet and not args.json:
        from ..progress import ProgressDisplay

        callbacks.append(ProgressDisplay(budget["generations"]))
    if confirm is not None:
        callbacks.append(confirm)
    result = optimize(
        strategy, problem, executor, **budget, target=args.target, stop=stop, seed=args.seed,
        evaluate_center=not args.no_center_eval, callbacks=callbacks,
    )
    problem_state = {f"problem/{key}": value for key, value in problem.state_dict().items()}
    save_npz(out / "solution.npz", {"center": result.center, "best_params": result.best_params,
                                    "best_fitness": result.best_fitness, **problem_state})
    summary = {
        "run_dir": str(out), "strategy": config["strategy"]["name"], "problem": config["problem"]["name"],
        "seed": args.seed, "generations": result.generations, "evaluations": result.evaluations,
        "steps": result.steps, "wall_time": result.wall_time, "best_fitness": result.best_fitness,
        "center_fitness": result.center_fitness, "stop_reason": result.stop_reason,
        **({"goal_check": confirm.summary()} if confirm is not None else {}),
    }
    write_json(out / "result.json", summary)
    if args.json:
        print(json.dumps(to_plain(summary)))
    elif not args.quiet:
        print(f"{summary['strategy']} on {summary['problem']}: center fitness {summary['center_fitness']}, "
              f"best {result.best_fitness:.6g} after {result.generations} generations, "
              f"{result.evaluations} evaluations, {result.wall_time:.2f} s ({result.stop_reason})\n"
              f"run saved in {out}", file=sys.stdout)
    return 0
