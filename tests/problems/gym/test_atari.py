"""Atari through ale-py: the paper's preprocessing, the convnets with VBN, a tiny ES run on Pong (smoke)."""

import importlib.util

import numpy as np
import pytest

from tests.helpers.extras import reason

gym = pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install blackbox-es[gym])")
torch = pytest.importorskip("torch", reason=reason("atari", "torch"))  # the convnet policies
pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("ale_py") is None, reason='needs pip install "blackbox-es[atari]"'),
    pytest.mark.skipif(importlib.util.find_spec("cv2") is None, reason='needs pip install "blackbox-es[atari]"'),
]

import blackbox as bb  # noqa: E402
from blackbox.problems.gym.convnets import AtariCNN, initial_params  # noqa: E402
from blackbox.problems.gym.presets import recommended  # noqa: E402
from blackbox.problems.gym.problem import GymProblem  # noqa: E402


@pytest.fixture(scope="module")
def pong():
    return GymProblem("ALE/Pong-v5", policy="cnn", vbn=True, vbn_size=16, max_episode_steps=120)


def test_pong_is_preprocessed_as_in_the_paper(pong):
    assert pong.atari and pong.frame_skip == 4 and pong.frame_stack == 4
    assert pong.observation_space.shape == (4, 84, 84) and pong.observation_space.dtype == np.uint8
    assert pong.env_kwargs["frameskip"] == 1 and pong.step_limit == 30
    assert pong.reference.shape == (16, 4 * 84 * 84) and pong.reference.dtype == np.uint8
    summary = pong.describe()
    assert summary["policy"] == "cnn 4x84x84->6 vbn (677990 parameters)"
    assert summary["frame_skip"] == 4 and summary["vbn"]["size"] == 16
    # the full game's limit comes from ALE's frame cap: 108000 frames = 27000 decisions
    assert GymProblem("ALE/Pong-v5", policy="cnn").step_limit == 27000


def test_convnet_layouts():
    paper = AtariCNN((4, 84, 84), 6, "cnn")
    nature = AtariCNN((4, 84, 84), 6, "nature-cnn", vbn=True)
    assert sum(p.numel() for p in paper.parameters()) == (16 * 4 * 64 + 16) + (32 * 16 * 16 + 32) + (
        2592 * 256 + 256) + (256 * 6 + 6)
    assert [type(m).__name__ for m in nature.features][:3] == ["Conv2d", "VirtualBatchNorm", "ReLU"]
    params = initial_params(nature, np.random.default_rng(0))
    assert params.shape == (sum(p.numel() for p in nature.parameters()),)
    np.testing.assert_array_equal(params, initial_params(nature, np.random.default_rng(0)))
    x = torch.zeros(2, 4 * 84 * 84)
    assert paper(x).shape == (2, 6)
    channels_last = AtariCNN((84, 84, 4), 3)
    assert channels_last(torch.zeros(84 * 84 * 4)).shape == (3,)
    with pytest.raises(bb.ConfigError, match="too small for the 'cnn' convnet"):
        AtariCNN((4, 10, 10), 6)
    with pytest.raises(bb.ConfigError, match="the convnet policies need image observations"):
        GymProblem("CartPole-v1", policy="cnn")


def test_batched_equals_one_by_one_on_pong(pong):
    params = pong.initial_params(np.random.default_rng(0)) + 0.05 * np.random.default_rng(1).standard_normal(
        (3, pong.dim))
    seeds = np.array([5, 5, 9])
    a = pong.evaluate(params, seeds)
    single = GymProblem("ALE/Pong-v5", policy="cnn", vbn=True, vbn_size=16, max_episode_steps=120, batched=False)
    b = single.evaluate(params, seeds)
    np.testing.assert_array_equal(a.fitness, b.fitness)
    np.testing.assert_array_equal(a.steps, b.steps)
    assert np.all(a.steps <= 30)


def test_a_tiny_es_run_on_pong(pong):
    es = bb.make_strategy("openai-es", dim=pong.dim, x0=pong.initial_params(np.random.default_rng(0)),
                          popsize=4, sigma=0.02, seed=0)
    result = bb.optimize(es, pong, generations=2, seed=0)
    assert result.generations == 2 and result.steps > 0 and np.isfinite(result.records[-1].mean)


def test_pong_preset():
    preset = recommended("ALE/Pong-v5", "openai-es")
    assert preset["problem"] == {"policy": "cnn", "vbn": True}
    assert preset["strategy"]["sigma"] == 0.02 and preset["run"]["max_time"] == 3600.0
