"""Writers of per-generation records: CSV and JSON Lines (flushed every generation) and TensorBoard
event files, with the readers of the first two. The fields are :mod:`blackbox.driver.record`'s."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Protocol

from ..errors import ConfigError, StateError, StorageError
from ..files import atomic_write, describe_os_error, read_regular_file
from .loop import Callback, Result, Run
from .record import FIELD_GROUPS, INT_FIELDS, RECORD_FIELDS, Record

#: The largest record file read back (about three million generations of CSV).
MAX_RECORDS_BYTES = 2**30

__all__ = [
    "CSVRecords", "JSONLRecords", "RECORD_FIELDS", "read_csv_records", "read_jsonl_records", "csv_row",
    "json_line", "rewrite_records", "TensorBoardLog", "summary_writer_class",
]


def _jsonable(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def csv_row(record: Record) -> dict[str, object]:
    """A record as CSV cells: floats by ``repr`` (round-trips exactly), None as an empty cell."""
    return {k: ("" if v is None else repr(v) if isinstance(v, float) else v) for k, v in record.as_dict().items()}


def json_line(record: Record) -> str:
    """A record as one line of JSON (non-finite numbers as null / "inf" / "-inf")."""
    return json.dumps({k: _jsonable(v) for k, v in record.as_dict().items()})


def rewrite_records(csv_path: str | Path, jsonl_path: str | Path | None, records: Sequence[Record]) -> None:
    """Replace both record files by exactly ``records`` (atomically): a resumed run starts here."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=RECORD_FIELDS)
    writer.writeheader()
    for record in records:
        writer.writerow(csv_row(record))
    data = buffer.getvalue().encode("utf-8")
    atomic_write(csv_path, lambda handle: handle.write(data))
    if jsonl_path is not None:
        lines = "".join(json_line(r) + "\n" for r in records).encode("utf-8")
        atomic_write(jsonl_path, lambda handle: handle.write(lines))


class _FileRecords(Callback):
    """An append-only record file, flushed every generation. A failing write (a full disk) is a
    :class:`StorageError` naming the file; the run's checkpoints are what a resume starts from, and
    a resume rewrites this file from them."""

    def __init__(self, path: str | Path, append: bool = False):
        self.path = Path(path)
        self.append = append
        self._file: IO[str] | None = None
        self._failed = False

    def _storage_error(self, exc: OSError) -> StorageError:
        self._failed = True
        return StorageError(f"could not write {self.path}: {describe_os_error(exc)}")

    def on_start(self, run: Run) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fresh = not (self.append and self.path.exists() and self.path.stat().st_size > 0)
            self._file = open(self.path, "a" if not fresh else "w", newline="", encoding="utf-8")
            self._begin(self._file, fresh)
        except OSError as exc:
            raise self._storage_error(exc) from exc

    def _begin(self, file: IO[str], fresh: bool) -> None:
        """Write a header if the format has one."""

    def on_generation(self, run: Run, record: Record) -> None:
        if self._file is None:
            raise StateError(f"{type(self).__name__} writes {self.path} between on_start() and on_end() only")
        try:
            self._write(self._file, record)
            self._file.flush()
        except OSError as exc:
            raise self._storage_error(exc) from exc

    def _write(self, file: IO[str], record: Record) -> None:
        """Write one record (buffered; flushed by the caller)."""

    def on_end(self, run: Run, result: Result) -> None:
        if self._file is None:
            return
        file, self._file = self._file, None
        try:
            file.close()
        except OSError as exc:
            if not self._failed:  # reported already when the write failed
                raise self._storage_error(exc) from exc


class CSVRecords(_FileRecords):
    """One CSV row per generation, with a header; ``append`` continues an existing file."""

    def _begin(self, file: IO[str], fresh: bool) -> None:
        self._writer = csv.DictWriter(file, fieldnames=RECORD_FIELDS)
        if fresh:
            self._writer.writeheader()

    def _write(self, file: IO[str], record: Record) -> None:
        self._writer.writerow(csv_row(record))


