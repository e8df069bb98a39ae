"""The comparison report: a tidy results table, a Markdown summary per problem, curves with bands.

Everything is computed from the run directories alone (``records.csv`` and ``result.json``), so
the report can be rebuilt at any time and every number traces back to the runs it came from:
``results.csv`` has one row per run with its ``run_dir``, and the summary names the run
directories behind each row.

Definitions (also written into the summary):

- final center fitness: the ``center`` column of a run's last record (``best`` when the center
  was not evaluated); mean over seeds with a percentile-bootstrap interval.
- success: the center's fitness reached the problem's ``target`` at some generation.
- evaluations / steps / wall time to target: the counters of the first record at or above the
  target; the median over seeds counts a run that never got there as infinite.
- ranking: by success rate, then median evaluations to target, then mean final center fitness
  (without a target: mean final center fitness).
- progress ratios (Salimans et al. 2017, Table 1): the mean learning curve over seeds (center
  fitness against environment steps, or evaluations for problems without steps); the reference's
  progress runs from the first to the last value of its mean curve; for 25/50/75/100% of it, the
  steps a method needs divided by the steps the reference needs.
"""

from __future__ import annotations

import csv
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from ..driver.logs import read_csv_records
from ..files import atomic_write, ensure_folder, write_json
from .experiment import Experiment
from .plots import have_matplotlib, plot_bands
from .runs import read_result
from .stats import bootstrap_band, bootstrap_mean, carry_forward, mean_curve, median_or_inf
from .stats import progress_ratio_table as ratio_rows

__all__ = ["RunData", "ReportIndex", "ReportTable", "collect_runs", "write_report", "RESULT_COLUMNS"]

RESULT_COLUMNS = [
    "experiment", "problem", "strategy", "seed", "run_dir", "status", "stop_reason", "generations",
    "evaluations", "steps", "wall_time", "final_center", "final_best", "best_ever", "target", "success",
    "generations_to_target", "evaluations_to_target", "steps_to_target", "time_to_target",
]
_AXES = (("evaluations", "evaluations"), ("steps", "environment steps"), ("time", "wall time (s)"))


class ReportTable(TypedDict):
    """One problem's ranking as ``report.json`` keeps it (``blackbox compare`` prints it)."""

    problem: str
    spec: str
    target: float | None
    ranking: str
    header: list[str]
    rows: list[list[str]]


class ReportIndex(TypedDict):
    """What :func:`write_report` returns and writes as ``report.json``: the files it wrote, and the tables."""

    results: str
    summary: str
    summary_csv: str
    progress_ratios: str
    plots: list[str]
    runs: int
    tables: list[ReportTable]


class _Stats(TypedDict, total=False):
    """A strategy's numbers on one problem (a row of summary.csv); the ``*_target`` ones where there is a target."""

    runs: int
    complete: int
    final_mean: float
    final_low: float
    final_high: float
    successes: int
    success_rate: float
    evaluations_to_target: float
    steps_to_target: float
    time_to_target: float


