"""Experiments: a grid of strategies x problems x seeds, run into run directories, resumably.

An experiment file (``blackbox compare EXPERIMENT.toml``)::

    name = "functions"                  # default: the file's stem
    out = "runs/experiments/functions"  # default: runs/experiments/<name> (relative to where you run)
    seeds = 5                           # seeds 0..4, or a list such as [0, 1, 7]
    executor = "serial"                 # executor spec or table, used by every run
    jobs = 1                            # runs at a time; > 1 runs them in separate processes
    evaluate_center = true

    [budget]                            # the budget every run gets: generations, max_evaluations,
    generations = 200                   # max_steps and/or max_time

    [checkpoint]                        # as in a run config: every, keep
    every = 50
    [log]                               # as in a run config: tensorboard, plot
    plot = false

    [strategies.openai-es]              # the table's name is the label in tables and plots
    sigma = 0.1                         # any option of the strategy
    [strategies.nes-fast]
    name = "nes"                        # the registered name, when the label differs
    lr = 0.05
    [strategies.cma]
    optional = true                     # skipped, with a note, when its plugin is not installed

    [problems.sphere]
    spec = "sphere:dim=10"              # or name = "sphere" and options
    target = -1e-3                      # success: the center's fitness reaches it
    goal = -1e-4                        # optional: stop a run once the center holds the goal ...
    goal_generations = 3                # ... for this many generations
    budget = { generations = 500 }      # optional: this problem's own budget (all strategies share it)

    [report]
    reference = "openai-es"             # reference of the progress ratios (default: first strategy)
    progress = [0.25, 0.5, 0.75, 1.0]   # fractions of the reference's progress
    confidence = 0.95                   # bootstrap intervals
    resamples = 10000
    plots = true                        # learning-curve plots (needs matplotlib)

    [smoke]                             # --smoke or BLACKBOX_SMOKE=1: small budgets for CI
    seeds = 2
    budget = { generations = 5 }        # replaces every budget, per-problem ones included

Each run lands in ``OUT/runs/<problem>/<strategy>/seed-<n>/`` as a complete run directory. Running
the file again skips finished runs, resumes unfinished ones from their checkpoints, extends finished
ones whose budget grew, and refuses runs whose settings changed in other ways (unless
``--overwrite``): a killed experiment loses at most what its runs in flight did since their last
checkpoint.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from .._validate import check_bool, check_float, check_int, check_string
from ..config.run import (
    BUDGET_KEYS,
    ConfigDoc,
    ResolvedRun,
    RunConfig,
    breaking_changes,
    check_section,
    config_changes,
    load_toml,
    read_component,
    resolve_run_config,
)
from ..errors import ConfigError, UnknownNameError, did_you_mean
from ..registry.plugins import strategies
from .run_dir import is_empty_for_a_run, replace_fault
from .runs import RunSummary, is_finished, resume_run, start_run

if TYPE_CHECKING:
    from ..driver.loop import Callback
    from ..registry.component import Component

_P = ParamSpec("_P")
_T = TypeVar("_T")

__all__ = ["Experiment", "Cell", "ProblemInfo", "load_experiment", "plan_cells", "run_experiment",
           "execute_cell", "smoke_mode"]

_TOP = ("name", "out", "seeds", "executor", "jobs", "evaluate_center", "budget", "checkpoint", "log",
        "strategies", "problems", "report", "smoke")
_PROBLEM_KEYS = ("target", "goal", "goal_generations", "budget")
_REPORT = ("reference", "progress", "confidence", "resamples", "plots")
_SMOKE = ("seeds", "budget", "jobs")


def smoke_mode() -> bool:
    """True when the environment asks for smoke budgets (``BLACKBOX_SMOKE=1``)."""
    return os.environ.get("BLACKBOX_SMOKE", "").strip().lower() not in ("", "0", "false", "no")


@dataclass
class ProblemInfo:
    """A problem of the grid: its label, how it is written, and what counts as success."""

    label: str
    spec: str
    target: float | None
    budget: dict[str, Any]


@dataclass
class Cell:
    """One run of the grid."""

    problem: str
    strategy: str
    seed: int
    resolved: ResolvedRun
    run_dir: Path
    action: str = "new"
    reason: str = ""


@dataclass
class Experiment:
    """A parsed experiment file."""

    name: str
    path: Path
    out: Path
    seeds: list[int]
    jobs: int
    problems: dict[str, ProblemInfo]
    strategies: list[str]
    cells: list[Cell]
    skipped: list[tuple[str, str]] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)
    smoke: bool = False


def _safe(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", label)


#: The most seeds an experiment may ask for (each seed is one run per strategy and problem).
MAX_SEEDS = 10_000


def _seeds(value: object, where: str) -> list[int]:
    if isinstance(value, int) and not isinstance(value, bool):
        return list(range(_checked(where, check_int, "seeds", value, minimum=1, maximum=MAX_SEEDS)))
    if isinstance(value, list) and value:
        if len(value) > MAX_SEEDS:
            raise ConfigError(f"{where}: seeds lists {len(value)} seeds; at most {MAX_SEEDS} are allowed")
        seeds = [_checked(where, check_int, "seeds entry", v, minimum=0) for v in value]
        if len(set(seeds)) != len(seeds):
            raise ConfigError(f"{where}: seeds has duplicates: {seeds}")
        return seeds
    raise ConfigError(f"{where}: seeds must be a number of seeds (5) or a non-empty list ([0, 1, 2]), got {value!r}")


def _checked(where: str, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    try:
        return fn(*args, **kwargs)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _budget(doc: ConfigDoc, table: object, path: tuple[str, ...]) -> dict[str, Any]:
    budget = check_section("stop", table, doc.where, path, allowed=BUDGET_KEYS)
    return budget


def _spec_text(component: Component) -> str:
    options = ",".join(f"{k}={v}" for k, v in component.options.items())
    return component.name + (":" + options if options else "")


def load_experiment(path: str | Path, *, out: str | Path | None = None, smoke: bool | None = None,
                    jobs: int | None = None) -> Experiment:
    """Read and check an experiment file; every run's config is resolved (unknown keys with lines)."""
    path = Path(path)
    doc = load_toml(path)
    data = dict(doc.data)
    for key in data:
        if key not in _TOP:
            raise UnknownNameError(
                f"{doc.where(key)}: unknown key {key!r}.{did_you_mean(key, _TOP)} Known keys: {', '.join(_TOP)}"
            )
    smoke = smoke_mode() if smoke is None else smoke
    smoke_table = data.get("smoke", {})
    if not isinstance(smoke_table, dict):
        raise ConfigError(f"{doc.where('smoke')}: smoke must be a table, got {smoke_table!r}")
    for key in smoke_table:
        if key not in _SMOKE:
            raise UnknownNameError(f"{doc.where('smoke', key)}: unknown key {key!r} in [smoke]."
                                   f"{did_you_mean(key, _SMOKE)} Known keys: {', '.join(_SMOKE)}")
    smoke_budget = _budget(doc, smoke_table["budget"], ("smoke", "budget")) if "budget" in smoke_table else None

    name = _checked(doc.where("name"), check_string, "name", data.get("name", path.stem), nonempty=True)
    seeds = _seeds(data.get("seeds", 1), doc.where("seeds"))
    if smoke and "seeds" in smoke_table:
        seeds = _seeds(smoke_table["seeds"], doc.where("smoke", "seeds"))
    job_count = data.get("jobs", 1)
    if smoke and "jobs" in smoke_table:
        job_count = smoke_table["jobs"]
    if jobs is not None:
        job_count = jobs
    job_count = _checked(doc.where("jobs"), check_int, "jobs", job_count, minimum=1)
    evaluate_center = _checked(doc.where("evaluate_center"), check_bool, "evaluate_center",
                               data.get("evaluate_center", True))
    if "budget" not in data:
        raise ConfigError(f"{path}: give a shared [budget] ({', '.join(BUDGET_KEYS)}); "
                          f"without one the runs could never stop")
    shared_budget = _budget(doc, data["budget"], ("budget",))
    if not shared_budget:
        raise ConfigError(f"{doc.where('budget')}: [budget] is empty; give one of {', '.join(BUDGET_KEYS)}")
    sections = {key: check_section(key, data.get(key, {}), doc.where, (key,)) for key in ("checkpoint", "log")}
    executor = read_component("executor", data.get("executor", "serial"), doc.where("executor"), doc, ("executor",))

    strategies_table = _table(doc, data, "strategies")
    labels: list[str] = []
    components: dict[str, Component] = {}
    skipped: list[tuple[str, str]] = []
    for label, entry in strategies_table.items():
        where = doc.where("strategies", label)
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: [strategies.{label}] must be a table of options (or empty), got {entry!r}")
        entry = {"name": label} if entry == {} else dict(entry)
        if "name" not in entry and "spec" not in entry:
            entry["name"] = label
        optional = entry.pop("optional", False)
        if not isinstance(optional, bool):
            raise ConfigError(f"{doc.where('strategies', label, 'optional')}: optional must be true or false")
        registered = entry.get("name") or str(entry.get("spec", "")).split(":")[0]
        if optional and registered not in strategies.names():
            skipped.append((label, f"strategy {registered!r} is not installed"))
            continue
        components[label] = read_component("strategy", entry, where, doc, ("strategies", label))
        labels.append(label)
    if not labels:
        raise ConfigError(f"{doc.where('strategies')}: no strategy to run (all optional ones are missing?)")

    problems: dict[str, ProblemInfo] = {}
    problem_components: dict[str, Component] = {}
    stops: dict[str, dict[str, Any]] = {}
    for label, entry in _table(doc, data, "problems").items():
        where = doc.where("problems", label)
        entry = dict(entry) if isinstance(entry, dict) else entry
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: [problems.{label}] must be a table, got {entry!r}")
        if "name" not in entry and "spec" not in entry:
            entry["name"] = label
        component = read_component("problem", entry, where, doc, ("problems", label), ignore=_PROBLEM_KEYS)
        problem_components[label] = component
        budget = dict(shared_budget)
        if "budget" in entry:
            budget = _budget(doc, entry["budget"], ("problems", label, "budget"))
        if smoke and smoke_budget is not None:
            budget = dict(smoke_budget)
        stop = dict(budget)
        for key in ("goal", "goal_generations"):
            if key in entry:
                stop[key] = entry[key]
        target = None
        if "target" in entry:
            target = _checked(doc.where("problems", label, "target"), check_float, "target", entry["target"])
        stops[label] = check_section("stop", stop, doc.where, ("problems", label))
        problems[label] = ProblemInfo(label, entry.get("spec") or _spec_text(component), target, budget)

    report = _report(doc, data.get("report", {}), labels)
    out_dir = Path(out) if out is not None else Path(_checked(doc.where("out"), check_string, "out",
                                                               data.get("out", f"runs/experiments/{name}"), nonempty=True))
    cells = []
    for problem_label, problem_component in problem_components.items():
        for label in labels:
            for seed in seeds:
                config = RunConfig(doc=doc)
                # Experiments are explicit: no problem presets, every cell gets what the file says.
                config.values = {"seed": seed, "evaluate_center": evaluate_center, "preset": False}
                config.components = {"strategy": copy.deepcopy(components[label]),
                                     "problem": copy.deepcopy(problem_component),
                                     "executor": copy.deepcopy(executor)}
                config.sections = {"stop": dict(stops[problem_label]), **copy.deepcopy(sections)}
                resolved = resolve_run_config(config)
                run_dir = out_dir / "runs" / _safe(problem_label) / _safe(label) / f"seed-{seed}"
                cells.append(Cell(problem_label, label, seed, resolved, run_dir))
    return Experiment(name, path, out_dir, seeds, job_count, problems, labels, cells, skipped, report, smoke)


