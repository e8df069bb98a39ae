"""The contrast as text: the side-by-side table, the milestones, and the slowdown sentence."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .runner import BLOG_QUOTE, ContrastReport

__all__ = ["print_report", "slowdown_sentence"]


def _num(value, fmt: str = "{:,.3g}") -> str:
    return "-" if value is None else fmt.format(value)


def _seconds(value) -> str:
    return "-" if value is None else f"{value:.3g} s"


def slowdown_sentence(report: ContrastReport) -> str:
    """One line: ES's slowdown at the accuracy both reach, beside the blog's figure."""
    c = report.comparison
    if c.time_ratio is None:
        return (f"slowdown ratio: not defined (the accuracy both reach, {c.level:.4f}, is already the "
                f"untrained network's); {BLOG_QUOTE}")
    return (f"slowdown ratio of ES to reach {c.level:.4f} test accuracy ({c.level_reason}): "
            f"{c.time_ratio:,.1f}x the wall time, {c.pass_ratio:,.0f}x the passes "
            f"(ES forward vs backprop forward+backward); {BLOG_QUOTE}")


def print_report(report: ContrastReport, console: Console | None = None, plot_path=None) -> None:
    console = console or Console()
    es, bp, c = report.es, report.backprop, report.comparison
    console.print(escape(report.data_statement), soft_wrap=True)
    problem = report.problem
    console.print(escape(
        f"network: {problem.get('model')} with {problem.get('dim'):,} weights; ES fitness: "
        f"{problem.get('fitness')} on minibatches of {problem.get('batch_size')}; threads: "
        f"{report.settings.get('threads')}; budget {report.settings.get('max_time'):g} s of training each, "
        f"target {report.settings.get('target')}"), soft_wrap=True)
    table = Table(title="ES against backpropagation, same network, data and test evaluation")
    table.add_column("")
    table.add_column(escape(es.method), justify="right")
    table.add_column(escape(bp.method), justify="right")
    ef, bf = es.final, bp.final
    rows = [
        ("test accuracy reached (best)", f"{es.best_accuracy:.4f}", f"{bp.best_accuracy:.4f}"),
        ("test accuracy at the end", f"{ef['accuracy']:.4f}", f"{bf['accuracy']:.4f}"),
        ("training wall time", _seconds(ef["time"]), _seconds(bf["time"])),
        ("passes through the network", f"{ef['passes']:,} forward", f"{bf['passes']:,} fwd+bwd"),
        ("iterations", f"{ef['iteration']:,} {es.unit}s", f"{bf['iteration']:,} {bp.unit}s"),
        ("stopped because", es.stop_reason, bp.stop_reason),
        (f"time to {c.level:.4f}", _seconds(c.es_time), _seconds(c.bp_time)),
        (f"passes to {c.level:.4f}", _num(c.es_passes, "{:,}"), _num(c.bp_passes, "{:,}")),
    ]
    for row in rows:
        table.add_row(*(escape(str(v)) for v in row))
    console.print(table)
    if c.milestones:
        mt = Table(title="time and passes to each accuracy both reach (ES / backprop)")
        for name in ("test accuracy", "ES time", "backprop time", "time ratio", "pass ratio"):
            mt.add_column(name, justify="right")
        for m in c.milestones:
            mt.add_row(f"{m['accuracy']:.4f}", _seconds(m["es_time"]), _seconds(m["bp_time"]),
                       _num(m["time_ratio"], "{:,.1f}x"), _num(m["pass_ratio"], "{:,.0f}x"))
        console.print(mt)
    console.print(escape(slowdown_sentence(report)), soft_wrap=True)
    if plot_path is not None:
        console.print(escape(f"plot: {plot_path}"), soft_wrap=True)
