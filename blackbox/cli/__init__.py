"""The ``blackbox`` command: one module per subcommand, each adding its own parser.

To add a command, write ``blackbox/cli/<name>.py`` with ``add_parser(subparsers)`` that sets
``func`` on its parser, and list the module in ``COMMANDS``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from .failure import debug_wanted, exit_status

__all__ = ["main", "build_parser", "COMMANDS"]

COMMANDS = ["run", "list", "check", "contrast", "resume", "compare", "play"]


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
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BaseException as exc:  # noqa: BLE001 - every failure ends as one line (see cli/failure.py)
        return exit_status(args.command, exc, debug_wanted(getattr(args, "debug", False)))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
