"""Checkpoints: a run's whole state in a folder written atomically, as ``.npz`` (no pickle) + JSON.

Layout, one folder per checkpoint in ``RUN/checkpoints/``::

    gen-000010/
        state.json   its own checksum first ("state_sha256"), then what the checkpoint is
                     (format, generation, score, stop reason, code fingerprint, resolved config)
                     and the state tree of the strategy, the problem and the run (counters, best
                     solution, stop conditions) with every array replaced by a reference
                     {"$array": "strategy/optimizer/m"}; the size and sha256 of arrays.npz
        arrays.npz   every array of the state tree under its path, and the records so far
                     ("records" values, "records_none" mask)

The folder is built under a temporary name, flushed to disk and renamed into place, so a reader
sees a whole checkpoint or none. The whole checkpoint is covered by checksums: ``state_sha256`` is
the sha256 of state.json's bytes with its own 64 digits read as zeros (every format version computes
it so), and state.json holds the sha256 of arrays.npz. Loading verifies both (a checkpoint of
blackbox 0.1.0, which wrote no ``state_sha256``, is recognized by its first bytes and has its
arrays.npz checked as before) and refuses pickled arrays; a bad checkpoint raises
:class:`CheckpointError` and :func:`latest_checkpoint` falls back to the previous good one. A
checkpoint of a newer format is not bad: :class:`CheckpointVersionError` says which blackbox to
upgrade to, and nothing falls back or is set aside. Nested dicts and lists of arrays, numpy scalars, Python numbers (big integers
too, as in RNG states), strings, booleans and None round-trip exactly (the codec is
:mod:`blackbox.store.tree`; the code fingerprint, :mod:`blackbox.store.fingerprint`).
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import stat
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._validate import check_state_layout
from ..core.executor import Executor
from ..core.problem import Problem
from ..core.strategy import Strategy
from ..driver.loop import Callback, Result, Run
from ..driver.record import RECORD_FIELDS, Record, RecordLog
from ..driver.stop import StopCondition
from ..errors import CheckpointError, CheckpointVersionError, ConfigError
from ..files import atomic_folder, describe_os_error, load_npz, npz_bytes, to_plain, write_synced
from .fingerprint import CodeFingerprint, code_changes, code_fingerprint, source_closure
from .integrity import (
    CHECKPOINT_NAME,
    CHECKSUM_KEY,
    TEMPORARY,
    checksum_holds,
    is_ours,
    is_v010,
    seal_state_json,
    set_aside,
)
from .tree import decode_tree, encode_tree

__all__ = [
    "Checkpoint", "Checkpointer", "save_checkpoint", "load_checkpoint", "latest_checkpoint",
    "list_checkpoints", "best_checkpoint", "prune_checkpoints", "restore_run", "encode_tree",
    "decode_tree", "code_fingerprint", "code_changes", "source_closure", "FORMAT", "FORMAT_VERSION",
    "seal_state_json", "set_aside", "is_ours",
]

FORMAT = "blackbox-checkpoint"
FORMAT_VERSION = 1
CHECKPOINTS = "checkpoints"
_NAME = CHECKPOINT_NAME
#: A state.json larger than this is refused unread (real ones are kilobytes: arrays live in arrays.npz).
MAX_STATE_JSON_BYTES = 64 * 2**20
# -- records -------------------------------------------------------------------------------------
def records_to_arrays(records: Sequence[Record]) -> dict[str, np.ndarray]:
    log = records if isinstance(records, RecordLog) else RecordLog(records)
    values, none = log.arrays()
    return {"records": values, "records_none": none, "record_fields": np.array(RECORD_FIELDS)}


def arrays_to_records(arrays: dict[str, np.ndarray]) -> RecordLog:
    names = [str(n) for n in arrays["record_fields"]]
    if names != RECORD_FIELDS:
        raise CheckpointError(f"the checkpoint's records have fields {names}, this version expects {RECORD_FIELDS}")
    values, none = arrays["records"], arrays["records_none"]
    if values.dtype.kind not in "biuf" or none.dtype.kind != "b":
        raise CheckpointError("the checkpoint's records are not numbers with a boolean mask")
    return RecordLog.from_arrays(values, none)


# -- writing -------------------------------------------------------------------------------------
def _score(records: Sequence[Record]) -> float:
    """A checkpoint's merit for "keep the best": the last center fitness, else the best member's."""
    if not records:
        return -math.inf
    last = records[-1]
    value = last.center if last.center is not None and not math.isnan(last.center) else last.best
    return -math.inf if value is None or math.isnan(value) else float(value)


def checkpoint_name(generation: int) -> str:
    return f"gen-{generation:06d}"


def save_checkpoint(
    directory: str | Path, run: Run, *, config: Mapping[str, object] | None = None,
    code: CodeFingerprint | None = None, stop_reason: str | None = None,
) -> Path:
    """Write the run's state as ``directory/gen-NNNNNN`` atomically; returns the folder.

    If the file system fails (a full disk, a read-only folder), nothing is left half-written and a
    :class:`CheckpointError` names the checkpoint, the cause and the previous checkpoint, which is
    untouched.
    """
    directory = Path(directory)
    generation = int(run.strategy.generation)
    arrays: dict[str, np.ndarray] = {}
    tree = encode_tree(
        {"strategy": run.strategy.state_dict(), "problem": run.problem.state_dict(), "run": run.state_dict()},
        arrays,
    )
    for key, value in records_to_arrays(run.records).items():
        arrays["records/" + key] = value
    payload = npz_bytes(arrays)
    meta = {
        CHECKSUM_KEY: "0" * 64,
        "format": FORMAT, "format_version": FORMAT_VERSION, "generation": generation,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "score": encode_tree(_score(run.records), {}),
        "stop_reason": stop_reason,
        "arrays": {"file": "arrays.npz", "bytes": len(payload), "sha256": hashlib.sha256(payload).hexdigest()},
        "code": code if code is not None else code_fingerprint(run.strategy, run.problem),
        "config": encode_tree(to_plain(config or {}), {}),
        "state": tree,
    }
    text = seal_state_json(json.dumps(meta, indent=1, allow_nan=False))
    final = directory / checkpoint_name(generation)
    if final.exists() and not is_ours(final):  # it would be replaced, with what else it holds
        raise CheckpointError(f"cannot write checkpoint {final.name}: {final} exists and holds files blackbox "
                              f"did not write; move them away")
    try:
        _write_folder(final, payload, text)
    except OSError as exc:
        if isinstance(exc, CheckpointError):
            raise
        previous = [path.name for _, path in list_checkpoints(directory) if path != final]
        kept = (f"the previous checkpoint {previous[-1]} is intact" if previous
                else "there is no earlier checkpoint")
        raise CheckpointError(
            f"could not write checkpoint {final.name} in {directory}: {describe_os_error(exc)}; {kept}"
        ) from exc
    return final


def _write_folder(final: Path, payload: bytes, text: bytes) -> None:
    """Write the checkpoint folder ``final`` (arrays.npz, then state.json) atomically."""

    def fill(folder: Path) -> None:
        write_synced(folder / "arrays.npz", payload)
        write_synced(folder / "state.json", text)

    atomic_folder(final, fill)


# -- reading -------------------------------------------------------------------------------------
@dataclass
class Checkpoint:
    """A loaded checkpoint: the state tree, the records so far, and what produced them."""

    path: Path
    generation: int
    state: dict[str, Any]
    records: RecordLog
    config: dict[str, Any]
    code: dict[str, object]
    stop_reason: str | None
    score: float
    created: str = ""
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def center(self) -> np.ndarray:
        """The strategy's center at this checkpoint (the policy to deploy)."""
        return np.asarray(self.state["strategy"]["center"], dtype=np.float64)

    @property
    def best_params(self) -> np.ndarray:
        """The best member seen up to this checkpoint."""
        return np.asarray(self.state["run"]["best_params"], dtype=np.float64)


