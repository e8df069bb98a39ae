"""What the guides promise beyond running: the strategy table lists every built-in strategy with its
file, and the getting-started page shows the README's set-up commands exactly."""

import re

from tests.helpers import ROOT

DOCS = ROOT / "docs"


def bash_blocks(path) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", path.read_text(), flags=re.S)


def test_strategy_table_lists_every_builtin_with_its_file():
    """Moved with the table from the README (tests/docs/test_readme.py) to docs/strategies.md."""
    from blackbox.registry.plugins import strategies

    text = (DOCS / "strategies.md").read_text()
    section = text[text.index("## Built-in strategies"):]
    rows = re.findall(r"^\| `([a-z-]+)` \|[^|]+\| `([a-z_]+\.py)` \|", section, flags=re.M)
    listed = dict(rows)
    builtins = {name for name in strategies.names() if strategies.entry(name).distribution == "blackbox-es"}
    assert builtins <= set(listed), builtins - set(listed)
    for name, filename in listed.items():
        assert (ROOT / "blackbox" / "strategies" / filename).is_file(), filename
        module = strategies.entry(name).value.split(":")[0]
        assert module == f"blackbox.strategies.{filename[:-3]}"


def test_strategy_table_has_paper_update_rule_and_use_for_each():
    text = (DOCS / "strategies.md").read_text()
    section = text[text.index("## Built-in strategies"):]
    header = next(line for line in section.splitlines() if line.startswith("| name |"))
    assert [cell.strip() for cell in header.strip("|").split("|")] == [
        "name", "paper", "file", "population", "update rule", "good for"]
    rows = [line for line in section.splitlines() if re.match(r"^\| `[a-z-]+` \|", line)]
    assert len(rows) >= 10
    assert all(len(row.strip("|").split("|")) == 6 and all(cell.strip() for cell in row.strip("|").split("|"))
               for row in rows)


def test_getting_started_shows_the_readme_set_up_commands_exactly():
    readme = [b.strip() for b in bash_blocks(ROOT / "README.md") if b.startswith("python3 -m venv")]
    guide = [b.strip() for b in bash_blocks(DOCS / "getting-started.md") if b.startswith("python3 -m venv")]
    assert len(readme) == 2 and guide == readme


def test_the_home_page_opens_with_the_readme_loop():
    first_python = re.compile(r"```python\n(.*?)```", flags=re.S)
    readme = first_python.search((ROOT / "README.md").read_text()).group(1)
    home = first_python.search((DOCS / "index.md").read_text()).group(1)
    assert home == readme