@dataclass
class RunData:
    """One run of the grid as the report sees it."""

    problem: str
    strategy: str
    seed: int
    run_dir: Path
    records: list[dict[str, Any]]
    result: dict[str, object] | None
    target: float | None

    @property
    def status(self) -> str:
        if self.result is None:
            return "missing" if not self.records else "unfinished"
        if self.result.get("finished"):
            return "finished"
        reason = str(self.result.get("stop_reason", ""))
        return "error" if reason.startswith("error") else "stopped"

    def column(self, name: str) -> np.ndarray:
        return np.array([np.nan if r.get(name) is None else float(r[name]) for r in self.records], dtype=float)

    def fitness(self) -> np.ndarray:
        """The center's fitness per generation (the best member's when the center was not evaluated)."""
        center = self.column("center")
        return center if np.isfinite(center).any() else self.column("best")

    def row(self, experiment: str, base: Path) -> dict[str, object]:
        fitness = self.fitness()
        last = self.records[-1] if self.records else {}
        row: dict[str, object] = {
            "experiment": experiment, "problem": self.problem, "strategy": self.strategy, "seed": self.seed,
            "run_dir": _relative(self.run_dir, base), "status": self.status,
            "stop_reason": (self.result or {}).get("stop_reason", ""),
            "generations": last.get("generation"), "evaluations": last.get("evaluations"),
            "steps": last.get("steps"), "wall_time": last.get("time"),
            "final_center": float(fitness[-1]) if len(fitness) else None,
            "final_best": last.get("best"), "best_ever": last.get("best_ever"), "target": self.target,
        }
        reached = self.reach()
        row["success"] = None if self.target is None else reached is not None
        for key, attr in (("generations_to_target", "generation"), ("evaluations_to_target", "evaluations"),
                          ("steps_to_target", "steps"), ("time_to_target", "time")):
            row[key] = None if reached is None else reached[attr]
        return row

    def reach(self) -> dict[str, Any] | None:
        """The first record whose center fitness reached the target."""
        if self.target is None:
            return None
        for record, value in zip(self.records, self.fitness()):
            if not math.isnan(value) and value >= self.target:
                return record
        return None


def _relative(path: Path, base: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path(base).resolve()))
    except ValueError:
        return str(path)


def collect_runs(experiment: Experiment) -> list[RunData]:
    """Read every run of the grid from its directory."""
    runs = []
    for cell in experiment.cells:
        csv_path = cell.run_dir / "records.csv"
        records = read_csv_records(csv_path) if csv_path.exists() else []
        runs.append(RunData(cell.problem, cell.strategy, cell.seed, cell.run_dir, records,
                            read_result(cell.run_dir), experiment.problems[cell.problem].target))
    return runs


def _fmt(value: object, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float) and math.isinf(value):
        return "never" if value > 0 else "-inf"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, float) and abs(value) >= 1000:  # counts and their medians (x.5): no exponent
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def _write_csv(path: Path, columns: list[str], rows: list[dict[str, object]]) -> Path:
    import io

    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in columns})
    data = buffer.getvalue().encode("utf-8")
    return atomic_write(path, lambda handle: handle.write(data))


def _strategy_stats(runs: list[RunData], experiment: Experiment) -> _Stats:
    settings = experiment.report
    finals = [float(r.fitness()[-1]) for r in runs if r.records]
    mean, low, high = bootstrap_mean(finals, settings["confidence"], settings["resamples"])
    stats: _Stats = {"runs": len(runs), "complete": sum(r.status == "finished" for r in runs),
                             "final_mean": mean, "final_low": low, "final_high": high}
    target = runs[0].target if runs else None
    if target is not None:
        reached = [r.reach() for r in runs]
        stats["successes"] = sum(x is not None for x in reached)
        stats["success_rate"] = stats["successes"] / len(runs) if runs else math.nan
        to_target = {key: median_or_inf([math.inf if x is None else float(x[key]) for x in reached])
                     for key in ("evaluations", "steps", "time")}
        stats["evaluations_to_target"] = to_target["evaluations"]
        stats["steps_to_target"] = to_target["steps"]
        stats["time_to_target"] = to_target["time"]
    return stats


def _rank(stats: dict[str, _Stats], has_target: bool) -> list[str]:
    def key(label: str) -> tuple[float, ...]:
        s = stats[label]
        final = s["final_mean"] if not math.isnan(s["final_mean"]) else -math.inf
        if has_target:
            return (-s["success_rate"], s["evaluations_to_target"], -final)
        return (-final,)

    return sorted(stats, key=key)


def _curve(run: RunData, axis: str) -> tuple[np.ndarray, np.ndarray]:
    x = run.column(axis)
    y = run.fitness()
    keep = np.isfinite(x) & np.isfinite(y)
    return x[keep], y[keep]


