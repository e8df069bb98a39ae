"""Every 0.1.0 module path that moved in 0.2.0 still imports, through a plain stub module at the old path
(no import hook), with a DeprecationWarning saying where it went (``blackbox._moved``): a moved module is
the very module that lives at the new path; a moved package forwards the new package's names and its
0.1.0 submodules are the new ones, each executed once."""

from __future__ import annotations

import ast
import importlib
import linecache
import pickle
import subprocess
import sys
import warnings

import pytest

import blackbox as bb
from blackbox import _moved
from tests.helpers import ROOT, subprocess_env
from tests.helpers.extras import missing, reason

#: old path -> (new path, a name a user imported from it, the modules the new one needs).
OLD_PATHS = {
    "blackbox.validation": ("blackbox._validate", "check_int", ()),
    "blackbox.executor": ("blackbox.core.executor", "Executor", ()),
    "blackbox.noise": ("blackbox.core.noise", "NoiseTable", ()),
    "blackbox.population": ("blackbox.core.population", "Population", ()),
    "blackbox.problem": ("blackbox.core.problem", "EvalResult", ()),
    "blackbox.seeding": ("blackbox.core.seeding", "evaluation_seeds", ()),
    "blackbox.strategy": ("blackbox.core.strategy", "Strategy", ()),
    "blackbox.loop": ("blackbox.driver.loop", "optimize", ()),
    "blackbox.record": ("blackbox.driver.record", "RecordLog", ()),
    "blackbox.records": ("blackbox.driver.logs", "read_csv_records", ()),
    "blackbox.tensorboard": ("blackbox.driver.logs", "TensorBoardLog", ()),
    "blackbox.progress": ("blackbox.driver.progress", "ProgressDisplay", ()),
    "blackbox.confirm": ("blackbox.driver.stop", "ConfirmGoal", ()),
    "blackbox.spec": ("blackbox.registry.spec", "parse_spec", ()),
    "blackbox.presets": ("blackbox.config.run", "problem_preset", ()),
    "blackbox.checkpoint": ("blackbox.store.checkpoint", "load_checkpoint", ()),
    "blackbox.sampling": ("blackbox.strategies._gaussian", None, ()),
    "blackbox.schedule": ("blackbox.strategies._gaussian", None, ()),
    "blackbox.strategies.nes": ("blackbox.strategies.search_gradient", "NES", ()),
    "blackbox.strategies.openai_es": ("blackbox.strategies.search_gradient", "OpenAIES", ()),
    "blackbox.executors.dispatch": ("blackbox.executors.wire", None, ()),
    "blackbox.experiment": ("blackbox.lab.experiment", None, ()),
    "blackbox.runs": ("blackbox.lab.runs", None, ()),
    "blackbox.report": ("blackbox.lab.report", None, ()),
    "blackbox.plots": ("blackbox.lab.plots", None, ()),
    "blackbox.stats": ("blackbox.lab.stats", None, ()),
    "blackbox.contrast": ("blackbox.lab.contrast", None, ()),
    "blackbox.torch_params": ("blackbox.problems.torch_params", "FlatParams", ("torch",)),
    "blackbox.envs": ("blackbox.problems.gym.envs", "CYCLIC_MDP_ID", ("gymnasium",)),
    "blackbox.problems.envs": ("blackbox.problems.gym.slots", None, ()),
    "blackbox.problems.gym_presets": ("blackbox.problems.gym.presets", None, ()),
    "blackbox.problems.actions": ("blackbox.problems.gym.actions", None, ()),
    "blackbox.problems.convnets": ("blackbox.problems.gym.convnets", None, ("torch",)),
    "blackbox.problems.episode_cap": ("blackbox.problems.gym.episode_cap", None, ()),
    "blackbox.problems.obs_norm": ("blackbox.problems.gym.obs_norm", None, ()),
    "blackbox.problems.policies": ("blackbox.problems.gym.policies", "MLPPolicy", ()),
    "blackbox.problems.reference": ("blackbox.problems.gym.reference", None, ()),
    "blackbox.problems.rollout": ("blackbox.problems.gym.rollout", None, ()),
    "blackbox.problems.vbn": ("blackbox.problems.gym.vbn", None, ("torch",)),
    "blackbox.problems.wrappers": ("blackbox.problems.gym.wrappers", None, ("gymnasium",)),
    "blackbox.problems.classifiers": ("blackbox.problems.mnist.classifiers", None, ("torch",)),
    "blackbox.datasets": ("blackbox.problems.mnist.data", "DataSource", ()),
}


