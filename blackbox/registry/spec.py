"""Spec strings: ``name``, ``name:positional`` and ``name:key=value,key=value``.

They name a strategy, problem or executor and its options on the command line and in config files:
``gym:CartPole-v1``, ``quadratic:dim=100``, ``ray:address=auto``, ``loky:workers=4``. Values are
parsed as int, float, bool (``true``/``false``), ``none``, a ``[list, of, values]``, a
``{key=value, ...}`` table (``gym:Pendulum-v1,env_kwargs={g=9.0}``) or, failing those, a string
(quote it to keep ``"1"`` a string). A malformed spec gets a SpecError that shows
the spec with a caret under the place where it broke.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ..errors import SpecError

__all__ = ["Spec", "Options", "parse_spec", "parse_value", "format_spec"]

#: Options by name, each value as a spec string or a TOML file gives it (or an object, from
#: Python): what a factory takes as keywords.
Options: TypeAlias = dict[str, Any]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?|[+-]?(inf|nan)", re.IGNORECASE)


@dataclass
class Spec:
    """A parsed spec: the plugin's name, its positional arguments and its keyword options."""

    name: str
    args: list[Any] = field(default_factory=list)
    kwargs: Options = field(default_factory=dict)

    def __str__(self) -> str:
        return format_spec(self.name, *self.args, **self.kwargs)


def _fail(spec: str, position: int, message: str) -> SpecError:
    caret = " " * (position + 2) + "^"
    return SpecError(f"bad spec {spec!r}: {message}\n  {spec}\n{caret}")


def parse_value(text: str) -> Any:
    """Parse one option value: int, float, bool, none, a list, a ``{key=value}`` table, or a string."""
    raw = text.strip()
    low = raw.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low in ("none", "null"):
        return None
    if _INT.fullmatch(raw):
        return int(raw)
    if _FLOAT.fullmatch(raw):
        return float(raw)
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    if raw.startswith("[") and raw.endswith("]"):
        inner = raw[1:-1].strip()
        return [parse_value(part) for part in _split_top(inner, raw)] if inner else []
    if raw.startswith("{") and raw.endswith("}"):
        return _parse_table(raw)
    return raw


def _parse_table(raw: str) -> Options:
    """``{key=value, ...}`` (values as :func:`parse_value` reads them) as a dict."""
    inner = raw[1:-1].strip()
    table: Options = {}
    for part in _split_top(inner, raw, 1) if inner else []:
        key, eq, value = part.partition("=")
        key = key.strip()
        if len(key) >= 2 and key[0] == key[-1] and key[0] in "'\"":
            key = key[1:-1]
        elif not _KEY.fullmatch(key):
            raise SpecError(f"bad table {raw!r}: key {key!r} is not an identifier; write {{key=value, ...}}")
        if not eq or not value.strip():
            raise SpecError(f"bad table {raw!r}: {key!r} has no value; write {{key=value, ...}}")
        if key in table:
            raise SpecError(f"bad table {raw!r}: key {key!r} given twice")
        table[key] = parse_value(value)
    return table


def _split_top(text: str, spec: str, base: int = 0) -> list[str]:
    """Split on commas outside brackets, braces and quotes."""
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth < 0:
                raise _fail(spec, base + i, f"unbalanced {ch!r}")
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if quote:
        raise _fail(spec, base + len(text), f"unclosed quote {quote}")
    if depth:
        raise _fail(spec, base + len(text), "unclosed '[' or '{'")
    parts.append(text[start:])
    return parts


def parse_spec(spec: str) -> Spec:
    """Parse ``name[:arg,...,key=value,...]``; positional arguments come before keywords."""
    if not isinstance(spec, str):
        raise SpecError(f"a spec must be a string like 'quadratic:dim=10', got {type(spec).__name__}")
    match = _NAME.match(spec)
    if not match:
        raise _fail(spec, 0, "expected a name (letters, digits, '_', '-', '.') at the start")
    name, pos = match.group(), match.end()
    if pos == len(spec):
        return Spec(name)
    if spec[pos] != ":":
        raise _fail(spec, pos, f"unexpected {spec[pos]!r} after the name; separate options with ':'")
    body_start = pos + 1
    body = spec[body_start:]
    if not body.strip():
        raise _fail(spec, body_start, "nothing after ':'; drop it or add options such as key=value")
    result = Spec(name)
    offset = body_start
    for part in _split_top(body, spec, body_start):
        where = offset + (len(part) - len(part.lstrip()))
        offset += len(part) + 1
        if not part.strip():
            raise _fail(spec, where, "empty option (two commas in a row, or a trailing comma?)")
        key, eq, value = part.partition("=")
        if eq and not (key.strip().startswith(("'", '"', "[", "{"))):
            key = key.strip()
            if not _KEY.fullmatch(key):
                raise _fail(spec, where, f"option name {key!r} is not an identifier")
            if key in result.kwargs:
                raise _fail(spec, where, f"option {key!r} given twice")
            if not value.strip():
                raise _fail(spec, where + len(part) - 1, f"option {key!r} has no value after '='")
            result.kwargs[key] = parse_value(value)
        else:
            if result.kwargs:
                raise _fail(spec, where, "positional value after key=value options")
            result.args.append(parse_value(part))
    return result


def format_spec(name: str, *args: Any, **kwargs: Any) -> str:
    """The spec string that ``parse_spec`` turns back into ``(name, args, kwargs)``."""

    def fmt(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if value is None:
            return "none"
        if isinstance(value, (list, tuple)):
            return "[" + ",".join(fmt(v) for v in value) + "]"
        if isinstance(value, dict) and all(isinstance(k, str) for k in value):
            return "{" + ",".join(f"{k if _KEY.fullmatch(k) else chr(34) + k + chr(34)}={fmt(v)}"
                                  for k, v in value.items()) + "}"
        text = str(value)
        if isinstance(value, str) and (parse_value(text) != value or any(c in text for c in ",[]{}=")):
            return '"' + text + '"'
        return text

    items = [fmt(a) for a in args] + [f"{k}={fmt(v)}" for k, v in kwargs.items()]
    return name + (":" + ",".join(items) if items else "")
