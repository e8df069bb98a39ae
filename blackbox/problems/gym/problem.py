"""The ``gym`` problem: fitness = episode return of a policy whose flat parameters come from the strategy.

    bb.make_problem("gym:CartPole-v1")                               # MLP 2x64 tanh, 1 episode
    bb.make_problem("gym:Hopper-v5,obs_norm=true,episodes=1")       # as in Salimans et al. 2017
    GymProblem(lambda: MyEnv(), max_episode_steps=1000, policy=my_torch_module)

Any Gymnasium 1.x environment id (or a factory returning a ``gymnasium.Env``). The problem is a
small picklable recipe: environments and policy buffers are built lazily in the process that
evaluates. Each row's fitness is the mean return over ``episodes`` episodes whose reset seeds come
from the driver (run seed, generation, row; a mirrored pair shares them), and ``steps`` counts the
environment steps taken. By default a whole slice of the population runs side by side with one
policy call per step (:mod:`blackbox.problems.gym.rollout`); CartPole steps every slot in one numpy
operation (:class:`~blackbox.problems.gym.slots.CartPoleSlots`). Results are bit-identical to evaluating
members one by one (``batched=False``).

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
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..._validate import check_choice, check_float, check_int
from ...core.problem import EvalResult, Problem
from ...errors import ConfigError, StateError, did_you_mean
from ..devices import resolve_device
from .actions import ACTION_BOUNDS, make_action_adapter
from .episode_cap import make_episode_cap
from .obs_norm import RunningStats, sampled_rows
from .policies import TorchPolicy, make_policy
from .reference import collect_reference_batch, digest
from .rollout import BatchedRollouts, episode_seeds, rollout_episode
from .slots import CARTPOLE_IDS, CartPoleSlots, GymSlots, flatten_observation

__all__ = ["GymProblem", "make_gym_env"]

#: Default number of slots (episodes side by side) per process ...
DEFAULT_SLOTS = {"vectorized": 256, "gym": 64}
#: ... as long as their float32 parameter copies stay under this many values (128 MB).
SLOT_PARAMS_BUDGET = 2**25

_EXTRAS = {"box2d": "box2d", "mujoco": "mujoco", "atari": "atari", "ale_py": "atari"}


def _import_gymnasium():
    try:
        import gymnasium
    except ImportError:
        raise ConfigError(
            'the gym problem needs gymnasium: pip install "blackbox-es[gym]" '
            '(and [box2d] or [mujoco] for those tasks)'
        ) from None
    return gymnasium


def make_gym_env(env: str | Callable[..., Any], max_episode_steps: int | None = None,
                 env_kwargs: dict | None = None, render_mode: str | None = None):
    """Make one environment from an id or a factory, with errors that say how to fix them."""
    gym = _import_gymnasium()
    if isinstance(env, str):
        from .wrappers import register_namespace

        register_namespace(env)
    kwargs = dict(env_kwargs or {})
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    if callable(env):
        try:
            made = env(**kwargs)
        except TypeError as exc:
            if not kwargs:
                raise
            raise ConfigError(f"environment factory {env!r} does not accept {sorted(kwargs)}: {exc}") from None
        if not isinstance(made, gym.Env):
            raise ConfigError(f"environment factory {env!r} returned {type(made).__name__}, not a gymnasium.Env")
        return made
    if max_episode_steps is not None:
        kwargs["max_episode_steps"] = max_episode_steps
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return gym.make(env, **kwargs)
    except gym.error.UnregisteredEnv as exc:
        known = list(gym.registry)
        raise ConfigError(
            f"unknown Gymnasium environment {env!r}.{did_you_mean(env, known)} "
            f"({exc}) See gymnasium.pprint_registry() for the installed ones"
        ) from None
    except gym.error.DependencyNotInstalled as exc:
        extra = next((v for k, v in _EXTRAS.items() if k in str(exc).lower()), None)
        hint = f'pip install "blackbox-es[{extra}]"' if extra else "install the package it names"
        raise ConfigError(f"environment {env!r} needs a package that is not installed: {exc}; {hint}") from None


class GymProblem(Problem):
    """Episode return of a policy on a Gymnasium environment (mean over ``episodes``)."""

    name = "gym"

    def __init__(
        self,
        env: str | Callable[..., Any] = "CartPole-v1",
        *,
        episodes: int = 1,
        max_episode_steps: int | None = None,
        policy: Any = "mlp",
        hidden: Sequence[int] = (64, 64),
        activation: str = "tanh",
        obs_norm: bool = False,
        obs_norm_prob: float = 0.01,
        obs_clip: float = 5.0,
        action_noise: float = 0.0,
        action_bounds: str = "tanh",
        bins: int = 0,
        batched: bool = True,
        vectorized: bool = True,
        slots: int | None = None,
        env_kwargs: dict | None = None,
        vbn: bool = False,
        vbn_size: int = 128,
        vbn_seed: int = 0,
        episode_cap: str | None = None,
        episode_cap_factor: float | None = None,
        episode_cap_start: int | None = None,
        episode_cap_threshold: float | None = None,
        episode_cap_ratio: float | None = None,
        atari: bool | None = None,
        frame_skip: int | None = None,
        frame_stack: int | None = None,
        device: str | None = None,
        torch_threads: int | None = 1,
    ):
        if not (isinstance(env, str) or callable(env)):
            raise ConfigError(f"env must be a Gymnasium id such as 'CartPole-v1' or a factory, got {env!r}")
        if env_kwargs is not None and not isinstance(env_kwargs, dict):
            raise ConfigError(f"env_kwargs must be a table of keyword arguments for the environment, got {env_kwargs!r}")
        self.env = env
        self.env_kwargs = dict(env_kwargs or {})
        self._setup_wrappers(atari, frame_skip, frame_stack)
        self.episodes = check_int("episodes", episodes, minimum=1)
        self.obs_norm = bool(obs_norm)
        self.obs_norm_prob = check_float("obs_norm_prob", obs_norm_prob, nonnegative=True, maximum=1.0)
        self.obs_clip = check_float("obs_clip", obs_clip, positive=True)
        self.action_noise = check_float("action_noise", action_noise, nonnegative=True)
        self.action_bounds = check_choice("action_bounds", action_bounds, ACTION_BOUNDS)
        self.bins = check_int("bins", bins, minimum=0)
        self.batched = bool(batched)
        self.slots = None if slots is None else check_int("slots", slots, minimum=1)
        self.vbn = bool(vbn)
        self.vbn_size = check_int("vbn_size", vbn_size, minimum=2)
        self.vbn_seed = check_int("vbn_seed", vbn_seed, minimum=0)
        self.device = resolve_device(device)
        self.device_requested = device
        self._max_steps_given = None if max_episode_steps is None else check_int(
            "max_episode_steps", max_episode_steps, minimum=1)
        probe = self.make_env()
        try:
            self.env_id = probe.spec.id if probe.spec is not None else getattr(env, "__name__", repr(env))
            self.observation_space = probe.observation_space
            self.action_space = probe.action_space
            spec = probe.spec
            spec_limit = spec.max_episode_steps if spec is not None else None
            if spec_limit is None and self.atari and spec is not None:
                spec_limit = spec.kwargs.get("max_num_frames_per_episode")  # ALE truncates there itself
        finally:
            probe.close()
        self.max_episode_steps = max_episode_steps if max_episode_steps is not None else spec_limit
        if self.max_episode_steps is None:
            raise ConfigError(
                f"environment {self.env_id!r} has no time limit, so an episode might never end; "
                f"pass max_episode_steps=N"
            )
        self.max_episode_steps = int(self.max_episode_steps)
        # the task's limit counts environment steps (frames); the policy decides every frame_skip of them
        self.step_limit = math.ceil(self.max_episode_steps / self.frame_skip)
        self.where = f"environment {self.env_id!r}"
        self.obs_size = int(_flat_size(self.observation_space, self.where))
        self.adapter = make_action_adapter(self.action_space, self.bins, self.where, self.action_bounds)
        self.policy = make_policy(policy, self.obs_size, self.adapter.out_size, hidden, activation,
                                  obs_shape=getattr(self.observation_space, "shape", None),
                                  obs_scale=_pixel_scale(self.observation_space), vbn=self.vbn,
                                  device=device if device is None else self.device, threads=torch_threads)
        if isinstance(self.policy, TorchPolicy):
            try:
                shape = self.policy.output_shape()
            except Exception as exc:  # noqa: BLE001 - any failure of user code on a probe observation
                raise ConfigError(
                    f"the policy fails on one observation of {self.where} ({self.obs_size} values): "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            if shape != (self.adapter.out_size,):
                raise ConfigError(
                    f"the policy's output for one observation has shape {shape}, but the action space "
                    f"{self.action_space} of {self.where} needs {self.adapter.out_size} values "
                    f"({self.adapter.describe()}); make the last layer output {self.adapter.out_size}"
                )
        self.dim = self.policy.dim
        self.vectorized = bool(vectorized) and self._replica() is not None
        self.stats = RunningStats(self.obs_size) if self.obs_norm else None
        self.cap = make_episode_cap(episode_cap, self.step_limit, episode_cap_factor, episode_cap_start,
                                    episode_cap_threshold, episode_cap_ratio)
        self.reference: np.ndarray | None = None
        self.reference_digest = ""
        if self.vbn:
            env_ = self.make_env()
            try:
                self.reference = collect_reference_batch(env_, flatten_observation(self.observation_space),
                                                         self.vbn_size, self.vbn_seed)
            finally:
                env_.close()
            self.reference_digest = digest(self.reference)
        self._runtime: BatchedRollouts | None = None
        self._single: tuple | None = None

    def _setup_wrappers(self, atari: bool | None, frame_skip: int | None, frame_stack: int | None) -> None:
        from .wrappers import ATARI_FRAME_SKIP, ATARI_FRAME_STACK, is_atari_id, register_namespace

        if isinstance(self.env, str):
            _import_gymnasium()
            register_namespace(self.env)
        detected = is_atari_id(self.env)
        if atari is None:
            atari = detected
        elif atari and not detected:
            raise ConfigError(f"atari=true applies Atari preprocessing, but {self.env!r} is not an ALE environment "
                              f"(ids such as 'ALE/Pong-v5'); use frame_skip= and frame_stack= for other tasks")
        self.atari = bool(atari)
        self.frame_skip = check_int("frame_skip", ATARI_FRAME_SKIP if frame_skip is None and self.atari
                                    else 1 if frame_skip is None else frame_skip, minimum=1)
        self.frame_stack = check_int("frame_stack", ATARI_FRAME_STACK if frame_stack is None and self.atari
                                     else 1 if frame_stack is None else frame_stack, minimum=1)
        if self.atari:
            if "frameskip" in self.env_kwargs:
                raise ConfigError("env_kwargs frameskip is set by the Atari preprocessing (the emulator steps one "
                                  "frame at a time and the preprocessing repeats the action); use frame_skip= instead")
            self.env_kwargs["frameskip"] = 1

    @classmethod
    def recommended(cls, env: Any = "CartPole-v1", *args: Any, strategy: str = "openai-es",
                    **options: Any) -> dict[str, dict[str, Any]]:
        """The preset ``blackbox run`` applies for this task (see :mod:`.gym_presets`)."""
        from .presets import recommended

        return recommended(env, strategy) if isinstance(env, str) else recommended("", strategy)

    # -- the Problem protocol -----------------------------------------------------------------
    def initial_params(self, rng: np.random.Generator) -> np.ndarray:
        return np.asarray(self.policy.initial_params(rng), dtype=np.float64)

    def evaluate(self, params: np.ndarray, seeds: np.ndarray) -> EvalResult:
        params = self._check_params(params)
        seeds = np.asarray(seeds, dtype=np.int64).reshape(-1)
        if len(seeds) != len(params):
            raise ConfigError(f"evaluate() got {len(params)} parameter rows but {len(seeds)} seeds")
        limit = self.cap.cap if self.cap is not None else None
        rollouts = self.rollouts(params, episode_seeds(seeds, self.episodes),
                                 sampled_rows(seeds, self.obs_norm_prob) if self.obs_norm else None, limit)
        info = {}
        if self.obs_norm:
            info = {"obs_count": rollouts.counts, "obs_mean": rollouts.means, "obs_m2": rollouts.m2s}
        if self.cap is not None:
            info["episodes_capped"] = (rollouts.lengths >= limit).sum(axis=1).astype(np.int64)
        return EvalResult(rollouts.returns.mean(axis=1), rollouts.lengths.sum(axis=1), info)

    def observe(self, result: EvalResult) -> None:
        if self.stats is not None and "obs_count" in result.info:
            self.stats.fold_rows(result.info["obs_count"], result.info["obs_mean"], result.info["obs_m2"])
        if self.cap is not None and "episodes_capped" in result.info:
            self.cap.observe(np.asarray(result.steps), self.episodes, np.asarray(result.info["episodes_capped"]))

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
        if self.reference is not None and "vbn_reference" in state and str(state["vbn_reference"]) != self.reference_digest:
            raise StateError(
                f"the VBN reference batch of {self.where} here (fingerprint {self.reference_digest}) differs from "
                f"the run's ({state['vbn_reference']}): the environment yields other observations than where the "
                f"run started (another gymnasium/ale-py version?), so the objective would change"
            )
        if self.stats is not None and "obs_mean" in state:
            self.stats.load_state_dict(state)
        if self.cap is not None:
            self.cap.load_state_dict(state)

    def describe(self) -> dict[str, Any]:
        summary = {"name": self.name, "env": self.env_id, "dim": self.dim, "policy": self.policy.describe(),
                   "actions": self.adapter.describe(), "episodes": self.episodes,
                   "max_episode_steps": self.max_episode_steps, "obs_norm": self.obs_norm,
                   "batched": self.batched, "vectorized": self.vectorized}
        if self.atari or self.frame_skip > 1 or self.frame_stack > 1:
            summary.update(atari=self.atari, frame_skip=self.frame_skip, frame_stack=self.frame_stack,
                           decisions_per_episode=self.step_limit)
        if self.vbn:
            summary["vbn"] = {"size": self.vbn_size, "seed": self.vbn_seed, "reference": self.reference_digest}
        if self.cap is not None:
            summary["episode_cap"] = self.cap.describe()
        if self.device_requested is not None:
            summary["device"] = self.device
            if self.device_requested != self.device:
                summary["device_requested"] = self.device_requested  # "auto"
        return summary

    # -- rollouts -------------------------------------------------------------------------------
    def rollouts(self, params: np.ndarray, seeds: np.ndarray, collect: np.ndarray | None = None,
                 limit: int | None = None):
        """Returns and lengths ``(m, E)`` of every row of ``params`` under reset ``seeds`` ``(m, E)``;
        ``limit`` caps the episodes below the task's own limit."""
        normalizer = self.stats.normalizer(self.obs_clip) if self.stats is not None else None
        reference = self.reference_inputs(normalizer)
        try:
            if self.batched:
                return self._batched().run(params, seeds, collect, normalizer, reference, limit)
            return self._one_by_one(params, seeds, collect, normalizer, reference, limit)
        except BaseException:
            self.close()  # an environment that raised may be broken: rebuild on the next call
            raise

    def reference_inputs(self, normalizer=None) -> np.ndarray | None:
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
             frames: list | None = None) -> tuple[float, int]:
        """One episode in a fresh environment (rendered into ``frames`` when given)."""
        params = self._check_params(np.asarray(params, dtype=np.float64).reshape(1, -1))
        env = self.make_env(render_mode)
        try:
            batch = self.policy.batch(1)
            normalizer = self.stats.normalizer(self.obs_clip) if self.stats is not None else None
            if self.reference is not None:
                batch.set_reference(self.reference_inputs(normalizer))
            batch.load(0, params[0])
            return rollout_episode(env, flatten_observation(self.observation_space), batch, self.adapter,
                                   seed, self.step_limit, normalizer, self.action_noise,
                                   frames=frames, where=self.where)
        finally:
            env.close()

    def make_env(self, render_mode: str | None = None):
        """A fresh environment of this problem, wrapped as the policy sees it (Atari preprocessing,
        frame skip and stack); ``render_mode`` e.g. ``"rgb_array"``."""
        from .wrappers import wrap_env

        limit = self._max_steps_given if isinstance(self.env, str) else None
        env = make_gym_env(self.env, limit, self.env_kwargs, render_mode)
        return wrap_env(env, self.atari, self.frame_skip, self.frame_stack)

    def close(self) -> None:
        """Release environments made in this process (they are made again when needed)."""
        if self._runtime is not None:
            self._runtime.close()
            self._runtime = None
        if self._single is not None:
            self._single[0].close()
            self._single = None

    # -- internals ------------------------------------------------------------------------------
    def _replica(self):
        if (isinstance(self.env, str) and self.env_id in CARTPOLE_IDS and not self.env_kwargs
                and self.frame_skip == 1 and self.frame_stack == 1):
            return CartPoleSlots
        return None

    def _batched(self) -> BatchedRollouts:
        if self._runtime is None:
            kind = "vectorized" if self.vectorized else "gym"
            capacity = self.slots or max(1, min(DEFAULT_SLOTS[kind], SLOT_PARAMS_BUDGET // self.dim))
            if self.vectorized:
                slots = self._replica()(capacity)
            else:
                slots = GymSlots(self.make_env, capacity, self.observation_space)
            self._runtime = BatchedRollouts(slots, self.policy, self.adapter, self.obs_size,
                                            self.step_limit, self.action_noise, self.where)
        return self._runtime

    def _one_by_one(self, params, seeds, collect, normalizer, reference=None, limit=None):
        from .obs_norm import combine_moments, episode_moments
        from .rollout import Rollouts

        if self._single is None:
            self._single = (self.make_env(), self.policy.batch(1), flatten_observation(self.observation_space))
        env, batch, flatten = self._single
        if reference is not None:
            batch.set_reference(reference)
        limit = self.step_limit if limit is None else max(1, min(int(limit), self.step_limit))
        m, episodes = seeds.shape
        returns = np.zeros((m, episodes))
        lengths = np.zeros((m, episodes), dtype=np.int64)
        counts, means, m2s = np.zeros(m), np.zeros((m, self.obs_size)), np.zeros((m, self.obs_size))
        for row in range(m):
            batch.load(0, params[row])
            sampled = collect is not None and bool(collect[row])
            moments = (0.0, np.zeros(self.obs_size), np.zeros(self.obs_size))
            for e in range(episodes):
                trace = [] if sampled else None
                returns[row, e], lengths[row, e] = rollout_episode(
                    env, flatten, batch, self.adapter, int(seeds[row, e]), limit,
                    normalizer, self.action_noise, trace=trace, where=self.where)
                if sampled:
                    moments = combine_moments(moments, episode_moments(np.array(trace)))
            counts[row], means[row], m2s[row] = moments
        result = Rollouts(returns, lengths)
        if collect is not None:
            result.counts, result.means, result.m2s = counts, means, m2s
        return result

    def _check_params(self, params: np.ndarray) -> np.ndarray:
        params = np.asarray(params, dtype=np.float64)
        if params.ndim != 2 or params.shape[1] != self.dim:
            got = params.shape[-1] if params.ndim else "a scalar"
            raise ConfigError(
                f"gym problem {self.env_id!r} takes parameter vectors of length {self.dim} "
                f"({self.policy.describe()}), got {got} (params of shape {params.shape})"
            )
        return params

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_runtime"] = None
        state["_single"] = None
        return state

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def _pixel_scale(space: Any) -> float:
    """1/255 for uint8 image observations (what the convnets multiply their inputs by), else 1."""
    dtype = getattr(space, "dtype", None)
    shape = getattr(space, "shape", None) or ()
    return 1.0 / 255.0 if dtype == np.uint8 and len(shape) >= 2 else 1.0


def _flat_size(space: Any, where: str) -> int:
    from gymnasium import spaces

    try:
        return int(spaces.flatdim(space))
    except (NotImplementedError, ValueError, TypeError):
        raise ConfigError(f"{where} has observation space {space}, which cannot be flattened into a vector") from None
