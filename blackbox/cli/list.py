"""``blackbox list [strategies|problems|executors|presets] [--json]``: what is installed, and from where.

``blackbox list presets`` shows the Gymnasium presets instead: each task's goal and its source,
the strategy, and the steps and wall time ``benchmarks/rl_presets.py`` measured on 2 cores (the
same table as docs/rl.md, from :mod:`blackbox.problems.gym.preset_table`).

Every plugin is imported to check it, in a child process (:mod:`blackbox.registry.isolated`), so a
broken one shows as such (with its distribution and the cause) while the others are listed as
usual, and one that hangs or ends the process at import is listed as such instead of taking the
command down. A problem whose optional extra is missing is listed with the extra to install. A name claimed by two distributions is listed once per
claim, each marked as a conflict. The command itself never fails because of a plugin. Each row
lists the plugin's options (name, default, type, description) in ``--json``; ``--options`` shows
them in the table too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .._validate import missing_modules
from ..errors import PluginError
from ..files import to_plain
from ..registry.isolated import probe
from ..registry.options import options_of
from ..registry.plugins import broken_distributions, registry_for
from ..registry.spec import format_spec

KINDS = ("strategies", "problems", "executors")


def add_parser(sub) -> None:
    parser = sub.add_parser("list", help="list installed strategies, problems and executors")
    parser.add_argument("kind", nargs="?", choices=(*KINDS, "presets"),
                        help="only this kind (default: all); presets: the Gymnasium presets with goals and "
                             "measured steps")
    parser.add_argument("--json", action="store_true", help="print JSON for machines")
    parser.add_argument("--options", action="store_true", help="show each plugin's options and their defaults")
    parser.set_defaults(func=run)


def _default(value: object) -> object:
    """The default as JSON holds it (its repr when JSON cannot)."""
    plain = to_plain(value)
    try:
        json.dumps(plain)
    except (TypeError, ValueError):
        return repr(value)
    return plain


def _options(factory: Callable[..., object]) -> list[dict[str, object]]:
    """What ``options_of`` reads: every option with its default (None: required), type and description."""
    return [{"name": o.name, "default": None if o.required else _default(o.default), "required": o.required,
             "type": o.describe_type(), "description": o.doc} for o in options_of(factory).options.values()]


def describe_entry(kind: str, name: str) -> dict[str, object]:
    """Status, description and options of one plugin (importing it); what each row of the table shows.

    A plugin that imports but needs a module that is not installed (``Problem.needs``) is listed as
    unusable, naming the extra to install."""
    registry = registry_for(kind)
    entry = registry.entry(name)
    try:
        factory = registry.load(name)
        options = _options(factory)
    except PluginError as exc:
        return {"status": f"error: {exc}", "description": "", "options": []}
    gone = missing_modules(getattr(factory, "needs", None) or {}) if isinstance(getattr(factory, "needs", None),
                                                                               dict) else {}
    if gone:
        extras = ",".join(dict.fromkeys(gone.values()))
        status = (f"error: needs {', '.join(gone)}, which {'is' if len(gone) == 1 else 'are'} not installed: "
                  f"pip install 'blackbox-es[{extras}]'")
        return {"status": status, "description": "", "options": options}
    return {"status": "ok", "description": entry.description, "options": options}


def _rows(kinds: list[str]) -> list[dict]:
    registries = [registry_for(kind) for kind in kinds]
    entries = [(registry, entry) for registry in registries for entry in registry.entries()]
    # Plugins not imported yet are imported in a child process (one that hangs or exits cannot take
    # the command down); those already here (registered at run time, or used) are described here.
    isolated = [(registry.kind, entry.name) for registry, entry in entries if entry._loaded is None]
    described = dict(zip(isolated, probe(isolated, "blackbox.cli.list:describe_entry")))
    rows = []
    for registry, entry in entries:
        key = (registry.kind, entry.name)
        row = described[key] if key in described else describe_entry(*key)
        rows.append({
            "name": entry.name, "kind": registry.kind, "distribution": entry.distribution,
            "version": entry.version, "description": row.get("description", "") if row["status"] == "ok" else "",
            "object": entry.value, "status": row["status"], "options": row.get("options", []),
        })
    for registry in registries:
        for name, claims in registry.conflicts().items():
            for claim in claims:
                others = ", ".join(c.source for c in claims if c is not claim)
                rows.append({
                    "name": name, "kind": registry.kind, "distribution": claim.distribution,
                    "version": claim.version, "description": "", "object": claim.value,
                    "status": f"error: name {name!r} is also claimed by {others}", "options": [],
                })
    order = {kind: i for i, kind in enumerate(registry.kind for registry in registries)}
    return sorted(rows, key=lambda row: (order[row["kind"]], row["name"], row["distribution"]))


def _broken_rows() -> list[dict]:
    return [{
        "name": "?", "kind": "?", "distribution": b.distribution, "version": b.version,
        "description": "", "object": "", "options": [],
        "status": f"error: the entry points of distribution {b.distribution} cannot be read: {b.error}",
    } for b in broken_distributions()]


def _presets(args) -> int:
    """``blackbox list presets``: every Gymnasium preset with its goal, strategy, steps and wall time."""
    from ..problems.gym.preset_table import preset_rows

    rows = preset_rows()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    table = Table(title="Gymnasium presets (blackbox run --problem gym:TASK)", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("task", "goal (source)", "strategy", "solved on fresh seeds", "steps to goal, median",
                   "wall time on 2 cores, median"):
        table.add_column(column)
    for r in rows:
        goal = "none" if r["goal"] is None else f"{r['goal']:,g} ({r['goal_source']})"
        table.add_row(r["task"], goal, r["strategy"], r["solved"], r["steps"], r["wall"])
    Console().print(table)
    return 0


def run(args) -> int:
    if args.kind == "presets":
        return _presets(args)
    kinds = [args.kind] if args.kind else list(KINDS)
    rows = _rows(kinds) + _broken_rows()
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
