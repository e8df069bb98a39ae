"""``blackbox run``: train one strategy on one problem and save the run directory.

Settings come from a TOML file (``--config``, see :mod:`blackbox.config.run`) and from flags, which
override the file key by key. The run directory (see :mod:`blackbox.lab.runs`) receives the fully
resolved config, so ``blackbox run --config RUN/config.toml --out OTHER`` repeats the run exactly.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ..config.run import (
    COMPONENTS,
    ResolvedRun,
    RunConfig,
    component_override,
    load_toml,
    parse_set,
    read_run_config,
    resolve_run_config,
    set_override,
    set_value,
)
from ..files import to_plain
from ..lab.runs import RunSummary, check_out_dir, default_out, describe_summary, start_run

__all__ = ["add_parser", "run", "run_config_from_flags", "add_budget_flags", "add_output_flags", "apply_flags"]

_STOP_FLAGS = (("generations", int, "stop after this many generations"),
               ("max_evaluations", int, "stop after this many evaluations"),
               ("max_steps", int, "stop after this many environment steps"),
               ("max_time", float, "stop after this many seconds of wall time"),
               ("target", float, "stop once the best fitness reaches this"),
               ("goal", float, "stop once the center's fitness holds this ..."),
               ("goal_generations", int, "... for this many generations (default 1)"),
               ("goal_episodes", int, "... or confirmed by the center's mean over this many fresh episodes"))


def add_budget_flags(parser: argparse.ArgumentParser) -> None:
    """Budget, checkpoint, logging and executor flags shared by ``run`` and ``resume``."""
    group = parser.add_argument_group("stopping (override [stop] of the config)")
    for key, kind, text in _STOP_FLAGS:
        group.add_argument("--" + key.replace("_", "-"), dest=key, type=kind, help=text)
    group = parser.add_argument_group("checkpoints and logs")
    group.add_argument("--checkpoint-every", type=int, help="generations between checkpoints (0: only at the end)")
    group.add_argument("--keep", type=int, help="how many of the newest checkpoints to keep (the best is kept too)")
    group.add_argument("--tensorboard", action=argparse.BooleanOptionalAction, default=None,
                       help="write TensorBoard event files into RUN/tensorboard (needs blackbox-es[tensorboard])")
    group.add_argument("--plot", action=argparse.BooleanOptionalAction, default=None,
                       help="draw RUN/curve.png at the end (default: on; needs blackbox-es[plot])")


def add_output_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true", help="no progress display and no summary")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object on stdout")


def add_parser(sub) -> None:
    parser = sub.add_parser(
        "run", help="train a strategy on a problem and save the run",
        description="Train a strategy on a problem. Settings come from --config FILE.toml and from "
                    "flags, which override the file.",
    )
    parser.add_argument("--config", type=Path, help="a run config (TOML), e.g. a run directory's config.toml")
    parser.add_argument("--strategy", help="strategy spec (default: openai-es)")
    parser.add_argument("--problem", help="problem spec, e.g. quadratic:dim=100 (default: quadratic)")
    parser.add_argument("--executor", help="executor spec (default: serial)")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="a strategy option (--set sigma=0.05) or any config key (--set problem.dim=10); repeatable")
    parser.add_argument("--seed", type=int, help="run seed (default: 0)")
    parser.add_argument("--center-eval", dest="evaluate_center", action=argparse.BooleanOptionalAction,
                        default=None, help="evaluate the unperturbed center every generation (default: on)")
    parser.add_argument("--pipelined", action="store_true", default=None,
                        help="sample generation g+1 before g is told: cores never wait for a generation's last "
                             "episodes (the update is one generation old; deterministic; see the README)")
    parser.add_argument("--preset", action=argparse.BooleanOptionalAction, default=None,
                        help="fill settings not given from the problem's recommended ones (default: on; "
                             "e.g. gym:CartPole-v1's tuned OpenAI-ES, budget and goal)")
    add_budget_flags(parser)
    parser.add_argument("--out", type=Path, help="run directory (default: runs/<strategy>-<problem>-<time>)")
    parser.add_argument("--overwrite", action="store_true", help="replace a run directory that holds a run")
    add_output_flags(parser)
    parser.set_defaults(func=run)


def apply_flags(config: RunConfig, args: argparse.Namespace) -> None:
    """Put the flags that were given over the config (flags win, key by key)."""
    for kind in COMPONENTS:
        spec = getattr(args, kind, None)
        if spec is not None:
            config.components[kind] = component_override(kind, config.components.get(kind), spec, f"--{kind}")
    for pair in getattr(args, "settings", []):
        key, value = parse_set(pair)
        set_override(config, key, value, f"--set {key}")
    for key in ("seed", "evaluate_center", "pipelined", "preset"):
        if getattr(args, key, None) is not None:
            set_value(config, (key,), getattr(args, key), f"--{key.replace('_', '-')}")
    for key, _, _ in _STOP_FLAGS:
        if getattr(args, key, None) is not None:
            set_value(config, ("stop", key), getattr(args, key), f"--{key.replace('_', '-')}")
    for key, path in (("checkpoint_every", ("checkpoint", "every")), ("keep", ("checkpoint", "keep")),
                      ("tensorboard", ("log", "tensorboard")), ("plot", ("log", "plot"))):
        if getattr(args, key, None) is not None:
            set_value(config, path, getattr(args, key), f"--{key.replace('_', '-')}")


def run_config_from_flags(argv: Sequence[str]) -> RunConfig:
    """The run config that ``blackbox run ARGV`` reads (its ``--config`` file, then its flags)."""
    from . import build_parser

    args = build_parser().parse_args(["run", *argv])
    config = read_run_config(load_toml(args.config) if args.config is not None else None)
    apply_flags(config, args)
    return config


def missing_preset_note(resolved: ResolvedRun) -> str | None:
    """For a gym task without a preset: say so, and which strategy options the run uses."""
    if not resolved.preset or resolved.problem.name != "gym":
        return None
    from ..problems.gym.presets import missing_preset_note as note

    return note(resolved.problem.options.get("env"), resolved.strategy.name, resolved.strategy.options)


def goal_notes(resolved: ResolvedRun, summary: RunSummary) -> list[str]:
    """For a gym task: a goal below the task's standard bar, and the best return against Gymnasium's bar."""
    env = resolved.problem.options.get("env")
    if resolved.problem.name != "gym" or not isinstance(env, str):
        return []
    from ..problems.gym.presets import goal_notes as notes

    check = summary.get("goal_check")
    return notes(env, resolved.stop.goal, check["confirmed_mean"] if check else None, summary.get("best_fitness"))


def print_summary(args: argparse.Namespace, summary: RunSummary) -> None:
    if args.json:
        print(json.dumps(to_plain(summary)))
    elif not args.quiet:
        started = getattr(args, "started", None)  # set by blackbox.cli.main when the command began
        command_time = None if started is None else time.perf_counter() - started
        print(describe_summary(summary, command_time), file=sys.stdout)
        description = summary.get("problem_description") or {}
        data = description.get("data") if isinstance(description, dict) else None
        if isinstance(data, dict) and data.get("statement"):  # e.g. the offline digits, not MNIST
            print(data["statement"], file=sys.stdout)
        for note in summary.get("notes", []):
            print(f"note: {note}", file=sys.stderr)


def run(args) -> int:
    doc = load_toml(args.config) if args.config is not None else None
    config = read_run_config(doc)
    apply_flags(config, args)
    resolved = resolve_run_config(config)
    note = None if args.quiet else missing_preset_note(resolved)  # worked out only to be printed
    if note:
        print(f"note: {note}", file=sys.stderr)
    out = args.out
    if out is None and resolved.out is not None:
        out = Path(resolved.out)
    if out is None:
        out = default_out(resolved)
    if args.overwrite is False and Path(out).exists():
        check_out_dir(Path(out), resolved, False)  # refuse before building anything heavy
    try:
        summary = start_run(resolved, out, overwrite=args.overwrite, show_progress=not (args.quiet or args.json))
    except KeyboardInterrupt:
        args.resume_hint = resume_hint(Path(out))
        raise
    extra = goal_notes(resolved, summary)
    if extra:
        summary["notes"] = [*summary.get("notes", []), *extra]
    print_summary(args, summary)
    return 0


def resume_hint(out: Path) -> str:
    """What the Ctrl-C line of a run in ``out`` adds: how to continue it, or why it cannot be."""
    from ..store.checkpoint import list_checkpoints

    try:
        written = bool(list_checkpoints(out / "checkpoints"))
    except OSError:
        written = False
    if not written:
        return "no checkpoint was written yet, so there is nothing to resume"
    return f"continue it with `blackbox resume {shlex.quote(str(out))}`"
