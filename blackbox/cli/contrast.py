"""``blackbox contrast mnist``: ES against backpropagation on the same network, side by side.

Trains the problem's network by an evolution strategy (``blackbox.optimize``, strategy by name)
and by torch autograd, each until a target test accuracy or a training-time budget, then prints
test accuracy, wall time, passes through the network and the slowdown ratio of ES at the accuracy
both reach. The output folder gets ``contrast.json`` (everything, curves included) and
``contrast.png`` (test accuracy against wall time).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..config.run import parse_set
from ..errors import ConfigError
from ..files import ensure_folder, to_plain, write_json
from ..registry.plugins import make_problem

__all__ = ["add_parser", "run"]

_OUTPUTS = ("contrast.json", "contrast.png")


def add_parser(sub) -> None:
    parser = sub.add_parser(
        "contrast", help="ES against gradient methods, side by side: backpropagation on mnist "
                         "(contrast [mnist]) or PPO on a Gymnasium task (contrast rl TASK)",
        description="Train the same network by an evolution strategy and by backpropagation and compare "
                    "test accuracy against wall time and passes through the network. `blackbox contrast rl "
                    "TASK` sets ES against PPO on a Gymnasium task instead (see `blackbox contrast rl --help`).",
    )
    parser.add_argument("problem", nargs="?", default="mnist",
                        help="problem spec (default: mnist; e.g. mnist:path=/data/mnist,model=cnn); "
                             "`blackbox contrast rl TASK`: ES against PPO on a Gymnasium task (see its --help)")
    es = parser.add_argument_group("evolution strategy")
    es.add_argument("--strategy", default="openai-es", help="strategy spec (default: openai-es, tuned for this job)")
    es.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                    help="a strategy option, e.g. --set popsize=100 (repeatable)")
    es.add_argument("--executor", default="serial", help="executor spec for the ES evaluations (default: serial)")
    bp = parser.add_argument_group("backpropagation")
    bp.add_argument("--optimizer", default="adam", choices=("adam", "sgd"), help="torch optimizer (default: adam)")
    bp.add_argument("--lr", type=float, default=0.01, help="learning rate (default: 0.01)")
    bp.add_argument("--batch-size", type=int, default=64, help="minibatch size (default: 64)")
    bp.add_argument("--momentum", type=float, default=0.9, help="momentum of sgd (default: 0.9)")
    stop = parser.add_argument_group("budget, for each method")
    stop.add_argument("--target", type=float, default=0.95, help="stop at this test accuracy (default: 0.95)")
    stop.add_argument("--no-target", action="store_true", help="train for the whole time budget")
    stop.add_argument("--max-time", type=float, default=60.0, help="seconds of training (default: 60)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the initial weights and both runs (default: 0)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads for both methods (default: 1, a per-core comparison; 0: torch's default)")
    parser.add_argument("--eval-growth", type=float, default=1.02,
                        help="test accuracy is measured each time the iteration count grows by this factor "
                             "(after the first 50); bounds the time-to-accuracy error (default: 1.02)")
    parser.add_argument("--out", type=Path, help="output folder (default: runs/contrast-<problem>-<time>)")
    parser.add_argument("--overwrite", action="store_true", help="replace the outputs of an earlier contrast")
    parser.add_argument("--no-plot", action="store_true", help="do not draw contrast.png")
    parser.add_argument("--json", action="store_true", help="print the whole report as one JSON object")
    parser.set_defaults(func=run)


def _ours(path: Path) -> bool:
    """An output of an earlier ``blackbox contrast``: its JSON report, or a PNG drawn by matplotlib."""
    try:
        if path.is_symlink() or not path.is_file():
            return False
        with open(path, "rb") as handle:
            head = handle.read(4096)
        if path.suffix == ".png":
            return head.startswith(b"\x89PNG\r\n\x1a\n") and b"Matplotlib" in head
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(report, dict) and {"comparison", "slowdown"} <= set(report)


def _out_dir(out: Path | None, problem: str, overwrite: bool) -> Path:
    if out is None:
        out = Path("runs") / f"contrast-{problem}-{time.strftime('%Y%m%d-%H%M%S')}"
    taken = [name for name in _OUTPUTS if (out / name).exists()]
    if taken and not overwrite:
        raise ConfigError(f"{out} already holds {', '.join(taken)}; pass --overwrite or choose another --out")
    foreign = [name for name in taken if not _ours(out / name)]
    if foreign:  # --overwrite replaces an earlier contrast's outputs, never someone else's files
        raise ConfigError(f"{out} holds {', '.join(foreign)}, which blackbox contrast did not write; move "
                          f"{'it' if len(foreign) == 1 else 'them'} away or choose another --out")
    return ensure_folder(out, "output folder")


def run(args) -> int:
    from ..lab.contrast import BackpropConfig, EvalSchedule, run_contrast
    from ..lab.contrast.report import print_report, slowdown_sentence
    from ..lab.contrast.runner import check_supervised

    settings = dict(parse_set(pair) for pair in args.settings)
    for reserved in ("dim", "seed", "x0"):
        if reserved in settings:
            raise ConfigError(f"{reserved} is set by the contrast (problem, --seed, shared initial weights); "
                              f"do not pass it with --set")
    if args.threads < 0:
        raise ConfigError(f"--threads must be >= 0 (0: torch's default), got {args.threads}")
    problem = make_problem(args.problem)
    check_supervised(problem)
    backprop = BackpropConfig(args.optimizer, args.lr, args.batch_size, args.momentum)
    schedule = EvalSchedule(growth=args.eval_growth)
    out = _out_dir(args.out, problem.name or "problem", args.overwrite)
    report = run_contrast(
        problem, strategy=args.strategy, settings=settings, executor=args.executor, backprop=backprop,
        max_time=args.max_time, target=None if args.no_target else args.target, seed=args.seed,
        threads=args.threads or None, schedule=schedule,
    )
    plot_path = None
    if not args.no_plot:
        from ..lab.contrast.plot import plot_contrast

        plot_path = plot_contrast(report, out / "contrast.png")
    summary = {**report.as_dict(), "slowdown": slowdown_sentence(report),
               "out": str(out), "plot": None if plot_path is None else str(plot_path)}
    write_json(out / "contrast.json", summary)
    if args.json:
        print(json.dumps(to_plain(summary)))
    else:
        print_report(report, plot_path=plot_path)
        print(f"report saved in {out / 'contrast.json'}")
    return 0