def load_checkpoint(path: str | Path) -> Checkpoint:
    """Load and verify one checkpoint folder; CheckpointError says exactly what is wrong."""
    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(f"checkpoint {path} does not exist or is not a folder")
    meta_path, arrays_path = path / "state.json", path / "arrays.npz"
    for needed in (meta_path, arrays_path):
        if not needed.exists():
            raise CheckpointError(f"checkpoint {path} is incomplete: {needed.name} is missing")
        if not stat.S_ISREG(needed.stat().st_mode):  # a FIFO or a device would hang or never end
            raise CheckpointError(f"checkpoint {path}: {needed.name} is not a regular file")
    if meta_path.stat().st_size > MAX_STATE_JSON_BYTES:
        raise CheckpointError(f"checkpoint {path}: state.json is larger than {MAX_STATE_JSON_BYTES} bytes")
    raw = meta_path.read_bytes()
    try:
        meta = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise CheckpointError(f"checkpoint {path}: state.json is nested too deeply to be a checkpoint") from None
    except ValueError as exc:  # bad UTF-8 or JSON, or an integer of thousands of digits
        raise CheckpointError(f"checkpoint {path}: state.json is truncated or corrupt ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint {path}: state.json is not a blackbox checkpoint")
    intact = checksum_holds(raw, meta)
    _check_version(path, meta, intact)
    if intact is None and not is_v010(raw):
        raise CheckpointError(f"checkpoint {path}: state.json is corrupt (it has no {CHECKSUM_KEY}, and only "
                              f"the checkpoints of blackbox 0.1.0 have none)")
    if intact is False:
        raise CheckpointError(f"checkpoint {path}: state.json is corrupt (its sha256 differs from the "
                              f"{CHECKSUM_KEY} it records)")
    expected = meta.get("arrays", {})
    if not isinstance(expected, dict):
        raise CheckpointError(f"checkpoint {path} is corrupt: its arrays entry is not a table")
    size = arrays_path.stat().st_size
    if size != expected.get("bytes"):
        raise CheckpointError(
            f"checkpoint {path}: arrays.npz is truncated or corrupt ({size} bytes, expected {expected.get('bytes')})"
        )
    try:
        arrays = load_npz(arrays_path)
    except CheckpointError as exc:
        raise CheckpointError(f"checkpoint {path}: {exc}") from None
    digest = hashlib.sha256(arrays_path.read_bytes()).hexdigest()
    if digest != expected.get("sha256"):
        raise CheckpointError(f"checkpoint {path}: arrays.npz is corrupt (its sha256 differs from state.json's)")
    try:
        state = decode_tree(meta["state"], arrays)
        records = arrays_to_records({k[len("records/"):]: v for k, v in arrays.items() if k.startswith("records/")})
        generation = meta["generation"]
        config = decode_tree(meta.get("config", {}), {})
        if not isinstance(state, dict) or not isinstance(config, dict):
            raise TypeError("its state and config must be tables")
        _check_generation(path, generation, state)
        _check_last_record(state, records)
    except CheckpointError as exc:
        raise CheckpointError(f"checkpoint {path}: {exc}") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError, RecursionError) as exc:
        raise CheckpointError(f"checkpoint {path} is corrupt: {type(exc).__name__}: {exc}") from None
    code = meta.get("code", {})
    stop_reason = meta.get("stop_reason")
    return Checkpoint(
        path=path, generation=generation, state=state, records=records, config=config,
        code=code if isinstance(code, dict) else {},
        stop_reason=stop_reason if isinstance(stop_reason, str) else None,
        score=_decode_score(meta.get("score")), created=str(meta.get("created", "")),
    )


