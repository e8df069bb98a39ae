"""The ``blackbox`` command: one module per subcommand, each adding its own parser.

To add a command, write ``blackbox/cli/<name>.py`` with ``add_parser(subparsers)`` that sets
``func`` on its parser, and list the module in ``COMMANDS``. A sub-command with options of its own
(``blackbox contrast rl``) is a module with ``build_parser()`` and ``run(args)``, listed in
``SUBCOMMANDS``; it takes the rest of the command line.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence

from .failure import debug_wanted, exit_status

__all__ = ["main", "build_parser", "COMMANDS", "SUBCOMMANDS"]

COMMANDS = ["run", "list", "check", "new", "contrast", "resume", "compare", "play"]
SUBCOMMANDS: dict[tuple[str, ...], str] = {("contrast", "rl"): "contrast_rl"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
        args = build_parser().parse_args(argv)
    args.started = started  # commands that report their wall time measure it from here
    try:
        return int(args.func(args) or 0)
    except BaseException as exc:  # noqa: BLE001 - every failure ends as one line (see cli/failure.py)
        return exit_status(args.command, exc, debug_wanted(getattr(args, "debug", False)),
                           getattr(args, "resume_hint", None))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
