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
import shutil
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config.run import (
    ResolvedRun,
    RunConfig,
    breaking_changes,
    build_components,
    config_changes,
    load_toml,
    read_run_config,
    resolve_run_config,
    resolved_run,
)
from ..driver.logs import CSVRecords, JSONLRecords, rewrite_records
from ..driver.loop import Callback, Run, optimize
from ..driver.stop import ConfirmGoal
from ..errors import BlackboxError, CheckpointError, ConfigError, StorageError
from ..files import save_npz, write_json, write_toml
from ..store.checkpoint import (
    Checkpointer,
    code_changes,
    code_fingerprint,
    latest_checkpoint,
    load_checkpoint,
    restore_run,
)
from .plots import have_matplotlib, plot_run

__all__ = ["RunPaths", "ResumeWarning", "start_run", "resume_run", "check_out_dir", "read_result", "is_finished"]

_RUN_FILES = ("config.toml", "records.csv", "records.jsonl", "result.json", "solution.npz", "curve.png")
_RUN_DIRS = ("checkpoints", "tensorboard")


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


def read_result(run_dir: str | Path) -> dict[str, Any] | None:
    """The run's result.json, or None if the run has not ended (or the file is unreadable)."""
    import json

    path = RunPaths(run_dir).result
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def is_finished(run_dir: str | Path) -> bool:
    """True when the run ended because a budget or its goal was met (not interrupted, not failed)."""
    result = read_result(run_dir)
    return bool(result and result.get("finished"))


def _run_changes(path: Path, resolved: ResolvedRun) -> list[tuple[str, Any, Any]]:
    """Differences that make it another run (what is logged, checkpointed or which executor runs it do not)."""
    existing = load_toml(path).data
    return [c for c in config_changes(existing, resolved) if c[0].split(".")[0] not in ("log", "checkpoint", "executor")]