def _table(doc: ConfigDoc, data: dict[str, object], key: str) -> dict[str, Any]:
    table = data.get(key)
    if not isinstance(table, dict) or not table:
        raise ConfigError(f"{doc.where(key) if key in data else doc.path}: give at least one [{key}.<label>] table")
    return table


def _report(doc: ConfigDoc, table: object, labels: list[str]) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise ConfigError(f"{doc.where('report')}: report must be a table, got {table!r}")
    for key in table:
        if key not in _REPORT:
            raise UnknownNameError(f"{doc.where('report', key)}: unknown key {key!r} in [report]."
                                   f"{did_you_mean(key, _REPORT)} Known keys: {', '.join(_REPORT)}")
    reference = table.get("reference", labels[0])
    if reference not in labels:
        raise ConfigError(f"{doc.where('report', 'reference')}: reference {reference!r} is not a strategy of "
                          f"this experiment.{did_you_mean(str(reference), labels)} Strategies: {', '.join(labels)}")
    progress = table.get("progress", [0.25, 0.5, 0.75, 1.0])
    if not isinstance(progress, list) or not progress:
        raise ConfigError(f"{doc.where('report', 'progress')}: progress must be a list of fractions, got {progress!r}")
    progress = [_checked(doc.where("report", "progress"), check_float, "progress", p, positive=True, maximum=1.0)
                for p in progress]
    confidence = _checked(doc.where("report", "confidence"), check_float, "confidence",
                          table.get("confidence", 0.95), positive=True, below=1.0)
    resamples = _checked(doc.where("report", "resamples"), check_int, "resamples",
                         table.get("resamples", 10_000), minimum=100)
    plots = _checked(doc.where("report", "plots"), check_bool, "plots", table.get("plots", True))
    return {"reference": reference, "progress": progress, "confidence": confidence, "resamples": resamples,
            "plots": plots}


