"""Measure the package's import graph: files, top-level modules, edges, cycles, floors, upward imports.

    python tools/import_graph.py            # a table for people
    python tools/import_graph.py --json     # the same figures as JSON
    python tools/import_graph.py --root /tmp/old --moves blackbox/_moved.py   # another checkout

``--root`` measures the ``blackbox/`` of another checkout (an older commit) with this checkout's
tool and contract; ``--moves`` names a ``_moved.py`` whose ``MOVED`` and ``ALIASES`` tables (read
as data, not imported) say where each old module lives now, so an old tree's imports are held to
today's layers (a module named in neither keeps its name).

The old module paths of the measured tree's own ``blackbox/_moved.py`` are stub files there (a
door to a module that lives elsewhere, ``blackbox/loop.py`` for ``blackbox.driver.loop``): each
stub counts in the room it leads to, and not as a top-level module or package; ``stubs`` counts them.

Edges are the imports written in the source (``import``/``from ... import``, relative or absolute,
at module level or inside functions; ``if TYPE_CHECKING`` blocks are left out, since they never run).
A *room* is a top-level module or sub-package of ``blackbox``. Floors are the longest import chain
below a room (rooms in one cycle share a floor). Upward imports are edges from a room to a room of
a higher layer in the import-linter contract of ``pyproject.toml`` (none when there is no contract);
sideways imports, edges between rooms that the contract declares independent (``lab | testing``).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import defaultdict
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "blackbox"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def imports_of(path: Path, name: str, modules: set[str]) -> set[str]:
    tree = ast.parse(path.read_text())
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def resolve(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    def visit(node: ast.AST) -> None:
        if _type_checking(node):
            for child in getattr(node, "orelse", []):
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    found.add(resolve(alias.name))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            if stem.split(".")[0] == PACKAGE:
                for alias in node.names:
                    full = f"{stem}.{alias.name}"
                    found.add(full if full in modules else resolve(stem))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    found.discard(None)
    found.discard(name)
    return found


def sccs(nodes: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in nodes:
        if v not in index:
            strong(v)
    return out


def floors(nodes: list[str], edges: dict[str, set[str]]) -> dict[str, int]:
    comps = sccs(nodes, edges)
    comp_of = {v: i for i, c in enumerate(comps) for v in c}
    level: dict[int, int] = {}
    for i, comp in enumerate(comps):  # Tarjan emits components in reverse topological order
        below = [level[comp_of[w]] for v in comp for w in edges.get(v, ()) if comp_of[w] != i]
        level[i] = 1 + max(below, default=0)
    return {v: level[comp_of[v]] for v in nodes}


def room(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else parts[0]


def contract_layers() -> list[tuple[list[str], bool]]:
    """The layers of the contract on ``blackbox``, top first, each with whether its rooms are
    independent of each other (``a | b``; ``a : b`` may import each other)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config.get("tool", {}).get("importlinter", {}).get("contracts", [])
    for contract in contracts:
        if contract.get("type") == "layers" and contract.get("containers") == [PACKAGE]:
            return [([f"{PACKAGE}.{m.strip()}" for m in layer.replace(":", "|").split("|")], ":" not in layer)
                    for layer in contract["layers"]]
    return []


def read_moves(path: Path) -> dict[str, str]:
    """``MOVED`` and ``ALIASES`` of a ``_moved.py`` (old module -> where it lives now), read with ast."""
    moves: dict[str, str] = {}
    for node in ast.parse(path.read_text()).body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if isinstance(target, ast.Name) and target.id in ("MOVED", "ALIASES") and node.value is not None:
            moves.update(ast.literal_eval(node.value))
    return moves


def moved(module: str, moves: dict[str, str]) -> str:
    """Where ``module`` lives now: its own entry, or its package's (submodules move with it)."""
    head = module
    while head:
        if head in moves:
            return moves[head] + module[len(head):]
        head = head.rpartition(".")[0]
    return module


def measure(root: Path = ROOT, moves: dict[str, str] | None = None) -> dict:
    files = sorted((root / PACKAGE).rglob("*.py"))
    names = {module_name(p, root): p for p in files}
    modules = set(names)
    edges = {n: imports_of(p, n, modules) for n, p in names.items()}
    module_cycles = [c for c in sccs(sorted(modules), edges) if len(c) > 1]
    own = root / PACKAGE / "_moved.py"
    doors = read_moves(own) if own.exists() else {}
    stubs = {m for m in modules if moved(m, doors) != m}  # this tree's old paths: stub files

    def room_of(module: str) -> str:
        return room(moved(module, doors) if module in stubs else module)

    rooms = sorted({room_of(m) for m in modules if m != PACKAGE})
    room_edges: dict[str, set[str]] = defaultdict(set)
    for a, targets in edges.items():
        for b in targets:
            ra, rb = room_of(a), room_of(b)
            if ra != rb and PACKAGE not in (ra, rb):
                room_edges[ra].add(rb)
    room_cycles = [c for c in sccs(rooms, room_edges) if len(c) > 1]
    room_floor = floors(rooms, room_edges)
    layers = contract_layers()
    rank = {m: len(layers) - i for i, (layer, _) in enumerate(layers) for m in layer}
    independent = {m for layer, alone in layers if alone and len(layer) > 1 for m in layer}
    # Upward imports: module edges between rooms, each end put in its room of today (--moves).
    now = {m: room(moved(m, moves or doors)) for m in modules}
    upward = sorted({f"{room_of(a)} -> {room_of(b)}" for a, targets in edges.items() for b in targets
                     if now[a] in rank and now[b] in rank and rank[now[b]] > rank[now[a]]})
    sideways = sorted({f"{room_of(a)} -> {room_of(b)}" for a, targets in edges.items() for b in targets
                       if now[a] != now[b] and {now[a], now[b]} <= independent and rank[now[a]] == rank[now[b]]})
    lines = {str(p.relative_to(root)): len(p.read_text().splitlines()) for p in files}
    top = [m for m in modules - stubs if m.count(".") == 1 and not names[m].name == "__init__.py"]
    return {
        "files": len(files),
        "lines": sum(lines.values()),
        "largest_file": max(lines.items(), key=lambda kv: kv[1]),
        "files_over_500_lines": sorted(k for k, v in lines.items() if v > 500),
        "top_level_modules": len(top),
        "top_level_packages": sum(1 for m in modules - stubs if m.count(".") == 1 and names[m].name == "__init__.py"),
        "stubs": len(stubs),
        "module_edges": sum(len(v) for v in edges.values()),
        "module_cycles": module_cycles,
        "rooms": len(rooms),
        "room_edges": sum(len(v) for v in room_edges.values()),
        "room_floors": max(room_floor.values(), default=0),
        "room_cycles": room_cycles,
        "contract_layers": len(layers),
        "rooms_outside_contract": sorted({now[m] for m in modules if m != PACKAGE} - set(rank)) if layers else [],
        "upward_imports": upward,
        "sideways_imports": sideways,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    parser.add_argument("--moves", type=Path, help="a _moved.py: old module paths -> where they live now")
    args = parser.parse_args()
    figures = measure(args.root.resolve(), read_moves(args.moves) if args.moves else None)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    for key, value in figures.items():
        if isinstance(value, list) and value and key != "largest_file":
            print(f"{key}: {len(value)}")
            for item in value:
                print(f"    {item}")
        else:
            print(f"{key}: {value if not isinstance(value, list) else len(value)}")


if __name__ == "__main__":
    main()