def _band_curves(runs_by_strategy: dict[str, list[RunData]], axis: str, experiment: Experiment,
                 points: int = 200) -> dict[str, dict[str, np.ndarray]]:
    """Mean curve and bootstrap band per strategy on one grid spanning every run of the problem.

    A run that stopped early (its goal held) keeps its last value up to the end of the grid; a
    strategy's curve starts where all of its runs have a first record.
    """
    pairs = {label: [c for c in (_curve(r, axis) for r in runs) if len(c[0])]
             for label, runs in runs_by_strategy.items()}
    starts = [c[0][0] for cs in pairs.values() for c in cs]
    if not starts:
        return {}
    low_x = min(starts)
    high_x = max(c[0][-1] for cs in pairs.values() for c in cs)
    grid = np.linspace(low_x, high_x, points) if high_x > low_x else np.array([low_x])
    curves = {}
    for label, runs in pairs.items():
        if not runs:
            continue
        matrix = np.vstack([carry_forward(x, y, grid) for x, y in runs])
        ready = ~np.isnan(matrix).any(axis=0)
        if not ready.any():
            continue
        mean, low, high = bootstrap_band(matrix[:, ready], experiment.report["confidence"])
        curves[label] = {"x": grid[ready], "mean": mean, "low": low, "high": high, "n": len(runs)}
    return curves


def _ratio_axis(runs: list[RunData]) -> str:
    return "steps" if any(r.records and (r.records[-1].get("steps") or 0) > 0 for r in runs) else "evaluations"