def _check_version(path: Path, meta: Mapping[str, object], intact: bool | None) -> None:
    """Refuse a format version that is not one (corrupt) or that is newer (not corrupt: upgrade)."""
    version = meta.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise CheckpointError(f"checkpoint {path} has format version {version!r}, which no blackbox writes: "
                              f"it is corrupt")
    if version <= FORMAT_VERSION:
        return
    said = f"checkpoint {path} has format version {version}; this blackbox reads versions up to {FORMAT_VERSION}"
    if intact is False:  # every format computes the checksum the same way: the version may be a flipped bit
        raise CheckpointError(f"{said}, but its {CHECKSUM_KEY} does not match its bytes: it is corrupt, not newer")
    code = meta.get("code")
    writer = code.get("blackbox") if isinstance(code, dict) else None
    target = (f"blackbox {writer} (which wrote it)" if isinstance(writer, str) and 0 < len(writer) <= 40
              else f"a blackbox that reads format version {version}")
    raise CheckpointVersionError(f"{said}: upgrade {target} to resume this run")


def _check_generation(path: Path, generation: object, state: Mapping[str, object]) -> int:
    """The generation state.json names: an integer >= 0, the strategy's own, and the folder's."""
    if isinstance(generation, bool) or not isinstance(generation, int) or generation < 0:
        raise ValueError(f"generation must be an integer >= 0, got {generation!r}")
    strategy = state.get("strategy")
    own = strategy.get("generation") if isinstance(strategy, dict) else None
    if own is not None and own != generation:
        raise ValueError(f"state.json names generation {generation} but holds the strategy of generation {own!r}")
    match = _NAME.match(path.name)
    if match and int(match.group(1)) != generation:
        raise ValueError(f"the folder {path.name} holds generation {generation}")
    return generation


