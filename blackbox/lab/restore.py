"""Pick the checkpoint a resumed run continues from: the newest one that is intact and fits.

A checkpoint is skipped (set aside as ``corrupt-gen-NNNNNN``, with a warning) when its bytes are bad
(a checksum, a truncated file) and also when they are intact but the state they hold is not (a NaN
sigma, a garbled key, an optimizer with a negative step count): the previous checkpoint is then used,
the same way. Two cases stop the resume instead, setting nothing aside:

- a checkpoint in a newer format than this blackbox reads (upgrade blackbox to resume it);
- a state that does not fit because the config or the code changed since it was written (every
  older checkpoint would fail the same way, and none of them is damaged).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..config.run import ResolvedRun, breaking_changes, build_components
from ..core.executor import Executor
from ..core.problem import Problem
from ..core.strategy import Strategy
from ..driver.loop import Run
from ..errors import CheckpointError, CheckpointVersionError, ConfigError
from ..store.checkpoint import (
    Checkpoint,
    code_changes,
    code_fingerprint,
    list_checkpoints,
    load_checkpoint,
    restore_run,
    set_aside,
)

__all__ = ["restore_newest", "restore_from"]

#: A run's strategy, problem and executor, as ``build_components`` makes them.
Components = tuple[Strategy, Problem, Executor]


def _changes(restored: Checkpoint, resolved: ResolvedRun, components: Components, root: Path) -> list[str]:
    """The warnings about what changed since ``restored`` was written (config first, then code)."""
    notes = []
    breaking = breaking_changes(restored.config, resolved)
    if breaking:
        notes.append(f"the config of {root} changed since checkpoint {restored.path.name} in ways that make "
                     f"the continued run differ from an uninterrupted one: {'; '.join(breaking)}")
    changed_code = code_changes(restored.code, code_fingerprint(components[0], components[1]))
    if changed_code:
        notes.append(f"the code changed since checkpoint {restored.path.name} was written, so the continued run "
                     f"may differ from an uninterrupted one: {'; '.join(changed_code)}")
    return notes


def restore_from(path: str | Path, resolved: ResolvedRun, root: Path,
                 note: Callable[[str], None]) -> tuple[Checkpoint, Run, Components]:
    """Continue from the checkpoint ``path`` that the user named: no fallback, nothing set aside."""
    restored = load_checkpoint(path)
    components = build_components(resolved)
    try:
        for message in _changes(restored, resolved, components, root):
            note(message)
        run = restore_run(restored, *components)
    except (ConfigError, CheckpointError) as exc:
        components[2].close()
        raise type(exc)(f"cannot resume {root} from {restored.path.name}: {exc}") from None
    except BaseException:
        components[2].close()
        raise
    return restored, run, components


def _start_again(root: Path, config: Path) -> str:
    return (f"Start it again with `blackbox run --config {config} --out {root} --overwrite` (which keeps "
            f"the checkpoints set aside)")


def restore_newest(directory: Path, resolved: ResolvedRun, root: Path, config: Path,
                   note: Callable[[str], None]) -> tuple[Checkpoint, Run, Components]:
    """Continue from the newest checkpoint of ``directory`` that loads and fits (see the module doc)."""
    found = list_checkpoints(directory)
    if not found:
        raise CheckpointError(f"cannot resume {root}: no checkpoint in {directory}. {_start_again(root, config)}")
    problems: list[str] = []
    components: Components | None = None
    try:
        for _, path in reversed(found):
            try:
                restored = load_checkpoint(path)
            except CheckpointVersionError as exc:
                raise CheckpointVersionError(f"cannot resume {root}: {exc}") from None
            except CheckpointError as exc:
                problems.append(str(exc))
                note(_set_aside_note(path, str(exc)))
                continue
            if components is None:
                components = build_components(resolved)
            changes = _changes(restored, resolved, components, root)
            try:
                run = restore_run(restored, *components)
            except (ConfigError, CheckpointError) as exc:
                if changes:  # the state may well be intact: what it is restored into changed
                    for message in changes:
                        note(message)
                    raise type(exc)(f"cannot resume {root} from {restored.path.name}: {exc}") from None
                components[2].close()
                components = None  # the failed load may have changed them: build them again
                problem = f"checkpoint {path} holds a state that is not valid: {exc}"
                problems.append(problem)
                note(_set_aside_note(path, problem))
                continue
            for message in changes:
                note(message)
            return restored, run, components
    except BaseException:
        if components is not None:
            components[2].close()
        raise
    raise CheckpointError(f"cannot resume {root}: no usable checkpoint in {directory}: {'; '.join(problems)}. "
                          f"{_start_again(root, config)}")


def _set_aside_note(path: Path, problem: str) -> str:
    kept = set_aside(path)
    return f"{problem}; using the previous checkpoint (the bad one is kept as {kept.name})"