PACKAGES = sorted(_moved.SUBMODULES)
MODULES = sorted(set(OLD_PATHS) - set(PACKAGES))
SUBMODULE_PATHS = sorted(f"{package}.{name}" for package, names in _moved.SUBMODULES.items() for name in names)


def fresh_import(name: str):
    """Import ``name`` as a first import would (it and its stub parents dropped from sys.modules first)."""
    for old in [name, *(package for package in PACKAGES if name.startswith(package + "."))]:
        sys.modules.pop(old, None)
    return importlib.import_module(name)


def import_or_skip(new: str, needs=()):
    """Import the module at the new path, or skip when an extra it needs is not installed."""
    gone = missing(*needs)
    if gone:
        pytest.skip(reason({"torch": "torch", "gymnasium": "gym"}[gone[0]], *gone))
    try:
        return importlib.import_module(new)
    except ModuleNotFoundError as error:
        if (error.name or "blackbox").split(".")[0] == "blackbox":
            raise
        pytest.skip(f"{new} needs {error.name}, an extra that is not installed")


def deprecations(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]


def stub_file(old: str):
    path = ROOT.joinpath(*old.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def test_every_moved_path_is_tested_and_is_a_two_line_stub():
    assert {old: new for old, (new, _, _) in OLD_PATHS.items()} == _moved.MOVED
    assert set(_moved.SUBMODULES) <= set(_moved.MOVED)
    for old in [*_moved.MOVED, *_moved.ALIASES, *SUBMODULE_PATHS]:
        body = ast.parse(stub_file(old).read_text()).body  # a stub, not a module of its own
        assert isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant), old  # its docstring
        call = "forward_package" if old in _moved.SUBMODULES else "alias"
        assert [ast.unparse(node) for node in body[1:]] == [
            f"from blackbox._moved import {call}",
            "__getattr__ = forward_package(__name__)" if call == "forward_package" else "alias(__name__)"], old
    for package, names in _moved.SUBMODULES.items():  # a stub package holds stubs only
        folder = ROOT.joinpath(*package.split("."))
        assert sorted(p.name for p in folder.iterdir() if p.suffix == ".py") == sorted(
            ["__init__.py", *(f"{name}.py" for name in names)])
        assert all((ROOT.joinpath(*_moved.MOVED[package].split(".")) / f"{name}.py").exists() for name in names)


def test_import_blackbox_adds_no_finder_and_no_path_hook():
    code = ("import sys; finders, hooks = list(sys.meta_path), list(sys.path_hooks); "
            "import blackbox, blackbox.optim, blackbox.loop, blackbox.datasets.idx; "
            "assert sys.meta_path == finders and sys.path_hooks == hooks, (sys.meta_path, sys.path_hooks)")
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True,
                          env=subprocess_env(), cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert not [finder for finder in [*sys.meta_path, *sys.path_hooks]
                if getattr(finder, "__module__", "").split(".")[0] == "blackbox"]


