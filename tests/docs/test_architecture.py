"""The ARCHITECTURE page stays true to the code: its floors are the layers of the import-linter
contract in ``pyproject.toml``, and every ``file.py:function`` it names exists."""

import ast
import re

import tomllib

from tests.helpers import ROOT

PAGE = ROOT / "docs" / "architecture.md"
#: A path the page names, ``core/strategy.py`` or ``tools/walk_count.py``, with ``:name.name`` after it.
NAMED = re.compile(r"`((?:[\w]+/)*\w+\.py)(?::([\w.]+))?")


def contract_layers() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    package = next(c for c in config["contracts"] if c.get("containers") == ["blackbox"])
    return [" | ".join(part.strip() for part in layer.split("|")) for layer in package["layers"]]


def page_floors() -> list[str]:
    text = PAGE.read_text()
    section = text[text.index("## The floors"):]
    block = re.search(r"```text\n(.*?)```", section, flags=re.S).group(1)
    return [re.split(r"\s{2,}", line.strip())[0] for line in block.splitlines() if line.strip()]


def defined_names(path) -> dict[str, set[str]]:
    """``{qualified name: names defined in it}`` of a module, ``""`` for its top level."""
    names: dict[str, set[str]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        inside = names.setdefault(prefix, set())
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inside.add(child.name)
                visit(child, f"{prefix}.{child.name}" if prefix else child.name)

    visit(ast.parse(path.read_text()), "")
    return names


def test_the_floors_are_the_layers_of_the_contract():
    assert page_floors() == contract_layers()


def test_every_room_of_the_contract_has_a_row_saying_what_it_owns():
    text = PAGE.read_text()
    section = text[text.index("## What each room owns"):text.index("## A spec")]
    listed = {room for row in re.findall(r"^\| ([^|]+) \|", section, flags=re.M)
              for room in re.findall(r"`(\w+)`", row)}
    rooms = {room.strip() for layer in contract_layers() for room in layer.split("|")} - {"__main__"}
    assert rooms <= listed, rooms - listed


def test_every_module_and_function_the_page_names_exists():
    named = NAMED.findall(PAGE.read_text())
    assert len(named) >= 60
    for path, qualname in named:
        file = ROOT / path if path.startswith(("tools/", "tests/", "blackbox/")) else ROOT / "blackbox" / path
        assert file.is_file(), f"docs/architecture.md names {path}, which does not exist"
        if not qualname:
            continue
        names, prefix = defined_names(file), ""
        for part in qualname.split("."):
            assert part in names.get(prefix, set()), f"docs/architecture.md names {path}:{qualname}; " \
                                                      f"{part!r} is not defined in {prefix or path}"
            prefix = f"{prefix}.{part}" if prefix else part


def test_the_page_is_in_the_site_near_contributing():
    nav = (ROOT / "mkdocs.yml").read_text()
    assert "Architecture: architecture.md" in nav
    assert nav.index("Contributing: contributing.md") < nav.index("Architecture: architecture.md")


def test_the_plugin_contract_forbids_every_private_module_to_every_plugin():
    """Plugins use only public names: the import-linter contract that covers ``plugins/`` names
    every plugin package and forbids every private module of blackbox (a new one must be added)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if c.get("type") == "forbidden")
    private = sorted(
        ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for path in (ROOT / "blackbox").rglob("_*.py")
        if not path.name.startswith("__") and "templates" not in path.parts
    )
    plugins = sorted(path.parent.name for path in (ROOT / "plugins").glob("*/blackbox_*/__init__.py"))
    assert private and sorted(contract["forbidden_modules"]) == private
    assert plugins and sorted(contract["source_modules"]) == plugins
