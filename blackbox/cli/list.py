"""``blackbox list [strategies|problems|executors] [--json]``: what is installed, and from where.

Every plugin is imported to check it, so a broken one shows as such (with its distribution and the
cause) while the others are listed as usual. A name claimed by two distributions is listed once per
claim, each marked as a conflict. The command itself never fails because of a plugin. Each row
lists the plugin's options (name, default, type, description) in ``--json``; ``--options`` shows
them in the table too.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..errors import PluginError
from ..files import to_plain
from ..registry.options import options_of
from ..registry.plugins import broken_distributions, registry_for
from ..registry.spec import format_spec

KINDS = ("strategies", "problems", "executors")


def add_parser(sub) -> None:
    parser = sub.add_parser("list", help="list installed strategies, problems and executors")
    parser.add_argument("kind", nargs="?", choices=KINDS, help="only this kind (default: all)")
    parser.add_argument("--json", action="store_true", help="print JSON for machines")
    parser.add_argument("--options", action="store_true", help="show each plugin's options and their defaults")
    parser.set_defaults(func=run)


def _default(value: Any) -> Any:
    """The default as JSON holds it (its repr when JSON cannot)."""
    plain = to_plain(value)
    try:
        json.dumps(plain)
    except (TypeError, ValueError):
        return repr(value)
    return plain


def _options(factory: Any) -> list[dict]:
    """What ``options_of`` reads: every option with its default (None: required), type and description."""
    return [{"name": o.name, "default": None if o.required else _default(o.default), "required": o.required,
             "type": o.describe_type(), "description": o.doc} for o in options_of(factory).options.values()]


def _rows(kind: str) -> list[dict]:
    registry = registry_for(kind)
    rows = []
    for entry in registry.entries():
        status, options = "ok", []
        try:
            options = _options(registry.load(entry.name))
        except PluginError as exc:
            status = f"error: {exc}"
        rows.append({
            "name": entry.name, "kind": registry.kind, "distribution": entry.distribution,
            "version": entry.version, "description": entry.description if status == "ok" else "",
            "object": entry.value, "status": status, "options": options,
        })
    for name, claims in registry.conflicts().items():
        for claim in claims:
            others = ", ".join(c.source for c in claims if c is not claim)
            rows.append({
                "name": name, "kind": registry.kind, "distribution": claim.distribution,
                "version": claim.version, "description": "", "object": claim.value,
                "status": f"error: name {name!r} is also claimed by {others}", "options": [],
            })
    return sorted(rows, key=lambda row: (row["name"], row["distribution"]))


def _broken_rows() -> list[dict]:
    return [{
        "name": "?", "kind": "?", "distribution": b.distribution, "version": b.version,
        "description": "", "object": "", "options": [],
        "status": f"error: the entry points of distribution {b.distribution} cannot be read: {b.error}",
    } for b in broken_distributions()]


def run(args) -> int:
    kinds = [args.kind] if args.kind else list(KINDS)
    rows = [row for kind in kinds for row in _rows(kind)] + _broken_rows()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    console = Console()
    groups = [(kind, [r for r in rows if r["kind"] == registry_for(kind).kind]) for kind in kinds]
    broken = [r for r in rows if r["kind"] == "?"]
    for title, group in [*groups, *([("distributions that cannot be read", broken)] if broken else [])]:
        console.print(_table(title, group, args.options))
    return 0


def plain_text(text: str) -> str:
    """A docstring line without its reStructuredText markup: ``x``, `x`, :class:`~a.X` read as x, x, X."""
    text = re.sub(r":[a-z]+:`~?(?:[\w.]*\.)?([^`]+)`", r"\1", text)
    return re.sub(r"``?([^`]+)``?", r"\1", text)


def _table(title: str, rows: list[dict], with_options: bool) -> Table:
    """One table per kind: the name, where it comes from, and what it is (its options beneath, with --options)."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_lines=with_options)
    table.add_column("name", no_wrap=True)
    table.add_column("from", no_wrap=True)
    table.add_column("description", ratio=1)
    for row in rows:
        if row["status"] == "ok":
            text = escape(plain_text(row["description"]))
        else:
            text = "[red]" + escape(row["status"]) + "[/red]"
        if with_options:
            text += "".join("\n  " + escape(plain_text(_option_text(o))) for o in row["options"])
        table.add_row(row["name"], f"{row['distribution']} {row['version']}".strip(), text)
    return table


def _option_text(option: dict) -> str:
    """``name=default`` as a spec writes it (``name (required)``), then the description."""
    text = f"{option['name']} (required)" if option["required"] else format_spec("", **{
        option["name"]: option["default"]})[1:]
    return text + (f"  {option['description']}" if option["description"] else "")
