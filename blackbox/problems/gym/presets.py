"""Recommended settings per Gymnasium task: what ``blackbox run --problem gym:<id>`` uses unless told otherwise.

A preset holds, per strategy, problem options, strategy options and run settings (a budget and a
goal), and names the strategy that solves the task in its budget: ``blackbox run`` takes that one
when the user names none (:func:`recommended_strategy`), fills in every setting the user did not
give from the preset (``--no-preset`` turns this off), and records the resolved values in
``config.toml``. Budgets are a few times the median need measured with
``benchmarks/rl_presets.py`` (BENCHMARKS.md, "Gymnasium presets"), on 2 cores. Where each setting
comes from:

- CartPole-v1: OpenAI-ES tuned for speed with ``benchmarks/cartpole_solve.py``; SNES (sigma 0.1,
  its default population 4 + 3 ln n) needs about 10x fewer environment steps.
- Acrobot-v1: OpenAI-ES, popsize 64, sigma 0.1, lr 0.03 (as estool's and the README's frame-skip
  example), the default MLP.
- MountainCarContinuous-v0, Pendulum-v1: ARS with RL Baselines3 Zoo's tuned settings (``ars.yml``:
  4 directions, the best 1, an MLP of 16 ReLU units; delta_std 0.2 on MountainCar, 0.1 on
  Pendulum; MountainCar with observation normalization). OpenAI-ES stays at MountainCar's "do
  nothing" optimum (return 0) and near -500 on Pendulum. On Pendulum every row of a generation
  plays the same 3 start states (``shared_seed``, ``episodes=3``) instead of observation
  normalization: its return depends on the start more than on the policy.
- LunarLander-v3: OpenAI-ES (popsize 128, sigma 0.05, lr 0.02, observation normalization).
- Swimmer-v5: SNES with the paper's defaults (Wierstra et al. 2014) on the linear policy of Mania et
  al. 2018 (ARS's own V1 settings, 1 direction, did not reach 325 in 1M steps here).
- Hopper-v5, HalfCheetah-v5: ARS V2-t, the settings of Mania et al. 2018 (table 9): linear policy,
  observation normalization from every episode; Hopper 8 directions, the best 4, step 0.01, noise
  0.025, its survival bonus removed during training (``reward_shift=-1``); HalfCheetah 32 directions,
  the best 4, step 0.02, noise 0.03.
- Other MuJoCo locomotion tasks, and OpenAI-ES asked for on any of them: the settings of Salimans et
  al. 2017 (sigma 0.02, Adam lr 0.01, L2 0.005, observation normalization, 1 episode per evaluation)
  with a population that fits one machine. The paper gathered observation statistics from 1% of its
  ~10,000 episodes a generation; of a population of 64 that would be one episode every other
  generation, so the presets gather them from every episode (as EvoTorch does).
- Atari (Pong): the paper's setting for Atari: its convnet (``policy="cnn"``) with virtual batch
  normalization, the preprocessing of Mnih et al. (frame skip 4, 4 stacked 84x84 grayscale frames,
  up to 30 no-ops), sigma 0.02, Adam lr 0.01, L2 0.005, with a population of 32 that fits one
  machine (the paper used hundreds of workers); an hour's budget. Pong is not solved in an hour on
  a laptop: the README reports what a short run reaches.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PRESETS", "Preset", "recommended", "recommended_strategy", "missing_preset_note"]


@dataclass(frozen=True)
class Preset:
    """One task's settings: ``strategy`` is the one a run takes when the user names none;
    ``strategies`` maps strategy names to their options; ``problem_for`` adds problem options that
    go with one strategy only (a linear policy for ARS); ``source`` says where the settings come from."""

    strategy: str = "openai-es"
    strategies: dict[str, dict[str, Any]] = field(default_factory=dict)
    problem: dict[str, Any] = field(default_factory=dict)
    problem_for: dict[str, dict[str, Any]] = field(default_factory=dict)
    run: dict[str, Any] = field(default_factory=dict)
    run_for: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: str = ""


_PAPER = {"sigma": 0.02, "lr": 0.01, "weight_decay": 0.005}
_MUJOCO_PROBLEM = {"obs_norm": True, "obs_norm_prob": 1.0}
_MUJOCO = Preset(strategies={"openai-es": {**_PAPER, "popsize": 64}}, problem=_MUJOCO_PROBLEM,
                 run={"max_time": 1800.0}, source="Salimans et al. 2017 (OpenAI-ES on MuJoCo)")
_ARS_LINEAR = {"policy": "linear"}
_ZOO_ARS_MLP = {"hidden": [16], "activation": "relu", "obs_norm": True, "obs_norm_prob": 1.0}


def _ars_mujoco(ars: dict[str, Any], problem: dict[str, Any], goal: float, steps: int, source: str) -> Preset:
    """ARS V2-t on a MuJoCo task; OpenAI-ES with the paper's settings when asked for."""
    return Preset(strategy="ars", strategies={"ars": ars, "openai-es": {**_PAPER, "popsize": 64}},
                  problem=_MUJOCO_PROBLEM, problem_for={"ars": {**_ARS_LINEAR, **problem}},
                  run={"goal": goal, "goal_episodes": 10, "max_time": 1800.0}, run_for={"ars": {"max_steps": steps}},
                  source=source)


