"""Recommended settings per Gymnasium task: what ``blackbox run --problem gym:<id>`` uses unless told otherwise.

A preset holds, per strategy, problem options, strategy options and run settings (a budget and a
goal), and names the strategy that solves the task in its budget: ``blackbox run`` takes that one
when the user names none (:func:`recommended_strategy`), fills in every setting the user did not
give from the preset (``--no-preset`` turns this off), and records the resolved values in
``config.toml``. Budgets are a few times the median need measured with
``benchmarks/rl_presets.py`` (BENCHMARKS.md, "Gymnasium presets"), on 2 cores.

Goals are the field's standard bars, never lowered (:func:`standard_goal`): Gymnasium's
``reward_threshold`` read from its registry; where Gymnasium has none, or where no published ES/ARS
result reaches it on average, the threshold of Mania et al. 2018 (ARS), Table 1 (:data:`ARS_GOALS`),
and the run also reports its best return against Gymnasium's bar; Pendulum-v1, which neither gives a
bar, the customary -200 (:data:`CUSTOMARY_GOALS`). Classic-control and Box2D tasks
confirm the goal over Gymnasium's customary 100 fresh episodes, MuJoCo tasks over 10 (an episode
there is 1,000 steps of a costlier simulator). A Box-action task without a preset gets ARS V2-t
with a linear policy and observation normalization (:data:`BOX_DEFAULT`), and so does another
version of a tuned task (Hopper-v4), whose note names the tuned version. Where each setting
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
  normalization: its return depends on the start more than on the policy. Five start states, not 3
  (which the center overfits: -145 on them, -311 over 100 fresh episodes on seed 104), with a budget
  of 10M steps and 20 minutes. The population's episodes are cut at 50 of the task's 200 steps
  (``episode_cap="fixed"``): the swing-up, in which policies' costs differ; once up, a pendulum
  costs nearly nothing a step. It takes about 4x fewer steps than full episodes on the tuning seeds.
- LunarLander-v3: OpenAI-ES (popsize 128, sigma 0.05, lr 0.02, observation normalization).
- Swimmer-v5: SNES with the paper's defaults (Wierstra et al. 2014) on the bias-free linear policy
  of Mania et al. 2018, trained on episodes cut at 400 of the task's 1,000 steps (``episode_cap="fixed"``:
  a swimmer that moves well for 400 steps moves well for 1,000, and the cut episodes cost 40%); the
  center row plays full episodes, so its return, the goal screen and the curve are the task's own.
  ARS's own V1 settings (1 direction) did not reach 325 in 1M steps here.
- Hopper-v5: SNES with the paper's defaults (population 14, sigma 0.1) on the linear policy of Mania
  et al. 2018 with observation normalization from every episode, its survival bonus removed during
  training (``reward_shift=-1``): on the tuning seeds 0-4 it needed 0.50M-1.05M steps, where ARS V2-t
  with table 9's settings (``--strategy ars``: 8 directions, the best 4, step 0.01, noise 0.025) needed
  1.41M-2.40M and did not solve seed 0 in 6M.
- HalfCheetah-v5: CMA-ES (population 48, sigma 0.1) on the linear policy of Mania et al. 2018 with
  observation normalization from every episode, 15M steps, its population trained on episodes cut at
  500 of the task's 1,000 steps (``episode_cap="fixed"``: a cheetah that runs well for 500 steps mostly
  runs well for 1,000; the center row plays full episodes). Chosen on the tuning seeds 0-19 at equal
  budgets (15M steps), by seeds solved, then median steps: CMA-ES 18/20, median 2.33M, worst 12.6M
  (seeds 2 and 5 ended at centers of 2,109 and 4,017); ARS V2-t with the settings of Mania et al. 2018 (table 9:
  32 directions, the best 4, step 0.02, noise 0.03) and the same cut, the preset before, 18/20, median
  2.79M, worst 8.48M (seeds 2 and 18 unsolved); ARS on whole episodes 4.6M-9.4M on seeds 0-4, with a
  cut at 300 8/10 on seeds 0-9. ``--strategy ars`` gives those ARS settings with a 30M-step budget.
  What the cut costs: the second half of an episode is never trained, and on some seeds the center's
  full-episode return swings (the cheetah flips late), so its confirmation waits. Where CMA-ES fails,
  it stalls at a lower gait (seed 2 near 2,000 from 2M steps on); no restart rule is in place. On the
  fresh seeds 100-109: 10/10, median 2,275,000 steps, worst 4,475,000 (ARS: 10/10, median 6.24M, worst 14.7M);
  on ten seeds run only after the choice, 110-119: 9/10 (seed 111 climbed to 3,406 in 15M steps).
- Walker2d-v5, Ant-v5, InvertedPendulum-v5, InvertedDoublePendulum-v5, Reacher-v5:
  ARS V2-t (linear policy, observation normalization); Walker2d and Ant with the settings of Mania
  et al. 2018 (table 9) and their survival bonus removed in training (``reward_shift=-1``, as RL Zoo's
  ARS settings; without it Walker2d stood still at a return near 1,000, the bonus, for 5M steps on
  seed 0), the others with settings of the same family, not searched. Each ``source`` says whether
  it is confirmed on fresh seeds here.
- BipedalWalker-v3: ARS V2 (linear policy, observation normalization from every episode), 16
  directions, all of them, step 0.02, noise 0.03, with training rewards below -1 counted as -1
  (``reward_floor=-1``): a fall costs -100, so with the task's own reward every perturbation that
  tried to walk and fell ranked below standing still, and the center stood still (a return near 0
  through 4.9M steps on seed 100 with 16 directions, the best 8; RL Zoo's settings, a 16-unit MLP
  with the reward shifted by -0.1 a step, were at a center of 42 after 19M steps on seed 0).
- Humanoid-v5: a cluster task: OpenAI-ES on a 256x256 MLP with observation normalization and a
  population of 1,440 (Salimans et al. 2017 ran 1,440 workers); ``--strategy ars`` gives the ARS
  paper's V2-t settings (230 directions, linear policy).
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
import functools
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

__all__ = ["PRESETS", "Preset", "ARS_GOALS", "CUSTOMARY_GOALS", "BOX_DEFAULT", "recommended", "recommended_strategy", "training_shift",
           "training_reward_note", "training_changes", "missing_preset_note", "standard_goal", "goal_notes",
           "preset_of", "tuned_version"]


if TYPE_CHECKING:
    from gymnasium.envs.registration import EnvSpec

#: Options by name, as a spec or a TOML table gives them (numbers, strings, booleans, lists of those).
Options = dict[str, object]


@dataclass(frozen=True)
class Preset:
    """One task's settings: ``strategy`` is the one a run takes when the user names none;
    ``strategies`` maps strategy names to their options; ``problem_for`` adds problem options that
    go with one strategy only (a linear policy for ARS); ``source`` says where the settings come from."""

    strategy: str = "openai-es"
    strategies: dict[str, Options] = field(default_factory=dict)
    problem: Options = field(default_factory=dict)
    problem_for: dict[str, Options] = field(default_factory=dict)
    run: Options = field(default_factory=dict)
    run_for: dict[str, Options] = field(default_factory=dict)
    source: str = ""


#: Mania et al. 2018 (ARS), Table 1 thresholds, for tasks where Gymnasium has no ``reward_threshold``
#: or no published ES/ARS result reaches it on average.
ARS_GOALS: dict[str, float] = {"Swimmer-v5": 325.0, "Hopper-v5": 3120.0, "Walker2d-v5": 4390.0, "Ant-v5": 3580.0,
                               "Humanoid-v5": 6000.0}
ARS_SOURCE = "Mania et al. 2018 (ARS), Table 1"
#: Goals of tasks that neither Gymnasium nor the ARS paper gives one: Pendulum-v1's customary -200.
CUSTOMARY_GOALS: dict[str, float] = {"Pendulum-v1": -200.0}
CUSTOMARY_SOURCE = "the customary bar: Gymnasium and the ARS paper give none"


_PAPER: Options = {"sigma": 0.02, "lr": 0.01, "weight_decay": 0.005}
_MUJOCO_PROBLEM: Options = {"obs_norm": True, "obs_norm_prob": 1.0}
_ARS_LINEAR: Options = {"policy": "linear"}
_ZOO_ARS_MLP: Options = {"hidden": [16], "activation": "relu", "obs_norm": True, "obs_norm_prob": 1.0}


_UNCONFIRMED = "; not yet confirmed on fresh seeds here"


def _ars_mujoco(ars: Options, problem: Options, steps: int, source: str,
                max_time: float = 1800.0, goal_episodes: int = 10,
                more: dict[str, tuple[Options, Options, int]] | None = None, default: str = "ars") -> Preset:
    """ARS V2-t on a MuJoCo task; OpenAI-ES with the paper's settings when asked for; ``more`` other
    strategies on the same linear policy, each ``name: (options, problem options, steps)``;
    ``default``: the strategy a run takes when none is named (ARS, or one of ``more``)."""
    strategies: dict[str, Options] = {"ars": ars, "openai-es": {**_PAPER, "popsize": 64}}
    problem_for: dict[str, Options] = {"ars": {**_ARS_LINEAR, **problem}}
    run_for: dict[str, Options] = {"ars": {"max_steps": steps}}
    for name, (options, its_problem, its_steps) in (more or {}).items():
        strategies[name], problem_for[name] = options, {**_ARS_LINEAR, **its_problem}
        run_for[name] = {"max_steps": its_steps}
    return Preset(strategy=default, strategies=strategies, problem=_MUJOCO_PROBLEM, problem_for=problem_for,
                  run={"goal_episodes": goal_episodes, "max_time": max_time}, run_for=run_for, source=source)


#: What a Box-action task without a preset gets: ARS V2-t, linear policy, observation normalization
#: (the settings of Mania et al. 2018 for Hopper, which make progress across MuJoCo), 30 minutes.
BOX_DEFAULT = _ars_mujoco({"popsize": 16, "top": 4, "sigma": 0.025, "lr": 0.02}, {}, 100_000_000,
                          "default for Box-action tasks without a preset: ARS V2-t (Mania et al. 2018)")


PRESETS: dict[str, Preset] = {
    "CartPole-v1": Preset(
        strategies={"openai-es": {"popsize": 256, "sigma": 0.1, "lr": 0.1}, "snes": {"sigma": 0.1}},
        run={"generations": 100, "goal_episodes": 100},
        source="OpenAI-ES tuned with benchmarks/cartpole_solve.py"),
    "CartPole-v0": Preset(
        strategies={"openai-es": {"popsize": 64, "sigma": 0.1, "lr": 0.03}},
        run={"generations": 100, "goal_episodes": 100}, source="OpenAI-ES, as Acrobot-v1"),
    "Acrobot-v1": Preset(
        strategies={"openai-es": {"popsize": 64, "sigma": 0.1, "lr": 0.03}},
        run={"generations": 100, "goal_episodes": 100}, source="OpenAI-ES, as estool's examples"),
    "Pendulum-v1": Preset(
        strategy="ars",
        strategies={"ars": {"popsize": 8, "top": 1, "sigma": 0.1, "lr": 0.018},
                    "openai-es": {"popsize": 64, "sigma": 0.05, "lr": 0.02}},
        problem_for={"ars": {"hidden": [16], "activation": "relu", "episodes": 5, "shared_seed": True,
                             "episode_cap": "fixed", "episode_cap_steps": 50},
                     "openai-es": {"obs_norm": True}},
        run={"goal_episodes": 100, "max_time": 1200.0},
        run_for={"ars": {"max_steps": 10_000_000}, "openai-es": {"generations": 300}},
        source="ARS with RL Baselines3 Zoo's tuned Pendulum-v1 settings (ars.yml), 5 shared start states "
               "(3 overfit them: seed 104 -145 on its starts, -311 over 100 fresh episodes); 5 chosen on "
               "tuning seeds 0-2 (solved, 2.7M-5.7M steps; 3 and 4, run after, solved in 5.2M and 3.5M); "
               "the population's episodes cut at 50 of 200 steps (the swing-up, where the costs differ; the "
               "center row plays full ones, counted): tuning seeds 0-4 in 645k-1.05M steps (cut at 25: "
               "536k-1.19M, at 75: median 1.06M, worst 1.65M)"),
    "MountainCarContinuous-v0": Preset(
        strategy="ars",
        strategies={"ars": {"popsize": 8, "top": 1, "sigma": 0.2, "lr": 0.018},
                    "openai-es": {"popsize": 64, "sigma": 0.1, "lr": 0.03}},
        problem_for={"ars": _ZOO_ARS_MLP},
        run={"goal_episodes": 100, "max_time": 600.0},
        run_for={"ars": {"max_steps": 1_000_000}, "openai-es": {"generations": 100}},
        source="ARS with RL Baselines3 Zoo's tuned MountainCarContinuous-v0 settings (ars.yml), where "
               "OpenAI-ES stays at the do-nothing optimum (return 0); 10/10 on seeds 100-109"),
    "LunarLander-v3": Preset(
        strategies={"openai-es": {"popsize": 128, "sigma": 0.05, "lr": 0.02}},
        problem={"obs_norm": True},
        run={"generations": 500, "goal_episodes": 100},
        source="OpenAI-ES with observation normalization; 10/10 on seeds 100-109"),
    "BipedalWalker-v3": _ars_mujoco(
        {"popsize": 32, "top": 16, "sigma": 0.03, "lr": 0.02}, {"reward_floor": -1.0}, 60_000_000,
        "ARS V2 (linear policy, observation normalization), 16 directions, all of them, step 0.02, noise 0.03; "
        "training rewards below -1 count as -1 (reward_floor: a fall's -100 made every seed stand still); "
        "5/5 on seeds 100-104 (the slowest in 38.2M steps, 6,023 s)", max_time=10800.0, goal_episodes=100),
    "ALE/Pong-v5": Preset(
        strategies={"openai-es": {**_PAPER, "popsize": 32}}, problem={"policy": "cnn", "vbn": True},
        run={"max_time": 3600.0}, source="Salimans et al. 2017 (Atari: convnet, VBN)"),
    "Swimmer-v5": Preset(
        strategy="snes", strategies={"snes": {"sigma": 0.4}, "openai-es": {**_PAPER, "popsize": 64}},
        problem_for={"snes": {**_ARS_LINEAR, "bias": False, "episode_cap": "fixed", "episode_cap_steps": 400},
                     "openai-es": _MUJOCO_PROBLEM},
        run={"goal_episodes": 10, "max_time": 1800.0}, run_for={"snes": {"max_steps": 3_000_000}},
        source="SNES (its default population, 12; initial sigma 0.4) on the linear policy of Mania et al. "
               "2018, which has no bias (M x), trained on episodes cut at 400 of Swimmer's 1,000 steps (the "
               "center row plays full episodes, counted); chosen on tuning seeds 0-39: sigma 0.4 40/40, median "
               "60.9k steps, 90th percentile 98.6k, mean 62.8k; sigma 0.1 (SNES's default) 81.2k, 145k, 97.0k; "
               "0.3 58.0k, 139k, 67.6k; population 16 at 0.3 59.2k, 81.4k, 69.7k (seeds 0-19: 0.2 63.8k, 0.5 "
               "52.2k but 226k at worst; population 8 19/20); full episodes: 126k-266k on seeds 0-9; cut at 300 "
               "steps: 8/10; at 500: 10/10, median 91k against 72.5k; with a bias, population 12 "
               "was 8/10 on seeds 100-109 and "
               "population 26 needed 297k-513k steps on seeds 0-4; ARS V1 as RL Zoo's, bias-free from zero "
               "weights, 7/10 within 600k; 10/10 on seeds 100-109"),
    "Hopper-v5": Preset(
        strategy="snes",
        strategies={"snes": {}, "ars": {"popsize": 16, "top": 4, "sigma": 0.025, "lr": 0.01},
                    "openai-es": {**_PAPER, "popsize": 64}},
        problem=_MUJOCO_PROBLEM,
        problem_for={"snes": {**_ARS_LINEAR, "reward_shift": -1.0}, "ars": {**_ARS_LINEAR, "reward_shift": -1.0}},
        run={"goal_episodes": 10, "max_time": 1800.0},
        run_for={"snes": {"max_steps": 6_000_000}, "ars": {"max_steps": 6_000_000}},
        source="SNES with the paper's defaults (population 14, sigma 0.1) on the linear policy of Mania et al. "
               "2018 with observation normalization, the survival bonus removed in training; on tuning seeds "
               "1-4 it needed 0.89M, 0.98M, 0.56M and 1.05M steps, ARS V2-t with table 9's settings (--strategy "
               "ars) 1.94M, 1.57M, 1.41M and 2.40M, and seed 0 unsolved in 6M (SNES 0.50M); 10/10 on seeds 100-109"),
    "HalfCheetah-v5": _ars_mujoco({"popsize": 64, "top": 4, "sigma": 0.03, "lr": 0.02},
                                  {"episode_cap": "fixed", "episode_cap_steps": 500}, 30_000_000,
                                  "CMA-ES (population 48, sigma 0.1) on the linear policy of Mania et al. 2018 "
                                  "with observation normalization, 15M steps, its population trained on episodes "
                                  "cut at 500 of HalfCheetah's 1,000 steps (the center row plays full ones, "
                                  "counted); chosen on tuning seeds 0-19 within 15M steps: 18/20, median 2.33M "
                                  "steps, against ARS V2-t with Mania et al. 2018 table 9's settings and the same "
                                  "cut (--strategy ars), 18/20, median 2.79M; seeds 2 and 5 ended at centers of 2,109 and "
                                  "4,017; 10/10 on seeds 100-109 (median 2,275,000 steps, worst 4,475,000) and 9/10 on "
                                  "unseen seeds 110-119 (seed 111 at 3,406 after 15M). ARS keeps a 30M-step budget",
                                  max_time=7200.0, default="cma-es", more={
        "cma-es": ({"popsize": 48, "sigma": 0.1}, {"episode_cap": "fixed", "episode_cap_steps": 500}, 15_000_000)}),
    "Walker2d-v5": _ars_mujoco({"popsize": 80, "top": 30, "sigma": 0.025, "lr": 0.03}, {"reward_shift": -1.0},
                               75_000_000, "ARS V2-t, Mania et al. 2018 table 9 (survival bonus removed in "
                               "training, as RL Zoo's ars.yml); 4/5 on seeds 100-104 (seed 103's 75M steps ran out "
                               "with its best training return at 2,683, -1 a step)",
                               max_time=14400.0),
    "Ant-v5": _ars_mujoco({"popsize": 120, "top": 20, "sigma": 0.025, "lr": 0.015}, {"reward_shift": -1.0},
                          150_000_000, "ARS V2-t, Mania et al. 2018 table 9 (survival bonus removed in "
                          "training, as RL Zoo's ars.yml); 5/5 on seeds 100-104", max_time=28800.0),
    "InvertedPendulum-v5": _ars_mujoco({"popsize": 8, "top": 2, "sigma": 0.025, "lr": 0.02}, {}, 1_000_000,
                                       "ARS V2-t (linear policy, observation normalization), 4 directions, "
                                       "first settings tried (not searched); 10/10 on seeds 100-109",
                                       max_time=600.0),
    "InvertedDoublePendulum-v5": _ars_mujoco({"popsize": 16, "top": 4, "sigma": 0.025, "lr": 0.02}, {}, 10_000_000,
                                             "ARS V2-t (linear policy, observation normalization), 8 directions, "
                                             "the best 4, first settings tried (not searched); 10/10 on seeds "
                                             "100-109"),
    "Reacher-v5": _ars_mujoco({"popsize": 32, "top": 8, "sigma": 0.02, "lr": 0.02}, {}, 10_000_000,
                              "ARS V2-t (linear policy, observation normalization), 16 directions, the best 8, "
                              "first settings tried (not searched); 10/10 on seeds 100-109"),
    "Humanoid-v5": Preset(
        strategies={"openai-es": {**_PAPER, "popsize": 1440},
                    "ars": {"popsize": 460, "top": 230, "sigma": 0.0075, "lr": 0.02}},
        problem={"obs_norm": True, "obs_norm_prob": 1.0},
        problem_for={"openai-es": {"hidden": [256, 256]}, "ars": _ARS_LINEAR},
        run={"goal_episodes": 10, "max_steps": 500_000_000},
        source="a cluster task: OpenAI-ES on a 256x256 MLP, observation normalization, population 1,440 "
               "(Salimans et al. 2017's 1,440 workers); ars: Mania et al. 2018 table 9" + _UNCONFIRMED),
}


def tuned_version(env: str) -> str | None:
    """The preset's version of ``env``'s task when ``env`` itself has none (``Hopper-v4`` -> ``Hopper-v5``)."""
    if env in PRESETS or "-v" not in env:
        return None
    base = env.rsplit("-v", 1)[0]
    tuned = sorted(key for key in PRESETS if key.rsplit("-v", 1)[0] == base)
    return tuned[-1] if tuned else None


def _registry_spec(env: str) -> EnvSpec | None:
    """``env``'s registered spec, looked up without importing anything (None where there is none).

    An id naming a module (``my_package:MyEnv-v0``) is never looked up: ``gymnasium.spec`` and
    ``gymnasium.make`` would import that module, and resolving a config imports nothing it names
    (RELIABILITY.md: a config from elsewhere is treated like code only when a run is built)."""
    if not isinstance(env, str) or ":" in env:
        return None
    try:
        import gymnasium as gym
    except ImportError:
        return None
    return gym.registry.get(env)


@functools.lru_cache(maxsize=64)
def _box_actions(env: str) -> bool:
    """Whether the registered task ``env`` acts in a Box (False where it cannot be made here)."""
    if _registry_spec(env) is None:
        return False
    try:
        import gymnasium as gym

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            made = gym.make(env)
        try:
            return isinstance(made.action_space, gym.spaces.Box)
        finally:
            made.close()
    except Exception:  # an unknown or broken task: the problem itself says why when it is made
        return False


def preset_of(env: str) -> Preset | None:
    """The preset of ``env``: its own, else the Box-action default, else None.

    Another version of a tuned task (``Hopper-v4`` when the preset is ``Hopper-v5``) does not get
    the tuned preset (its settings were measured on that version only): it runs like any task
    without one, and its note names the tuned version (:func:`missing_preset_note`).
    """
    preset = PRESETS.get(env)
    if preset is not None:
        return preset
    return BOX_DEFAULT if env and _box_actions(env) else None


def standard_goal(env: str) -> tuple[float | None, str]:
    """The task's standard goal and where it comes from (``(None, "")`` where there is none).

    ARS_GOALS for the tasks listed there, CUSTOMARY_GOALS for those, else Gymnasium's ``reward_threshold``
    read from its registry.
    """
    if env in ARS_GOALS:
        return ARS_GOALS[env], ARS_SOURCE
    if env in CUSTOMARY_GOALS:
        return CUSTOMARY_GOALS[env], CUSTOMARY_SOURCE
    spec = _registry_spec(env)
    threshold = None if spec is None else spec.reward_threshold
    return (None, "") if threshold is None else (float(threshold), "Gymnasium's reward_threshold")


def gymnasium_bar(env: str) -> float | None:
    """Gymnasium's ``reward_threshold`` of ``env`` (None where it has none or ``env`` is unknown)."""
    spec = _registry_spec(env)
    threshold = None if spec is None else spec.reward_threshold
    return None if threshold is None else float(threshold)


