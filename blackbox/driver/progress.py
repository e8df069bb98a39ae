"""Progress of a run for people: one live line in a terminal, a plain line every few seconds in a log.

The line shows the generation (``gen 12/100`` when the budget counts generations), a bar and the
share of the budget spent (whichever budget, generations, evaluations, environment steps or wall
time, is nearest to running out; counted from where a resumed run starts), evaluations,
environment steps (for problems that take any), ``best`` (the best member of this generation),
``center`` (the unperturbed center's fitness, when it is evaluated), the time per generation and
an ETA. A field with nothing to say is left out rather than shown empty, and in a terminal the
fields that do not fit its width are dropped whole, least useful first, so the generation and the
ETA are always there. Where the output is not a terminal (a log file, CI), a bar is useless:
a plain line is printed for the first generation, then every ``log_every`` seconds, and at the end.

When the run ends, the last line says how: the bar completes and reads ``100%`` when a budget was
spent, ``goal reached`` or ``target reached`` when the run solved its problem early (a CartPole run
solved in 5 of at most 100 generations does not end at "5%"), ``stopped`` when the strategy or a
callback ended it, and ``interrupted`` or ``failed`` (the bar where it was) otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from rich.console import Console
from rich.live import Live
from rich.text import Text

from .loop import Callback, Record, Result, Run
from .stop import BUDGETS, ConfirmGoal, GoalHeld, StopCondition, TargetFitness

__all__ = ["ProgressDisplay", "budget_fraction", "format_duration", "progress_fields", "fit_line", "ending"]

_BUDGET_FIELDS = {"generations": "generation", "max_evaluations": "evaluations", "max_steps": "steps",
                  "max_time": "time"}
#: Fields dropped first when a terminal is too narrow (the generation and the ETA go last).
_DROP_ORDER = ("ms/gen", "steps", "evals", "best", "bar", "center", "pct", "eta")
_BAR_WIDTH = (10, 20)
#: How often a refresh of the live line is drawn at most (fast runs take thousands of generations a second).
_REFRESH = 0.1


def _fmt(value: object) -> str:
    return "-" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)


def _count(value: int) -> str:
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:.3g}{suffix}"
    return str(value)


def format_duration(seconds: float | None) -> str:
    """``1:02:03`` / ``2:03`` / ``-`` for unknown."""
    if seconds is None or seconds != seconds or seconds == float("inf"):
        return "-"
    seconds = int(round(max(seconds, 0.0)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def budget_fraction(record: Record | None, budget: Mapping[str, float | None]) -> float | None:
    """How much of the nearest budget is spent (0..1), or None when no budget is known."""
    fractions = []
    for key, attr in _BUDGET_FIELDS.items():
        limit = budget.get(key)
        if limit:
            fractions.append(0.0 if record is None else getattr(record, attr) / float(limit))
    return min(1.0, max(fractions)) if fractions else None


def progress_fields(record: Record, budget: Mapping[str, float | None], eta: float | None) -> dict[str, str]:
    """The line's fields with something to say, by name (``gen``, ``evals``, ``best``, ...)."""
    generations = budget.get("generations")
    fields = {"gen": f"gen {record.generation}" + (f"/{generations}" if generations else "")}
    fields["evals"] = f"evals {_count(record.evaluations)}"
    if record.steps:
        fields["steps"] = f"steps {_count(record.steps)}"
    fields["best"] = f"best {_fmt(record.best)}"
    if record.center is not None:
        fields["center"] = f"center {_fmt(record.center)}"
    fields["ms/gen"] = f"{record.generation_time * 1000:.0f} ms/gen"
    if eta is not None:
        fields["eta"] = f"ETA {format_duration(eta)}"
    return fields


def _bar(fraction: float, width: int) -> str:
    filled = int(round(max(0.0, min(1.0, fraction)) * width))
    return "━" * filled + "─" * (width - filled)


def fit_line(fields: dict[str, str], fraction: float | None, status: str | None, width: int | None) -> str:
    """One line of ``fields`` with a bar and ``status`` (default: the percentage) after ``gen``.

    ``width`` None: everything, no bar (a log line). Otherwise fields are dropped whole, in
    ``_DROP_ORDER``, and the bar shrinks, until the line is shorter than ``width``.
    """
    shown = dict(fields)
    pct = status or (f"{fraction * 100:.0f}%" if fraction is not None else "")
    if pct:
        shown["pct"] = pct
    if width is None:
        return _join(shown, None)
    if fraction is not None:
        shown["bar"] = ""
    for name in (None, *_DROP_ORDER):
        if name is not None:
            shown.pop(name, None)
        free = width - 1 - len(_join(shown, 0))
        if "bar" in shown and free - 2 >= _BAR_WIDTH[0]:  # two spaces before the bar
            return _join(shown, min(_BAR_WIDTH[1], free - 2), fraction or 0.0)
        if "bar" not in shown and free >= 0:
            return _join(shown, 0)
    return fields["gen"][: max(width - 1, 1)]


