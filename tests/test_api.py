"""The public API at ``blackbox.``: a curated list of names and submodules, the version defined once,
and the names 0.1.0 exported here still importable with a DeprecationWarning naming their new place."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

import blackbox as bb
from blackbox import _version
from tests.helpers import ROOT, subprocess_env

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

PUBLIC = [
    "Strategy", "Population", "NoiseTable", "Problem", "EvalResult", "Executor",
    "SerialExecutor", "LokyExecutor", "FuturesExecutor",
    "make_strategy", "make_problem", "make_executor",
    "optimize", "Run", "Result", "Record", "Callback", "evaluation_seeds",
    "Checkpointer", "load_checkpoint",
    "BlackboxError", "ConfigError", "StateError",
]
SUBMODULES = {"errors": "blackbox.errors", "stop": "blackbox.driver.stop", "optim": "blackbox.strategies.optim",
              "shaping": "blackbox.strategies.shaping", "registry": "blackbox.registry", "testing": "blackbox.testing"}
#: Exported by 0.1.0 here; in 0.2.0 in a submodule.
MOVED = {
    "CheckpointError": "errors", "DatasetError": "errors", "EvaluationError": "errors", "PluginError": "errors",
    "SpecError": "errors", "StorageError": "errors", "TellError": "errors", "UnknownNameError": "errors",
    "WorkerError": "errors", "Adam": "optim", "SGD": "optim", "ClipUp": "optim", "make_optimizer": "optim",
    "centered_ranks": "shaping", "nes_utilities": "shaping", "zscore": "shaping", "Spec": "registry",
    "parse_spec": "registry",
}


def test_the_public_names_are_these_and_resolve_without_warnings():
    assert sorted(bb.__all__) == sorted([*PUBLIC, *SUBMODULES, "__version__"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in bb.__all__:
            assert getattr(bb, name) is not None
        for name, module in SUBMODULES.items():
            assert getattr(bb, name) is sys.modules[module]
    assert set(bb.__all__) <= set(dir(bb))


@pytest.mark.parametrize("name", sorted(MOVED))
def test_a_name_0_1_0_exported_warns_and_is_the_same_object(name):
    module = MOVED[name]
    home = getattr(bb, module)
    with pytest.warns(DeprecationWarning) as caught:
        value = getattr(bb, name)
    assert value is getattr(home, name)
    assert len(caught) == 1 and str(caught[0].message) == (
        f"blackbox.{name} moved to blackbox.{module}.{name} in 0.2.0; import from blackbox.{module}")
    assert caught[0].filename == __file__  # the warning points at the code that used the name
    with pytest.warns(DeprecationWarning, match=f"blackbox.{name} moved"):
        exec(f"from blackbox import {name}", {})


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="module 'blackbox' has no attribute 'nope'"):
        bb.nope  # noqa: B018
    assert not hasattr(bb, "Optimizer")


def test_importing_blackbox_warns_about_nothing():
    done = subprocess.run([sys.executable, "-W", "error", "-c", "import blackbox, blackbox.testing, blackbox.stop"],
                          capture_output=True, text=True, env=subprocess_env(), cwd=ROOT)
    assert done.returncode == 0, done.stderr


# -- the version, defined once -----------------------------------------------------------------------
def pyproject_version(path) -> str:
    return tomllib.loads(path.read_text())["project"]["version"]


def test_the_version_is_pyproject_s():
    assert bb.__version__ == pyproject_version(ROOT / "pyproject.toml")
    assert _version._from_source_tree() == bb.__version__  # the fallback of a source tree reads the same
    assert bb.__version__ in subprocess.run([sys.executable, "-m", "blackbox", "--version"], capture_output=True,
                                            text=True, env=subprocess_env(), cwd=ROOT).stdout


@pytest.mark.parametrize("plugin", ["cma", "bbob", "ray"])
def test_a_plugin_s_version_is_its_pyproject_s(plugin):
    module = pytest.importorskip(f"blackbox_{plugin}",
                                 reason=f"needs the blackbox-{plugin} plugin: pip install -e plugins/blackbox-{plugin}")
    assert module.__version__ == pyproject_version(ROOT / "plugins" / f"blackbox-{plugin}" / "pyproject.toml")


# -- py.typed ships -----------------------------------------------------------------------------------
def test_py_typed_is_package_data():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["blackbox"]
    assert (ROOT / "blackbox" / "py.typed").is_file()