def recommended_strategy(env: str) -> str | None:
    """The strategy a run on ``env`` takes when the user names none (None: no preset)."""
    preset = preset_of(env)
    return None if preset is None else preset.strategy


def recommended(env: str, strategy: str) -> dict[str, Options]:
    """The preset of ``env`` for ``strategy``: ``{"problem": {...}, "strategy": {...}, "run": {...}}``.

    Unknown tasks get empty sections; a strategy without tuned options gets the task's problem
    options, goal and time budget. The goal is the task's standard one (:func:`standard_goal`).
    """
    preset = preset_of(env) or Preset()
    run = {**preset.run, **preset.run_for.get(strategy, {})}
    if preset.run or preset.run_for:
        goal, _ = standard_goal(env)
        if goal is not None:
            run["goal"] = goal
    return copy.deepcopy({
        "problem": {**preset.problem, **preset.problem_for.get(strategy, {})},
        "strategy": preset.strategies.get(strategy, {}),
        "run": run,
    })


def training_shift(env: str) -> float:
    """The ``reward_shift`` the preset of ``env`` trains with (0: the task's own reward): a training
    return shown beside the goal must say it is on another scale."""
    strategy = recommended_strategy(env)
    shift = recommended(env, strategy)["problem"].get("reward_shift", 0.0) if strategy else 0.0
    return float(shift) if isinstance(shift, (int, float)) else 0.0


