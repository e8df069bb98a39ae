"""What ``blackbox contrast rl`` prints and draws: steps and wall time to the goal, the ratios beside the
paper's claims, and the return against environment steps and against wall time."""

from __future__ import annotations

import math
from pathlib import Path

from ...errors import ConfigError
from ...files import atomic_write
from ..stats import median_or_inf, probability_of_improvement, wilson_interval
from .rl import PAPER_DATA, PAPER_QUOTE, RLContrastReport
from .sb3 import RLCurve

__all__ = ["describe_rl_contrast", "plot_rl_contrast", "contrast_markdown", "seed_summary"]


def _steps(value: int | None) -> str:
    return "not reached" if value is None else f"{value:,}"


def _time(value: float | None) -> str:
    return "not reached" if value is None else f"{value:,.1f} s"


def _best(curve: RLCurve) -> str:
    return "-" if curve.best_return is None else f"{curve.best_return:,.1f}"


def describe_rl_contrast(report: RLContrastReport) -> str:
    """The report as text: a table, the ratios, the paper's claims, the notes."""
    goal = "no goal (budgets only)" if report.goal is None else (
        f"goal {report.goal:g} (mean return over {report.goal_episodes} fresh episodes)")
    lines = [f"{report.task}: {goal}", "",
             f"{'method':<40} {'reached':>8} {'steps to goal':>14} {'wall to goal':>13} "
             f"{'steps run':>11} {'wall run':>10} {'best check':>11}"]
    for curve in (report.es, report.rl):
        lines.append(f"{curve.method:<40} {'yes' if curve.reached else 'no':>8} {_steps(curve.steps_to_goal):>14} "
                     f"{_time(curve.time_to_goal):>13} {curve.total_steps:>11,} {curve.total_time:>9.1f}s "
                     f"{_best(curve):>11}")
    lines.append("")
    rl_name = report.rl.method.split(" (")[0]
    if report.data_ratio is not None:
        low, high = PAPER_DATA
        where = "within" if low <= report.data_ratio <= high else ("below" if report.data_ratio < low else "above")
        lines.append(f"data: ES used {report.data_ratio:.2f}x the environment steps of {rl_name} "
                     f"(paper, against TRPO on MuJoCo: {low:g}-{high:g}x; this is {where} that range)")
    if report.time_ratio is not None:
        verdict = "faster" if report.time_ratio > 1 else "slower"
        lines.append(f"wall time: ES was {max(report.time_ratio, 1 / report.time_ratio):.2f}x {verdict} than "
                     f"{rl_name} to the goal ({report.rl.time_to_goal:.1f} s / {report.es.time_to_goal:.1f} s)")
    if report.data_ratio is None and report.goal is not None:
        missed = [c.method for c in (report.es, report.rl) if not c.reached]
        lines.append(f"no ratio: {', '.join(missed)} did not reach the goal within the budget")
    lines.append(PAPER_QUOTE)
    lines.append(f"ES ran: {report.es_command}")
    lines.append(f"{rl_name} ran: {report.rl.config.get('source')}, {report.rl.config.get('budget_steps'):,} steps "
                 f"at most, checked every {report.rl.config.get('check_every'):,} steps")
    for note in report.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def plot_rl_contrast(report: RLContrastReport, path: str | Path) -> Path:
    """Return against environment steps (left) and wall time (right), both methods; a PNG at ``path``."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("the contrast plot needs matplotlib: pip install 'blackbox-es[plot]'") from None
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), dpi=110, sharey=True)
    es_label, goal_label = curve_labels(report)
    for curve, color, name in ((report.es, "tab:red", es_label), (report.rl, "tab:blue", report.rl.method)):
        for ax, xs in ((axes[0], curve.steps), (axes[1], curve.times)):
            ax.plot(xs, curve.returns, color=color, linewidth=1.2, marker=".", markersize=2, label=name)
        for ax, x in ((axes[0], curve.steps_to_goal), (axes[1], curve.time_to_goal)):
            if x is not None:
                ax.axvline(x, color=color, linestyle=":", linewidth=1)
    for ax, label in ((axes[0], "environment steps"), (axes[1], "wall time (s)")):
        if report.goal is not None:
            ax.axhline(report.goal, color="gray", linestyle="--", linewidth=1, label=goal_label)
        ax.set_xlabel(label)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("return of the current policy (one fresh episode per check)")
    axes[0].legend(loc="lower right", fontsize=8)
    title = f"{report.task}: ES against {report.rl.method.split(' (')[0]}"
    if report.data_ratio is not None and report.time_ratio is not None:
        title += (f"; ES used {report.data_ratio:.1f}x the steps (paper: {PAPER_DATA[0]:g}-{PAPER_DATA[1]:g}x), "
                  f"{report.time_ratio:.1f}x {'less' if report.time_ratio > 1 else 'more'} wall time"
                  if report.time_ratio > 1 else
                  f"; ES used {report.data_ratio:.1f}x the steps (paper: {PAPER_DATA[0]:g}-{PAPER_DATA[1]:g}x), "
                  f"{1 / report.time_ratio:.1f}x the wall time")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path = Path(path)
    atomic_write(path, lambda handle: fig.savefig(handle, format="png"))
    plt.close(fig)
    return path


def curve_labels(report: RLContrastReport) -> tuple[str, str]:
    """The legend's names of ES's curve and of the goal line. A preset that shifts its rewards (Hopper's
    -1 a step) or floors them trains on a return the goal is not measured on: both labels say which return
    is which."""
    from ...problems.gym.presets import training_changes

    changes = training_changes(report.es.config.get("problem") or {})
    goal = "" if report.goal is None else f"goal {report.goal:g}"
    if not changes:
        return report.es.method, goal
    return (f"{report.es.method}, training return ({', '.join(changes)})",
            goal and f"{goal} (on the task's own return)")


def _cell(steps: int | None, seconds: float | None) -> str:
    return "not reached" if steps is None else f"{steps:,} / {_seconds(seconds or 0.0)}"


def _seconds(seconds: float) -> str:
    """Seconds as the table prints them: whole seconds, a tenth below 100 s (a race's cap is ES's time)."""
    return f"{seconds:,.0f} s" if seconds >= 100 else f"{seconds:.1f} s"


def _budget(stop: dict) -> str:
    parts = [f"{stop['max_steps']:,} steps" if stop.get("max_steps") else "",
             f"{stop['generations']:,} generations" if stop.get("generations") else "",
             _seconds(stop["max_time"]) if stop.get("max_time") else ""]
    return ", ".join(p for p in parts if p) or "-"


def _notes(reports: list[dict]) -> list[str]:
    """The contrasts' notes, once each: a note some tasks' contrasts have and others not (a step budget, a
    reward shift) is named by its task; one every task's has is not."""
    tasks = {r["task"] for r in reports}
    having: dict[str, set[str]] = {}
    for r in reports:
        for note in r.get("notes", []):
            if not note.startswith("race on "):
                having.setdefault(note, set()).add(r["task"])
    notes = set()
    for note, where in having.items():
        notes |= ({note} if where == tasks else
                  {note if note.startswith(f"{task}:") else f"{task}: {note}" for task in where})
    return sorted(notes)


