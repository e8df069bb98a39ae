"""Run directories: start a run from a resolved config, or resume one from its latest checkpoint.

``blackbox run``, ``blackbox resume`` and ``blackbox compare`` are thin layers on
:func:`start_run` and :func:`resume_run`. A run directory holds::

    config.toml     the fully resolved config (``blackbox run --config RUN/config.toml`` repeats it)
    records.csv     one row per generation (records.jsonl: the same as JSON lines)
    result.json     the summary, written when the run ends (``finished``: a budget or goal was met)
    solution.npz    final center, best parameters and best fitness, and the problem's state
                    (observation statistics) under problem/<name> (numpy, no pickle)
    curve.png       the learning curve (with matplotlib installed)
    checkpoints/    gen-NNNNNN/ folders (see blackbox.store.checkpoint)
    tensorboard/    event files, with --tensorboard
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from ..config.run import (
    ResolvedRun,
    RunConfig,
    build_components,
    config_changes,
    load_toml,
    read_run_config,
    resolve_run_config,
    resolved_run,
)
from ..driver.logs import CSVRecords, JSONLRecords, rewrite_records
from ..driver.loop import Callback, Run, optimize
from ..driver.stop import ConfirmGoal, GoalCheck, StopCondition
from ..errors import BlackboxError, CheckpointError, ConfigError, StorageError
from ..files import ensure_folder, flat_leaves, read_regular_file, save_npz, write_json, write_toml
from ..store.checkpoint import Checkpointer
from ..store.lock import RunLock
from .plots import have_matplotlib, plot_run
from .restore import Components, restore_from, restore_newest
from .run_dir import (
    RUN_DIRS,
    RUN_FILES,
    clear_run,
    is_empty_for_a_run,
    replace_fault,
    set_aside_entries,
)

if TYPE_CHECKING:
    from rich.console import Console

    from ..core.executor import Executor
    from ..driver.record import Record

__all__ = ["RunPaths", "RunSummary", "ResumeWarning", "start_run", "resume_run", "check_out_dir", "read_result", "is_finished"]

_RUN_FILES = RUN_FILES
_RUN_DIRS = RUN_DIRS


class RunSummary(TypedDict, total=False):
    """What :func:`start_run` and :func:`resume_run` return and write as ``result.json``.

    A run that failed or was interrupted has only the first six keys and ``finished``/``stop_reason``;
    ``goal_check``, ``notes`` and ``warnings`` are there when they have something to say.
    """

    run_dir: str
    strategy: str
    problem: str
    problem_label: str
    seed: int
    resumed_from: int | None
    generations: int
    evaluations: int
    steps: int
    wall_time: float
    best_fitness: float
    center_fitness: float | None
    stop_reason: str | None
    finished: bool
    curve: str | None
    checkpoint: str | None
    problem_description: dict[str, object]
    goal_check: GoalCheck
    notes: list[str]
    warnings: list[str]


class ResumeWarning(UserWarning):
    """A resumed run may not match an uninterrupted one (changed config or code), or a checkpoint was bad."""


@dataclass(frozen=True)
class RunPaths:
    """The files of a run directory."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    config = property(lambda self: self.root / "config.toml")
    records_csv = property(lambda self: self.root / "records.csv")
    records_jsonl = property(lambda self: self.root / "records.jsonl")
    result = property(lambda self: self.root / "result.json")
    solution = property(lambda self: self.root / "solution.npz")
    curve = property(lambda self: self.root / "curve.png")
    checkpoints = property(lambda self: self.root / "checkpoints")
    tensorboard = property(lambda self: self.root / "tensorboard")