class JSONLRecords(_FileRecords):
    """One JSON object per generation (non-finite numbers as null / "inf" / "-inf")."""

    def _write(self, file: IO[str], record: Record) -> None:
        file.write(json_line(record) + "\n")


def read_csv_records(path: str | Path) -> list[dict[str, float | int | None]]:
    """Read records written by :class:`CSVRecords` back as dicts of numbers."""
    out = []
    with io.StringIO(read_regular_file(path, MAX_RECORDS_BYTES).decode("utf-8"), newline="") as handle:
        for row in csv.DictReader(handle):
            out.append({k: (None if v == "" else int(v) if k in INT_FIELDS else float(v)) for k, v in row.items()})
    return out


def read_jsonl_records(path: str | Path) -> list[dict[str, float | None]]:
    """Read records written by :class:`JSONLRecords` ("inf" / "-inf" back to floats)."""
    out = []
    with io.StringIO(read_regular_file(path, MAX_RECORDS_BYTES).decode("utf-8")) as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                out.append({k: (float(v) if v in ("inf", "-inf") else v) for k, v in row.items()})
    return out


# -- TensorBoard event files for a run (``--tensorboard``): tensorboardX, else torch's writer -----------


class ScalarWriter(Protocol):
    """What :class:`TensorBoardLog` uses of a TensorBoard writer (tensorboardX's or torch's)."""

    def add_scalar(self, tag: str, scalar_value: float, global_step: int | None = None) -> object: ...

    def flush(self) -> object: ...

    def close(self) -> object: ...


class ScalarWriterClass(Protocol):
    """The constructor of a :class:`ScalarWriter`, as :class:`TensorBoardLog` calls it."""

    def __call__(self, logdir: str, *, purge_step: int | None, filename_suffix: str) -> ScalarWriter: ...


def summary_writer_class() -> ScalarWriterClass:
    """The SummaryWriter class to use; ConfigError naming the extra to install if there is none."""
    try:
        from tensorboardX import SummaryWriter

        return SummaryWriter
    except ImportError:
        pass
    try:
        from torch.utils.tensorboard import SummaryWriter

        return SummaryWriter
    except ImportError:
        pass
    raise ConfigError(
        "--tensorboard needs tensorboardX (pip install 'blackbox-es[tensorboard]') "
        "or torch together with the tensorboard package"
    )


class TensorBoardLog(Callback):
    """Writes each record as TensorBoard scalars under ``logdir``."""

    def __init__(self, logdir: str | Path, resume_from: Record | None = None):
        self.logdir = Path(logdir)
        self.writer_class = summary_writer_class()
        self.resume_from = resume_from
        self._writers: dict[str, ScalarWriter] = {}

    def _writer(self, axis: str) -> ScalarWriter:
        if axis not in self._writers:
            purge = None
            if self.resume_from is not None:
                purge = {"generations": self.resume_from.generation, "evaluations": self.resume_from.evaluations,
                         "steps": self.resume_from.steps}[axis] + 1
            # A unique suffix: two sessions within one second would otherwise share a file name.
            suffix = f".{os.getpid()}.{time.time_ns()}"
            self._writers[axis] = self.writer_class(str(self.logdir / axis), purge_step=purge, filename_suffix=suffix)
        return self._writers[axis]

    def on_start(self, run: Run) -> None:
        self._writer("generations")

    def on_generation(self, run: Run, record: Record) -> None:
        by_generation = self._writer("generations")
        for group, names in FIELD_GROUPS.items():
            for name in names:
                value = getattr(record, name)
                if value is not None:
                    by_generation.add_scalar(f"{group}/{name}", float(value), record.generation)
        for axis in ("evaluations", "steps"):
            step = getattr(record, axis)
            if axis == "steps" and step == 0:
                continue
            writer = self._writer(axis)
            for name in ("center", "best", "mean", "best_ever"):
                value = getattr(record, name)
                if value is not None and not math.isnan(value):
                    writer.add_scalar(f"fitness/{name}", float(value), int(step))

    def on_end(self, run: Run, result: Result) -> None:
        for writer in self._writers.values():
            writer.flush()
            writer.close()
        self._writers = {}
