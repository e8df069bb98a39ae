"""Import plugins in a child process, so that one which hangs or ends the process at import cannot
take ``blackbox list`` or ``blackbox check`` down with it.

:func:`probe` runs ``describe(kind, name)`` (a function named by its import path, which imports the
plugin and returns a JSON-able row) for each entry in one child Python with the same ``sys.path``.
The child says when it starts an entry and sends each row as it is done, on a pipe of its own (a
plugin may print what it likes). An entry whose import does not finish within the timeout
(``BLACKBOX_PLUGIN_TIMEOUT`` seconds, default 60) has its child killed, one that ends the child
(``os._exit``, a crash) is reported with the exit status; either way it gets an error row, and a
fresh child goes on with the entries after it. The child ends itself with ``os._exit`` once its last
row is sent (a non-daemon thread a plugin started cannot keep it alive), and is waited for a bounded
time (:data:`REAP_TIMEOUT`) then killed with everything in its session: none outlives the command.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any, BinaryIO

from ..errors import ConfigError

__all__ = ["TIMEOUT_VARIABLE", "DEFAULT_TIMEOUT", "plugin_timeout", "probe", "import_only"]

TIMEOUT_VARIABLE = "BLACKBOX_PLUGIN_TIMEOUT"
DEFAULT_TIMEOUT = 60.0
REAP_TIMEOUT = 10.0  # seconds a child that sent every row may take to end before it is killed

_CHILD = """
import json, os, sys
sys.path[:] = json.loads(os.environ["BLACKBOX_PROBE_PATH"])
from blackbox.registry.imports import import_object
describe = import_object(sys.argv[1])
out = os.fdopen(int(sys.argv[2]), "w")
for index, (kind, name) in enumerate(json.loads(sys.argv[3])):
    out.write(json.dumps({"start": index}) + "\\n"); out.flush()
    try:
        row = describe(kind, name)
    except BaseException as exc:
        row = {"status": f"error: {type(exc).__name__}: {exc}"}
    out.write(json.dumps({"done": index, "row": row}, default=repr) + "\\n"); out.flush()
out.close(); sys.stdout.flush(); sys.stderr.flush()
os._exit(0)  # a thread a plugin started (daemon or not) cannot keep this child alive
"""


def plugin_timeout() -> float:
    """Seconds one plugin may take to import in ``blackbox list``/``check`` (``BLACKBOX_PLUGIN_TIMEOUT``)."""
    text = os.environ.get(TIMEOUT_VARIABLE, "")
    if not text:
        return DEFAULT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ConfigError(f"{TIMEOUT_VARIABLE} must be a number of seconds > 0, got {text!r}")
    return value


def import_only(kind: str, name: str) -> dict[str, Any]:
    """A ``describe`` that only imports the plugin and checks its protocol: ``{"status": "ok"}``."""
    from .plugins import registry_for

    registry_for(kind).load(name)
    return {"status": "ok"}


def probe(entries: Sequence[tuple[str, str]], describe: str, timeout: float | None = None) -> list[dict[str, Any]]:
    """``describe(kind, name)`` for every entry, each computed in a child process; in the order given.

    An entry that hangs or ends the child gets ``{"status": "error: ..."}`` saying so."""
    timeout = plugin_timeout() if timeout is None else timeout
    rows: list[dict[str, Any] | None] = [None] * len(entries)
    start = 0
    while start < len(entries):
        start = _run_child(entries, start, describe, timeout, rows)
    return [row if row is not None else {"status": "error: no answer from the child"} for row in rows]


def _run_child(entries: Sequence[tuple[str, str]], start: int, describe: str, timeout: float,
               rows: list[dict[str, Any] | None]) -> int:
    """Describe ``entries[start:]`` in one child; return where the next child must start."""
    todo = [list(e) for e in entries[start:]]
    read_end, write_end = os.pipe()
    env = {**os.environ, "BLACKBOX_PROBE_PATH": json.dumps(sys.path)}
    with tempfile.TemporaryFile() as errors:
        try:
            child = subprocess.Popen(
                [sys.executable, "-c", _CHILD, describe, str(write_end), json.dumps(todo)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors, env=env,
                pass_fds=(write_end,), start_new_session=True,
            )
        finally:
            os.close(write_end)
        current: int | None = None
        deadline = time.monotonic() + timeout
        buffer = b""
        with os.fdopen(read_end, "rb") as pipe:
            while True:
                left = deadline - time.monotonic()
                ready = select.select([pipe], [], [], max(0.0, left))[0] if left > 0 else []
                if not ready:  # the entry being imported hangs
                    _kill(child)
                    index = start + (current or 0)
                    rows[index] = {"status": f"error: importing it did not finish within {timeout:g} s "
                                             f"({TIMEOUT_VARIABLE}); it was stopped"}
                    return index + 1
                chunk = os.read(pipe.fileno(), 65536)
                if not chunk:  # the child is gone before describing every entry
                    _reap(child)
                    status = int(child.returncode)
                    failed = start + current if current is not None else rows.index(None, start)
                    return _child_failed(failed, status, errors, rows)
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    message = json.loads(line)
                    if "start" in message:
                        current = int(message["start"])
                        deadline = time.monotonic() + timeout
                    else:
                        rows[start + int(message["done"])] = message["row"]
                        current = None
                if all(r is not None for r in rows[start:]):
                    _reap(child)
                    return len(entries)


def _child_failed(index: int, status: int, errors: BinaryIO, rows: list[dict[str, Any] | None]) -> int:
    """Entry ``index`` ended the child with ``status``: its error row; the next child starts after it."""
    errors.seek(0)
    last = [line for line in errors.read().decode(errors="replace").splitlines() if line.strip()][-1:]
    how = f"killed by signal {-status}" if status < 0 else f"exit status {status}"
    detail = f": {last[0].strip()}" if last else ""
    rows[index] = {"status": f"error: importing it ended the process ({how}){detail}"}
    return index + 1


def _reap(child: subprocess.Popen[bytes]) -> None:
    """Wait for a child that sent every row (or closed its pipe), at most :data:`REAP_TIMEOUT` s; then kill it and its session.

    Whatever it started in its session (a plugin's processes) is killed either way."""
    try:
        child.wait(timeout=REAP_TIMEOUT)
    except subprocess.TimeoutExpired:
        pass
    _kill(child)


def _kill(child: subprocess.Popen[bytes]) -> None:
    """Stop the child and whatever it started (its own session)."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    child.wait()