def write_report(experiment: Experiment, runs: list[RunData] | None = None) -> ReportIndex:
    """Write results.csv, summary.csv, progress_ratios.csv, summary.md and the plots into ``experiment.out``."""
    runs = collect_runs(experiment) if runs is None else runs
    out = ensure_folder(experiment.out, "report folder")
    rows = [r.row(experiment.name, out) for r in runs]
    _write_csv(out / "results.csv", RESULT_COLUMNS, rows)
    plots_dir = out / "plots"
    plotted: list[str] = []
    summary_rows: list[dict[str, object]] = []
    ratio_rows_out: list[dict[str, object]] = []
    tables: list[ReportTable] = []
    md = [f"# Experiment `{experiment.name}`", "",
          f"Made by `blackbox compare {experiment.path}` on {time.strftime('%Y-%m-%d %H:%M')}"
          f"{' in smoke mode (small budgets)' if experiment.smoke else ''}. Seeds: {experiment.seeds}. "
          f"Every number comes from the run directories named below (paths relative to this folder); "
          f"`results.csv` holds one row per run with its `run_dir`.", ""]
    for label, reason in experiment.skipped:
        md.append(f"- Skipped strategy `{label}`: {reason}.")
    if experiment.skipped:
        md.append("")
    can_plot = experiment.report.get("plots", True) and have_matplotlib()
    for problem, info in experiment.problems.items():
        problem_runs = [r for r in runs if r.problem == problem]
        by_strategy = {label: [r for r in problem_runs if r.strategy == label] for label in experiment.strategies}
        stats = {label: _strategy_stats(rs, experiment) for label, rs in by_strategy.items() if rs}
        has_target = info.target is not None
        has_steps = _ratio_axis(problem_runs) == "steps"
        order = _rank(stats, has_target)
        budget = ", ".join(f"{k} = {v}" for k, v in info.budget.items())
        md += [f"## {problem}", "",
               f"Problem `{info.spec}`; budget per run: {budget}"
               + (f"; target (center fitness): {info.target:g}" if has_target else "; no target") + ".", ""]
        confidence = int(round(experiment.report["confidence"] * 100))
        header = ["rank", "strategy", "runs", f"final center fitness: mean [{confidence}% CI]"]
        if has_target:
            header += ["success", "evaluations to target (median)"]
            header += ["steps to target (median)"] if has_steps else []
            header += ["wall time to target (median, s)"]
        md += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        rule = _RANKING_RULE if has_target else _RANKING_RULE_NO_TARGET
        rows_shown: list[list[str]] = []
        table: ReportTable = {"problem": problem, "spec": info.spec, "target": info.target, "ranking": rule,
                 "header": ["rank", "strategy", "runs", "final center", f"{confidence}% CI"]
                 + (["success", "evals to target"] + (["steps to target"] if has_steps else [])
                    + ["time to target (s)"] if has_target else []),
                 "rows": rows_shown}
        tables.append(table)
        for rank, label in enumerate(order, 1):
            s = stats[label]
            runs_text = f"{s['runs']}" + (f" ({s['runs'] - s['complete']} unfinished)" if s["complete"] < s["runs"] else "")
            cells = [str(rank), f"`{label}`", runs_text,
                     f"{_fmt(s['final_mean'])} [{_fmt(s['final_low'])}, {_fmt(s['final_high'])}]"]
            if has_target:
                cells += [f"{s['successes']}/{s['runs']}", _fmt(s["evaluations_to_target"])]
                cells += [_fmt(s["steps_to_target"])] if has_steps else []
                cells += [_fmt(s["time_to_target"], 3)]
            md.append("| " + " | ".join(cells) + " |")
            rows_shown.append([cells[0], label, cells[2], _fmt(s["final_mean"]),
                                  f"[{_fmt(s['final_low'])}, {_fmt(s['final_high'])}]", *cells[4:]])
            summary_rows.append({"problem": problem, "strategy": label, "rank": rank, **s,
                                 "run_dirs": " ".join(_relative(r.run_dir, out) for r in by_strategy[label])})
        md += ["", f"Ranking: {rule}.", ""]
        ratio_md = _progress_ratios(experiment, problem, by_strategy, ratio_rows_out)
        md += ratio_md
        if can_plot:
            for axis, axis_label in _AXES:
                if axis == "steps" and _ratio_axis(problem_runs) != "steps":
                    continue
                curves = _band_curves(by_strategy, axis, experiment)
                if not curves:
                    continue
                path = plots_dir / f"{_file_label(problem)}-{axis}.png"
                plot_bands(curves, path, xlabel=axis_label, ylabel="center fitness (higher is better)",
                           title=f"{problem}: center fitness vs {axis_label}", target=info.target,
                           band_label=f"{confidence}% bootstrap interval of the mean")
                plotted.append(_relative(path, out))
            md += ["Learning curves (mean over seeds, band: bootstrap interval of the mean; a run that "
                   "stopped early keeps its last value): "
                   + ", ".join(f"[{Path(p).name}]({p})" for p in plotted if Path(p).name.startswith(_file_label(problem) + "-")),
                   ""]
        elif experiment.report.get("plots", True):
            md += ["No plots: matplotlib is not installed (pip install 'blackbox-es[plot]').", ""]
        md += ["Runs behind each row:", ""]
        for label in order:
            dirs = ", ".join(f"`{_relative(r.run_dir, out)}`" for r in by_strategy[label])
            md.append(f"- `{label}`: {dirs}")
        md.append("")
    md += ["## Definitions", "", _DEFINITIONS, ""]
    text = "\n".join(md)
    atomic_write(out / "summary.md", lambda handle: handle.write(text.encode("utf-8")))
    summary_columns = ["problem", "strategy", "rank", "runs", "complete", "final_mean", "final_low",
                       "final_high", "successes", "success_rate", "evaluations_to_target", "steps_to_target",
                       "time_to_target", "run_dirs"]
    _write_csv(out / "summary.csv", summary_columns, summary_rows)
    _write_csv(out / "progress_ratios.csv",
               ["problem", "strategy", "reference", "axis", "fraction", "level", "strategy_x", "reference_x",
                "ratio", "strategy_runs", "reference_runs"], ratio_rows_out)
    index: ReportIndex = {"results": str(out / "results.csv"), "summary": str(out / "summary.md"),
             "summary_csv": str(out / "summary.csv"), "progress_ratios": str(out / "progress_ratios.csv"),
             "plots": [str(out / p) for p in plotted], "runs": len(runs), "tables": tables}
    write_json(out / "report.json", index)
    return index


