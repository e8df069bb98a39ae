"""TOML files with line numbers: :func:`load_toml` reads one into a :class:`ConfigDoc`.

``tomllib`` gives the data but not where each key is written, and errors that say ``run.toml:6``
need it: :func:`key_lines` scans the text for table headers, ``key = value`` lines (dotted and
quoted keys too) and inline tables, skipping multi-line strings.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

from ..errors import ConfigError
from ..files import read_regular_file

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["ConfigDoc", "Table", "key_lines", "load_toml", "parse_toml"]

#: A TOML table as ``tomllib`` gives it: keys to strings, numbers, booleans, dates, arrays, tables.
Table: TypeAlias = dict[str, Any]

_BARE_OR_QUOTED = r'(?:[A-Za-z0-9_-]+|"[^"]*"|\'[^\']*\')'
_KEY_PATH = rf"{_BARE_OR_QUOTED}(?:\s*\.\s*{_BARE_OR_QUOTED})*"
_HEADER = re.compile(rf"^\s*\[\[?\s*({_KEY_PATH})\s*\]\]?\s*(?:#.*)?$")
_KEYVAL = re.compile(rf"^\s*({_KEY_PATH})\s*=\s*(.*)$")
_INLINE_KEY = re.compile(rf"[{{,]\s*({_BARE_OR_QUOTED})\s*=")


def _split_key(text: str) -> tuple[str, ...]:
    parts = re.findall(_BARE_OR_QUOTED, text)
    return tuple(p[1:-1] if p[:1] in "\"'" else p for p in parts)


def key_lines(text: str) -> dict[tuple[str, ...], int]:
    """The line (1-based) where each key path of a TOML document is written."""
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    in_string = None
    for number, line in enumerate(text.splitlines(), 1):
        if in_string:
            if line.count(in_string) % 2:
                in_string = None
            continue
        header = _HEADER.match(line)
        if header:
            table = _split_key(header.group(1))
            lines.setdefault(table, number)
            continue
        keyval = _KEYVAL.match(line)
        if not keyval:
            continue
        path = table + _split_key(keyval.group(1))
        for i in range(len(table) + 1, len(path) + 1):
            lines.setdefault(path[:i], number)
        rest = keyval.group(2)
        for quote in ('"""', "'''"):
            if rest.count(quote) % 2:
                in_string = quote
        if rest.lstrip().startswith("{"):
            for inner in _INLINE_KEY.finditer(rest):
                lines.setdefault(path + _split_key(inner.group(1)), number)
    return lines


@dataclass
class ConfigDoc:
    """A parsed TOML file and where each of its keys is written."""

    path: Path | None
    data: Table
    lines: dict[tuple[str, ...], int] = field(default_factory=dict)

    def where(self, *path: str) -> str:
        """``FILE:LINE`` of the deepest written prefix of ``path`` (``FILE`` if none)."""
        name = str(self.path) if self.path else "<config>"
        for i in range(len(path), 0, -1):
            if tuple(path[:i]) in self.lines:
                return f"{name}:{self.lines[tuple(path[:i])]}"
        return name


def load_toml(path: str | Path) -> ConfigDoc:
    """Parse a TOML file; a syntax error or a missing file is a ConfigError naming the file."""
    path = Path(path)
    try:
        text = read_regular_file(path).decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    return ConfigDoc(path, parse_toml(text, str(path)), key_lines(text))


def parse_toml(text: str, name: str) -> Table:
    """``tomllib.loads(text)``; any failure, deep nesting and huge integers included, is a
    ConfigError naming the file ``name``."""
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise ConfigError(f"{name}: not valid TOML: its tables or arrays are nested too deeply") from None
    except ValueError as exc:  # TOMLDecodeError, and an integer of more digits than Python converts
        raise ConfigError(f"{name}: not valid TOML: {exc}") from None
