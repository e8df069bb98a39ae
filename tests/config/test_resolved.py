"""The resolved run is a typed object; RUN/config.toml is exactly its table, and 0.1.0's files load."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from blackbox.config.legacy import upgrade_v010
from blackbox.config.resolved import Checkpointing, Logging, ResolvedRun, Stop, build_components
from blackbox.config.run import read_run_config, resolve_run_config, resolved_run, run_config
from blackbox.config.toml import load_toml
from blackbox.files import write_toml

V010_RUNS = sorted((Path(__file__).parents[1] / "golden" / "data" / "v0.1.0-runs").glob("*/config.toml"))

NES_SPHERE = """\
seed = 4
evaluate_center = true
preset = true

[strategy]
name = "nes"
popsize = 10
sigma = 0.2
sigma_decay = 1.0
sigma_min = 0.0
lr = 0.001
weight_decay = 0.0
optimizer = "sgd"
shaping = "zscore"
mirrored = false
noise_seed = 0
dtype = "float64"

[problem]
name = "sphere"
dim = 3

[executor]
name = "serial"

[stop]
generations = 4
target = -0.01

[checkpoint]
every = 2
keep = 3

[log]
tensorboard = false
plot = true
"""


def test_the_resolved_run_is_typed_and_written_exactly(tmp_path):
    resolved = run_config("nes:popsize=10", "sphere:dim=3", seed=4, stop={"target": -0.01, "generations": 4},
                          checkpoint={"every": 2}, sigma=0.2)
    assert isinstance(resolved, ResolvedRun)
    assert resolved.stop == Stop(generations=4, target=-0.01) and resolved.stop.budget() == {"generations": 4}
    assert resolved.checkpoint == Checkpointing(every=2, keep=3) and resolved.log == Logging()
    assert resolved.strategy.bound and resolved.strategy.options["sigma"] == 0.2
    assert resolved.strategy.located("sigma") == "sigma" and resolved.problem.located("dim") == "problem"
    write_toml(tmp_path / "config.toml", resolved.to_dict())
    assert (tmp_path / "config.toml").read_text() == NES_SPHERE


def test_a_config_table_resolves_to_itself(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(NES_SPHERE)
    resolved = resolve_run_config(read_run_config(load_toml(path)))
    assert resolved.to_dict() == load_toml(path).data
    assert resolved.strategy.located("popsize") == f"{path}:7"
    assert resolved_run(resolved) is resolved
    assert resolved_run(load_toml(path).data).to_dict() == resolved.to_dict()


@pytest.mark.parametrize("path", V010_RUNS, ids=lambda p: p.parent.name)
def test_config_files_written_by_010_load_with_every_value(path):
    written = upgrade_v010(load_toml(path).data)  # without the optimizer options 0.1.0 ignored
    resolved = resolve_run_config(read_run_config(load_toml(path)))
    table = resolved.to_dict()
    for key, value in written.items():
        if isinstance(value, dict):
            assert {k: table[key].get(k) for k in value} == value, key
        else:
            assert table[key] == value, key


def test_a_resolved_run_travels_to_a_worker_and_builds_there():
    resolved = run_config("openai-es:popsize=8", "quadratic:dim=3", stop={"generations": 2})
    copy = pickle.loads(pickle.dumps(resolved))
    assert copy == resolved
    strategy, problem, executor = build_components(copy)
    try:
        assert (strategy.popsize, problem.dim, strategy.dim) == (8, 3, 3)
    finally:
        executor.close()


def test_each_component_is_resolved_with_its_factory_loaded_once(monkeypatch):
    """The resolve pass (issue 26): one factory load per component, not one per step."""
    import blackbox.config.run as run_module

    loads = []
    real = run_module.factory_of
    monkeypatch.setattr(run_module, "factory_of", lambda kind, name, where: loads.append((kind, name)) or
                        real(kind, name, where))
    run_config("nes", "quadratic:dim=3", stop={"generations": 2})
    assert loads == [("strategy", "nes"), ("problem", "quadratic"), ("executor", "serial")]


def test_a_preset_is_laid_under_the_users_values_with_where_each_came_from():
    pytest.importorskip("gymnasium")
    resolved = run_config("ars", "gym:Pendulum-v1", popsize=8)
    strategy = resolved.strategy
    assert strategy.options["popsize"] == 8 and strategy.located("popsize") == "popsize"
    preset = [key for key in strategy.options if strategy.located(key) == "preset of gym"]
    assert preset and "popsize" not in preset  # the user's value wins; the preset fills what is left
    assert resolved.problem.options["env"] == "Pendulum-v1" and resolved.stop.table()
