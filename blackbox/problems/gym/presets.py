"""Recommended settings per Gymnasium task: what ``blackbox run --problem gym:<id>`` uses unless told otherwise.

A preset holds problem options, strategy options (per strategy name), and run settings (a budget
and a goal). ``blackbox run`` fills in every setting the user did not give from the preset of the
task (``--no-preset`` turns this off) and records the resolved values in ``config.toml``.

- CartPole-v1: tuned for speed with ``benchmarks/cartpole_solve.py`` (see the README for figures):
  solved (center's mean return >= 475 over 20 fresh episodes) by OpenAI-ES in a few seconds; SNES
  (sigma 0.1, its default population 4 + 3 ln n) needs about 10x fewer environment steps and is
  faster still on one core (``benchmarks/peers_solve.py cartpole``).
- MuJoCo locomotion: the settings of Salimans et al. 2017 (sigma 0.02, Adam lr 0.01, L2 0.005,
  observation normalization, 1 episode per evaluation) with a population that fits one machine.
  The paper gathered observation statistics from 1% of its ~10,000 episodes a generation; of a
  population of 64 that would be one episode every other generation, so the presets gather them
  from every episode (as EvoTorch does): folding them in costs little beside the simulation.
- Atari (Pong): the paper's setting for Atari: its convnet (``policy="cnn"``) with virtual batch
  normalization, the preprocessing of Mnih et al. (frame skip 4, 4 stacked 84x84 grayscale frames,
  up to 30 no-ops), sigma 0.02, Adam lr 0.01, L2 0.005, with a population of 32 that fits one
  machine (the paper used hundreds of workers); an hour's budget. Pong is not solved in an hour on
  a laptop: the README reports what a short run reaches.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["PRESETS", "recommended"]

_PAPER = {"sigma": 0.02, "lr": 0.01, "weight_decay": 0.005}
_MUJOCO = {
    "problem": {"obs_norm": True, "obs_norm_prob": 1.0},
    "strategy": {"openai-es": {**_PAPER, "popsize": 64}},
    "run": {"max_time": 1800.0},
}

PRESETS: dict[str, dict[str, Any]] = {
    "CartPole-v1": {
        "problem": {},
        "strategy": {"openai-es": {"popsize": 256, "sigma": 0.1, "lr": 0.1}, "snes": {"sigma": 0.1}},
        "run": {"generations": 100, "goal": 475.0, "goal_episodes": 20},
    },
    "CartPole-v0": {
        "problem": {},
        "strategy": {"openai-es": {"popsize": 64, "sigma": 0.1, "lr": 0.03}},
        "run": {"generations": 100, "goal": 195.0, "goal_episodes": 100},
    },
    "Acrobot-v1": {
        "problem": {},
        "strategy": {"openai-es": {"popsize": 64, "sigma": 0.1, "lr": 0.03}},
        "run": {"generations": 100, "goal": -100.0, "goal_episodes": 20},
    },
    "Pendulum-v1": {
        "problem": {"obs_norm": True},
        "strategy": {"openai-es": {"popsize": 64, "sigma": 0.05, "lr": 0.02}},
        "run": {"generations": 300},
    },
    "MountainCarContinuous-v0": {
        "problem": {},
        "strategy": {"openai-es": {"popsize": 64, "sigma": 0.1, "lr": 0.03}},
        "run": {"generations": 100, "goal": 90.0, "goal_episodes": 20},
    },
    "LunarLander-v3": {
        "problem": {"obs_norm": True},
        "strategy": {"openai-es": {"popsize": 128, "sigma": 0.05, "lr": 0.02}},
        "run": {"generations": 500, "goal": 200.0, "goal_episodes": 20},
    },
    "ALE/Pong-v5": {
        "problem": {"policy": "cnn", "vbn": True},
        "strategy": {"openai-es": {**_PAPER, "popsize": 32}},
        "run": {"max_time": 3600.0},
    },
    **{env: _MUJOCO for env in ("Hopper-v5", "HalfCheetah-v5", "Walker2d-v5", "Ant-v5", "Swimmer-v5",
                                "Humanoid-v5", "InvertedPendulum-v5", "InvertedDoublePendulum-v5")},
}


def recommended(env: str, strategy: str) -> dict[str, dict[str, Any]]:
    """The preset of ``env`` for ``strategy``: ``{"problem": {...}, "strategy": {...}, "run": {...}}``.

    Unknown tasks and strategies without tuned options get empty sections.
    """
    preset = PRESETS.get(env, {})
    return {
        "problem": copy.deepcopy(preset.get("problem", {})),
        "strategy": copy.deepcopy(preset.get("strategy", {}).get(strategy, {})),
        "run": copy.deepcopy(preset.get("run", {})),
    }