def contrast_markdown(reports: list[dict], seconds: float | None = None) -> str:
    """A markdown table of contrast reports (``RLContrastReport.as_dict()``): one row per task, seed and
    baseline. A baseline stopped by a race and short of the goal shows what it had spent: more than that."""
    low, high = PAPER_DATA
    lines = ["| task | seed | goal | ES (steps / wall to goal) | baseline (steps / wall to goal) | ES data / baseline's "
             f"(paper: {low:g}-{high:g}x) | baseline wall / ES's | best checks (ES / baseline) | budget (ES; baseline) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in reports:
        es, rl = r["es"], r["rl"]
        data = "-" if r["data_ratio"] is None else f"{r['data_ratio']:.2f}x"
        wall = "-" if r["time_ratio"] is None else f"{r['time_ratio']:.2f}x"
        best = " / ".join("-" if c["best_return"] is None else f"{c['best_return']:,.0f}" for c in (es, rl))
        goal = "-" if r["goal"] is None else f"{r['goal']:g} ({r['goal_episodes']} episodes)"
        budget = (f"{_budget(es['config'].get('stop') or {})}; "
                  f"{_budget({'max_steps': rl['config'].get('budget_steps'), 'max_time': rl['config'].get('max_time')})}")
        baseline = _cell(rl["steps_to_goal"], rl["time_to_goal"])
        race = r.get("race")
        if race and rl["steps_to_goal"] is None and es["steps_to_goal"] is not None:
            baseline = (f"not reached in {rl['total_steps']:,} steps (more than ES's)" if race == "steps"
                        else f"not reached in {_seconds(rl['total_time'])} (more than ES's)")
            data = f"< {es['steps_to_goal'] / max(rl['total_steps'], 1):.2f}x" if race == "steps" else data
            wall = f"> {rl['total_time'] / max(es['time_to_goal'], 1e-9):.2f}x" if race == "time" else wall
        seed = r.get("seed", "-")
        lines.append(f"| {r['task']} | {seed} | {goal} | {es['method']}: {_cell(es['steps_to_goal'], es['time_to_goal'])} "
                     f"| {rl['method']}: {baseline} | {data} | {wall} | {best} | {budget} |")
    lines += ["", PAPER_QUOTE + "."]
    notes = _notes(reports)
    races = sorted({r["race"] for r in reports if r.get("race")})
    for race in races:
        notes.append(f"raced on {race}: the baseline stopped once it had used the {race} ES needed to reach the goal "
                     f"(a baseline that had not reached it by then needs more {race} than ES)")
    shifted = [r["task"] for r in reports if (r["es"]["config"].get("problem") or {}).get("reward_shift")]
    if shifted and not any("reward_shift" in note for note in notes):
        notes.append(f"{', '.join(shifted)}: ES's best check is its training return, shifted by reward_shift per "
                     f"step (the survival bonus removed); the goal is confirmed on the task's own reward")
    lines += [f"- {note}" for note in notes]
    return "\n".join(lines)


def seed_summary(reports: list[dict], resamples: int = 10_000) -> list[str]:
    """One line per task, baseline and race (or none) run on two or more seeds: how often each side reached
    the goal, on how many seeds ES needed no more steps (no more wall time, in a race on time) and, when the
    baseline ran unraced (to the goal or its budget), each side's median steps and the probability of
    improvement: the chance that ES needs fewer steps than the baseline on a seed, ``P(X < Y) + P(X = Y) / 2``
    over every pair of seeds (Agarwal et al. 2021), with a 95% bootstrap interval over the seeds
    (``resamples`` draws from a fixed stream: the same reports give the same line). Raced, the share of seeds
    ES won estimates that probability, with a Wilson interval. A side that missed the goal counts as needing
    more than any that reached it; in a race the baseline stopped at ES's steps or time, so one short of the
    goal needed more.

    Why: two different stochastic methods on one seed are two independent draws, so which needs fewer
    steps on a seed is partly chance; the distributions over the same seeds are what compare."""
    groups: dict[tuple[str, str, str | None], list[dict]] = {}
    for r in reports:  # a race and an unraced run of one task are told apart: they answer different questions
        groups.setdefault((r["task"], r["rl"]["method"], r.get("race")), []).append(r)
    lines = []
    for (task, method, _), group in groups.items():
        if len(group) < 2:
            continue
        group = sorted(group, key=lambda r: r.get("seed") or 0)
        n = len(group)
        races = {r.get("race") for r in group}
        key, unit, less = ("time_to_goal", "wall time", "less") if "time" in races else ("steps_to_goal", "steps", "fewer")
        es = [_or_inf(r["es"][key]) for r in group]
        rl = [_or_inf(r["rl"][key]) for r in group]
        wins = sum(1 for x, y in zip(es, rl) if x < math.inf and x <= y)
        name = method.split(" (")[0]
        raced = races - {None}
        by = f" by ES's {unit} (raced)" if raced else ""
        line = (f"{task}, seeds {_seed_range([r.get('seed') for r in group])}: ES reached the goal on "
                f"{sum(x < math.inf for x in es)}/{n}, {name} on {sum(y < math.inf for y in rl)}/{n}{by}; "
                f"ES needed no more {unit} on {wins} of {n} seeds")
        if raced:
            # Each seed is one independent draw of each method: the share of seeds won estimates the
            # probability of improvement as well, with a binomial (Wilson) interval.
            low, high = wilson_interval(wins, n)
            line += (f"; median {unit} {_median(es, unit)} against {_raced_median(group, key, unit)}; the seeds "
                     f"estimate the probability of improvement (ES {less} {unit}) at {wins / n:.2f} "
                     f"[95% Wilson CI {low:.2f}-{high:.2f}]")
        else:
            point, low, high = probability_of_improvement(es, rl, resamples=resamples)
            line += (f"; median steps {_median(es)} against {_median(rl)}; probability of improvement "
                     f"(ES fewer steps) {point:.2f} [95% CI {low:.2f}-{high:.2f}]")
        lines.append(line)
    return lines


def _or_inf(steps: int | None) -> float:
    return math.inf if steps is None else float(steps)


def _median(values: list[float], unit: str = "steps") -> str:
    """The median of steps (or wall time) to the goal (``median_or_inf``: a miss counts as more than any
    reach); one that falls on a miss reads "more than" the reach below it, or "not reached"."""
    median = median_or_inf(values)
    if median < math.inf:
        return _amount(median, unit)
    below = sorted(values)[(len(values) - 1) // 2]
    return "not reached" if below == math.inf else f"more than {_amount(below, unit)}"


def _raced_median(group: list[dict], key: str, unit: str) -> str:
    """The raced baseline's median steps (or wall time) to the goal, bounded from below: a baseline stopped
    short of the goal needs more than it had used (``total_steps``, ``total_time``), so the median over the
    seeds with those counts in place of its misses is one its true median is at least (the median only
    grows when a value does). Why: a race stops the baseline where ES reached the goal, so its own median
    is not measured, but whether it is at least ES's is."""
    total = "total_time" if key == "time_to_goal" else "total_steps"
    values, stopped = [], False
    for r in group:
        reached = r["rl"][key]
        stopped = stopped or reached is None
        values.append(float(r["rl"][total] if reached is None else reached))
    median = median_or_inf(values)
    return f"at least {_amount(median, unit)}" if stopped else _amount(median, unit)


def _amount(value: float, unit: str) -> str:
    return f"{value:,.1f} s" if unit == "wall time" else f"{value:,.0f}"


def _seed_range(seeds: list) -> str:
    known = [s for s in seeds if isinstance(s, int)]
    if len(known) == len(seeds) and known == list(range(known[0], known[0] + len(known))):
        return f"{known[0]}-{known[-1]}"
    return ", ".join(str(s) for s in seeds)