def _check_last_record(state: Mapping[str, object], records: RecordLog) -> None:
    """The strategy's generation, sigma and update norm, and the run's evaluation and step counts, are
    those of the last record, which was taken right after the same update (a second copy in
    arrays.npz: it catches a flipped digit in a checkpoint of 0.1.0, whose state.json has no
    checksum, and a count changed by hand in one whose checksums were made again)."""
    strategy = state.get("strategy")
    if not records or not isinstance(strategy, dict):
        return
    last = records[-1]
    for key in ("generation", "sigma", "update_norm"):
        mine, recorded = strategy.get(key), getattr(last, key)
        if mine is None or recorded is None or isinstance(mine, (dict, list, str)):
            continue
        if not (mine == recorded or (mine != mine and recorded != recorded)):  # NaN equals NaN here
            raise ValueError(f"the strategy's {key} {mine!r} is not its last record's {recorded!r}")
    run = state.get("run")
    for key in ("evaluations", "steps"):  # the run's counters went into the last record as they were
        mine, recorded = run.get(key) if isinstance(run, dict) else None, getattr(last, key)
        # (a count out of range, negative or beyond 2^63, is refused later, naming the bound it breaks)
        if (isinstance(mine, (int, np.integer)) and not isinstance(mine, bool) and 0 <= mine < 2**63
                and mine != recorded):
            raise ValueError(f"the run's {key} count {mine!r} is not its last record's {recorded!r}")


def list_checkpoints(directory: str | Path) -> list[tuple[int, Path]]:
    """``(generation, folder)`` of every checkpoint in ``directory``, oldest first."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = []
    for entry in directory.iterdir():
        match = _NAME.match(entry.name)
        if match and entry.is_dir():
            found.append((int(match.group(1)), entry))
    return sorted(found)


def latest_checkpoint(
    directory: str | Path, warn: Callable[[str], None] | None = None, set_aside: bool = False,
) -> Checkpoint:
    """The newest checkpoint that loads; a bad one is reported through ``warn`` and skipped.

    With ``set_aside`` a bad checkpoint is renamed ``corrupt-gen-NNNNNN`` (see :func:`set_aside`) so
    that the continued run can write that generation again. A checkpoint of a newer format stops the
    search (:class:`CheckpointVersionError`): it is not bad, and nothing is set aside.
    """
    directory = Path(directory)
    problems = []
    for _, path in reversed(list_checkpoints(directory)):
        try:
            return load_checkpoint(path)
        except CheckpointVersionError:
            raise
        except CheckpointError as exc:
            note = f"{exc}; using the previous checkpoint"
            if set_aside:
                note += f" (the bad one is kept as {_set_aside(path).name})"
            problems.append(str(exc))
            if warn:
                warn(note)
    if problems:
        raise CheckpointError(f"no usable checkpoint in {directory}: " + "; ".join(problems))
    raise CheckpointError(f"no checkpoint in {directory}")


_set_aside = set_aside


def _decode_score(value: object) -> float:
    try:
        score = decode_tree(value, {})
        return -math.inf if score is None else float(score)
    except (TypeError, ValueError, CheckpointError, RecursionError):
        return -math.inf


def _read_score(path: Path) -> float:
    try:
        meta = json.loads((path / "state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return -math.inf
    return _decode_score(meta.get("score")) if isinstance(meta, dict) else -math.inf


def best_checkpoint(directory: str | Path) -> Path | None:
    """The folder of the highest-scoring checkpoint (the center's fitness), or None."""
    found = list_checkpoints(directory)
    if not found:
        return None
    return max(reversed(found), key=lambda item: _read_score(item[1]))[1]


def prune_checkpoints(directory: str | Path, keep: int) -> list[Path]:
    """Delete all but the newest ``keep`` checkpoints and the best one; returns what was deleted."""
    found = list_checkpoints(directory)
    if len(found) <= keep:
        return []
    kept = {path for _, path in found[-keep:]}
    best = best_checkpoint(directory)
    if best is not None:
        kept.add(best)
    removed = []
    for _, path in found:
        if path not in kept and is_ours(path):  # a folder holding other files is left alone
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def clean_temporary(directory: str | Path) -> None:
    """Remove half-written checkpoint folders left by a process that was killed while writing."""
    directory = Path(directory)
    if directory.is_dir():
        for entry in directory.iterdir():
            if TEMPORARY.match(entry.name) and is_ours(entry):
                shutil.rmtree(entry, ignore_errors=True)


def restore_run(checkpoint: Checkpoint, strategy: Strategy, problem: Problem, executor: Executor) -> Run:
    """A :class:`Run` continuing from ``checkpoint`` with freshly built components.

    A state that does not fit them (another strategy, arrays of other shapes, text where numbers
    belong: a corrupt or crafted state.json) raises ConfigError or CheckpointError naming the key,
    never an error from deep inside a component.
    """
    state = checkpoint.state
    try:
        if not isinstance(state, dict) or not all(isinstance(state.get(k), dict) for k in ("strategy", "run")):
            raise CheckpointError("its state has no strategy or run table")
        strategy.load_state_dict(state["strategy"])
        problem_state = state.get("problem") or {}
        check_state_layout(problem.state_dict(), problem_state, "problem state")
        problem.load_state_dict(problem_state)
        saved = state["run"]
        check_state_layout({"seed": 0, "evaluations": 0, "steps": 0, "elapsed": 0.0, "best_fitness": 0.0,
                            "best_params": strategy.center.copy()}, saved, "run state")
        run = Run(strategy, problem, executor, int(saved["seed"]), bool(saved.get("evaluate_center", True)))
        run.load_state_dict(saved)
    except (ConfigError, CheckpointError):
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError) as exc:
        raise CheckpointError(
            f"checkpoint {checkpoint.path} does not fit this run: {type(exc).__name__}: {exc}"
        ) from None
    run.records = RecordLog.from_arrays(*checkpoint.records.arrays())
    return run


