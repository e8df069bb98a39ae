"""``blackbox check NAME[:options]``: run the conformance kit on an installed plugin, no pytest needed.

Prints one row per check (passed, failed with the reason, or an expected failure) and exits with 1
when a check failed, so it can gate a plugin's CI as well as answer "does my plugin conform?". The
plugin is imported in a child process first (:mod:`blackbox.registry.isolated`): one that hangs or
ends the process at import is an error line, not a hung or vanished command.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..errors import ConfigError, PluginError
from ..registry.isolated import probe
from ..registry.plugins import registry_for
from ..registry.spec import parse_spec

_STYLE = {"passed": "green", "failed": "red", "xfail": "yellow", "xpass": "red"}


def add_parser(sub) -> None:
    parser = sub.add_parser("check", help="run the conformance kit (blackbox.testing) on a plugin")
    parser.add_argument("target", help="a registered strategy, problem or executor, as a spec: my-es:popsize=16")
    parser.add_argument("--kind", choices=("strategy", "problem", "executor"),
                        help="which kind the name is (needed only when it names several)")
    parser.add_argument("--dim", type=int, default=5, help="dimension the strategy checks use (strategies only; default: 5)")
    parser.add_argument("--expect-failure", action="append", default=[], metavar="CHECK=REASON",
                        help="declare a check expected to fail, with the reason (repeatable)")
    parser.add_argument("--only", action="append", metavar="CHECK", help="run only this check (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=run)


def _expected(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        name, eq, reason = pair.partition("=")
        if not eq or not name.strip():
            raise ConfigError(f"--expect-failure expects CHECK=REASON, got {pair!r}")
        out[name.strip()] = reason.strip()
    return out


def _import_isolated(target: str, kind: str) -> None:
    """Import the plugin ``target`` names in a child process first: one that hangs or ends the
    process at import is a PluginError here instead of taking the command down."""
    entry = registry_for(kind).entry(parse_spec(target).name)
    if entry._loaded is not None or entry._error is not None:
        return  # already imported here (or already failed): nothing more to fear from its import
    status = probe([(kind, entry.name)], "blackbox.registry.isolated:import_only")[0]["status"]
    if status.startswith("error: importing it"):
        raise PluginError(f"{kind} {entry.name!r} from distribution {entry.source} ({entry.value}) cannot be "
                          f"checked: {status[len('error: '):]}")


def run(args) -> int:
    from ..testing import Subject, run_checks

    kind = Subject(args.target, kind=args.kind).kind
    _import_isolated(args.target, kind)
    extra = {"dim": args.dim} if kind == "strategy" else {}
    subject = Subject(args.target, kind=kind, expected_failures=_expected(args.expect_failure), **extra)
    report = run_checks(subject, raise_on_failure=False, only=args.only)
    if args.json:
        print(report.to_json())
        return 0 if report.ok else 1
    table = Table(title=f"conformance of {subject.id} ({subject.kind})")
    for column in ("check", "result", "s", "details"):
        table.add_column(column, overflow="fold")
    for r in report.results:
        details = r.message if r.status == "failed" else r.reason
        if r.status == "xpass":
            details = f"declared to fail ({r.reason}) but passed; drop the declaration"
        table.add_row(r.name, f"[{_STYLE[r.status]}]{r.status}[/]", f"{r.seconds:.2f}", escape(details))
    Console().print(table)
    print(f"{len(report.results) - len(report.failures)} of {len(report.results)} checks ok")
    return 0 if report.ok else 1
