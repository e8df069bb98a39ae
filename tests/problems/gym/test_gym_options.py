"""The gym problem's options in groups: the same problem as the flat spelling, checked alike, and the
flat keys that spec strings, TOML files and config.toml use, unchanged."""

import dataclasses
import inspect
from pathlib import Path

import numpy as np
import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

gym = pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install blackbox-es[gym])")

import blackbox as bb  # noqa: E402
from blackbox.config.run import run_config  # noqa: E402
from blackbox.problems.gym.options import FLAT_KEYS, GymParams  # noqa: E402
from blackbox.problems.gym.problem import (  # noqa: E402
    VBN,
    Environment,
    EpisodeCap,
    Episodes,
    Frames,
    GymProblem,
    ObsNorm,
    Policy,
)

V010_RUN = Path(__file__).parents[2] / "golden" / "data" / "v0.1.0-runs" / "pgpe-pendulum-obsnorm" / "config.toml"


def population(problem, n=6):
    rng = np.random.default_rng(0)
    return problem.initial_params(rng) + 0.3 * rng.standard_normal((n, problem.dim))


@pytest.mark.parametrize("grouped,flat", [
    (dict(env=Environment("Pendulum-v1", max_episode_steps=30), obs_norm=ObsNorm(prob=0.5, clip=3.0),
          policy=Policy(hidden=[8], action_noise=0.1, action_bounds="clip"), episodes=Episodes(2, slots=3)),
     dict(env="Pendulum-v1", max_episode_steps=30, obs_norm=True, obs_norm_prob=0.5, obs_clip=3.0, hidden=[8],
          action_noise=0.1, action_bounds="clip", episodes=2, slots=3)),
    (dict(env="CartPole-v1", policy=Policy("linear"), frames=Frames(skip=2, stack=2),
          episode_cap=EpisodeCap("adaptive", start=10, ratio=1.5)),
     dict(env="CartPole-v1", policy="linear", frame_skip=2, frame_stack=2, episode_cap="adaptive",
          episode_cap_start=10, episode_cap_ratio=1.5)),
    (dict(env="CartPole-v1", vbn=VBN(size=16, seed=3), policy=Policy(hidden=[4]), episodes=Episodes(batched=False)),
     dict(env="CartPole-v1", vbn=True, vbn_size=16, vbn_seed=3, hidden=[4], batched=False)),
])
def test_groups_give_the_problem_the_flat_spelling_gives(grouped, flat):
    with pytest.warns(DeprecationWarning, match=r"is deprecated: give the flat keys instead, "):
        a = GymProblem(**grouped)
    b = GymProblem(**flat)
    assert a.config == b.config and a.describe() == b.describe()
    params, seeds = population(a), np.arange(6)
    ra, rb = a.evaluate(params, seeds), b.evaluate(params, seeds)
    np.testing.assert_array_equal(ra.fitness, rb.fitness)
    np.testing.assert_array_equal(ra.steps, rb.steps)
    assert ra.info.keys() == rb.info.keys()


def test_every_flat_key_belongs_to_exactly_one_group():
    groups = (Environment, Episodes, Policy, ObsNorm, EpisodeCap, Frames, VBN)
    assert len(dataclasses.fields(GymParams().groups())) == len(groups)
    owners: dict[str, str] = {}
    for group in groups:
        for key in group().flat():
            assert key not in owners, f"{key} is in {owners.get(key)} and {group.__name__}"
            owners[key] = group.__name__
    # 0.1.0's 29, reward_shift, reward_floor, shared_seed, direct, bias, episode_cap_steps, episode_cap_lift
    assert sorted(owners) == sorted(FLAT_KEYS) and len(FLAT_KEYS) == 36


