"""A generation's :class:`Record`, and :class:`RecordLog`, the run's records kept as columns.

A long run keeps every record (a checkpoint carries them so that a resumed run can rewrite its
record files exactly). As Python objects a record costs about 600 bytes; ``RecordLog`` stores the
15 numbers of each in one float64 row plus a mask of missing values (135 bytes), in blocks, so
memory grows by a fixed small amount per generation and a checkpoint takes the arrays as they are
instead of converting every record again. Indexing and iterating give ordinary ``Record`` objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any, overload

import numpy as np

__all__ = ["Record", "RecordLog", "RECORD_FIELDS", "INT_FIELDS", "FIELD_GROUPS"]


@dataclass
class Record:
    """What happened in one generation; counters (evaluations, steps, time) are cumulative."""

    generation: int
    evaluations: int
    steps: int
    time: float
    generation_time: float
    best: float
    mean: float
    median: float
    worst: float
    center: float | None
    center_rank: int | None
    above_mean: int
    sigma: float
    update_norm: float
    best_ever: float

    def as_dict(self) -> dict[str, float | None]:
        return asdict(self)


#: The one list of record fields, in column order (CSV headers, checkpoints, RecordLog columns).
RECORD_FIELDS = [f.name for f in fields(Record)]
#: The fields that hold integers (or None); the others hold floats.
INT_FIELDS = frozenset({"generation", "evaluations", "steps", "center_rank", "above_mean"})
#: Every field but ``generation`` (the x axis) by what it measures: TensorBoard's scalar groups.
FIELD_GROUPS: dict[str, tuple[str, ...]] = {
    "fitness": ("best", "mean", "median", "worst", "center", "best_ever"),
    "search": ("sigma", "update_norm", "center_rank", "above_mean"),
    "run": ("evaluations", "steps", "time", "generation_time"),
}
_INT_COLUMNS = np.array([name in INT_FIELDS for name in RECORD_FIELDS])


class RecordLog(Sequence[Record]):
    """The records of a run, oldest first, stored as float64 columns with a mask for None.

    Numbers round-trip exactly (integers up to 2^53). ``append``/``extend`` add records;
    ``arrays()`` returns ``(values, missing)`` of shape ``(len, 15)`` for a checkpoint.
    """

    BLOCK = 4096

    def __init__(self, records: Iterable[Record] = ()):
        self._blocks: list[tuple[np.ndarray, np.ndarray]] = []
        self._length = 0
        self.extend(records)

    @classmethod
    def from_arrays(cls, values: np.ndarray, missing: np.ndarray) -> RecordLog:
        """A log holding the rows of ``values`` (None where ``missing``)."""
        values = np.asarray(values, dtype=np.float64)
        missing = np.asarray(missing, dtype=bool)
        if values.ndim != 2 or values.shape[1] != len(RECORD_FIELDS) or missing.shape != values.shape:
            raise ValueError(f"records must have shape (n, {len(RECORD_FIELDS)}) with a mask of the same shape, "
                             f"got {values.shape} and {missing.shape}")
        log = cls()
        for start in range(0, len(values), cls.BLOCK):
            block_values = np.zeros((cls.BLOCK, len(RECORD_FIELDS)))
            block_missing = np.zeros((cls.BLOCK, len(RECORD_FIELDS)), dtype=bool)
            chunk = slice(start, start + cls.BLOCK)
            n = len(values[chunk])
            block_values[:n], block_missing[:n] = values[chunk], missing[chunk]
            log._blocks.append((block_values, block_missing))
        log._length = len(values)
        return log

    # -- adding -------------------------------------------------------------------------------
    def append(self, record: Record) -> None:
        if self._length == len(self._blocks) * self.BLOCK:
            self._blocks.append((np.zeros((self.BLOCK, len(RECORD_FIELDS))),
                                 np.zeros((self.BLOCK, len(RECORD_FIELDS)), dtype=bool)))
        values, missing = self._blocks[-1]
        row = self._length % self.BLOCK
        for j, name in enumerate(RECORD_FIELDS):
            value = getattr(record, name)
            missing[row, j] = value is None
            values[row, j] = np.nan if value is None else value
        self._length += 1

    def extend(self, records: Iterable[Record]) -> None:
        for record in records:
            self.append(record)

    # -- reading ------------------------------------------------------------------------------
    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(values, missing)``, each of shape ``(len, 15)`` (copies)."""
        if not self._blocks:
            empty = np.zeros((0, len(RECORD_FIELDS)))
            return empty, empty.astype(bool)
        values = np.concatenate([v for v, _ in self._blocks])[: self._length]
        missing = np.concatenate([m for _, m in self._blocks])[: self._length]
        return values, missing

    def _row(self, index: int) -> Record:
        values, missing = self._blocks[index // self.BLOCK]
        row, mask = values[index % self.BLOCK].tolist(), missing[index % self.BLOCK].tolist()
        cells: dict[str, Any] = {name: None if gone else int(value) if is_int else value
                                 for name, value, gone, is_int in zip(RECORD_FIELDS, row, mask, _INT_COLUMNS.tolist())}
        return Record(**cells)

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Record: ...

    @overload
    def __getitem__(self, index: slice) -> list[Record]: ...

    def __getitem__(self, index: int | slice) -> Record | list[Record]:
        if isinstance(index, slice):
            return [self._row(i) for i in range(*index.indices(self._length))]
        index = int(index)
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError(f"record index out of range (the run has {self._length} records)")
        return self._row(index)

    def __iter__(self) -> Iterator[Record]:
        for i in range(self._length):
            yield self._row(i)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (RecordLog, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __repr__(self) -> str:
        return f"RecordLog({self._length} records)"
