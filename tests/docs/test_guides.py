"""Every guide's code blocks run: the pages of ``docs/`` are executed as a reader would run them.

Each page runs in a temporary folder (with ``examples/`` and ``plugins/`` linked in), its blocks in
order in one namespace; ``tests/helpers/guides.py`` says which blocks run and how the directives
(``<!-- test: skip (why) -->``, ``slow``, ``requires gym``, ``file NAME``, ``exit N``, ``output``)
change that. The default run skips ``slow`` blocks; ``pytest -m slow`` runs each page that has any
again, with them.
"""

from __future__ import annotations

import os
import shlex
import sys
import types

import pytest

from blackbox.cli import main
from tests.helpers import ROOT
from tests.helpers.extras import reason
from tests.helpers.guides import (
    Block,
    DirectiveError,
    Page,
    apply_directives,
    load_page,
    missing_extras,
    page_paths,
    parse_page,
)

PAGES = page_paths()
SLOW_PAGES = [path for path in PAGES if load_page(path).has_slow_blocks]


def commands(code: str) -> list[list[str]]:
    """The commands of a bash block, each a list of words: lines joined at ``\\``, split at ``&&``."""
    found = []
    for line in code.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        current: list[str] = []
        for word in [*words, "&&"]:
            if word == "&&":
                if current:
                    found.append(current)
                current = []
            else:
                current.append(word)
    return found


def run_blackbox(block: Block, capsys) -> str:
    """Run the block's ``blackbox`` commands in this process; their output, stdout and stderr."""
    printed = []
    for words in commands(block.code):
        if words[0] != "blackbox":
            continue
        status = main(words[1:])
        out, err = capsys.readouterr()
        printed.append(out + err)
        assert status == block.exit, (f"{block.where}: `{shlex.join(words)}` exited with {status}, "
                                      f"expected {block.exit}\n{out}\n{err}")
    return "".join(printed)