def _file_label(label: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "_", label)


def _progress_ratios(experiment: Experiment, problem: str, by_strategy: dict[str, list[RunData]],
                     rows_out: list[dict[str, object]]) -> list[str]:
    reference = experiment.report["reference"]
    fractions = experiment.report["progress"]
    others = [label for label in by_strategy if label != reference and by_strategy[label]]
    if not by_strategy.get(reference) or not others:
        return []
    axis = _ratio_axis([r for rs in by_strategy.values() for r in rs])
    word = "environment steps" if axis == "steps" else "evaluations"
    curves = {label: mean_curve([c for c in (_curve(r, axis) for r in runs) if len(c[0])])
              for label, runs in by_strategy.items() if runs}
    ref = curves[reference]
    if len(ref[1]) == 0:
        return []
    md = ["### Progress ratios (Salimans et al. 2017, Table 1)", "",
          f"{word.capitalize()} each strategy needs to reach a fraction of `{reference}`'s progress (its mean "
          f"center fitness from {_fmt(float(ref[1][0]))} at the start to {_fmt(float(ref[1][-1]))} at the end), "
          f"divided by the {word} `{reference}` needs; below 1 is faster. In brackets: the strategy's and "
          f"the reference's {word}.", "",
          "| strategy | " + " | ".join(f"{int(round(f * 100))}%" for f in fractions) + " |",
          "|---|" + "---|" * len(fractions)]
    for label in others:
        table = ratio_rows(curves[label], ref, fractions)
        cells = []
        for entry in table:
            rows_out.append({"problem": problem, "strategy": label, "reference": reference, "axis": axis,
                             "fraction": entry["fraction"], "level": entry["level"],
                             "strategy_x": entry["method"], "reference_x": entry["reference"],
                             "ratio": entry["ratio"],
                             "strategy_runs": " ".join(_relative(r.run_dir, experiment.out) for r in by_strategy[label]),
                             "reference_runs": " ".join(_relative(r.run_dir, experiment.out)
                                                        for r in by_strategy[reference])})
            if math.isnan(entry["ratio"]):
                cells.append("n/a (no progress)")
            elif math.isinf(entry["ratio"]):
                cells.append(f"never (ref. {_fmt(entry['reference'])})")
            else:
                cells.append(f"{entry['ratio']:.2f} ({_fmt(entry['method'])} / {_fmt(entry['reference'])})")
        md.append(f"| `{label}` | " + " | ".join(cells) + " |")
    md.append("")
    return md


_RANKING_RULE = "success rate, then median evaluations to target, then mean final center fitness"
_RANKING_RULE_NO_TARGET = "mean final center fitness"

_DEFINITIONS = """\
- **final center fitness**: the `center` column of the last row of a run's `records.csv` (the
  `best` column when the center was not evaluated); mean over seeds with a percentile-bootstrap
  interval of the mean.
- **success**: the center's fitness reached the problem's target in some generation.
- **evaluations / steps / wall time to target**: the `evaluations`, `steps` and `time` columns of
  the first row at or above the target; the median over seeds counts a run that never reached it
  as infinite ("never").
- **progress ratios**: the mean over seeds of the center-fitness curves (each run's last value
  carried forward), against environment steps (evaluations for problems that take none). For each
  fraction f of the reference's progress, level = start + f (end - start); the ratio is the
  strategy's first x at that level over the reference's, as in Salimans et al. (2017), Table 1.
- Wall times depend on the machine and its load; with `jobs` > 1 runs share the cores."""
