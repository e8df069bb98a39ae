"""The ``gym`` problem: fitness = episode return of a policy whose flat parameters come from the strategy.

    bb.make_problem("gym:CartPole-v1")                               # MLP 2x64 tanh, 1 episode
    bb.make_problem("gym:Hopper-v5,obs_norm=true,episodes=1")       # as in Salimans et al. 2017
    GymProblem("Hopper-v5", obs_norm=True, obs_norm_prob=1.0, frame_skip=2)
    GymProblem(lambda: MyEnv(), max_episode_steps=1000, policy=my_torch_module)

Every option has one spelling, a flat key, in a spec string, a TOML file and Python alike; inside,
the problem reads them in groups (:mod:`.options`: environment, episodes, policy, observation
normalization, episode cap, frames, VBN).

Any Gymnasium 1.x environment id (or a factory returning a ``gymnasium.Env``). The problem is a
small picklable recipe: environments and policy buffers are built lazily in the process that
evaluates. Each row's fitness is the mean return over ``episodes`` episodes whose reset seeds come
from the driver (run seed, generation, row; a mirrored pair shares them), and ``steps`` counts the
environment steps taken. By default a whole slice of the population runs side by side with one
policy call per step; CartPole steps every slot in one numpy operation
(:class:`~blackbox.problems.gym.slots.CartPoleSlots`). Results are bit-identical to evaluating
members one by one (``batched=False``); both engines are in :mod:`.rollout`.

Observation normalization (``obs_norm=True``) follows the paper: a fraction ``obs_norm_prob`` of the
rows (chosen by their seed alone) report the moments of the observations they saw; the driver folds
them in row order (``observe``) and sends mean and std to every worker with the next center
(``state_dict``); inputs are clipped to ``[-obs_clip, obs_clip]``.

The paper's other tricks are options too: virtual batch normalization (``vbn=True``, :mod:`.vbn`;
the reference batch is part of the recipe, see below), an adaptive episode cap (``episode_cap=``,
:mod:`.episode_cap`; the cap is part of the synced state), Atari preprocessing and frame stacking
(``ALE/...`` ids, :mod:`.wrappers`), a frame skip for any task (``frame_skip=k``), and policies on
a CUDA device (``device="cuda"`` or ``"auto"``, :mod:`blackbox.problems.devices`).

Why the VBN reference batch is part of the recipe and not of the synced state: it never changes
during a run, so sending it with every generation's state would cost its size (3.6 MB for Atari
frames) per worker and generation for nothing; it is collected once when the problem is built,
in the driver, deterministically from the task and ``vbn_seed``, and shipped to each worker once
with the problem. A resumed run builds the same batch again; its fingerprint travels in the state
(16 characters), so a worker or a resumed run whose environment yields another batch (a changed
environment version, say) stops with a StateError instead of silently changing the objective.

The class is the recipe and the Problem protocol; beside it, one job a module: :mod:`.engine`
(which episode loop a process runs), :mod:`.task_policy` (the policy built and checked for the
task), :mod:`.reference` (the VBN batch and its fingerprint) and :mod:`.summary` (``describe()``).
"""

from __future__ import annotations

import copy
import inspect
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..._validate import check_int
from ...core.params import options_signature
from ...core.problem import EvalResult, Problem
from ...core.row_source import RowSource
from ...errors import ConfigError
from ..devices import resolve_device
from .actions import make_action_adapter
from .engine import DEFAULT_SLOTS as DEFAULT_SLOTS  # importable from here, as before
from .engine import SLOT_PARAMS_BUDGET as SLOT_PARAMS_BUDGET
from .engine import direct_task_of, make_engine, replica
from .environment import flat_size, import_gymnasium, make_gym_env, time_limit
from .episode_cap import cap_info, center_fitness, row_limits, running_cap
from .obs_norm import Normalizer, RunningStats, sampled_rows
from .options import (
    VBN,
    Environment,
    EpisodeCap,
    Episodes,
    Frames,
    GymParams,
    ObsNorm,
    Policy,
    gym_config,
)
from .reference import check_reference, reference_batch
from .rollout import BatchedRollouts, OneByOneRollouts, Rollouts, episode_seeds, rollout_episode
from .slots import flatten_observation
from .summary import describe
from .task_policy import task_policy

if TYPE_CHECKING:
    import gymnasium

__all__ = ["GymProblem", "make_gym_env", "Environment", "Episodes", "Policy", "ObsNorm", "EpisodeCap", "Frames",
           "VBN"]


