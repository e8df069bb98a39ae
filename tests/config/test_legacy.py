"""Run configs written by 0.1.0 list flat optimizer options the optimizer does not use; they still run, quietly."""

import warnings
from pathlib import Path

import pytest

from blackbox.config.legacy import upgrade_v010
from blackbox.config.run import (
    breaking_changes,
    build_components,
    load_toml,
    read_run_config,
    resolve_run_config,
)
from tests.helpers.extras import import_or_skip

RUNS = Path(__file__).parents[1] / "golden" / "data" / "v0.1.0-runs"


@pytest.mark.parametrize("table,dropped", [
    ({"name": "openai-es", "optimizer": "adam", "momentum": 0.9, "beta1": 0.9, "beta2": 0.999}, ["momentum"]),
    ({"name": "pgpe", "optimizer": "clipup", "momentum": 0.9, "beta1": 0.9, "beta2": 0.999}, ["beta1", "beta2"]),
    ({"name": "nes", "optimizer": "sgd", "momentum": 0.9}, ["momentum"]),
    ({"name": "nes", "optimizer": "sgd", "momentum": 0.5}, []),  # not 0.1.0's default: the strategy refuses it
    ({"name": "pgpe", "optimizer": "adam", "max_speed": 0.3}, []),
    ({"name": "openai-es", "optimizer": "momentum", "momentum": 0.9}, []),  # used
    ({"name": "cma-es", "sigma": 0.5}, []),
])
def test_upgrade_drops_only_unused_defaults(table, dropped):
    config = {"seed": 0, "strategy": table}
    upgraded = upgrade_v010(config)
    assert sorted(set(table) - set(upgraded["strategy"])) == sorted(dropped)
    assert config["strategy"] == table  # the input is not changed
    if not dropped:
        assert upgraded is config


@pytest.mark.parametrize("run", ["openai-es-cartpole", "pgpe-pendulum-obsnorm"])
def test_a_010_run_config_builds_without_a_warning_and_matches_its_checkpoint(run):
    import_or_skip("gym", "gymnasium")
    from blackbox.store.checkpoint import load_checkpoint

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        resolved = resolve_run_config(read_run_config(load_toml(RUNS / run / "config.toml")))
        strategy, _, executor = build_components(resolved)
    executor.close()
    assert "beta1" not in resolved.strategy.options or strategy.params.optimizer == "adam"
    checkpoint = load_checkpoint(RUNS / run / "checkpoints" / "gen-000002")
    assert breaking_changes(checkpoint.config, resolved) == []


def test_an_option_added_since_a_config_was_written_is_no_breaking_change_at_its_default():
    pytest.importorskip("gymnasium")
    from blackbox.config.run import run_config

    new = run_config("openai-es:popsize=4", "gym:CartPole-v1", stop={"generations": 1})
    old = new.to_dict()
    del old["problem"]["reward_shift"], old["problem"]["shared_seed"]
    assert breaking_changes(old, new) == []
    shifted = run_config("openai-es:popsize=4", "gym:CartPole-v1,reward_shift=-1", stop={"generations": 1})
    assert breaking_changes(old, shifted) == ["problem.reward_shift: (unset) -> -1"]
