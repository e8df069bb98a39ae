"""The plugin guide's strategy section (docs/plugins.md, "A strategy"; the README's "Write a plugin"
section until 0.2.0), taken literally: a plugin written from its text alone is
installed, shows in ``blackbox list``, runs with ``blackbox run --strategy <its name>`` and passes
the conformance kit.

The fast test installs it the way pip lays out an installed distribution (a ``*.dist-info`` folder
beside the module, on ``sys.path``); the slow one runs ``pip install`` itself.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.fakedist import write_distribution

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from tests.helpers import ROOT


def python_block_after(section: str, sentence: str) -> str:
    """The first ``python`` block after the text that names a file (``in `my_es.py```)."""
    after = section[section.index(sentence):]
    return re.search(r"```python\n(.*?)```", after, flags=re.S).group(1)


def guide_plugin() -> dict:
    """The section's pyproject.toml, module and test, with the file names the text gives them."""
    text = (ROOT / "docs" / "plugins.md").read_text()
    section = text.split("## A strategy", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S)
    pyproject = next(code for lang, code in blocks if lang == "toml")
    config = tomllib.loads(pyproject)
    (group, entries), = config["project"]["entry-points"].items()
    (name, target), = entries.items()
    module_file = re.search(r"in `(\w+\.py)`", section.split("```python", 1)[0].rsplit("```", 1)[-1]).group(1)
    test_file = re.search(r"in `(test_\w+\.py)`", section).group(1)
    assert target.split(":")[0] + ".py" == module_file
    module = python_block_after(section, f"in `{module_file}`")
    test = python_block_after(section, f"in `{test_file}`")
    assert module == [code for lang, code in blocks if lang == "python"][0]
    return {"pyproject": pyproject, "config": config, "group": group, "name": name, "target": target,
            "module": module, "module_file": module_file, "test": test, "test_file": test_file}


def write_sources(folder: Path, plugin: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pyproject.toml").write_text(plugin["pyproject"])
    (folder / plugin["module_file"]).write_text(plugin["module"])
    (folder / plugin["test_file"]).write_text(plugin["test"])
    return folder


def run(args, site: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def shows_runs_and_passes(plugin: dict, site: Path, work: Path) -> None:
    listed = run(["-m", "blackbox", "list", "strategies", "--json"], site, work)
    assert listed.returncode == 0, listed.stderr
    row = next(r for r in json.loads(listed.stdout) if r["name"] == plugin["name"])
    project = plugin["config"]["project"]
    assert (row["distribution"], row["version"], row["status"]) == (project["name"], project["version"], "ok")
    assert row["description"] == "A (mu, lambda)-ES: the mean of the best quarter, with a shrinking step size."

    done = run(["-m", "blackbox", "run", "--strategy", plugin["name"], "--problem", "quadratic:dim=10",
                "--generations", "200", "--quiet", "--json", "--out", str(work / "run")], site, work)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["strategy"] == plugin["name"] and summary["generations"] == 200
    assert summary["center_fitness"] > -1e-3  # it optimizes: the quadratic starts near -10

    tests = run(["-m", "pytest", "-q", "-p", "no:cacheprovider", str(work / "src" / plugin["test_file"])],
                site, work)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    from blackbox.testing import checks_of

    assert f"{len(checks_of('strategy'))} passed" in tests.stdout, tests.stdout


def test_plugin_from_the_guide_installed_as_a_distribution(tmp_path):
    plugin = guide_plugin()
    src = write_sources(tmp_path / "src", plugin)
    site = tmp_path / "site"
    project = plugin["config"]["project"]
    write_distribution(site, project["name"], project["version"], {plugin["group"]: {plugin["name"]: plugin["target"]}},
                       {plugin["module_file"][:-3]: (src / plugin["module_file"]).read_text()})
    shows_runs_and_passes(plugin, site, tmp_path)


@pytest.mark.slow
def test_plugin_from_the_guide_installed_with_pip(tmp_path):
    plugin = guide_plugin()
    src = write_sources(tmp_path / "src", plugin)
    site = tmp_path / "site"
    isolation = []
    try:
        import setuptools  # noqa: F401 - build with what is installed when we can (works offline)

        isolation = ["--no-build-isolation"]
    except ImportError:
        pass
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(site), *isolation,
                          str(src)], capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    assert list(site.glob("my_es-0.1.0.dist-info/entry_points.txt"))
    shows_runs_and_passes(plugin, site, tmp_path)