def training_reward_note(env: str) -> str:
    """How the preset of ``env`` changes the returns it trains on, in a few words (empty: the task's own;
    see :func:`training_changes`)."""
    strategy = recommended_strategy(env)
    return ", ".join(training_changes(recommended(env, strategy)["problem"] if strategy else {}))


def training_changes(problem: Mapping[str, object]) -> list[str]:
    """How gym problem options make the center's training return differ from the task's own, a few words
    each: ``"-1 a step"`` (``reward_shift``), ``"rewards below -1 counted as -1"`` (``reward_floor``); empty
    when it is the task's own. A fixed episode cap changes nothing here: the center row plays full
    episodes (:mod:`.episode_cap`)."""
    shift, floor = problem.get("reward_shift"), problem.get("reward_floor")
    notes = []
    if isinstance(shift, (int, float)) and not isinstance(shift, bool) and shift:
        notes.append(f"{float(shift):+g} a step")
    if isinstance(floor, (int, float)) and not isinstance(floor, bool):
        notes.append(f"rewards below {floor:g} counted as {floor:g}")
    return notes


def missing_preset_note(env: object, strategy: str, options: Mapping[str, object]) -> str | None:
    """One short line a run prints when ``env`` has no preset of its own: what it uses instead.

    None for tuned tasks and for ids Gymnasium does not know (making the task then says why).
    """
    if not isinstance(env, str) or env in PRESETS or gymnasium_bar(env) is None and not _registered(env):
        return None
    tuned = tuned_version(env)
    other = f" (the preset is tuned for {tuned}; run gym:{tuned} for it)" if tuned else ""
    if preset_of(env) is BOX_DEFAULT and strategy == "ars":
        return f"gym:{env} has no preset{other}: using ARS V2-t, linear policy, observation normalization (Box-action default)"
    return f"gym:{env} has no preset{other}: using {strategy} (its defaults where no option is given)"


def _registered(env: str) -> bool:
    return _registry_spec(env) is not None


def goal_notes(env: str, goal: float | None, confirmed: float | None, best: float | None) -> list[str]:
    """Notes on a run's goal against the task's standard bars.

    A goal below the task's standard goal says so; a task whose goal is the ARS paper's also reports
    the best return reached (``confirmed``: mean over fresh episodes, else ``best``: the best training
    fitness) against Gymnasium's ``reward_threshold``.
    """
    notes: list[str] = []
    standard, source = standard_goal(env)
    if goal is not None and standard is not None and goal < standard:
        notes.append(f"goal {goal:g} is below gym:{env}'s standard bar {standard:g} ({source})")
    bar = gymnasium_bar(env)
    if source == ARS_SOURCE and bar is not None and bar != standard:
        reached, what = (confirmed, "mean over fresh episodes") if confirmed is not None else (best, "training fitness")
        if reached is not None:
            notes.append(f"best return {reached:.6g} ({what}) against Gymnasium's reward_threshold {bar:g} for {env}")
    return notes
