"""``blackbox list [strategies|problems|executors] [--json]``: what is installed, and from where.

Every plugin is imported to check it, so a broken one shows as such (with its distribution and the
cause) while the others are listed as usual. A name claimed by two distributions is listed once per
claim, each marked as a conflict. The command itself never fails because of a plugin.
"""

from __future__ import annotations

import json

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..errors import PluginError
from ..registry.plugins import broken_distributions, registry_for

KINDS = ("strategies", "problems", "executors")


def add_parser(sub) -> None:
    parser = sub.add_parser("list", help="list installed strategies, problems and executors")
    parser.add_argument("kind", nargs="?", choices=KINDS, help="only this kind (default: all)")
    parser.add_argument("--json", action="store_true", help="print JSON for machines")
    parser.set_defaults(func=run)


def _rows(kind: str) -> list[dict]:
    registry = registry_for(kind)
    rows = []
    for entry in registry.entries():
        status = "ok"
        try:
            registry.load(entry.name)
        except PluginError as exc:
            status = f"error: {exc}"
        rows.append({
            "name": entry.name, "kind": registry.kind, "distribution": entry.distribution,
            "version": entry.version, "description": entry.description if status == "ok" else "",
            "object": entry.value, "status": status,
        })
    for name, claims in registry.conflicts().items():
        for claim in claims:
            others = ", ".join(c.source for c in claims if c is not claim)
            rows.append({
                "name": name, "kind": registry.kind, "distribution": claim.distribution,
                "version": claim.version, "description": "", "object": claim.value,
                "status": f"error: name {name!r} is also claimed by {others}",
            })
    return sorted(rows, key=lambda row: (row["name"], row["distribution"]))


def _broken_rows() -> list[dict]:
    return [{
        "name": "?", "kind": "?", "distribution": b.distribution, "version": b.version,
        "description": "", "object": "",
        "status": f"error: the entry points of distribution {b.distribution} cannot be read: {b.error}",
    } for b in broken_distributions()]


def run(args) -> int:
    kinds = [args.kind] if args.kind else list(KINDS)
    rows = [row for kind in kinds for row in _rows(kind)] + _broken_rows()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    table = Table(show_lines=False)
    for column in ("name", "kind", "distribution", "version", "description"):
        table.add_column(column, overflow="fold")
    for row in rows:
        desc = escape(row["description"]) if row["status"] == "ok" else "[red]" + escape(row["status"]) + "[/red]"
        table.add_row(row["name"], row["kind"], row["distribution"], row["version"], desc)
    Console().print(table)
    return 0
