"""One writer per run directory: a lock file that names its holder and outlives a crash.

``blackbox run`` and ``blackbox resume`` hold ``RUN/blackbox.lock`` while they write into ``RUN``.
The file holds one JSON object naming the holder (pid, host, start time, command) and is locked
with ``flock(2)`` for as long as the holder lives, so a second writer is refused with a message
that names the first. The kernel drops the lock when its holder dies, even by SIGKILL; the file
stays and still names the dead holder. The next writer on the same host finds the file unlocked
and its pid gone, and takes it over; two writers that find the same stale lock cannot both take
it (only one gets the ``flock``). A lock held on another host is never taken over automatically:
its pid means nothing here, so the message says to delete the file once that run is known to be over.

Where the file system has no ``flock`` (some network file systems), the pid and host in the file
decide alone: a live pid on this host, or any other host, holds the directory.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import stat
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import RunInUseError, StorageError
from ..files import describe_os_error, ensure_folder

__all__ = ["LOCK_FILE", "Holder", "RunLock", "read_holder"]

#: The lock file's name inside a run directory.
LOCK_FILE = "blackbox.lock"
#: The largest lock file read (real ones are a few hundred bytes).
_MAX_BYTES = 4096
#: The descriptors of the locks this process holds: a child made by fork() (not exec) closes its
#: copies at once, so that it never keeps a run directory locked after its parent is gone.
_HELD: set[int] = set()


def _close_inherited() -> None:
    for fd in list(_HELD):
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_inherited)


@dataclass(frozen=True)
class Holder:
    """Who holds (or held) a run directory, as its lock file says."""

    pid: int | None
    host: str | None
    since: str | None
    command: str | None

    @classmethod
    def me(cls) -> Holder:
        command = " ".join(["blackbox", *sys.argv[1:]]) if sys.argv and sys.argv[0] else None
        return cls(os.getpid(), socket.gethostname(), time.strftime("%Y-%m-%dT%H:%M:%S%z"), command)

    def describe(self) -> str:
        """``pid 1234 on host node7, since 2026-01-02T03:04:05+0000 (`blackbox run ...`)``."""
        pid = f"pid {self.pid}" if self.pid is not None else "an unknown process"
        host = f" on host {self.host}" if self.host else ""
        since = f", since {self.since}" if self.since else ""
        command = f" (`{self.command[:200]}`)" if self.command else ""
        return f"{pid}{host}{since}{command}"

    def on_this_host(self) -> bool:
        return self.host == socket.gethostname()

    def alive(self) -> bool:
        """True if the pid runs on this host (a pid of another host cannot be checked: True)."""
        if self.pid is None or not self.on_this_host():
            return True
        if self.pid == os.getpid():
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def _parse(data: bytes) -> Holder | None:
    """The holder a lock file names; None for an empty or garbled one (a crash while writing it)."""
    try:
        entry = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(entry, dict):
        return None
    pid = entry.get("pid")
    if isinstance(pid, bool) or not isinstance(pid, int) or not 0 < pid < 2**31:
        return None

    def text(key: str) -> str | None:
        value = entry.get(key)
        return value if isinstance(value, str) else None

    return Holder(pid, text("host"), text("since"), text("command"))


def _read_fd(fd: int) -> Holder | None:
    return _parse(os.pread(fd, _MAX_BYTES, 0))


def read_holder(directory: str | Path) -> Holder | None:
    """The holder named by ``directory``'s lock file (live or not), or None."""
    try:
        with open(Path(directory) / LOCK_FILE, "rb") as handle:
            return _parse(handle.read(_MAX_BYTES))
    except OSError:
        return None


def _same_file(fd: int, path: Path) -> bool:
    try:
        here, there = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


class RunLock:
    """The lock on one run directory (created if missing); use as a context manager or call
    :meth:`acquire` / :meth:`release`. ``taken_over`` names a stale holder that was replaced."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.path = self.directory / LOCK_FILE
        self.taken_over: Holder | None = None
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> RunLock:
        """Take the lock or raise :class:`RunInUseError` naming its holder."""
        if self._fd is not None:
            return self
        ensure_folder(self.directory, "run directory")  # one wording for a folder that cannot be made
        for _ in range(100):  # the file may be released and removed between our open and our flock
            try:  # never through a link: the lock is truncated and written, whatever it points to
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0), 0o644)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.EISDIR):
                    raise RunInUseError(f"cannot lock {self.directory}: {self.path} is a link or a folder, which "
                                        f"blackbox does not make: move it away") from None
                raise StorageError(f"cannot lock {self.directory}: cannot write {self.path} "
                                   f"({describe_os_error(exc)})") from None
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise RunInUseError(f"cannot lock {self.directory}: {self.path} is not a regular file; blackbox "
                                        f"did not make it: move it away")
                if self._try(fd):
                    self._fd = fd
                    _HELD.add(fd)
                    return self
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
        raise RunInUseError(f"{self.directory} is in use: its lock file {self.path} keeps changing hands")

    def _try(self, fd: int) -> bool:
        """Lock ``fd``; False when the file was replaced meanwhile (try again), True when ours."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            flocked = True
        except BlockingIOError:
            raise self._refusal(self._wait_for_name(fd)) from None
        except OSError as exc:
            if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                raise
            flocked = False  # no flock here: the pid and host decide alone
        if not _same_file(fd, self.path):
            return False
        holder = _read_fd(fd)
        if holder is not None and holder.pid != os.getpid():
            if not holder.on_this_host():
                raise self._refusal(holder, elsewhere=True)
            if not flocked and holder.alive():
                raise self._refusal(holder)
            # This host, and either the flock was free (every live holder keeps it) or the pid is gone.
            self.taken_over = holder
        payload = json.dumps(Holder.me().__dict__).encode("utf-8")
        os.ftruncate(fd, 0)
        os.pwrite(fd, payload, 0)
        os.fsync(fd)
        return True

    def _wait_for_name(self, fd: int) -> Holder | None:
        """The holder, once it has written its name (it may have just taken the lock)."""
        holder = _read_fd(fd)
        deadline = time.monotonic() + 1.0
        while (holder is None or not holder.alive()) and time.monotonic() < deadline:
            time.sleep(0.02)
            holder = _read_fd(fd)
        return holder

    def _refusal(self, holder: Holder | None, elsewhere: bool = False) -> RunInUseError:
        who = holder.describe() if holder is not None else "another process"
        if holder is not None and not holder.alive():
            who = (f"a process that inherited the lock of {who}, which is no longer running (a worker "
                   f"process it started, most likely)")
        if elsewhere:
            return RunInUseError(
                f"{self.directory} is in use by {who}: its lock file {self.path} was written on another "
                f"host, so blackbox cannot tell whether that run is still going. Once it is certainly "
                f"over, delete {self.path} and try again"
            )
        return RunInUseError(
            f"{self.directory} is in use by {who}; wait for that run to end (or stop it) and try again, "
            f"or choose another directory"
        )

    def release(self) -> None:
        """Remove the lock file (while still holding it) and unlock."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        _HELD.discard(fd)
        try:
            if _same_file(fd, self.path):
                self.path.unlink()
        except OSError:
            pass  # a read-only or vanished directory: the kernel still drops the lock below
        finally:
            os.close(fd)

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
