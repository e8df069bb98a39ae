"""Files in shared memory that worker processes on one machine map instead of receiving copies.

A run's problem and each generation's broadcast (the center or bases, sigma, the problem state)
are written once to a private directory in ``/dev/shm`` (RAM-backed); every worker maps the file,
so the bytes exist once per machine however many workers read them. Arrays are stored out of band
(pickle protocol 5) and come back as read-only views of the mapping: no copy, no deserialization
of the data itself. These files hold cloudpickle data and are read only by our own worker
processes, in a directory only this user can open, removed when the run ends.
"""

from __future__ import annotations

import errno
import mmap
import os
import pickle
import shutil
import socket
import struct
import tempfile
import weakref
from pathlib import Path
from typing import Any

from ..errors import WorkerError
from . import shipping

__all__ = ["shared_root", "RunDirectory", "dump_file", "load_file"]

_MAGIC = b"BBXSHM01"
_ALIGN = 64
_PREFIX = "blackbox-run-"
_OWNER = ".host"  # the host that made a run directory


def shared_root() -> Path:
    """Where run directories go: ``$BLACKBOX_SHM_DIR``, else ``/dev/shm``, else the temp folder."""
    env = os.environ.get("BLACKBOX_SHM_DIR")
    if env:
        return Path(env)
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return Path(tempfile.gettempdir())


def _aligned(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def dump_file(path: Path, obj: object, out_of_band: bool = True) -> int:
    """Write ``obj`` to ``path`` atomically; large arrays are stored raw. Returns the file size."""
    buffers: list[pickle.PickleBuffer] = []
    callback = buffers.append if out_of_band else None
    header = shipping.dumps(obj, protocol=5, buffer_callback=callback)
    raws = [b.raw() for b in buffers]
    table_size = 24 + 16 * len(raws)
    position = _aligned(table_size + len(header))
    layout = []
    for raw in raws:
        layout.append((position, raw.nbytes))
        position = _aligned(position + raw.nbytes)
    prefix = _MAGIC + struct.pack("<QQ", len(raws), len(header))
    prefix += b"".join(struct.pack("<QQ", off, n) for off, n in layout)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(prefix)
        handle.write(header)
        for (offset, _), raw in zip(layout, raws):
            handle.seek(offset)
            handle.write(raw)
        handle.truncate(max(position, table_size + len(header)))
    os.replace(tmp, path)
    return max(position, table_size + len(header))


def load_file(path: Path) -> Any:
    """Read what :func:`dump_file` wrote; its arrays are read-only views of the mapped file."""
    with open(path, "rb") as handle:
        mapping = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    view = memoryview(mapping)
    if bytes(view[:8]) != _MAGIC:
        raise WorkerError(f"{path} is not a blackbox shared-memory file")
    count, header_len = struct.unpack_from("<QQ", view, 8)
    layout = [struct.unpack_from("<QQ", view, 24 + 16 * i) for i in range(count)]
    start = 24 + 16 * count
    buffers = [view[off : off + n] for off, n in layout]
    return pickle.loads(view[start : start + header_len], buffers=buffers)


def _remove_tree(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _owner(entry: Path) -> str | None:
    """The host that made the run directory ``entry`` (None: made before blackbox named it)."""
    try:
        return (entry / _OWNER).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None


def remove_stale(root: Path) -> None:
    """Delete run directories left behind by processes of this host that died without cleaning up.

    A directory made on another host (a shared ``$BLACKBOX_SHM_DIR``) is left alone: its pid says
    nothing here, and its run may well be going on.
    """
    try:
        entries = list(root.iterdir())
    except OSError:
        return
    host = socket.gethostname()
    for entry in entries:
        name = entry.name
        if not name.startswith(_PREFIX):
            continue
        pid_text = name[len(_PREFIX):].split("-", 1)[0]
        owner = _owner(entry)
        if owner is not None and owner != host:
            continue
        if pid_text.isdigit() and not _pid_alive(int(pid_text)) and entry.is_dir():
            try:
                if entry.stat().st_uid == os.getuid():
                    shutil.rmtree(entry, ignore_errors=True)
            except OSError:
                pass


def _make_run_dir(root: Path) -> Path:
    """A new private run directory under ``root``, named by this process and holding the name of
    this host; it appears under its final name only once that is written."""
    making = Path(tempfile.mkdtemp(prefix=f".{_PREFIX}{os.getpid()}-", dir=root))
    try:
        (making / _OWNER).write_text(socket.gethostname() + "\n", encoding="utf-8")
        final = making.with_name(making.name[1:])
        os.rename(making, final)
    except BaseException:
        shutil.rmtree(making, ignore_errors=True)
        raise
    return final


class RunDirectory:
    """A private folder (mode 0700) for one run's shared files, removed at close or at exit.

    If shared memory fills up (a small ``/dev/shm`` in a container), writing moves on to a folder
    in the ordinary temp directory, which the page cache keeps just as shared between processes.
    """

    def __init__(self, root: Path | None = None):
        root = Path(root) if root is not None else shared_root()
        remove_stale(root)
        self.path = _make_run_dir(root)
        self._finalizer = weakref.finalize(self, _remove_tree, str(self.path))
        self._written: dict[str, tuple[object, bool]] = {}

    def file(self, name: str) -> Path:
        return self.path / name

    def write(self, name: str, obj: object, out_of_band: bool = True, keep: bool = False) -> int:
        """Write ``obj`` as ``name``; ``keep`` remembers it so it can be rewritten after a move."""
        try:
            size = dump_file(self.file(name), obj, out_of_band)
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT) or self.path.parent == Path(tempfile.gettempdir()):
                raise WorkerError(f"could not write {name} for the workers in {self.path}: {exc}") from exc
            self._move_to_disk()
            size = dump_file(self.file(name), obj, out_of_band)
        if keep:
            self._written[name] = (obj, out_of_band)
        return size

    def _move_to_disk(self) -> None:
        old = self.path
        self._finalizer()
        self.path = _make_run_dir(Path(tempfile.gettempdir()))
        self._finalizer = weakref.finalize(self, _remove_tree, str(self.path))
        for name, (obj, out_of_band) in self._written.items():
            dump_file(self.file(name), obj, out_of_band)
        shutil.rmtree(old, ignore_errors=True)

    def remove(self, name: str) -> None:
        try:
            os.unlink(self.file(name))
        except FileNotFoundError:
            pass

    def cleanup(self) -> None:
        """Delete the folder and everything in it."""
        self._finalizer()