def read_result(run_dir: str | Path) -> dict[str, object] | None:
    """The run's result.json, or None if the run has not ended (or the file is unreadable)."""
    import json

    path = RunPaths(Path(run_dir)).result
    try:
        result = json.loads(read_regular_file(path).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return result if isinstance(result, dict) else None


def is_finished(run_dir: str | Path) -> bool:
    """True when the run ended because a budget or its goal was met (not interrupted, not failed)."""
    result = read_result(run_dir)
    return bool(result and result.get("finished"))


def run_changes(path: Path, resolved: ResolvedRun) -> list[tuple[str, object, object]]:
    """How the run whose config.toml is ``path`` differs from ``resolved``: the differences that make it
    another run (what is logged, checkpointed or which executor runs it do not)."""
    existing = load_toml(path).data
    return [c for c in config_changes(existing, resolved) if c[0].split(".")[0] not in ("log", "checkpoint", "executor")]


def _refuse_unless_replaceable(out: Path, resolved: ResolvedRun | None, overwrite: bool) -> None:
    """The checks of :func:`check_out_dir`; deletes nothing."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out} exists and is not a directory; choose another --out")
    fault = replace_fault(out)
    if fault is not None:
        flag = " (--overwrite replaces only a blackbox run, and only what blackbox wrote)" if overwrite else ""
        if not RunPaths(out).config.exists():
            raise ConfigError(f"{out} exists and is not a blackbox run directory; choose another --out{flag}")
        raise ConfigError(f"{out} cannot hold this run: {fault}; choose another --out or move those away{flag}")
    if not out.exists() or is_empty_for_a_run(out):
        return
    paths = RunPaths(out)
    if not overwrite:
        changes = run_changes(paths.config, resolved) if resolved is not None else []
        if changes:
            shown = "; ".join(f"{k}: {a!r} there, {b!r} now" for k, a, b in changes[:5])
            more = f" (and {len(changes) - 5} more)" if len(changes) > 5 else ""
            raise ConfigError(
                f"{out} already holds a different run ({shown}{more}); pass --overwrite to replace it "
                f"or choose another --out"
            )
        hint = "" if is_finished(out) else f", or continue it with `blackbox resume {out}`"
        raise ConfigError(
            f"{out} already holds a run; pass --overwrite to replace it, choose another --out{hint}"
        )


def check_out_dir(out: Path, resolved: ResolvedRun | None, overwrite: bool) -> Path:
    """Refuse a directory that holds another run unless ``overwrite``, and anything else always.

    With ``overwrite``, a blackbox run there is cleared (under its lock: a live run is refused), of
    what blackbox wrote only: the checkpoints set aside as unreadable stay (see
    :mod:`blackbox.lab.run_dir`).
    """
    out = Path(out)
    _refuse_unless_replaceable(out, resolved, overwrite)
    if overwrite and out.is_dir():
        with RunLock(out):
            _refuse_unless_replaceable(out, resolved, overwrite)
            clear_run(out)
    return ensure_folder(out, "run directory")


def _claim(out: Path, resolved: ResolvedRun, overwrite: bool, notes: list[str]) -> RunLock:
    """Check ``out``, lock it and clear what an earlier run left there (with ``overwrite``)."""
    _refuse_unless_replaceable(out, resolved, overwrite)
    lock = RunLock(out).acquire()
    try:
        _refuse_unless_replaceable(out, resolved, overwrite)  # again, now that no one else writes here
        clear_run(out)
        kept = set_aside_entries(out)
        if kept:
            notes.append(f"kept the checkpoints set aside by an earlier resume: {', '.join(kept)}")
    except BaseException:
        lock.release()
        raise
    return lock


def _intro(resolved: ResolvedRun, paths: RunPaths, run: Run | None, executor: Executor) -> str:
    """The line printed as a run starts: what, on how many workers, where."""
    workers = int(getattr(executor, "workers", 1))
    start = (f"resuming {resolved.strategy.name} on {resolved.label()} from generation {run.strategy.generation}"
             if run is not None else f"starting {resolved.strategy.name} on {resolved.label()}")
    return (f"{start} (seed {resolved.seed}), {getattr(executor, 'name', '') or type(executor).__name__} executor "
            f"with {workers} worker{'s' if workers != 1 else ''}, in {paths.root}")


def _callbacks(resolved: ResolvedRun, paths: RunPaths, run: Run | None, show_progress: bool,
               console: Console | None, intro: str | None = None) -> list[Callback]:
    resumed = run is not None
    callbacks: list[Callback] = [
        CSVRecords(paths.records_csv, append=resumed),
        JSONLRecords(paths.records_jsonl, append=resumed),
        Checkpointer(paths.checkpoints, resolved.checkpoint.every, resolved.checkpoint.keep,
                     config=resolved.to_dict()),
    ]
    if resolved.log.tensorboard:
        from ..driver.logs import TensorBoardLog

        last = run.records[-1] if run is not None and run.records else None
        callbacks.append(TensorBoardLog(paths.tensorboard, resume_from=last))
    if show_progress:
        from ..driver.progress import ProgressDisplay

        callbacks.append(ProgressDisplay(resolved.stop.budget(), console=console, intro=intro))
    return callbacks


def _execute(resolved: ResolvedRun, paths: RunPaths, components: Components, run: Run | None,
             show_progress: bool, console: Console | None, callbacks: Sequence[Callback],
             notes: list[str]) -> RunSummary:
    strategy, problem, executor = components
    conditions = resolved.stop.conditions()
    intro = _intro(resolved, paths, run, executor) if show_progress else None
    hooks = _callbacks(resolved, paths, run, show_progress, console, intro) + list(callbacks)
    paths.result.unlink(missing_ok=True)
    resumed_from = run.strategy.generation if run is not None else None
    summary: RunSummary = {
        "run_dir": str(paths.root), "strategy": resolved.strategy.name,
        "problem": resolved.problem.name, "problem_label": resolved.label(),
        "seed": resolved.seed, "resumed_from": resumed_from,
    }
    try:
        result = optimize(strategy, problem, executor, stop=conditions, seed=resolved.seed,
                          evaluate_center=resolved.evaluate_center, pipelined=resolved.pipelined,
                          callbacks=hooks, run=run)
    except BaseException as exc:
        reason = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"error: {type(exc).__name__}: {exc}"
        try:
            write_json(paths.result, {**summary, "finished": False, "stop_reason": reason})
        except StorageError:
            pass  # a full disk: the error being raised says more than a missing result.json
        if isinstance(exc, (StorageError, CheckpointError)):
            raise _resume_hint(exc, paths) from exc
        raise
    finally:
        executor.close()
    last = result.records[-1] if result.records else None
    finished = last is not None and (any(c.satisfied(last) for c in conditions if isinstance(c, StopCondition))
                                     or bool(result.strategy is not None and result.strategy.stop_reason()))
    # the problem's state as npz entries; a list stays one entry (an array), as in 0.1.0's solution.npz
    save_npz(paths.solution, {"center": result.center, "best_params": result.best_params,
                              "best_fitness": result.best_fitness,
                              **flat_leaves(problem.state_dict(), "problem", sequences=False)})
    hint = _startup_hint(result.records if run is None else [], executor)
    if hint:
        notes.append(hint)
    curve = None
    if resolved.log.plot:
        if have_matplotlib():
            title = f"{resolved.strategy.name} on {resolved.label()} (seed {resolved.seed})"
            curve = str(plot_run(result.records, paths.curve, title))
        else:
            notes.append("no curve.png: matplotlib is not installed (pip install 'blackbox-es[plot]')")
    summary.update({
        "generations": result.generations, "evaluations": result.evaluations, "steps": result.steps,
        "wall_time": result.wall_time, "best_fitness": result.best_fitness,
        "center_fitness": result.center_fitness, "stop_reason": result.stop_reason, "finished": finished,
        "curve": curve, "checkpoint": str(_last_checkpoint(paths)) if _last_checkpoint(paths) else None,
        "problem_description": problem.describe(),
    })
    confirms = [c for c in conditions if isinstance(c, ConfirmGoal)]
    if confirms:
        summary["goal_check"] = confirms[0].summary()
    if notes:
        summary["notes"] = list(notes)
    write_json(paths.result, summary)
    return summary


def _startup_hint(records: Sequence[Record], executor: Executor) -> str | None:
    """Why a parallel run of a quick problem was slow: its first generation, which starts the workers
    (a process each, importing numpy, blackbox and the problem), took most of the time. None otherwise."""
    workers = int(getattr(executor, "workers", 1))
    if workers < 2 or getattr(executor, "in_process", False) or len(records) < 2:
        return None
    first, total = records[0].generation_time, sum(r.generation_time for r in records)
    rest = (total - first) / (len(records) - 1)
    if first < 0.2 or first < 0.5 * total or first < 10 * rest:
        return None
    return (f"the first generation took {first:.2f} s of the {total:.2f} s inside generations, the others "
            f"{rest * 1000:.0f} ms each on average: most of it was starting {workers} {executor.name} workers; "
            f"on a problem this quick, --executor serial is faster")


def _resume_hint(exc: StorageError | CheckpointError, paths: RunPaths) -> BlackboxError:
    """The same error, saying which checkpoint is left and how to continue from it."""
    message = str(exc)
    if "is intact" not in message:
        last = _last_checkpoint(paths)
        message += (f"; the last checkpoint {last.name} is intact" if last is not None
                    else "; no checkpoint was written yet")
    return type(exc)(f"{message}. Once the cause is fixed, continue with `blackbox resume {paths.root}`")


def _last_checkpoint(paths: RunPaths) -> Path | None:
    from ..store.checkpoint import list_checkpoints

    found = list_checkpoints(paths.checkpoints)
    return found[-1][1] if found else None


def start_run(resolved: ResolvedRun | dict[str, Any], out: str | Path, *, overwrite: bool = False,
              show_progress: bool = False, console: Console | None = None,
              callbacks: Sequence[Callback] = ()) -> RunSummary:
    """Run ``resolved`` (from :func:`resolve_run_config`, or a config table) into ``out``; the summary."""
    if not isinstance(resolved, ResolvedRun):  # a config table: resolved here
        resolved = resolved_run(resolved)
    components = build_components(resolved)
    notes: list[str] = []
    try:
        lock = _claim(Path(out), resolved, overwrite, notes)
    except BaseException:
        components[2].close()
        raise
    try:
        if lock.taken_over is not None:
            notes.insert(0, _taken_over(lock))
        paths = RunPaths(lock.directory)
        try:
            write_toml(paths.config, resolved.to_dict())
        except BaseException:
            components[2].close()
            raise
        return _execute(resolved, paths, components, None, show_progress, console, callbacks, notes)
    finally:
        lock.release()


def _taken_over(lock: RunLock) -> str:
    assert lock.taken_over is not None
    return f"took over the lock left by {lock.taken_over.describe()}, which is no longer running"


def _warn(message: str) -> None:
    warnings.warn(message, ResumeWarning, stacklevel=3)


def resume_run(run_dir: str | Path, *, change: Callable[[RunConfig], None] | None = None,
               config: ResolvedRun | dict[str, Any] | None = None, checkpoint: str | Path | None = None,
               show_progress: bool = False, console: Console | None = None, warn: Callable[[str], None] = _warn,
               callbacks: Sequence[Callback] = ()) -> RunSummary:
    """Continue the run in ``run_dir`` from its newest good checkpoint (or ``checkpoint``).

    ``change`` may edit the run's config first (a larger budget, another executor, logging);
    ``config`` replaces it with a resolved config outright (what ``blackbox compare`` does).
    The record files are rewritten to the checkpoint's generation, so the finished directory
    holds the same records as a run that was never interrupted. Changes to the config or the
    code that break that exactness are reported through ``warn``.
    """
    paths = RunPaths(Path(run_dir))
    if not paths.config.exists():
        raise ConfigError(f"{paths.root} is not a blackbox run directory (it has no config.toml)")
    with RunLock(paths.root) as lock:  # before reading anything: a live run may be writing it
        emitted: list[str] = []

        def note(message: str) -> None:
            emitted.append(message)
            warn(message)

        notes = [] if lock.taken_over is None else [_taken_over(lock)]
        if config is not None:
            resolved = resolved_run(config)
        else:
            run_config = read_run_config(load_toml(paths.config))
            if change is not None:
                change(run_config)
            resolved = resolve_run_config(run_config)
        if checkpoint is not None:
            _, run, components = restore_from(checkpoint, resolved, paths.root, note)
        else:
            _, run, components = restore_newest(paths.checkpoints, resolved, paths.root, paths.config, note)
        try:
            rewrite_records(paths.records_csv, paths.records_jsonl, run.records)
            write_toml(paths.config, resolved.to_dict())
        except BaseException:
            components[2].close()
            raise
        summary = _execute(resolved, paths, components, run, show_progress, console, callbacks, notes)
        if emitted:
            summary["warnings"] = emitted
            write_json(paths.result, summary)
        return summary


def describe_summary(summary: RunSummary, command_time: float | None = None) -> str:
    """A few lines for people: what the run reached, why it stopped, its cost, where it is saved.

    "best ever" is the best fitness of any row scored in the run (the center's included); the
    progress line's "best" is the best member of one generation. The time inside generations
    (``wall_time`` of result.json, summed over sessions of a resumed run) leaves out building the
    problem, checkpoints, records and plots; ``command_time`` is this command's wall time.
    """
    center = summary.get("center_fitness")
    center_text = "-" if center is None or (isinstance(center, float) and math.isnan(center)) else f"{center:.6g}"
    resumed = ""
    if summary.get("resumed_from") is not None:
        resumed = (" (already finished)" if summary["resumed_from"] == summary["generations"]
                   else f" (resumed at generation {summary['resumed_from']})")
    what = summary.get("problem_label") or summary["problem"]
    steps = f", {summary['steps']:,} environment steps" if summary.get("steps") else ""
    times = f"time: {summary['wall_time']:.2f} s inside generations"
    if command_time is not None:
        times += f", {command_time:.2f} s wall time of this command"
    return (f"{summary['strategy']} on {what} after {summary['generations']} generations: center fitness "
            f"{center_text}, best ever {summary['best_fitness']:.6g}\n"
            f"stopped: {summary['stop_reason']}{resumed}\n"
            f"{summary['evaluations']:,} evaluations{steps}\n{times}\n"
            f"run saved in {summary['run_dir']}")


def default_out(resolved: ResolvedRun) -> Path:
    """``runs/<strategy>-<problem>-<time>``, with a suffix if that exists already."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = Path("runs") / f"{resolved.strategy.name}-{resolved.problem.name}-{stamp}"
    out, n = base, 1
    while out.exists():
        n += 1
        out = base.with_name(f"{base.name}-{n}")
    return out
