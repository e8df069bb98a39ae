"""The machine-wide cache of a noise table: one ``.npy`` file per (seed, size), verified whole when mapped.

Every run and every worker process on the machine maps the same file, so a damaged one would spoil
them all without a sound. The file is a plain ``.npy`` array followed by a 40-byte trailer: the magic
``BBNOISE1`` and the sha256 of everything before it. A process that maps the file first reads it
through, in chunks into a small buffer (so its resident memory does not grow by the table), and
checks the size, the header, the digest and the first values against the seed; a file that fails is
rebuilt (with a :class:`NoiseCacheWarning` naming what was wrong) and never used; one that belongs
to another user is left as it is, and the table made in memory. Reading a 2^26
table (256 MB) through sha256 takes a few tenths of a second, about a fifth of generating it.

A table is written to a temporary file in the same folder, flushed to disk and renamed over the
cache file, so concurrent processes never see half a file: each maps a whole table, old or new,
and two that build the same table at once write the same bytes. A folder that cannot be written
leaves the table in the process's memory instead.
"""

from __future__ import annotations

import errno
import hashlib
import io
import mmap
import os
import stat
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

__all__ = ["NoiseCacheWarning", "mapped_table", "table_path", "FORMAT_VERSION"]

#: The cache file format (v1, without the trailer, is ignored).
FORMAT_VERSION = 2
_MAGIC = b"BBNOISE1"
_TRAILER = len(_MAGIC) + 32
_READ_CHUNK = 2**22  # bytes read at a time while verifying


class NoiseCacheWarning(UserWarning):
    """A cached noise table was damaged and has been rebuilt (or could not be, and was made in memory)."""


def table_path(root: Path, size: int, seed: int) -> Path:
    return root / f"noise-v{FORMAT_VERSION}-seed{seed}-size{size}-float32.npy"


def _digest(handle: io.BufferedIOBase, length: int) -> bytes:
    """sha256 of the first ``length`` bytes of ``handle``, read through a small buffer."""
    handle.seek(0)
    # The buffer is an anonymous mapping, not a malloc'd bytearray: glibc raises its mmap threshold
    # to the size of a freed mmapped block, and a 4 MB one would send every later allocation below
    # 4 MB to the heap, where a long run's records and checkpoints fragment it (RSS grew ~270 bytes
    # a generation over 10,000 generations).
    digest, buffer = hashlib.sha256(), mmap.mmap(-1, _READ_CHUNK, flags=mmap.MAP_PRIVATE)
    try:
        view, left = memoryview(buffer), length
        try:
            while left:
                got = handle.readinto(view[: min(left, _READ_CHUNK)])
                if not got:
                    raise EOFError(f"the file ends {left} bytes early")
                digest.update(view[:got])
                left -= got
        finally:
            view.release()
    finally:
        buffer.close()
    return digest.digest()


def _open_verified(path: Path, size: int, probe: np.ndarray) -> tuple[np.ndarray | None, str | None]:
    """``(mapped table, None)``, or ``(None, what is wrong)`` (``(None, None)``: there is no file)."""
    try:  # O_NONBLOCK: a FIFO in its place must not block the open
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG):
            return None, None  # no such file (a name too long for the file system is never one)
        return None, f"unreadable: {exc.strerror or exc}"
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return None, "not a regular file"
    with os.fdopen(fd, "rb") as handle:
        try:
            major, _ = np.lib.format.read_magic(handle)
            read_header = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
            shape, fortran, dtype = read_header(handle)
            offset = handle.tell()
        except (ValueError, OSError, EOFError) as exc:
            return None, f"not a table: {exc}"
        if dtype != np.float32 or shape != (size,) or fortran:
            return None, f"holds a {dtype} array of shape {shape}, not {size} float32 values"
        length = offset + 4 * size
        if info.st_size != length + _TRAILER:
            return None, f"{info.st_size} bytes, expected {length + _TRAILER} (truncated or extended)"
        try:
            digest = _digest(handle, length)
            trailer = handle.read(_TRAILER)
        except (OSError, EOFError) as exc:
            return None, f"unreadable: {exc}"
        if trailer[: len(_MAGIC)] != _MAGIC or trailer[len(_MAGIC):] != digest:
            return None, "its sha256 differs from the one written with it"
        data = np.memmap(handle, dtype=np.float32, mode="r", offset=offset, shape=(size,))
    if not np.array_equal(data[: len(probe)], probe):
        return None, "its values are not this seed's"
    return data, None


def _write(path: Path, size: int, generate_into: Callable[[np.ndarray], None]) -> None:
    """Build the table in a temporary file beside ``path``, flush it to disk, rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        table = np.lib.format.open_memmap(tmp_name, mode="w+", dtype=np.float32, shape=(size,))
        generate_into(table)
        table.flush()
        del table
        with open(tmp_name, "r+b") as handle:
            length = os.fstat(handle.fileno()).st_size
            digest = _digest(handle, length)
            handle.seek(length)
            handle.write(_MAGIC + digest)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)  # atomic: readers see the whole file or none
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)


def _mine(path: Path) -> bool:
    """True when ``path`` belongs to this user (only then may a damaged one be replaced)."""
    try:
        return os.lstat(path).st_uid == os.getuid()
    except OSError:
        return True  # gone meanwhile: nothing to replace


def mapped_table(root: Path, size: int, seed: int, generate_into: Callable[[np.ndarray], None],
                 probe: np.ndarray) -> np.ndarray:
    """The table mapped from the cache under ``root`` (built there first if missing or damaged),
    or, where the cache cannot be written, made in this process's memory."""
    path = table_path(root, size, seed)
    data, problem = _open_verified(path, size, probe)
    if data is not None:
        return data
    if problem is not None and not _mine(path):
        warnings.warn(f"noise table cache {path} cannot be used ({problem}) and belongs to another user, so it "
                      f"is left as it is; using a table made in memory", NoiseCacheWarning, stacklevel=4)
        data = np.empty(size, dtype=np.float32)
        generate_into(data)
        return data
    if problem is not None:
        warnings.warn(f"noise table cache {path} is damaged ({problem}); rebuilding it", NoiseCacheWarning,
                      stacklevel=4)
    try:
        _write(path, size, generate_into)
    except OSError as exc:
        data = None  # no writable cache: keep the table in this process's memory instead
        if problem is not None:
            warnings.warn(f"noise table cache {path} could not be rebuilt ({exc}); using a table made in memory",
                          NoiseCacheWarning, stacklevel=4)
    else:
        data, problem = _open_verified(path, size, probe)
        if data is None:
            warnings.warn(f"noise table cache {path} cannot be used ({problem or 'it vanished'}) right after "
                          f"it was written; using a table made in memory", NoiseCacheWarning, stacklevel=4)
    if data is None:
        data = np.empty(size, dtype=np.float32)
        generate_into(data)
    return data