def _join(shown: dict[str, str], bar: int | None, fraction: float = 0.0) -> str:
    order = ("gen", "bar", "pct", "evals", "steps", "best", "center", "ms/gen", "eta")
    parts = []
    for name in order:
        if name not in shown:
            continue
        if name == "bar":
            if bar:
                parts.append(_bar(fraction, bar))
            continue
        parts.append(shown[name])
    return "  ".join(parts)


def ending(run: Run, result: Result) -> tuple[str, bool]:
    """How the run ended, in a few words, and whether the bar completes (budget, goal, own criterion)."""
    last = run.records[-1] if run.records else None
    kinds = []
    if last is not None:
        for condition in run.stop:
            if isinstance(condition, StopCondition) and condition.satisfied(last):
                kinds.append(condition)
    if any(isinstance(c, BUDGETS) for c in kinds):
        return "100%", True
    if any(isinstance(c, (GoalHeld, ConfirmGoal)) for c in kinds):
        return "goal reached", True
    if any(isinstance(c, TargetFitness) for c in kinds):
        return "target reached", True
    if result.stop_reason == "interrupted":
        return "interrupted", False
    if result.stop_reason.startswith("error"):
        return "failed", False
    return "stopped", True


class ProgressDisplay(Callback):
    """The run's progress line (live in a terminal, printed every ``log_every`` seconds elsewhere).

    ``budget`` maps ``generations`` / ``max_evaluations`` / ``max_steps`` / ``max_time`` to their
    limits; a bare integer is read as a number of generations (the older signature). ``intro``, a
    line printed when the run starts, says what is starting (before the first generation ends).
    """

    def __init__(self, budget: Mapping[str, float | None] | int | None = None, console: Console | None = None,
                 *, log_every: float = 10.0, intro: str | None = None):
        if budget is None or isinstance(budget, int):
            budget = {"generations": budget} if budget else {}
        self.budget = {k: v for k, v in budget.items() if k in _BUDGET_FIELDS and v}
        self.console = console or Console(stderr=True)
        self.log_every = float(log_every)
        self.intro = intro
        self._live: Live | None = None
        self._start_fraction = 0.0
        self._started = 0.0
        self._last_shown = -float("inf")
        self._last: tuple[dict[str, str], float | None] | None = None

    def on_start(self, run: Run) -> None:
        last = run.records[-1] if run.records else None
        self._start_fraction = budget_fraction(last, self.budget) or 0.0
        self._started = time.perf_counter()
        self._last_shown = -float("inf")
        self._last = None
        if self.intro:  # at once: the first generation can take minutes (workers starting, long episodes)
            self.console.out(self.intro, highlight=False)
        if self.console.is_terminal:
            generations = self.budget.get("generations")
            first = run.strategy.generation + 1
            line = f"gen {first}" + (f"/{generations}" if generations else "") + "  running"
            self._live = Live(Text(line), console=self.console, auto_refresh=False, transient=False)
            self._live.start(refresh=True)

    def on_generation(self, run: Run, record: Record) -> None:
        fraction = budget_fraction(record, self.budget)
        eta = None
        spent = time.perf_counter() - self._started
        if fraction is not None and fraction > self._start_fraction:
            eta = spent * (1.0 - fraction) / (fraction - self._start_fraction)
        self._last = (progress_fields(record, self.budget, eta), fraction)
        now = time.perf_counter()
        if self._live is not None:
            if now - self._last_shown >= _REFRESH:
                self._show(*self._last, None)
                self._last_shown = now
        elif now - self._last_shown >= self.log_every:
            self._show(*self._last, None)
            self._last_shown = now

    def on_end(self, run: Run, result: Result) -> None:
        if self._last is not None:
            status, complete = ending(run, result)
            fields, fraction = self._last
            fields = {k: v for k, v in fields.items() if k != "eta"}
            fields["eta"] = f"in {format_duration(time.perf_counter() - self._started)}"
            self._show(fields, 1.0 if complete else fraction, status)
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _show(self, fields: dict[str, str], fraction: float | None, status: str | None) -> None:
        if self._live is not None:
            line = fit_line(fields, fraction, status, self.console.width)
            self._live.update(Text(line, style="bold" if status else ""), refresh=True)
        else:
            self.console.out(fit_line(fields, fraction, status, None), highlight=False)