def test_the_flat_keys_are_the_options_contract():
    """Option checking, spec binding and the resolved config read the flat keys with today's defaults."""
    assert GymProblem.Params is GymParams
    signature = inspect.signature(GymProblem)
    assert list(signature.parameters) == list(FLAT_KEYS)  # one spelling: no group keyword (frames) at the boundary
    assert list(FLAT_KEYS) == [f.name for f in dataclasses.fields(GymParams)]
    assert signature.parameters["env"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert signature.parameters["obs_norm_prob"].default == 0.01 and signature.parameters["hidden"].default == (64, 64)
    # the resolved config of 0.1.0's run (its config.toml) comes out again, key for key and value for value
    saved = tomllib.loads(V010_RUN.read_text())
    resolved = run_config("pgpe:popsize=16", "gym:Pendulum-v1,hidden=[8],obs_norm=true,obs_norm_prob=0.5",
                          stop={"generations": 4})
    # options added since, at their defaults (issue 18; direct: issue 23; bias: issue 22)
    added = [("reward_shift", 0.0), ("shared_seed", False), ("direct", True), ("bias", True)]
    assert list(resolved.to_dict()["problem"].items()) == list(saved["problem"].items()) + added


def test_a_group_object_is_deprecated_and_the_warning_spells_its_flat_keys():
    with pytest.warns(DeprecationWarning) as record:
        GymProblem("CartPole-v1", frames=Frames(skip=2))
    assert str(record[0].message) == (
        "GymProblem(frames=Frames(skip=2, stack=None, atari=None)) is deprecated: give the flat keys instead, "
        "frame_skip=2, frame_stack=None, atari=None (the one spelling of specs, TOML files and Python)")
    assert record[0].filename == __file__  # the warning points at the caller's line


def test_a_value_given_twice_or_an_unknown_key_is_refused():
    with pytest.raises(bb.ConfigError) as info, pytest.warns(DeprecationWarning):
        GymProblem("CartPole-v1", obs_norm=ObsNorm(prob=0.5), obs_clip=3.0)
    assert str(info.value) == ("obs_clip is given twice: as obs_clip= and in obs_norm=ObsNorm(prob=0.5, clip=5.0); "
                               "give it in one place")
    with pytest.raises(bb.errors.UnknownNameError) as info:
        GymProblem("CartPole-v1", obs_nrom=True)
    assert str(info.value).startswith("problem 'gym' has no option 'obs_nrom'. Did you mean 'obs_norm'? Options: env, ")
    with pytest.raises(bb.ConfigError, match=r"^obs_norm= takes ObsNorm\(\.\.\.\) or a plain value, got VBN\(size=128"):
        GymProblem("CartPole-v1", obs_norm=VBN())
    with pytest.raises(bb.ConfigError, match=r"^frames must be Frames\(skip, stack, atari\), got 2; in a spec or TOML "
                                             r"file, give frame_skip=, frame_stack= and atari="):
        GymProblem("CartPole-v1", frames=2)
    with pytest.raises(bb.errors.UnknownNameError, match="has no option 'obs_nrom'. Did you mean 'obs_norm'"):
        bb.make_problem("gym:CartPole-v1,obs_nrom=true")


def test_groups_check_their_values_when_made_and_name_the_flat_key():
    cases = [
        (lambda: ObsNorm(prob=2.0), "obs_norm_prob must be <= 1.0, got 2.0"),
        (lambda: ObsNorm(clip=0), "obs_clip must be > 0, got 0.0"),
        (lambda: Episodes(0), "episodes must be >= 1, got 0"),
        (lambda: Episodes(slots=0), "slots must be a positive integer (environments stepped side by side) or "
                                    "'auto' (measured per task and machine), got 0"),
        (lambda: Frames(skip=0), "frame_skip must be >= 1, got 0"),
        (lambda: VBN(size=1), "vbn_size must be >= 2, got 1"),
        (lambda: EpisodeCap("adaptive", factor=3.0),
         "episode_cap_factor applies to episode_cap='mean', but episode_cap='adaptive'"),
        (lambda: Policy(action_bounds="squash"), "action_bounds must be one of 'tanh', 'clip', got 'squash'."),
        (lambda: Policy(torch_threads=0), "torch_threads must be >= 1, got 0"),
        (lambda: Environment(3), "env must be a Gymnasium id such as 'CartPole-v1' or a factory, got 3"),
        (lambda: Environment(kwargs=[1]), "env_kwargs must be a table of keyword arguments for the environment, "
                                          "got [1]"),
    ]
    for make, message in cases:
        with pytest.raises(bb.ConfigError) as info:
            make()
        assert str(info.value) == message
    # a group that is off is still checked, as the flat options always were
    with pytest.raises(bb.ConfigError, match="^vbn_seed must be >= 0, got -1$"):
        GymProblem("CartPole-v1", vbn_seed=-1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ObsNorm().prob = 0.5
