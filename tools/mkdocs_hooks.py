"""MkDocs hooks of the documentation site: pages made of the repository's own files and help texts.

Two directives, each alone on a line of a page:

- ``!include PATH [shift=N]``: the Markdown file at PATH (relative to the repository root), its
  headings demoted by N levels, its links to files under ``docs/`` rewritten relative to the
  including page. ``RELIABILITY.md``, ``BENCHMARKS.md`` (written by ``benchmarks/run_all.py``),
  ``CONTRIBUTING.md`` and ``CHANGELOG.md`` live at the root and the site shows them without a copy.
  A missing file stops the build.
- ``!cli-reference``: ``blackbox --help`` and the help of every command of ``blackbox.cli.COMMANDS``,
  so the reference lists a command as soon as it exists.

``tests/docs/test_guides.py`` expands pages the same way before it runs their code blocks. Loaded by
``mkdocs.yml`` (``hooks:``).
"""

from __future__ import annotations

import argparse
import os
import posixpath
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOCS = "docs"
CLI_REFERENCE = re.compile(r"^!cli-reference[ \t]*$", flags=re.M)
#: Columns of the help texts (argparse reads $COLUMNS), so the page does not depend on the terminal.
HELP_COLUMNS = 100
INCLUDE = re.compile(r"^!include[ \t]+(?P<path>\S+)(?:[ \t]+shift=(?P<shift>\d+))?[ \t]*$", flags=re.M)
LINK = re.compile(r"(\]\()(?P<target>[^)\s#]+)")
FENCE = re.compile(r"^(```|~~~)")
HEADING = re.compile(r"^(#{1,6})(?=\s)")


class IncludeError(Exception):
    """An ``!include`` names a file that is not there."""


def shift_headings(text: str, levels: int) -> str:
    """Demote every ATX heading outside code fences by ``levels`` (at most to ``######``)."""
    lines, in_fence = [], False
    for line in text.splitlines(keepends=True):
        if FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and levels:
            line = HEADING.sub(lambda m: "#" * min(6, len(m.group(1)) + levels), line)
        lines.append(line)
    return "".join(lines)


def relink(text: str, page_path: str) -> str:
    """Links to ``docs/...`` (relative to the root) made relative to the page at ``page_path``."""
    page_dir = posixpath.dirname(page_path)

    def fix(match: re.Match[str]) -> str:
        target = match.group("target")
        if not target.startswith(DOCS + "/"):
            return match.group(0)
        return match.group(1) + posixpath.relpath(target[len(DOCS) + 1:], page_dir or ".")

    return LINK.sub(fix, text)


def expand_includes(markdown: str, page_path: str, root: Path = ROOT) -> str:
    """``markdown`` (of the page at ``page_path``, relative to ``docs/``) with each include replaced."""

    def include(match: re.Match[str]) -> str:
        path = root / match.group("path")
        if not path.is_file():
            raise IncludeError(f"docs/{page_path}: '!include {match.group('path')}': no such file {path}")
        text = shift_headings(path.read_text(encoding="utf-8"), int(match.group("shift") or 0))
        return relink(text, page_path).rstrip("\n")

    return INCLUDE.sub(include, markdown)


def command_help() -> dict[str, str]:
    """``{"blackbox": top-level help, "blackbox run": its help, ...}`` as argparse prints them."""
    from blackbox.cli import COMMANDS, build_parser

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(HELP_COLUMNS)
    try:
        parser = build_parser()
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        helps = {"blackbox": parser.format_help()}
        helps.update({f"blackbox {name}": commands.choices[name].format_help() for name in COMMANDS})
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    return helps


def cli_reference() -> str:
    """One section per command: its help text in a code block."""
    sections = []
    for command, text in command_help().items():
        sections.append(f"## `{command}`\n\n```text\n{text.rstrip()}\n```")
    return "\n\n".join(sections)


def expand(markdown: str, page_path: str, root: Path = ROOT) -> str:
    """Every directive of a page expanded: what the site shows and what the docs tests run."""
    markdown = expand_includes(markdown, page_path, root)
    return CLI_REFERENCE.sub(lambda _: cli_reference(), markdown)


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    return expand(markdown, page.file.src_uri)
