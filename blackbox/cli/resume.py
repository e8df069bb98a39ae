"""``blackbox resume RUN``: continue a run from its newest good checkpoint.

The continued run is bit-identical to one that was never interrupted: the record files are cut
back to the checkpoint's generation and rewritten from it, and the strategy, problem, counters and
stop conditions are restored exactly. Budget, executor and logging flags may change on resume (to
extend a finished run, say); changes to the config or the code that break exactness are reported.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..config.run import RunConfig, component_override
from ..lab.runs import resume_run
from .run import add_budget_flags, add_output_flags, apply_flags, print_summary, resume_hint

__all__ = ["add_parser", "run"]


def add_parser(sub) -> None:
    parser = sub.add_parser(
        "resume", help="continue a run from its newest checkpoint",
        description="Continue a run from its newest good checkpoint; flags change the budget, the "
                    "executor or logging (other changes would break exactness and are reported).",
    )
    parser.add_argument("run_dir", type=Path, metavar="RUN", help="the run directory")
    parser.add_argument("--checkpoint", type=Path, help="resume from this checkpoint folder instead of the newest")
    parser.add_argument("--executor", help="executor spec for the continued run (results do not change)")
    add_budget_flags(parser)
    add_output_flags(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    def change(config: RunConfig) -> None:
        if args.executor is not None:
            config.components["executor"] = component_override(
                "executor", config.components.get("executor"), args.executor, "--executor")
        apply_flags(config, argparse.Namespace(**{k: v for k, v in vars(args).items() if k != "executor"}))

    def warn(message: str) -> None:
        print(f"blackbox resume: warning: {message}", file=sys.stderr)

    try:
        summary = resume_run(args.run_dir, change=change, checkpoint=args.checkpoint,
                             show_progress=not (args.quiet or args.json), warn=warn)
    except KeyboardInterrupt:
        args.resume_hint = resume_hint(args.run_dir)
        raise
    print_summary(args, summary)
    return 0