@pytest.mark.parametrize("old", MODULES)
def test_an_old_module_path_imports_the_new_module_and_warns(old):
    new, name, needs = OLD_PATHS[old]
    target = import_or_skip(new, needs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = fresh_import(old)
    assert deprecations(caught) == [f"{old} moved to {new} in 0.2.0; import from {new}"]
    assert module is target and module.__name__ == new
    assert module.__spec__.name == new  # the module keeps its own spec (reload, pickle, runpy)
    parent, _, last = old.rpartition(".")
    assert getattr(sys.modules[parent], last) is target  # blackbox.loop, the attribute, too
    if name is not None:
        assert getattr(module, name) is getattr(target, name)


@pytest.mark.parametrize("old", PACKAGES)
def test_an_old_package_path_warns_and_hands_out_the_new_packages_names(old):
    new, _, needs = OLD_PATHS[old]
    target = import_or_skip(new, needs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = fresh_import(old)
    assert deprecations(caught) == [f"{old} moved to {new} in 0.2.0; import from {new}"]
    assert module.__name__ == old and module is not target  # a stub package, so its submodules are stubs
    public = list(getattr(target, "__all__", [n for n in dir(target) if not n.startswith("_")]))
    assert public and all(getattr(module, n) is getattr(target, n) for n in public)
    assert module.__all__ == public and set(public) <= set(dir(module))
    star: dict = {}
    exec(f"from {old} import *", star)
    assert {n: v for n, v in star.items() if n != "__builtins__"} == {n: getattr(target, n) for n in public}
    classes = [getattr(module, n) for n in public if isinstance(getattr(module, n), type)]
    assert all(pickle.loads(pickle.dumps(cls)) is cls for cls in classes)  # pickled by their one home
    with pytest.raises(AttributeError, match=f"module '{old}' has no attribute 'nothing_here'"):
        module.nothing_here  # noqa: B018


@pytest.mark.parametrize("old", SUBMODULE_PATHS)
def test_a_submodule_of_a_moved_package_is_the_new_submodule(old):
    package, _, last = old.rpartition(".")
    new = f"{_moved.MOVED[package]}.{last}"
    target = import_or_skip(new, OLD_PATHS[package][2])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = fresh_import(old)
    assert deprecations(caught) == [
        f"{package} moved to {_moved.MOVED[package]} in 0.2.0; import from {_moved.MOVED[package]}",
        f"{old} moved to {new} in 0.2.0; import from {new}"]
    assert module is target and module.__name__ == new
    assert getattr(sys.modules[package], last) is target
    same_file = {id(m) for m in list(sys.modules.values()) if getattr(m, "__file__", None) == target.__file__}
    assert same_file == {id(target)}  # executed once, whatever the name
    with pytest.warns(DeprecationWarning, match=f"{package} moved"), \
            pytest.raises(ModuleNotFoundError, match=f"No module named '{package}.nothing_here'"):
        fresh_import(f"{package}.nothing_here")


def test_a_submodule_imported_first_by_its_old_path_is_loaded_once():
    code = ("import sys, warnings; warnings.simplefilter('ignore'); "
            "import blackbox.datasets.idx as old; import blackbox.problems.mnist.data.idx as new; "
            "from blackbox.datasets import idx; "
            "same = {id(m) for m in list(sys.modules.values()) if getattr(m, '__file__', None) == new.__file__}; "
            "assert old is new is idx and same == {id(new)}, same; "
            "assert sys.modules['blackbox.datasets.idx'] is new")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=subprocess_env(), cwd=ROOT)
    assert done.returncode == 0, done.stderr


def test_the_warning_points_at_the_import_statement():
    sys.modules.pop("blackbox.loop", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import blackbox.loop  # noqa: F401
    (warning,) = caught
    assert warning.filename == __file__
    assert linecache.getline(warning.filename, warning.lineno).strip() == "import blackbox.loop  # noqa: F401"


@pytest.mark.parametrize("alias,module", sorted(_moved.ALIASES.items()))
def test_the_public_short_names_import_without_a_warning(alias, module):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fresh_import(alias) is importlib.import_module(module) is getattr(bb, alias.rpartition(".")[2])


def test_an_old_path_works_in_a_fresh_interpreter_and_says_where_to_go():
    code = "from blackbox.checkpoint import load_checkpoint; import blackbox.store.checkpoint as c; " \
           "assert load_checkpoint is c.load_checkpoint"
    done = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True, text=True,
                          env=subprocess_env(), cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == ("<string>:1: DeprecationWarning: blackbox.checkpoint moved to "
                                   "blackbox.store.checkpoint in 0.2.0; import from blackbox.store.checkpoint")


@pytest.mark.parametrize("name", ["MNIST", "FITNESS", "FORWARDS"])
def test_names_of_a_module_that_became_a_package_are_forwarded(name):
    if missing("torch"):
        pytest.skip("the mnist problem needs the mnist extra (pip install 'blackbox-es[mnist]')")
    import blackbox.problems.mnist as package

    with pytest.warns(DeprecationWarning, match=f"blackbox.problems.mnist.{name} moved to "
                                                f"blackbox.problems.mnist.problem.{name} in 0.2.0"):
        value = getattr(package, name)
    assert value is getattr(importlib.import_module("blackbox.problems.mnist.problem"), name)


#: 0.1.0's blackbox.config.__all__ (``git show 8e4f0e8:blackbox/config.py``) -> where each name is now.
CONFIG_NAMES = {
    "ConfigDoc": ("blackbox.config.toml", "ConfigDoc"), "load_toml": ("blackbox.config.toml", "load_toml"),
    "Component": ("blackbox.registry.component", "Component"),
    "make_component": ("blackbox.config.component", "read_component"),
    "component_override": ("blackbox.config.component", "component_override"),
    "build_components": ("blackbox.config.resolved", "build_components"),
    "BUDGET_KEYS": ("blackbox.config.resolved", "BUDGET_KEYS"),
    **{name: ("blackbox.config.run", name) for name in (
        "check_section", "RunConfig", "read_run_config", "resolve_run_config", "config_changes", "breaking_changes",
        "set_override", "STOP_KEYS", "run_config", "set_value", "parse_set")},
}


@pytest.mark.parametrize("name", sorted(CONFIG_NAMES))
def test_the_names_of_the_config_module_are_forwarded(name):
    import blackbox.config as package

    home, new_name = CONFIG_NAMES[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = getattr(package, name)
    assert [str(w.message) for w in caught] == [
        f"blackbox.config.{name} moved to {home}.{new_name} in 0.2.0; import from {home}"]
    assert caught[0].category is DeprecationWarning and caught[0].filename == __file__
    assert value is getattr(importlib.import_module(home), new_name)


def test_every_name_of_the_config_module_is_forwarded():
    from blackbox.config import MOVED_NAMES

    assert sorted(MOVED_NAMES) == sorted(CONFIG_NAMES) and len(CONFIG_NAMES) == 18
    with pytest.raises(AttributeError, match="module 'blackbox.config' has no attribute 'nothing_here'"):
        import blackbox.config as package

        package.nothing_here  # noqa: B018


def test_an_old_config_import_reads_a_run_config(tmp_path):
    (tmp_path / "run.toml").write_text('strategy = "nes"\nproblem = "sphere:dim=3"\n[stop]\ngenerations = 2\n')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from blackbox.config import load_toml, read_run_config, resolve_run_config
    # (``from m import x`` looks the name up twice: hasattr, then the import itself)
    assert list(dict.fromkeys(str(w.message).partition(" in ")[0] for w in caught)) == [
        "blackbox.config.load_toml moved to blackbox.config.toml.load_toml",
        "blackbox.config.read_run_config moved to blackbox.config.run.read_run_config",
        "blackbox.config.resolve_run_config moved to blackbox.config.run.resolve_run_config"]
    resolved = resolve_run_config(read_run_config(load_toml(tmp_path / "run.toml")))
    assert (resolved.strategy.name, resolved.problem.name, resolved.stop.generations) == ("nes", "sphere", 2)


def test_the_gym_package_exports_the_problem_and_its_option_groups():
    import blackbox.problems.gym as package
    from blackbox.problems.gym import options
    from blackbox.problems.gym.environment import make_gym_env
    from blackbox.problems.gym.problem import GymProblem

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from blackbox.problems.gym import EpisodeCap, ObsNorm  # the README's import, no warning
    assert package.GymProblem is GymProblem and package.make_gym_env is make_gym_env
    assert (ObsNorm, EpisodeCap) == (options.ObsNorm, options.EpisodeCap)
    assert sorted(package.__all__) == sorted(["GymProblem", "make_gym_env", "Environment", "Episodes", "Policy",
                                              "ObsNorm", "EpisodeCap", "Frames", "VBN"])
    assert all(getattr(package, name) is getattr(options, name) for name in package.__all__[2:])
