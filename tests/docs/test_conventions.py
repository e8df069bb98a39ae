"""One convention for commands across the README, the guides and the plugins' READMEs, and the
plugins guide showing exactly what ``blackbox new`` writes."""

import re

from tests.helpers import ROOT

TEXTS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md")),
         *sorted((ROOT / "plugins").glob("*/README.md"))]


def bash_lines(path) -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", path.read_text(), flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_commands_run_in_the_activated_environment():
    """A line that makes an environment activates it; no command names .venv/bin/ tools or a bare pytest."""
    made = [line for path in TEXTS for line in bash_lines(path) if line.startswith("python3 -m venv")]
    assert len(made) >= 4  # the README's two set-up lines, the guide's copies, CONTRIBUTING's
    for line in made:
        venv = line.split()[3]
        assert line.startswith(f"python3 -m venv {venv} && . {venv}/bin/activate && pip install "), line
    for path in TEXTS:
        body = path.read_text()
        for tool in ("bin/pip", "bin/python", "bin/blackbox", "bin/mkdocs", "bin/ruff", "bin/lint-imports"):
            assert tool not in body, f"{path.name}: {tool}"
        assert not re.search(r"(^|&& |`)pytest ", body, flags=re.M), path.name  # python -m pytest


def test_the_plugins_guide_shows_what_blackbox_new_writes(tmp_path):
    from blackbox.cli.new import write_plugin

    text = (ROOT / "docs" / "plugins.md").read_text()
    for kind, name in (("problem", "my-problem"), ("executor", "my-executor")):
        shown = re.search(rf'```python\n("""{name}:.*?)```', text, flags=re.S).group(1)
        written = write_plugin(kind, name, tmp_path / name)[1]
        assert shown == written.read_text(), f"docs/plugins.md differs from `blackbox new {kind} {name}`"


def test_ci_runs_the_minimal_job_of_contributing():
    minimal = next(line for line in bash_lines(ROOT / "CONTRIBUTING.md") if line.startswith("python3 -m venv .venv-minimal"))
    assert minimal.endswith('pip install -e ".[test]" && python -m pytest')
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert minimal in ci_lines
    assert ci_lines.index(minimal) > ci_lines.index("deactivate")  # a second environment, not inside the first