def _stopping(run: Run, record: Record) -> str | None:
    """The reason the run stops after ``record`` if a stop condition fired (they ran before callbacks)."""
    for condition in run.stop:
        if isinstance(condition, StopCondition):
            reason = condition.satisfied(record)
            if reason:
                return reason
    return None


# -- the callback --------------------------------------------------------------------------------
class Checkpointer(Callback):
    """Checkpoint every ``every`` generations and at the end; keep the newest ``keep`` and the best.

    ``every=0`` checkpoints only at the end. The end-of-run checkpoint is written whenever the run
    stopped between generations (a stop condition, a callback, Ctrl-C outside a generation); a run
    interrupted in the middle of a generation keeps its previous checkpoint.
    """

    def __init__(self, directory: str | Path, every: int = 10, keep: int = 3,
                 config: Mapping[str, object] | None = None):
        self.directory = Path(directory)
        self.every = int(every)
        self.keep = int(keep)
        self.config = config
        self.code: CodeFingerprint | None = None
        # The newest checkpoints written, at most ``keep`` (older ones are pruned): a list of every one
        # grew by a path a checkpoint, for ever, on long runs.
        self.saved: deque[Path] = deque(maxlen=max(self.keep, 1))
        self._last: tuple[int, str | None] | None = None

    def on_start(self, run: Run) -> None:
        self.code = code_fingerprint(run.strategy, run.problem)
        clean_temporary(self.directory)

    def on_generation(self, run: Run, record: Record) -> None:
        stopping = _stopping(run, record)
        if stopping or (self.every and record.generation % self.every == 0):
            self.save(run, stopping)

    def on_end(self, run: Run, result: Result) -> None:
        if run.settled and run.records and self._last != (run.strategy.generation, result.stop_reason):
            self.save(run, result.stop_reason)

    def save(self, run: Run, stop_reason: str | None = None) -> Path:
        path = save_checkpoint(self.directory, run, config=self.config, code=self.code, stop_reason=stop_reason)
        self.saved.append(path)
        self._last = (run.strategy.generation, stop_reason)
        prune_checkpoints(self.directory, self.keep)
        return path
