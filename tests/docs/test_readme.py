"""The README's promises: its test command is what CI runs, its opening example works, its links lead somewhere."""

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


def test_ci_runs_every_test_command_of_the_readme():
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    commands = [line.strip() for block in readme_bash_blocks() for line in block.splitlines()
                if line.startswith("python3 -m venv") and "pytest" in line]
    assert commands and all(command in ci_lines for command in commands)


def test_readme_links_point_at_files_of_the_repository():
    """The README is a first visit: every relative link (into docs/, RELIABILITY.md, ...) resolves."""
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", (ROOT / "README.md").read_text())
    relative = [link for link in links if "://" not in link]
    assert any(link.startswith("docs/") for link in relative)
    missing = [link for link in relative if not (ROOT / link).exists()]
    assert not missing, missing


def test_readme_is_a_first_visit():
    """What a first visit needs; the rest lives in the guides (docs/)."""
    assert len((ROOT / "README.md").read_text().splitlines()) <= 120


def test_readme_states_the_test_duration_and_a_quick_subset_that_exists():
    from tests.conftest import QUICK

    text = " ".join((ROOT / "README.md").read_text().split())
    assert "The test line takes about 10 minutes on a quiet 2-core machine" in text
    assert "`python -m pytest -m quick`" in text
    assert all((ROOT / "tests" / path).exists() for path in QUICK)
