"""The packages held to ``mypy --strict`` (issue 26): pyproject's overrides give them every flag that
``--strict`` turns on, so that plain ``mypy`` (what CI runs) enforces it, and CONTRIBUTING names them.

The flags are read from mypy itself (the options ``--strict`` changes), not listed here, so that a
flag a newer mypy adds to ``--strict`` shows up as missing. ``python tools/code_counts.py --mypy``
runs ``mypy --strict blackbox`` and prints 0 errors for each of these packages.
"""

import io
import os

import pytest

from tests.helpers import ROOT

STRICT = ("blackbox.core", "blackbox.executors", "blackbox.registry", "blackbox.strategies")

mypy_main = pytest.importorskip("mypy.main", reason="mypy comes with the dev extra")


def options(args: list[str]):
    quiet = io.StringIO()
    return mypy_main.process_options(args, stdout=quiet, stderr=quiet)[1]


def strict_flags() -> dict[str, object]:
    """Every option ``--strict`` sets, with the value it sets."""
    plain = options(["--config-file", os.devnull, "-c", "pass"])
    strict = options(["--config-file", os.devnull, "--strict", "-c", "pass"])
    names = [name for name in dir(strict) if not name.startswith("_") and not callable(getattr(strict, name))]
    return {name: getattr(strict, name) for name in names if getattr(strict, name) != getattr(plain, name)}


def test_strict_sets_the_flags_this_test_expects():
    """The comparison finds the flags (a mypy that stored its options otherwise would make it empty)."""
    flags = strict_flags()
    assert {"disallow_untyped_defs", "disallow_any_generics", "warn_return_any", "strict_equality"} <= set(flags)


@pytest.mark.parametrize("module", [f"{package}{tail}" for package in STRICT for tail in ("", ".some_module")])
def test_the_strict_packages_get_every_strict_flag(monkeypatch, module):
    monkeypatch.chdir(ROOT)  # mypy reads pyproject.toml from the working directory
    project = options([])
    effective = project.clone_for_module(module)
    missing = {name: value for name, value in strict_flags().items() if getattr(effective, name) != value}
    assert not missing, f"{module}: pyproject's [tool.mypy] lacks {missing}"


def test_other_packages_are_not_strict(monkeypatch):
    """The overrides are per package: a module outside them keeps the lenient defaults."""
    monkeypatch.chdir(ROOT)
    assert not options([]).clone_for_module("blackbox.driver.run").disallow_any_generics


def test_contributing_names_the_strict_packages():
    text = " ".join((ROOT / "CONTRIBUTING.md").read_text().split())
    for package in STRICT:
        assert f"`{package.replace('.', '/')}`" in text, package
    assert "mypy --strict" in text