def check_out_dir(out: Path, resolved: ResolvedRun | None, overwrite: bool) -> Path:
    """Refuse a directory that holds another run (or anything else) unless ``overwrite``."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out} exists and is not a directory; choose another --out")
    if out.exists() and any(out.iterdir()):
        paths = RunPaths(out)
        if not paths.config.exists() and not overwrite:
            raise ConfigError(f"{out} exists and is not a blackbox run directory; choose another --out")
        if not overwrite:
            changes = _run_changes(paths.config, resolved) if resolved is not None else []
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
        for name in _RUN_FILES:
            (out / name).unlink(missing_ok=True)
        for name in _RUN_DIRS:
            shutil.rmtree(out / name, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    return out


def _callbacks(resolved: ResolvedRun, paths: RunPaths, run: Run | None, show_progress: bool,
               console: Any) -> list[Callback]:
    resumed = run is not None
    callbacks: list[Callback] = [
        CSVRecords(paths.records_csv, append=resumed),
        JSONLRecords(paths.records_jsonl, append=resumed),
        Checkpointer(paths.checkpoints, resolved.checkpoint.every, resolved.checkpoint.keep,
                     config=resolved.to_dict()),
    ]
    if resolved.log.tensorboard:
        from ..driver.logs import TensorBoardLog

        last = run.records[-1] if resumed and run.records else None
        callbacks.append(TensorBoardLog(paths.tensorboard, resume_from=last))
    if show_progress:
        from ..driver.progress import ProgressDisplay

        callbacks.append(ProgressDisplay(resolved.stop.budget(), console=console))
    return callbacks


def _execute(resolved: ResolvedRun, paths: RunPaths, components: tuple[Any, Any, Any], run: Run | None,
             show_progress: bool, console: Any, callbacks: Sequence[Callback], notes: list[str]) -> dict[str, Any]:
    strategy, problem, executor = components
    conditions = resolved.stop.conditions()
    hooks = _callbacks(resolved, paths, run, show_progress, console) + list(callbacks)
    paths.result.unlink(missing_ok=True)
    resumed_from = run.strategy.generation if run is not None else None
    summary: dict[str, Any] = {
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
    finished = last is not None and (any(c.satisfied(last) for c in conditions)
                                     or bool(result.strategy is not None and result.strategy.stop_reason()))
    save_npz(paths.solution, {"center": result.center, "best_params": result.best_params,
                              "best_fitness": result.best_fitness, **_flat("problem", problem.state_dict())})
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


def _resume_hint(exc: StorageError | CheckpointError, paths: RunPaths) -> BlackboxError:
    """The same error, saying which checkpoint is left and how to continue from it."""
    message = str(exc)
    if "is intact" not in message:
        last = _last_checkpoint(paths)
        message += (f"; the last checkpoint {last.name} is intact" if last is not None
                    else "; no checkpoint was written yet")
    return type(exc)(f"{message}. Once the cause is fixed, continue with `blackbox resume {paths.root}`")


def _flat(prefix: str, tree: Any) -> dict[str, Any]:
    """``{"problem/obs_mean": array, ...}``: a state tree as npz entries (numbers as 0-d arrays)."""
    if isinstance(tree, dict):
        out: dict[str, Any] = {}
        for key, value in tree.items():
            out.update(_flat(f"{prefix}/{key}", value))
        return out
    if tree is None or isinstance(tree, str):
        return {}
    return {prefix: tree}


def _last_checkpoint(paths: RunPaths) -> Path | None:
    from ..store.checkpoint import list_checkpoints

    found = list_checkpoints(paths.checkpoints)
    return found[-1][1] if found else None


def start_run(resolved: ResolvedRun | dict[str, Any], out: str | Path, *, overwrite: bool = False,
              show_progress: bool = False, console: Any = None,
              callbacks: Sequence[Callback] = ()) -> dict[str, Any]:
    """Run ``resolved`` (from :func:`resolve_run_config`, or a config table) into ``out``; the summary."""
    resolved = resolved_run(resolved)
    components = build_components(resolved)
    try:
        paths = RunPaths(check_out_dir(Path(out), resolved, overwrite))
        write_toml(paths.config, resolved.to_dict())
    except BaseException:
        components[2].close()
        raise
    return _execute(resolved, paths, components, None, show_progress, console, callbacks, [])


def _warn(message: str) -> None:
    warnings.warn(message, ResumeWarning, stacklevel=3)


def resume_run(run_dir: str | Path, *, change: Callable[[RunConfig], None] | None = None,
               config: ResolvedRun | dict[str, Any] | None = None, checkpoint: str | Path | None = None,
               show_progress: bool = False, console: Any = None, warn: Callable[[str], None] = _warn,
               callbacks: Sequence[Callback] = ()) -> dict[str, Any]:
    """Continue the run in ``run_dir`` from its newest good checkpoint (or ``checkpoint``).

    ``change`` may edit the run's config first (a larger budget, another executor, logging);
    ``config`` replaces it with a resolved config outright (what ``blackbox compare`` does).
    The record files are rewritten to the checkpoint's generation, so the finished directory
    holds the same records as a run that was never interrupted. Changes to the config or the
    code that break that exactness are reported through ``warn``.
    """
    paths = RunPaths(run_dir)
    if not paths.config.exists():
        raise ConfigError(f"{paths.root} is not a blackbox run directory (it has no config.toml)")
    if config is not None:
        resolved = resolved_run(config)
    else:
        run_config = read_run_config(load_toml(paths.config))
        if change is not None:
            change(run_config)
        resolved = resolve_run_config(run_config)
    emitted: list[str] = []

    def note(message: str) -> None:
        emitted.append(message)
        warn(message)

    if checkpoint is not None:
        restored = load_checkpoint(checkpoint)
    else:
        try:
            restored = latest_checkpoint(paths.checkpoints, warn=note, set_aside=True)
        except CheckpointError as exc:
            raise CheckpointError(
                f"cannot resume {paths.root}: {exc}. Start it again with `blackbox run --config "
                f"{paths.config} --out {paths.root} --overwrite`"
            ) from None
    breaking = breaking_changes(restored.config, resolved)
    if breaking:
        note(f"the config of {paths.root} changed since checkpoint {restored.path.name} in ways that make "
             f"the continued run differ from an uninterrupted one: {'; '.join(breaking)}")
    components = build_components(resolved)
    strategy, problem, executor = components
    changed_code = code_changes(restored.code, code_fingerprint(strategy, problem))
    if changed_code:
        note(f"the code changed since checkpoint {restored.path.name} was written, so the continued run may "
             f"differ from an uninterrupted one: {'; '.join(changed_code)}")
    try:
        run = restore_run(restored, strategy, problem, executor)
    except (ConfigError, CheckpointError) as exc:
        executor.close()
        raise type(exc)(f"cannot resume {paths.root} from {restored.path.name}: {exc}") from None
    rewrite_records(paths.records_csv, paths.records_jsonl, run.records)
    write_toml(paths.config, resolved.to_dict())
    summary = _execute(resolved, paths, components, run, show_progress, console, callbacks, [])
    if emitted:
        summary["warnings"] = emitted
        write_json(paths.result, summary)
    return summary


def describe_summary(summary: dict[str, Any]) -> str:
    """One paragraph for people: what the run reached and where it is saved."""
    center = summary.get("center_fitness")
    center_text = "-" if center is None or (isinstance(center, float) and math.isnan(center)) else f"{center:.6g}"
    resumed = ""
    if summary.get("resumed_from") is not None:
        resumed = (", already finished" if summary["resumed_from"] == summary["generations"]
                   else f", resumed at generation {summary['resumed_from']}")
    what = summary.get("problem_label") or summary["problem"]
    return (f"{summary['strategy']} on {what}: center fitness {center_text}, best "
            f"{summary['best_fitness']:.6g} after {summary['generations']} generations, "
            f"{summary['evaluations']} evaluations, {summary['steps']} steps, {summary['wall_time']:.2f} s "
            f"({summary['stop_reason']}{resumed})\nrun saved in {summary['run_dir']}")


def default_out(resolved: ResolvedRun) -> Path:
    """``runs/<strategy>-<problem>-<time>``, with a suffix if that exists already."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = Path("runs") / f"{resolved.strategy.name}-{resolved.problem.name}-{stamp}"
    out, n = base, 1
    while out.exists():
        n += 1
        out = base.with_name(f"{base.name}-{n}")
    return out