class GymProblem(Problem):
    """Episode return of a policy on a Gymnasium environment (mean over ``episodes``).

    ``env`` is a Gymnasium id or a factory; every other option is a flat key, spelled as in a spec
    string or a TOML file (``obs_norm=True, obs_norm_prob=0.01``; :class:`~.options.GymParams`
    lists them). ``policy`` is a network (see :func:`.policies.make_policy`). The problem reads
    them in groups, :attr:`config` (:class:`~.options.GymConfig`).
    """

    name = "gym"
    needs = {"gymnasium": "gym"}
    #: The options as spec strings, TOML files and config.toml spell them (flat keys with defaults).
    Params: ClassVar[type[GymParams]] = GymParams
    #: The flat keys (which the constructor maps onto the groups), ``env`` also by position: set
    #: below the class, from ``Params`` and the constructor, as a strategy's is
    #: (:func:`~blackbox.core.params.options_signature`).
    __signature__: ClassVar[inspect.Signature | None]

    def __init__(self, env: str | Callable[..., object] = "CartPole-v1", **options: object):
        self.config = config = gym_config({"env": env, **options})
        self.env = config.environment.id
        #: Every row of a generation gets one seed (common random numbers), read by the driver.
        self.shared_seed = config.episodes.shared_seed
        import_gymnasium()
        from .wrappers import resolve_frames

        self.atari, self.frame_skip, self.frame_stack, self.env_kwargs = resolve_frames(
            self.env, config.frames, config.environment.kwargs or {})
        self.device = resolve_device(config.policy.device)
        probe = self.make_env()
        try:
            self.env_id = probe.spec.id if probe.spec is not None else getattr(self.env, "__name__", repr(self.env))
            self.observation_space = probe.observation_space
            self.action_space = probe.action_space
            spec_limit = time_limit(probe, self.atari)
            if isinstance(self.env, str):  # gymnasium's checker wraps what gymnasium.make makes
                _check_once(probe)
        finally:
            probe.close()
        limit = config.environment.max_episode_steps or spec_limit
        if limit is None:
            raise ConfigError(
                f"environment {self.env_id!r} has no time limit, so an episode might never end; "
                f"pass max_episode_steps=N"
            )
        self.max_episode_steps = int(limit)
        # the task's limit counts environment steps (frames); the policy decides every frame_skip of them
        self.step_limit = math.ceil(self.max_episode_steps / self.frame_skip)
        self.where = f"environment {self.env_id!r}"
        self.obs_size = flat_size(self.observation_space, self.where)
        self.adapter = make_action_adapter(self.action_space, config.policy.bins, self.where,
                                           config.policy.action_bounds)
        self.policy = task_policy(self, config.policy)
        self.dim = self.policy.dim
        self.vectorized = config.episodes.vectorized and replica(self) is not None
        #: The MuJoCo task stepped by ``mj_step`` directly (:mod:`.mujoco_slots`), or None: gymnasium's step.
        self.direct_task = direct_task_of(self) if config.episodes.direct and config.episodes.batched else None
        self.direct = self.direct_task is not None
        self.stats = RunningStats(self.obs_size) if config.obs_norm is not None else None
        self.cap = running_cap(config.episode_cap, self.step_limit)
        self.reference: np.ndarray | None = None
        self.reference_digest = ""
        if config.vbn is not None:
            self.reference, self.reference_digest = reference_batch(
                self.make_env, flatten_observation(self.observation_space), config.vbn.size, config.vbn.seed)
        self._runtime: BatchedRollouts | OneByOneRollouts | None = None
        #: Environments this process steps side by side (``slots``, or measured; None until the first
        #: evaluation, :mod:`.groups`).
        self.group_size: int | None = None

    @classmethod
    def recommended(cls, env: object = "CartPole-v1", *args: object, strategy: str = "openai-es",
                    **options: object) -> dict[str, dict[str, Any]]:
        """The preset ``blackbox run`` applies for this task (see :mod:`.presets`)."""
        from .environment import check_registered
        from .presets import recommended

        check_registered(env)  # an unknown task is named before anything else (a missing budget, say)
        return recommended(env, strategy) if isinstance(env, str) else recommended("", strategy)

    @classmethod
    def recommended_strategy(cls, env: object = "CartPole-v1", *args: object, **options: object) -> str | None:
        """The strategy ``blackbox run`` takes for this task when none is named (see :mod:`.presets`)."""
        from .presets import recommended_strategy

        return recommended_strategy(env) if isinstance(env, str) else None

    # -- the Problem protocol -----------------------------------------------------------------
    @property
    def takes_row_source(self) -> bool:
        """``evaluate`` takes a :class:`~blackbox.core.row_source.RowSource`: each member's row is
        read from the noise table into its float32 policy slot when it takes one, with no dense
        float64 ``(m, dim)`` rows built first (same bits: the row is computed in float64, then
        rounded once). False for a subclass with its own ``evaluate``, which may expect the array."""
        return type(self).evaluate is GymProblem.evaluate

    def initial_params(self, rng: np.random.Generator) -> np.ndarray:
        return np.asarray(self.policy.initial_params(rng), dtype=np.float64)

    def evaluate(self, params: np.ndarray | RowSource, seeds: np.ndarray) -> EvalResult:
        if not isinstance(params, RowSource) or params.shape[1] != self.dim:
            params = self._check_params(np.asarray(params))
        seeds = np.asarray(seeds, dtype=np.int64).reshape(-1)
        if len(seeds) != len(params):
            raise ConfigError(f"evaluate() got {len(params)} parameter rows but {len(seeds)} seeds")
        obs_norm = self.config.obs_norm
        limit = row_limits(self.cap, params, self.step_limit)
        rollouts = self.rollouts(params, episode_seeds(seeds, self.config.episodes.count),
                                 sampled_rows(seeds, obs_norm.prob) if obs_norm is not None else None, limit,
                                 self.config.episodes.reward_floor)
        info: dict[str, Any] = {}
        if obs_norm is not None:
            info = {"obs_count": rollouts.counts, "obs_mean": rollouts.means, "obs_m2": rollouts.m2s}
        if self.cap is not None and limit is not None:
            info.update(cap_info(self.cap, limit, rollouts.lengths, self.step_limit))
        fitness = rollouts.returns.mean(axis=1)
        shift = self.config.episodes.reward_shift
        if shift:
            fitness = fitness + shift * rollouts.lengths.mean(axis=1)
        return EvalResult(fitness, rollouts.lengths.sum(axis=1), info)

    def training_goal(self, goal: float) -> float:
        """The training fitness at which the task's own return may have reached ``goal``.

        With ``reward_shift`` s < 0 an episode of at most H decisions that returns ``goal`` trains
        at ``goal + s * H`` or more, so the goal check (:class:`~blackbox.driver.stop.ConfirmGoal`)
        screens at that level and confirms on the task's own reward. A ``reward_floor`` (it only raises
        returns) and a fixed episode cap (the center row plays full episodes) leave the goal as it is.
        """
        return goal + min(self.config.episodes.reward_shift, 0.0) * self.step_limit

    def observe(self, result: EvalResult) -> None:
        if self.stats is not None and "obs_count" in result.info:
            self.stats.fold_rows(result.info["obs_count"], result.info["obs_mean"], result.info["obs_m2"])
        if self.cap is not None and "episodes_capped" in result.info:
            self.cap.observe(np.asarray(result.steps), self.config.episodes.count,
                             np.asarray(result.info["episodes_capped"]), center_fitness(result.fitness, result.info))

    def state_dict(self) -> dict[str, Any]:
        state = self.stats.state_dict() if self.stats is not None else {}
        if self.cap is not None:
            state.update(self.cap.state_dict())
        if self.reference is not None:
            state["vbn_reference"] = self.reference_digest
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if not state:
            return
        if self.reference is not None and "vbn_reference" in state:
            check_reference(self.where, self.reference_digest, str(state["vbn_reference"]))
        if self.stats is not None and "obs_mean" in state:
            self.stats.load_state_dict(state)
        if self.cap is not None:
            self.cap.load_state_dict(state)

    def describe(self) -> dict[str, Any]:
        return describe(self)

    # -- rollouts -------------------------------------------------------------------------------
    def rollouts(self, params: np.ndarray | RowSource, seeds: np.ndarray, collect: np.ndarray | None = None,
                 limit: int | np.ndarray | None = None, floor: float | None = None) -> Rollouts:
        """Returns and lengths ``(m, E)`` of every row of ``params`` under reset ``seeds`` ``(m, E)``;
        ``collect`` marks the rows that gather observation statistics, ``limit`` caps the episodes
        below the task's own limit (one, or one per row), ``floor`` raises rewards below it to it."""
        normalizer = self._normalizer()
        reference = self.reference_inputs(normalizer)
        try:
            return self._engine().run(params, seeds, collect, normalizer, reference, limit, floor)
        except BaseException:
            self.close()  # an environment that raised may be broken: rebuild on the next call
            raise

    def reference_inputs(self, normalizer: Normalizer | None = None) -> np.ndarray | None:
        """The VBN reference batch as policy inputs (normalized like observations), or None."""
        if self.reference is None:
            return None
        return normalizer(self.reference) if normalizer is not None else self.reference.astype(np.float32)

    def score(self, params: np.ndarray, episodes: int = 20, seed: int = 0) -> np.ndarray:
        """Returns of ``params`` on ``episodes`` episodes whose seeds derive from ``seed``."""
        params = self._check_params(np.asarray(params, dtype=np.float64).reshape(1, -1))
        seeds = episode_seeds(np.array([seed]), check_int("episodes", episodes, minimum=1))
        return self.rollouts(np.repeat(params, episodes, axis=0), seeds.reshape(-1, 1)).returns[:, 0]

    def play(self, params: np.ndarray, seed: int = 0, render_mode: str | None = None,
             frames: list | None = None, every: int = 1) -> tuple[float, int]:
        """One episode in a fresh environment (every ``every``-th frame rendered into ``frames`` when given)."""
        params = self._check_params(np.asarray(params, dtype=np.float64).reshape(1, -1))
        env = self.make_env(render_mode)
        try:
            batch = self.policy.batch(1)
            normalizer = self._normalizer()
            if self.reference is not None:
                batch.set_reference(self.reference_inputs(normalizer))
            batch.load(0, params[0])
            return rollout_episode(env, flatten_observation(self.observation_space), batch, self.adapter,
                                   seed, self.step_limit, normalizer, self.config.policy.action_noise,
                                   frames=frames, where=self.where, every=every)
        finally:
            env.close()

    def make_env(self, render_mode: str | None = None, checked: bool = True) -> Any:
        """A fresh environment of this problem, wrapped as the policy sees it (Atari preprocessing,
        frame skip and stack); ``render_mode`` e.g. ``"rgb_array"``. ``checked=False`` (the rollout
        engine's environments) leaves out gymnasium's checker wrappers, which the problem's probe
        environment ran once (:func:`.environment.make_gym_env`)."""
        from .wrappers import wrap_env

        limit = self.config.environment.max_episode_steps if isinstance(self.env, str) else None
        env = make_gym_env(self.env, limit, self.env_kwargs, render_mode, checked=checked)
        return wrap_env(env, self.atari, self.frame_skip, self.frame_stack)

    def close(self) -> None:
        """Release environments made in this process (they are made again when needed)."""
        if self._runtime is not None:
            self._runtime.close()
            self._runtime = None

    # -- internals ------------------------------------------------------------------------------
    def _normalizer(self) -> Normalizer | None:
        obs_norm = self.config.obs_norm
        return self.stats.normalizer(obs_norm.clip) if self.stats is not None and obs_norm is not None else None

    def _engine(self) -> BatchedRollouts | OneByOneRollouts:
        """This process's episode loop (made on first use, :func:`.engine.make_engine`): batched, or one by one."""
        if self._runtime is None:
            self._runtime = make_engine(self)
        return self._runtime

    def _check_params(self, params: np.ndarray) -> np.ndarray:
        params = np.asarray(params, dtype=np.float64)
        if params.ndim != 2 or params.shape[1] != self.dim:
            got = params.shape[-1] if params.ndim else "a scalar"
            raise ConfigError(
                f"gym problem {self.env_id!r} takes parameter vectors of length {self.dim} "
                f"({self.policy.describe()}), got {got} (params of shape {params.shape})"
            )
        return params

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["_runtime"] = None
        return state

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


GymProblem.__signature__ = options_signature(GymProblem)


def _check_once(probe: gymnasium.Env) -> None:
    """One reset and one step of the problem's probe environment, so that gymnasium's checker
    (``PassiveEnvChecker``, made around string ids) sees both once; the rollout engine's
    environments are then made without it. The action comes from a copy of the action space,
    seeded, so nothing of the problem's own state moves."""
    probe.reset(seed=0)
    space = copy.deepcopy(probe.action_space)
    space.seed(0)
    probe.step(space.sample())
