"""How a command ends when it raises: one line on stderr and an exit status, never a traceback.

- a :class:`~blackbox.errors.BlackboxError` (bad input, a failed evaluation, a full disk): its
  message, status 2;
- Ctrl-C: ``interrupted``, and how to continue (``blackbox resume DIR``) when the command says, status 130;
- an exit called by code the command ran (a plugin, a problem, a callback): status 2 when it said
  0, so that a run cut short never looks like a success;
- running out of memory: what could not be allocated and what to lower, status 2;
- anything else is a bug (in blackbox or in a plugin): the exception in one line and how to report
  it, status 70 (``EX_SOFTWARE``).

The traceback, with the workers' tracebacks chained below their errors, is printed only when asked
for: ``blackbox --debug COMMAND ...`` (or ``COMMAND ... --debug``), or ``BLACKBOX_DEBUG=1``.
"""

from __future__ import annotations

import errno
import os
import sys
import traceback
import warnings

from ..core.executor import describe_exception
from ..errors import BlackboxError

__all__ = ["DEBUG_VARIABLE", "INTERNAL_ERROR", "debug_wanted", "exit_status", "one_line_warnings"]

#: The environment variable that turns tracebacks on.
DEBUG_VARIABLE = "BLACKBOX_DEBUG"
#: The exit status of an unexpected exception (sysexits' EX_SOFTWARE: an internal software error).
INTERNAL_ERROR = 70


def one_line_warnings(command: str) -> None:
    """Print blackbox's own warnings (those whose class is defined in ``blackbox``) as one line,
    ``blackbox COMMAND: warning: message``, not in Python's two-line format with a source line.

    Replaces ``warnings.formatwarning`` with a wrapper that leaves every other warning as it was;
    recording warnings (pytest, ``catch_warnings(record=True)``) is untouched, as it formats nothing."""
    current = warnings.formatwarning
    original = getattr(current, "blackbox_original", current)

    def formatwarning(message, category, filename, lineno, line=None):
        if getattr(category, "__module__", "").split(".")[0] == "blackbox":
            return f"blackbox {command}: warning: {' '.join(str(message).split())}\n"
        return original(message, category, filename, lineno, line)

    formatwarning.blackbox_original = original  # type: ignore[attr-defined]
    warnings.formatwarning = formatwarning


def debug_wanted(flag: bool = False) -> bool:
    """True when ``--debug`` was given or ``BLACKBOX_DEBUG`` is set to anything but ``""``/``0``."""
    return bool(flag) or os.environ.get(DEBUG_VARIABLE, "") not in ("", "0")


def _memory_error(exc: BaseException) -> MemoryError | None:
    """The MemoryError ``exc`` is, or was raised while handling (its cause or context), if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, MemoryError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def exit_status(command: str, exc: BaseException, debug: bool = False, resume: str | None = None) -> int:
    """Report ``exc``, raised by ``blackbox COMMAND``, on stderr; return the exit status. ``resume``:
    what an interrupted command's Ctrl-C line adds (how to continue the run)."""
    if debug and not isinstance(exc, KeyboardInterrupt):
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    hint = "" if debug else f" (blackbox --debug {command} ... shows the traceback)"
    memory = _memory_error(exc)
    if isinstance(exc, BlackboxError):
        line, status = f"error: {exc}", 2
    elif isinstance(exc, KeyboardInterrupt):
        line, status = ("interrupted" + (f"; {resume}" if resume else "")), 130
    elif isinstance(exc, SystemExit):
        code = exc.code
        status = code if isinstance(code, int) and not isinstance(code, bool) and code != 0 else 2
        line = (f"error: code it ran (a plugin, a problem or a callback) called sys.exit({code!r}); "
                f"the command stopped there{hint}")
    elif isinstance(exc, OSError) and exc.errno in (errno.ENAMETOOLONG, errno.ENOENT, errno.ENOTDIR,
                                                    errno.EACCES, errno.EROFS) and exc.filename is not None:
        # a path the command line named (or a folder under it) that cannot be used: bad input, not a bug
        name = str(exc.filename)
        shown = name if len(name) <= 60 else f"{name[:40]}...{name[-12:]}"
        line, status = f"error: cannot use {shown!r}: {exc.strerror}; check the path given", 2
    elif memory is not None:  # also when cleaning up after it failed in turn
        line, status = (f"error: out of memory: {describe_exception(memory)}; lower what sizes "
                        f"the run (dim, popsize, workers, batch_size) or free memory{hint}"), 2
    else:
        line, status = (f"internal error: {describe_exception(exc).rstrip('.')}. This is a bug in blackbox or "
                        f"in a plugin, not in your input: please report it with the command you ran{hint}"), INTERNAL_ERROR
    print(f"blackbox {command}: {' '.join(line.split())}", file=sys.stderr)
    return status