def run_page(page: Page, tmp_path, monkeypatch, capsys, with_slow: bool) -> None:
    gone = missing_extras(page.requires)
    if gone:
        pytest.skip("; ".join(reason(extra, *modules) for extra, modules in gone.items()))
    for name in ("examples", "plugins"):
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BLACKBOX_SMOKE", raising=False)
    # A module of its own, so that classes a page defines pickle by reference (the conformance kit).
    module = types.ModuleType(f"docs_page_{page.path.replace('/', '_').replace('.', '_').replace('-', '_')}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    skipped: dict[str, list[str]] = {}
    printed = ""
    for block in page.blocks:
        if block.skip or (block.slow and not with_slow):
            continue
        gone = missing_extras(block.requires)
        if gone:
            skipped.update(gone)
            continue
        if block.file:
            (tmp_path / block.file).write_text(block.code)
        elif block.output:
            for line in filter(None, (line.strip() for line in block.code.splitlines())):
                assert line in printed, f"{block.where}: this line was not printed by the block before it:\n{line}"
        elif block.lang == "python":
            capsys.readouterr()
            exec(compile(block.code, block.where, "exec"), module.__dict__)
            out, err = capsys.readouterr()
            printed = out + err
        elif block.lang in ("bash", "sh", "console"):
            capsys.readouterr()
            printed = run_blackbox(block, capsys)
    if skipped:
        pytest.skip("blocks not run: " + "; ".join(reason(extra, *modules) for extra, modules in skipped.items()))


@pytest.mark.parametrize("path", PAGES)
def test_page_code_blocks_run(path, tmp_path, monkeypatch, capsys):
    run_page(load_page(path), tmp_path, monkeypatch, capsys, with_slow=False)


@pytest.mark.slow
@pytest.mark.parametrize("path", SLOW_PAGES)
def test_page_code_blocks_run_with_the_slow_ones(path, tmp_path, monkeypatch, capsys):
    run_page(load_page(path), tmp_path, monkeypatch, capsys, with_slow=True)


def test_pages_keep_skipped_blocks_few_and_say_why():
    """Blocks that never run are the exception: long trainings, clusters, installs, other tests' job."""
    skipped = [block for path in PAGES for block in load_page(path).blocks if block.skip]
    runnable = [block for path in PAGES for block in load_page(path).blocks
                if not block.skip and block.lang in ("python", "bash")]
    assert all(block.skip.strip() for block in skipped)
    assert len(skipped) <= len(runnable) // 3, [block.where for block in skipped]


def test_every_page_has_code_that_runs_or_is_reference():
    """A guide shows code, and some of it runs by default (reference pages are generated or included)."""
    reference = {"cli.md", "reliability.md", "benchmarks.md", "contributing.md", "changelog.md"}
    for path in PAGES:
        if path.startswith("api/") or path in reference:
            continue
        blocks = [b for b in load_page(path).blocks if b.lang in ("python", "bash") and not b.skip and not b.slow]
        assert blocks, f"docs/{path} has no code block that runs by default"


def test_bash_blocks_are_split_into_commands():
    code = "blackbox run --out a  # comment\npip install x && blackbox list \\\n  strategies\n"
    assert commands(code) == [["blackbox", "run", "--out", "a"], ["pip", "install", "x"], ["blackbox", "list", "strategies"]]


def test_directives_are_read_and_mistakes_refused():
    page = parse_page("x.md", "<!-- test-page: requires gym -->\n\n<!-- test: slow; requires mujoco, blackbox-ray -->\n"
                              "```bash\nblackbox run\n```\n<!-- test: file a.toml -->\n```toml\nx = 1\n```\n"
                              "<!-- test: skip (an hour; a cluster) -->\n```python\n1\n```\n")
    assert page.requires == ("gym",)
    slow, file, skip = page.blocks
    assert (slow.slow, slow.requires, slow.lang, slow.code) == (True, ("mujoco", "blackbox-ray"), "bash", "blackbox run\n")
    assert (file.file, file.code) == ("a.toml", "x = 1\n")
    assert skip.skip == "an hour; a cluster"
    for body, message in [("skip", "'skip' needs a reason"), ("fast", "unknown directive 'fast'"),
                          ("requires gpu", "unknown extra 'gpu'"), ("exit two", "'exit' needs a status")]:
        with pytest.raises(DirectiveError, match=message):
            apply_directives(Block("x.md", 1, "bash", ""), body)


def test_a_failing_block_fails_its_page(tmp_path, monkeypatch, capsys):
    page = parse_page("x.md", "```python\nraise ValueError('the guide is wrong')\n```\n")
    with pytest.raises(ValueError, match="the guide is wrong"):
        run_page(page, tmp_path, monkeypatch, capsys, with_slow=False)
    page = parse_page("y.md", "```bash\nblackbox run --problem nope --generations 1\n```\n")
    (tmp_path / "y").mkdir()
    with pytest.raises(AssertionError, match="exited with 2, expected 0"):
        run_page(page, tmp_path / "y", monkeypatch, capsys, with_slow=False)


def test_a_page_that_needs_a_missing_extra_is_skipped_naming_it(tmp_path, monkeypatch, capsys):
    page = parse_page("x.md", "<!-- test-page: requires blackbox-nope -->\n```python\nraise ValueError\n```\n")
    with pytest.raises(pytest.skip.Exception, match=r"needs the blackbox-nope plugin .*blackbox_nope is not installed"):
        run_page(page, tmp_path, monkeypatch, capsys, with_slow=False)
    page = parse_page("y.md", "```python\nx = 1\n```\n<!-- test: requires blackbox-nope -->\n```python\nraise ValueError\n```\n")
    (tmp_path / "y").mkdir()
    with pytest.raises(pytest.skip.Exception, match="blocks not run: needs the blackbox-nope plugin"):
        run_page(page, tmp_path / "y", monkeypatch, capsys, with_slow=False)


def test_output_directive_compares_with_what_was_printed(tmp_path, monkeypatch, capsys):
    page = parse_page("x.md", "```python\nprint('hello there')\n```\n<!-- test: output -->\n```text\nhello\n"
                              "goodbye\n```\n")
    with pytest.raises(AssertionError, match=r"not printed by the block before it:\s+goodbye"):
        run_page(page, tmp_path, monkeypatch, capsys, with_slow=False)


def test_site_configuration_lists_every_page():
    """mkdocs.yml's nav names every page (mkdocs --strict refuses a page left out, where it is installed)."""
    nav = (ROOT / "mkdocs.yml").read_text()
    for path in PAGES:
        assert f" {path}\n" in nav, f"docs/{path} is not in mkdocs.yml's nav"


@pytest.mark.slow
def test_site_builds_with_warnings_as_errors(tmp_path):
    import subprocess

    from tests.helpers.extras import missing as missing_modules

    gone = missing_modules("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")
    if gone:
        pytest.skip(reason("docs", *gone))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "api" / "core" / "index.html").is_file()
