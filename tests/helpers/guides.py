"""The code blocks of the documentation pages, and the directives that say how a test runs them.

A page under ``docs/`` is read as the site shows it (``tools/mkdocs_hooks.py`` expands its
``!include`` and ``!cli-reference`` lines first). Its fenced blocks run in order, in one temporary
folder, sharing one Python namespace:

- ``python`` blocks are executed;
- ``bash`` blocks run each command that starts with ``blackbox`` (through ``blackbox.cli.main``,
  in the same process; ``&&`` chains and ``# comments`` are understood); other commands (``pip``,
  ``python benchmarks/...``, ``ray start``) are not run;
- other blocks (``toml``, ``text``) are shown, not run, unless a directive says otherwise.

A directive is an HTML comment on the line just before a block's fence (the site does not show it),
``<!-- test: DIRECTIVE; DIRECTIVE -->``:

- ``skip (REASON)``: never run; the reason is required (keep these few: long trainings, clusters);
- ``slow``: run only with ``pytest -m slow``;
- ``requires EXTRA, ...``: run only where the extras are installed (``gym``, ``mujoco``, ...,
  ``blackbox-ray`` for a plugin of ``plugins/``); otherwise the page's test is skipped naming them;
- ``file NAME``: write the block's text into NAME in the page's folder (a run file a later command
  reads);
- ``exit N``: the block's ``blackbox`` commands must exit with status N (an error shown on purpose);
- ``output``: every non-empty line of this block must appear in what the previous block printed.

``<!-- test-page: requires EXTRA, ... -->`` anywhere on a page applies ``requires`` to all its blocks.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from dataclasses import dataclass, field
from types import ModuleType

from tests.helpers import ROOT
from tests.helpers.extras import EXTRAS, missing

DOCS = ROOT / "docs"
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)(?P<info>[^\n`]*)$")
DIRECTIVE = re.compile(r"^\s*<!--\s*test:\s*(?P<body>.*?)\s*-->\s*$")
PAGE_DIRECTIVE = re.compile(r"^\s*<!--\s*test-page:\s*(?P<body>.*?)\s*-->\s*$", flags=re.M)
KINDS = ("skip", "slow", "requires", "file", "exit", "output")


class DirectiveError(ValueError):
    """A directive that is not one of :data:`KINDS`, or lacks its argument."""


@dataclass
class Block:
    """One fenced block: its language, text, line on the page and directives."""

    page: str
    line: int
    lang: str
    code: str
    skip: str | None = None
    slow: bool = False
    requires: tuple[str, ...] = ()
    file: str | None = None
    exit: int = 0
    output: bool = False

    @property
    def where(self) -> str:
        return f"docs/{self.page}:{self.line}"


@dataclass
class Page:
    """A page's blocks, and the extras all of them need."""

    path: str
    blocks: list[Block] = field(default_factory=list)
    requires: tuple[str, ...] = ()

    @property
    def has_slow_blocks(self) -> bool:
        return any(block.slow and not block.skip for block in self.blocks)


@functools.lru_cache(maxsize=1)
def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("blackbox_docs_hooks", ROOT / "tools" / "mkdocs_hooks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def extras_list(text: str, where: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise DirectiveError(f"{where}: 'requires' names no extra")
    for name in names:
        if name not in EXTRAS and not name.startswith("blackbox-"):
            raise DirectiveError(f"{where}: unknown extra {name!r}; known: {', '.join(EXTRAS)}, or blackbox-<plugin>")
    return names


def apply_directives(block: Block, body: str) -> None:
    """Set ``block``'s fields from ``skip (why); slow; requires gym`` and the like."""
    for part in filter(None, (p.strip() for p in re.split(r";(?![^(]*\))", body))):
        kind, _, argument = part.partition(" ")
        argument = argument.strip()
        if kind not in KINDS:
            raise DirectiveError(f"{block.where}: unknown directive {kind!r}; known: {', '.join(KINDS)}")
        if kind == "skip":
            reason = argument.strip("() ")
            if not reason:
                raise DirectiveError(f"{block.where}: 'skip' needs a reason: <!-- test: skip (why) -->")
            block.skip = reason
        elif kind == "slow":
            block.slow = True
        elif kind == "requires":
            block.requires += extras_list(argument, block.where)
        elif kind == "file":
            if not argument or "/" in argument:
                raise DirectiveError(f"{block.where}: 'file' needs a plain file name")
            block.file = argument
        elif kind == "exit":
            if not argument.isdigit():
                raise DirectiveError(f"{block.where}: 'exit' needs a status, e.g. exit 2")
            block.exit = int(argument)
        else:
            block.output = True


def parse_page(path: str, text: str) -> Page:
    """The blocks of a page (already expanded), with their directives."""
    page = Page(path)
    for match in PAGE_DIRECTIVE.finditer(text):
        body = match.group("body")
        kind, _, argument = body.partition(" ")
        if kind != "requires":
            raise DirectiveError(f"docs/{path}: a page directive can only be 'requires', got {body!r}")
        page.requires += extras_list(argument, f"docs/{path}")
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence = opening.group("indent"), opening.group("fence")
        lang = opening.group("info").strip().split(" ")[0].lstrip("{.").rstrip("}")
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        code = "\n".join(line[len(indent):] if line.startswith(indent) else line.lstrip()
                         for line in lines[i + 1:end]) + "\n"
        block = Block(path, i + 1, lang, code)
        previous = lines[i - 1] if i else ""
        directive = DIRECTIVE.match(previous)
        if directive:
            apply_directives(block, directive.group("body"))
        page.blocks.append(block)
        i = end + 1
    return page


def page_paths() -> list[str]:
    """Every page of the site, relative to ``docs/``."""
    return sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))


def load_page(path: str) -> Page:
    """The page at ``docs/<path>`` as the site shows it, parsed."""
    text = (DOCS / path).read_text(encoding="utf-8")
    return parse_page(path, _hooks().expand(text, path))


def missing_extras(names: tuple[str, ...]) -> dict[str, list[str]]:
    """``{extra: [modules not installed]}`` for the extras among ``names`` that are not all there."""
    gone = {}
    for name in names:
        modules = EXTRAS.get(name) or (name.replace("-", "_"),)
        absent = missing(*modules)
        if absent:
            gone[name] = absent
    return gone
