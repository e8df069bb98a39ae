"""``blackbox compare EXPERIMENT.toml``: run a grid of strategies x problems x seeds and report.

Finished runs are skipped, unfinished ones continue from their checkpoints, so running the same
command again after an interruption picks up where it stopped. The report (``results.csv``,
``summary.md``, ``summary.csv``, ``progress_ratios.csv``, ``plots/``) is rebuilt from the run
directories every time; ``--report-only`` rebuilds it without running anything.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from ..driver.loop import Callback
from ..lab.experiment import Cell, load_experiment, plan_cells, run_experiment
from ..lab.runs import RunSummary

if TYPE_CHECKING:
    from ..lab.report import ReportTable  # imported when the report is written: it needs numpy's statistics

__all__ = ["add_parser", "run"]


def add_parser(sub) -> None:
    parser = sub.add_parser(
        "compare", help="run a grid of strategies x problems x seeds and write tables and plots",
        description="Run an experiment file (strategies x problems x seeds) and write a results table, "
                    "a Markdown summary and learning-curve plots. Resumable: run it again to continue.",
    )
    parser.add_argument("experiment", type=Path, metavar="EXPERIMENT.toml", help="the experiment file")
    parser.add_argument("--out", type=Path, help="output folder (default: the file's out, or runs/experiments/<name>)")
    parser.add_argument("--jobs", type=int, help="runs at a time, in separate processes (default: the file's jobs)")
    parser.add_argument("--smoke", action="store_true",
                        help="use the file's [smoke] settings (small budgets; also BLACKBOX_SMOKE=1)")
    parser.add_argument("--overwrite", action="store_true", help="run again the runs whose settings changed")
    parser.add_argument("--report-only", action="store_true", help="only rebuild the report from the run directories")
    parser.add_argument("--quiet", action="store_true", help="no progress display and no summary")
    parser.add_argument("--json", action="store_true", help="print one JSON object (the report's files) on stdout")
    parser.set_defaults(func=run)


class _Status(Callback):
    """Shows the running run's generation and center fitness in the experiment's progress line."""

    def __init__(self, progress: Progress, task: TaskID, name: str):
        self.progress, self.task, self.name = progress, task, name

    def on_generation(self, run, record) -> None:
        center = "-" if record.center is None else f"{record.center:.4g}"
        self.progress.update(self.task, status=f"{self.name}: gen {record.generation}, center {center}")


def print_tables(tables: list[ReportTable], console: Console) -> None:
    """The summary's ranking of each problem, as in summary.md, with the rule it ranks by beneath it."""
    from rich import box
    from rich.table import Table

    for info in tables:
        target = f"; target: center fitness >= {info['target']:g}" if info["target"] is not None else ""
        table = Table(title=f"{info['problem']} ({info['spec']}{target})", title_justify="left",
                      caption=f"ranked by {info['ranking']}", caption_justify="left", box=box.SIMPLE_HEAD,
                      pad_edge=False, collapse_padding=True)
        for number, column in enumerate(info["header"]):
            table.add_column(column, justify="left" if number == 1 else "right", overflow="fold",
                             no_wrap=column.endswith("CI") or number == 1)
        for row in info["rows"]:
            table.add_row(*row)
        console.print(table)
        console.print()


def run(args: argparse.Namespace) -> int:
    from ..lab.report import write_report

    experiment = load_experiment(args.experiment, out=args.out, smoke=True if args.smoke else None, jobs=args.jobs)
    show = not (args.quiet or args.json)
    console = Console(stderr=True)
    failures: list[tuple[Cell, BaseException]] = []
    todo: list[Cell] = []
    if not args.report_only:
        todo = plan_cells(experiment, overwrite=args.overwrite)
        skipped = len(experiment.cells) - len(todo)
        if show:
            for label, reason in experiment.skipped:
                console.print(f"skipping strategy {label}: {reason}")
            if todo:
                console.print(f"experiment {experiment.name}: {len(experiment.cells)} runs, {skipped} already "
                              f"finished, {len(todo)} to run"
                              + (f" ({experiment.jobs} at a time)" if experiment.jobs > 1 else ""))
            else:
                console.print(f"experiment {experiment.name}: all {len(experiment.cells)} runs are finished; "
                              f"nothing to run, the report is rebuilt from them", soft_wrap=True)
    if not args.report_only and todo:
        progress = Progress(TextColumn("[bold]runs"), MofNCompleteColumn(), BarColumn(bar_width=20),
                            TimeElapsedColumn(), TextColumn("{task.fields[status]}"), console=console,
                            disable=not show)

        def name(cell: Cell) -> str:
            return f"{cell.problem} / {cell.strategy} / seed {cell.seed}"

        with progress:
            task = progress.add_task("runs", total=len(todo), status="")

            def on_done(cell: Cell, summary: RunSummary | None, error: BaseException | None) -> None:
                progress.advance(task)
                if error is not None:
                    progress.console.print(f"[red]failed[/red] {name(cell)}: {type(error).__name__}: {error}")
                elif show and summary is not None:  # a run that ended without an error has its summary
                    center = summary.get("center_fitness")
                    progress.console.print(
                        f"done {name(cell)}: center {center if center is None else format(center, '.4g')}, "
                        f"{summary['generations']} generations, {summary['wall_time']:.1f} s in generations "
                        f"({summary['stop_reason']})")

            failures = run_experiment(
                experiment, todo, on_done=on_done,
                callbacks_for=(lambda cell: [_Status(progress, task, name(cell))]) if show else None,
            )
    index = write_report(experiment)
    if args.json:
        print(json.dumps({**index, "failed": [str(c.run_dir) for c, _ in failures]}))
    elif not args.quiet:
        print_tables(index["tables"], Console())
        plots = index["plots"]
        where = f"{len(plots)} in {Path(plots[0]).parent}" if plots else "none"
        print(f"results: {index['results']}\nsummary: {index['summary']}\nplots: {where}")
    if failures:
        print(f"blackbox compare: {len(failures)} run(s) failed: "
              + "; ".join(f"{c.run_dir}: {e}" for c, e in failures), file=sys.stderr)
        return 1
    return 0