def plan_cells(experiment: Experiment, overwrite: bool = False) -> list[Cell]:
    """Decide what each run needs: skip (finished), new, resume (from a checkpoint) or restart."""
    from ..store.checkpoint import list_checkpoints

    conflicts, foreign = [], []
    for cell in experiment.cells:
        config_file = cell.run_dir / "config.toml"
        fault = replace_fault(cell.run_dir)
        if fault is not None:  # never replaced, whatever the flags
            foreign.append(f"{cell.run_dir}: {fault}")
            continue
        if not cell.run_dir.exists() or is_empty_for_a_run(cell.run_dir):
            cell.action = "new"
            continue
        existing = load_toml(config_file).data
        changes = config_changes(existing, cell.resolved)
        breaking = breaking_changes(existing, cell.resolved)
        has_checkpoint = bool(list_checkpoints(cell.run_dir / "checkpoints"))
        if breaking:
            if not overwrite:
                conflicts.append(f"{cell.run_dir}: {'; '.join(breaking)}")
            cell.action, cell.reason = "restart", "settings changed"
        elif not changes and is_finished(cell.run_dir):
            cell.action, cell.reason = "skip", "finished"
        elif has_checkpoint:
            cell.action, cell.reason = "resume", "budget or logging changed" if changes else "unfinished"
        else:
            cell.action, cell.reason = "restart", "no checkpoint"
    if foreign:
        shown = "\n  ".join(foreign[:5])
        more = f"\n  (and {len(foreign) - 5} more)" if len(foreign) > 5 else ""
        raise ConfigError(
            f"{len(foreign)} run director{'y' if len(foreign) == 1 else 'ies'} of experiment {experiment.name!r} "
            f"hold{'s' if len(foreign) == 1 else ''} something other than a blackbox run, which blackbox never "
            f"replaces:\n  {shown}{more}\n"
            f"move it away, or choose another --out"
        )
    if conflicts:
        shown = "\n  ".join(conflicts[:5])
        more = f"\n  (and {len(conflicts) - 5} more)" if len(conflicts) > 5 else ""
        raise ConfigError(
            f"{len(conflicts)} run director{'y' if len(conflicts) == 1 else 'ies'} of experiment "
            f"{experiment.name!r} hold runs with other settings than the experiment file now asks for:\n  "
            f"{shown}{more}\npass --overwrite to run them again, or choose another --out"
        )
    return [cell for cell in experiment.cells if cell.action != "skip"]


