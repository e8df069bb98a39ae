"""The README's promises: its test command is what CI runs, and its opening example works."""

import re

import numpy as np

from tests.helpers import ROOT


def readme_bash_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)


def test_ci_runs_the_readme_test_command():
    test_command = next(b.strip() for b in readme_bash_blocks() if "pytest" in b and "pip install" in b)
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_command in ci_lines


def test_readme_opening_example_runs_and_converges():
    code = re.search(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S).group(1)
    namespace: dict = {}
    exec(compile(code.replace("print(es.center)", "center = es.center"), "README.md", "exec"), namespace)
    assert np.sum((namespace["center"] - [0.5, 0.1, -0.3]) ** 2) < 1e-3


def test_readme_strategy_table_lists_every_builtin_with_its_file():
    from blackbox.registry.plugins import strategies

    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Built-in strategies"):]
    rows = re.findall(r"^\| `([a-z-]+)` \|[^|]+\| `([a-z_]+\.py)` \|", section, flags=re.M)
    listed = dict(rows)
    builtins = {name for name in strategies.names() if strategies.entry(name).distribution == "blackbox-es"}
    assert builtins <= set(listed), builtins - set(listed)
    for name, filename in listed.items():
        assert (ROOT / "blackbox" / "strategies" / filename).is_file(), filename
        module = strategies.entry(name).value.split(":")[0]
        assert module == f"blackbox.strategies.{filename[:-3]}"


def test_ci_runs_every_test_command_of_the_readme():
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    commands = [line.strip() for block in readme_bash_blocks() for line in block.splitlines()
                if line.startswith("python3 -m venv") and "pytest" in line]
    assert commands and all(command in ci_lines for command in commands)