PRESETS: dict[str, Preset] = {
    "CartPole-v1": Preset(
        strategies={"openai-es": {"popsize": 256, "sigma": 0.1, "lr": 0.1}, "snes": {"sigma": 0.1}},
        run={"generations": 100, "goal": 475.0, "goal_episodes": 20},
        source="OpenAI-ES tuned with benchmarks/cartpole_solve.py"),
    "CartPole-v0": Preset(
        strategies={"openai-es": {"popsize": 64, "sigma": 0.1, "lr": 0.03}},
        run={"generations": 100, "goal": 195.0, "goal_episodes": 100}, source="OpenAI-ES, as Acrobot-v1"),
    "Acrobot-v1": Preset(
        strategies={"openai-es": {"popsize": 64, "sigma": 0.1, "lr": 0.03}},
        run={"generations": 100, "goal": -100.0, "goal_episodes": 20}, source="OpenAI-ES, as estool's examples"),
    "Pendulum-v1": Preset(
        strategy="ars",
        strategies={"ars": {"popsize": 8, "top": 1, "sigma": 0.1, "lr": 0.018},
                    "openai-es": {"popsize": 64, "sigma": 0.05, "lr": 0.02}},
        problem_for={"ars": {"hidden": [16], "activation": "relu", "episodes": 3, "shared_seed": True},
                     "openai-es": {"obs_norm": True}},
        run={"goal": -200.0, "goal_episodes": 20, "max_time": 600.0},
        run_for={"ars": {"max_steps": 6_000_000}, "openai-es": {"generations": 300}},
        source="ARS with RL Baselines3 Zoo's tuned Pendulum-v1 settings (ars.yml), 3 shared start states"),
    "MountainCarContinuous-v0": Preset(
        strategy="ars",
        strategies={"ars": {"popsize": 8, "top": 1, "sigma": 0.2, "lr": 0.018},
                    "openai-es": {"popsize": 64, "sigma": 0.1, "lr": 0.03}},
        problem_for={"ars": _ZOO_ARS_MLP},
        run={"goal": 90.0, "goal_episodes": 20, "max_time": 600.0},
        run_for={"ars": {"max_steps": 1_000_000}, "openai-es": {"generations": 100}},
        source="ARS with RL Baselines3 Zoo's tuned MountainCarContinuous-v0 settings (ars.yml)"),
    "LunarLander-v3": Preset(
        strategies={"openai-es": {"popsize": 128, "sigma": 0.05, "lr": 0.02}},
        problem={"obs_norm": True},
        run={"generations": 500, "goal": 200.0, "goal_episodes": 20},
        source="OpenAI-ES with observation normalization"),
    "ALE/Pong-v5": Preset(
        strategies={"openai-es": {**_PAPER, "popsize": 32}}, problem={"policy": "cnn", "vbn": True},
        run={"max_time": 3600.0}, source="Salimans et al. 2017 (Atari: convnet, VBN)"),
    "Swimmer-v5": Preset(
        strategy="snes", strategies={"snes": {}, "openai-es": {**_PAPER, "popsize": 64}},
        problem_for={"snes": _ARS_LINEAR, "openai-es": _MUJOCO_PROBLEM},
        run={"goal": 325.0, "goal_episodes": 10, "max_time": 1800.0}, run_for={"snes": {"max_steps": 3_000_000}},
        source="SNES with its paper's defaults on the linear policy of Mania et al. 2018"),
    "Hopper-v5": _ars_mujoco({"popsize": 16, "top": 4, "sigma": 0.025, "lr": 0.01}, {"reward_shift": -1.0},
                             3000.0, 6_000_000, "ARS V2-t, Mania et al. 2018 (survival bonus removed in training)"),
    "HalfCheetah-v5": _ars_mujoco({"popsize": 64, "top": 4, "sigma": 0.03, "lr": 0.02}, {}, 3000.0, 6_000_000,
                                  "ARS V2-t, Mania et al. 2018"),
    **{env: _MUJOCO for env in ("Walker2d-v5", "Ant-v5", "Humanoid-v5", "InvertedPendulum-v5",
                                "InvertedDoublePendulum-v5")},
}


def recommended_strategy(env: str) -> str | None:
    """The strategy a run on ``env`` takes when the user names none (None: no preset)."""
    preset = PRESETS.get(env)
    return None if preset is None else preset.strategy


def recommended(env: str, strategy: str) -> dict[str, dict[str, Any]]:
    """The preset of ``env`` for ``strategy``: ``{"problem": {...}, "strategy": {...}, "run": {...}}``.

    Unknown tasks get empty sections; a strategy without tuned options gets the task's problem
    options, goal and time budget.
    """
    preset = PRESETS.get(env, Preset())
    run = {**preset.run, **preset.run_for.get(strategy, {})}
    return copy.deepcopy({
        "problem": {**preset.problem, **preset.problem_for.get(strategy, {})},
        "strategy": preset.strategies.get(strategy, {}),
        "run": run,
    })


def missing_preset_note(env: Any, strategy: str, options: dict[str, Any]) -> str | None:
    """The note a run prints when ``env`` has no preset: say so, and which strategy options it uses."""
    if not isinstance(env, str) or env in PRESETS:
        return None
    given = ", ".join(f"{key}={value}" for key, value in options.items() if key != "name")
    return (f"gym:{env} has no preset (tuned tasks: {', '.join(sorted(PRESETS))}); this run uses {strategy} "
            f"with {given or 'its defaults'} and the problem's defaults")