def execute_cell(resolved: ResolvedRun, run_dir: str, action: str,
                 callbacks: Sequence[Callback] = ()) -> RunSummary:
    """Run one cell (in this process or a worker); returns the run's summary."""
    warnings: list[str] = []
    if action == "resume":
        return resume_run(run_dir, config=resolved, warn=warnings.append, callbacks=callbacks)
    return start_run(resolved, run_dir, overwrite=action == "restart", callbacks=callbacks)


def run_experiment(experiment: Experiment, todo: Sequence[Cell], *,
                   on_done: Callable[[Cell, RunSummary | None, BaseException | None], None] | None = None,
                   callbacks_for: Callable[[Cell], Sequence[Callback]] | None = None) -> list[tuple[Cell, BaseException]]:
    """Run ``todo``: one after another here, or ``experiment.jobs`` at a time in worker processes.

    A run that fails is reported through ``on_done`` and listed in the returned failures; the
    others go on. KeyboardInterrupt stops everything (finished runs stay finished).
    """
    failures: list[tuple[Cell, BaseException]] = []
    if experiment.jobs <= 1 or len(todo) <= 1:
        for cell in todo:
            try:
                summary = execute_cell(cell.resolved, str(cell.run_dir), cell.action,
                                       callbacks_for(cell) if callbacks_for else ())
            except Exception as exc:  # noqa: BLE001 - one failed run does not stop the grid
                failures.append((cell, exc))
                if on_done:
                    on_done(cell, None, exc)
                continue
            if on_done:
                on_done(cell, summary, None)
        return failures
    from concurrent.futures import as_completed

    from loky import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=experiment.jobs) as pool:
        futures = {pool.submit(execute_cell, cell.resolved, str(cell.run_dir), cell.action): cell for cell in todo}
        try:
            for future in as_completed(futures):
                cell = futures[future]
                try:
                    summary = future.result()
                except Exception as exc:  # noqa: BLE001
                    failures.append((cell, exc))
                    if on_done:
                        on_done(cell, None, exc)
                    continue
                if on_done:
                    on_done(cell, summary, None)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return failures
