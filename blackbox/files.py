"""Safe file output: atomic writes (temp file + rename), ``.npz`` without pickle, TOML and JSON.

A reader never sees half a file: everything is written to a temporary file in the same folder,
flushed to disk, then renamed over the target. Arrays are loaded with ``allow_pickle=False``, so a
file from elsewhere can never run code.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import tomli_w

from .errors import BlackboxError, CheckpointError, StorageError

__all__ = ["atomic_write", "describe_os_error", "save_npz", "load_npz", "write_toml", "write_json", "to_plain"]


def atomic_write(path: str | Path, write: Callable[[Any], None], binary: bool = True) -> Path:
    """Write ``path`` through ``write(handle)`` so that it appears whole or not at all.

    A failure of the file system (a full disk, a read-only folder) is a :class:`StorageError`
    naming the file; the previous version of the file, if any, is left as it was.
    """
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, BlackboxError):
            raise StorageError(f"could not write {path}: {describe_os_error(exc)}") from exc
        raise
    return path


def describe_os_error(exc: OSError) -> str:
    """``[Errno 28] No space left on device`` (without the file name, which the caller gives)."""
    if exc.errno is not None and exc.strerror:
        return f"[Errno {exc.errno}] {exc.strerror}"
    return str(exc)


def save_npz(path: str | Path, arrays: dict[str, Any]) -> Path:
    """Save arrays (numbers become 0-d arrays) atomically; object arrays are refused."""
    clean = {}
    for key, value in arrays.items():
        arr = np.asarray(value)
        if arr.dtype == object:
            raise CheckpointError(f"cannot save {key!r}: object arrays would need pickle")
        clean[key] = arr
    buffer = io.BytesIO()
    np.savez(buffer, **clean)
    return atomic_write(path, lambda handle: handle.write(buffer.getvalue()))


def load_npz(path: str | Path) -> dict[str, np.ndarray]:
    """Load every array of an ``.npz`` without pickle; a clear CheckpointError if it is bad."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except FileNotFoundError:
        raise CheckpointError(f"{path} does not exist") from None
    except ValueError as exc:
        if "allow_pickle" in str(exc) or "pickle" in str(exc).lower():
            raise CheckpointError(f"{path} holds pickled objects; refusing to load it (no pickle)") from None
        raise CheckpointError(f"{path} is not a valid .npz file: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - zipfile/OS errors of a truncated file
        raise CheckpointError(f"{path} is truncated or corrupt: {type(exc).__name__}: {exc}") from None


def to_plain(value: Any) -> Any:
    """Numpy scalars and arrays to Python numbers and lists, recursively (for TOML and JSON)."""
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def write_toml(path: str | Path, data: dict[str, Any]) -> Path:
    """Write ``data`` as TOML atomically (None values are left out: TOML has no null)."""
    text = tomli_w.dumps(_drop_none(to_plain(data)))
    return atomic_write(path, lambda handle: handle.write(text), binary=False)


def write_json(path: str | Path, data: Any) -> Path:
    """Write ``data`` as indented JSON atomically."""
    text = json.dumps(to_plain(data), indent=2, allow_nan=True)
    return atomic_write(path, lambda handle: handle.write(text + "\n"), binary=False)
