"""The ``blackbox`` command: one module per subcommand, each adding its own parser.

To add a command, write ``blackbox/cli/<name>.py`` with ``add_parser(subparsers)`` that sets
``func`` on its parser, and list the module in ``COMMANDS``. A sub-command with options of its own
(``blackbox contrast rl``) is a module with ``build_parser()`` and ``run(args)``, listed in
``SUBCOMMANDS``; it takes the rest of the command line.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import re
import sys
import time
import typing
from collections.abc import Sequence

from .failure import debug_wanted, exit_status, one_line_warnings

__all__ = ["main", "script", "build_parser", "COMMANDS", "SUBCOMMANDS"]

COMMANDS = ["run", "list", "check", "new", "contrast", "resume", "compare", "play"]
SUBCOMMANDS: dict[tuple[str, ...], str] = {("contrast", "rl"): "contrast_rl"}


def _close(word: str, choices: Sequence[str]) -> str:
    """``. Did you mean X?`` for the choice nearest ``word`` (a near spelling or a shortening), or ``""``."""
    near = difflib.get_close_matches(word, [*choices], n=1, cutoff=0.5)  # not list(): see main()
    return f". Did you mean {near[0]}?" if near else ""


class Parser(argparse.ArgumentParser):
    """argparse with the project's promise for usage errors: one line (what was wrong, the nearest
    valid spelling, where the help is), exit status 2; never the generic usage block."""

    def error(self, message: str) -> typing.NoReturn:
        choice = re.fullmatch(r"argument (.+?): invalid choice: '(.*)' \(choose from (.*)\)", message)
        if choice:
            choices = re.findall(r"'([^']*)'", choice.group(3))
            message = (f"{choice.group(1)} {choice.group(2)!r} is not one of {', '.join(choices)}"
                       f"{_close(choice.group(2), choices)}")
        where = "" if "Did you mean" in message else f" (see {self.prog} --help)"
        self.exit(2, f"{self.prog}: error: {message}{where}\n")

    def options(self) -> list[str]:
        """Every option string this parser takes (``--generations``, ``-h``, ...)."""
        return [flag for action in self._actions for flag in action.option_strings]

    def reject_unknown(self, extras: Sequence[str]) -> typing.NoReturn:
        """Refuse arguments no option took: name the first, with the nearest option when it is a flag."""
        word = extras[0]
        if word.startswith("-") and len(word) > 1:
            flag = word.split("=", 1)[0]
            self.error(f"unknown option {flag}{_close(flag, self.options())}")
        self.error(f"unexpected argument {word!r}")


def build_parser() -> Parser:
    parser = Parser(
        prog="blackbox", description="Evolution strategies for black-box optimization and RL."
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"blackbox {__version__}")
    debug = "print the traceback of an error (also: BLACKBOX_DEBUG=1)"
    parser.add_argument("--debug", action="store_true", help=debug)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name.replace('-', '_')}").add_parser(sub)
    for command in sub.choices.values():  # after the command too; SUPPRESS keeps a --debug given before it
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=debug)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``blackbox`` script; returns the exit status."""
    started = time.perf_counter()
    argv = [*(sys.argv[1:] if argv is None else argv)]  # not list(): the cli.list module shadows it here
    module = SUBCOMMANDS.get(tuple(argv[:2]))
    if module is not None:
        command = importlib.import_module(f"{__name__}.{module}")
        args = command.build_parser().parse_args(argv[2:])
        args.command, args.func = " ".join(argv[:2]), command.run
    else:
        parser = build_parser()
        args, extras = parser.parse_known_args(argv)
        if extras:
            command = parser._subparsers._group_actions[0].choices[args.command]  # type: ignore[union-attr,index]
            (command if isinstance(command, Parser) else parser).reject_unknown(extras)
    args.started = started  # commands that report their wall time measure it from here
    one_line_warnings(args.command)
    try:
        return int(args.func(args) or 0)
    except BaseException as exc:  # noqa: BLE001 - every failure ends as one line (see cli/failure.py)
        return exit_status(args.command, exc, debug_wanted(getattr(args, "debug", False)),
                           getattr(args, "resume_hint", None))


#: Seconds the ``blackbox`` script waits, after its command is done, for threads that are not daemons
#: (a plugin's) before it ends anyway.
THREAD_GRACE = 5.0


def script() -> None:
    """The ``blackbox`` console script: :func:`main`, then exit with its status.

    A thread that is not a daemon (one a plugin started at import, say) would keep Python alive after
    the command is done, for ever if it never ends: such threads get :data:`THREAD_GRACE` seconds in all,
    then the process flushes its output, runs its exit handlers and ends with ``os._exit``."""
    import atexit
    import threading

    status = main()
    deadline = time.monotonic() + THREAD_GRACE
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join(max(0.0, deadline - time.monotonic()))
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(status)
    sys.exit(status)


if __name__ == "__main__":  # pragma: no cover
    script()
