"""``blackbox list [strategies|problems|executors] [--json]``: what is installed, and from where."""

from __future__ import annotations

import json

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..errors import PluginError
from ..registry import registry_for

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
            "version": entry.version, "description": entry.description, "object": entry.value,
            "status": status,
        })
    for name, claims in registry.conflicts().items():
        for claim in claims:
            rows.append({
                "name": name, "kind": registry.kind, "distribution": claim.distribution,
                "version": claim.version, "description": "", "object": claim.value,
                "status": "error: name claimed by more than one distribution",
            })
    return rows


def run(args) -> int:
    kinds = [args.kind] if args.kind else list(KINDS)
    rows = [row for kind in kinds for row in _rows(kind)]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    table = Table(show_lines=False)
    for column in ("name", "kind", "distribution", "version", "description"):
        table.add_column(column)
    for row in rows:
        desc = escape(row["description"]) if row["status"] == "ok" else "[red]" + escape(row["status"]) + "[/red]"
        table.add_row(row["name"], row["kind"], row["distribution"], row["version"], desc)
    Console().print(table)
    return 0
