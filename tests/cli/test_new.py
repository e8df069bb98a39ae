"""``blackbox new``: the plugin it writes passes its own conformance test as generated.

The default suite loads the generated module and runs the generated test in this process, with the
name registered at run time instead of installed; the slow test installs the folder (``pip install
-e``) into a fresh virtual environment and runs ``pytest``, ``blackbox list`` and ``blackbox run``
there, as a plugin author would.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import blackbox as bb
from blackbox.cli import main
from blackbox.cli.new import write_plugin
from blackbox.cli.plugin_templates import GROUPS
from blackbox.config.toml import tomllib
from blackbox.registry.plugins import registry_for
from tests.helpers import ROOT

KINDS = {"strategy": "my-es", "problem": "my-problem", "executor": "my-executor"}


@pytest.fixture
def importable(tmp_path, monkeypatch):
    """Put a folder on sys.path and forget the modules imported from it afterwards."""
    before = set(sys.modules)
    yield lambda folder: monkeypatch.syspath_prepend(str(folder))
    for name in set(sys.modules) - before:
        if name.startswith(("my_", "test_my_")):
            del sys.modules[name]


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_generated_plugin_passes_its_own_test_in_process(kind, tmp_path, importable):
    name = KINDS[kind]
    module = name.replace("-", "_")
    written = write_plugin(kind, name, tmp_path / name)
    assert [p.name for p in written] == ["pyproject.toml", f"{module}.py", f"test_{module}.py", "README.md"]
    project = tomllib.loads((tmp_path / name / "pyproject.toml").read_text())
    group = GROUPS[kind]
    cls_name = "".join(part.capitalize() for part in name.split("-"))
    assert project["project"]["entry-points"][group] == {name: f"{module}:{cls_name}"}
    assert project["tool"]["setuptools"]["py-modules"] == [module]
    importable(tmp_path / name)
    plugin_class = getattr(importlib.import_module(module), cls_name)
    registry = registry_for(kind)
    registry.register(name, plugin_class)  # what the installed entry point does
    try:
        test_module = importlib.import_module(f"test_{module}")
        test_module.test_the_entry_point_names_the_class()
        mark = test_module.test_conformance.pytestmark[0]
        checks = [param.values[0] for param in mark.args[1]]
        assert [check.name for check in checks] == [c.name for c in bb.testing.checks_of(kind)]
        for check in checks:
            assert not check.expected_failure
            check()
    finally:
        registry.unregister(name)


def test_new_refuses_bad_names_and_used_folders(tmp_path, capsys):
    with pytest.raises(bb.ConfigError) as info:
        write_plugin("strategy", "My_ES", tmp_path / "x")
    assert str(info.value) == ("plugin name 'My_ES' is not lowercase words joined by hyphens; use something like "
                               "'my-es' (it names the distribution, the entry point and, as my_es, the module)")
    with pytest.raises(bb.ConfigError) as info:
        write_plugin("problem", "numpy", tmp_path / "x")
    assert str(info.value) == ("plugin name 'numpy' gives the module name 'numpy', which is already importable here "
                               "and would be shadowed; choose another name")
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "file.txt").write_text("mine")
    assert main(["new", "executor", "my-executor", "--out", str(tmp_path / "used")]) == 2
    assert capsys.readouterr().err == (f"blackbox new: error: {tmp_path / 'used'} already exists and is not an empty "
                                       f"folder; choose another --out\n")
    assert (tmp_path / "used" / "file.txt").read_text() == "mine"


def test_new_says_what_it_wrote_and_what_to_run_next(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["new", "strategy", "my-es"]) == 0
    assert capsys.readouterr().out == (
        "wrote the strategy plugin my-es in my-es/: pyproject.toml, my_es.py, test_my_es.py, README.md\n"
        "next, in the environment where blackbox is installed:\n"
        '  pip install -e "my-es[test]"\n'
        "  blackbox list strategies\n"
        "  python -m pytest my-es\n")


def _venv_with_this_environment(where: Path) -> Path:
    """A fresh virtual environment that sees this interpreter's packages (a .pth file), without pip."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "outer.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


@pytest.mark.slow
def test_the_generated_plugins_install_and_pass_their_tests(tmp_path):
    python = _venv_with_this_environment(tmp_path / "venv")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    for kind, name in KINDS.items():
        folder = tmp_path / name
        write_plugin(kind, name, folder)
        subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                        "--no-build-isolation", "-e", str(folder)], check=True, env=env, cwd=tmp_path)
        tests = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
                               capture_output=True, text=True, env=env, cwd=tmp_path)
        assert tests.returncode == 0, tests.stdout + tests.stderr
        count = len(bb.testing.checks_of(kind)) + 1
        assert f"{count} passed" in tests.stdout
        listed = subprocess.run([str(python), "-m", "blackbox", "list", GROUPS[kind].split(".")[1], "--json"], check=True,
                                capture_output=True, text=True, env=env).stdout
        assert f'"name": "{name}"' in listed and f'"distribution": "{name}"' in listed
    run = subprocess.run([str(python), "-m", "blackbox", "run", "--strategy", "my-es", "--problem",
                          "my-problem:dim=5", "--executor", "my-executor", "--generations", "60", "--out",
                          str(tmp_path / "run"), "--json", "--no-plot"],
                         check=True, capture_output=True, text=True, env=env)
    assert '"center_fitness": ' in run.stdout and '"generations": 60' in run.stdout
