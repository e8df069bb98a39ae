"""The ``blackbox`` command: one module per subcommand, each adding its own parser.

To add a command, write ``blackbox/cli/<name>.py`` with ``add_parser(subparsers)`` that sets
``func`` on its parser, and list the module in ``COMMANDS``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from ..errors import BlackboxError

__all__ = ["main", "build_parser", "COMMANDS"]

COMMANDS = ["run", "list", "check", "contrast", "resume", "compare", "play"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="blackbox", description="Evolution strategies for black-box optimization and RL."
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"blackbox {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name.replace('-', '_')}").add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``blackbox`` script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BlackboxError as exc:
        print(f"blackbox {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"blackbox {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
