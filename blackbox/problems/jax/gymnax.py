"""The ``gymnax`` problem: a whole generation's episodes as one compiled JAX call.

    bb.make_problem("gymnax:CartPole-v1")                        # MLP 16 tanh, 1 episode per row
    bb.make_problem("gymnax:Pendulum-v1,policy=linear,episodes=3,obs_norm=true")

Any environment gymnax registers (classic control: CartPole-v1, Pendulum-v1, Acrobot-v1,
MountainCar-v0, MountainCarContinuous-v0; MinAtar: Breakout-MinAtar, ...). The policy is a pure
JAX function of a parameter row (:mod:`.policies`). ``evaluate`` runs every row's episodes side by
side in one ``jit(vmap(rollout))`` call, compiled once per process and shape (problems of the same
settings share it: :func:`.batched.shared_programs`): episodes have the
task's fixed length with done-masking (rewards after an episode ends are masked out; the loop
stops early once every episode of the batch has ended, which changes no result; ``unroll`` steps
run per pass of that loop: 4 by default where that was checked to give the returns of 1, see
:mod:`.batched`).

Populations reach the device once per generation: an executor hands the compact population
(noise offsets, signs, sigma, center) to :meth:`GymnaxProblem.evaluate_population`, which expands
the rows on the device from a noise table uploaded once per process (:mod:`.device_noise`); only
the returns come back, as one small array. ``evaluate(params, seeds)`` takes dense rows, as every
problem does (a dense population, a user's own loop): they are rounded to float32, so they may
differ from the compact path's rows by a float32 rounding.

Seeds. Row ``i``'s episodes start from a JAX key made from its seed (both 32-bit halves), one
episode key per episode: same seeds -> same returns, bit for bit, on a fixed device, backend and
JAX version. XLA does not promise the same bits across backends (CPU vs GPU), JAX/XLA versions or
devices of another kind: a GPU may fuse a multiply and an add, or reduce in another order.

Observation normalization (``obs_norm=True``) divides each observation by running statistics as
the gym problem does: every episode reports the count, mean and squared deviations of the raw
observations it saw (``info``, float32 on the device, Welford's update); the driver folds a
generation's reports in row order, in float64 (``observe``), and the next generation's workers
normalize with the folded mean and std (``state_dict``). The statistics used in generation ``g``
are those of generations ``0..g-1``, whatever the split among workers.

NaN returns (a diverging simulator) are kept as NaN fitness, which ``tell`` ranks last; each row's
``info["nan_returns"]`` counts its NaN episodes and the problem counts them all (``nan_returns``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._validate import check_int, check_int_between
from .batched import BatchedJaxProblem, Generation, fold_moments, make_generation, row_keys
from .policies import Actions, check_output_shape, make_policy
from .runtime import import_gymnax, import_jax

__all__ = ["GymnaxProblem", "row_keys", "fold_moments"]


class GymnaxProblem(BatchedJaxProblem):
    """Mean episode return of a JAX policy on a gymnax environment, a generation per compiled call.

    ``env`` a gymnax id; ``episodes`` per row; ``policy`` ``"mlp"`` (``hidden`` units,
    ``activation``), ``"linear"`` or a policy object (:mod:`.policies`); ``init`` the built-in policy's
    start rows, ``"fan_in"`` or ``"es"`` (the ES paper's, as the gym problem's; see
    :meth:`.policies.MLPPolicy.initial_params`); ``obs_norm`` running observation statistics (inputs
    clipped to ``obs_clip``); ``max_episode_steps`` below the task's own limit; ``shared_seed`` the same
    episodes for every row of a generation; ``device`` a JAX platform (``"cpu"``, ``"gpu"``; None: JAX's
    default device);
    ``unroll`` environment steps per pass of the compiled loop, 1 to :attr:`MAX_UNROLL`; None (the default):
    4 for the environments whose returns were checked bit-identical to 1 on CPU (:data:`UNROLLED`; about
    6% less CPU on CartPole-v1), 1 for the others, whose float rounding could change (see :mod:`.batched`);
    ``reward_shift`` added to every counted reward in training, never in ``score`` or the goal check.
    """

    name = "gymnax"
    #: Environments run 4 steps per pass unless told otherwise: checked bit-identical to 1 step per pass on
    #: XLA's CPU backend (Pendulum-v1 was not: its float32 returns moved by up to 3e-5 at 2 and 4 steps).
    UNROLLED = frozenset({"CartPole-v1", "Acrobot-v1", "MountainCar-v0"})
    #: The largest ``unroll``: compiling grows with it, and beyond 4 it was slower on CPU already.
    MAX_UNROLL = 64
    needs = {"jax": "jax", "gymnax": "jax"}

    def __init__(self, env: str = "CartPole-v1", *, episodes: int = 1, policy: object = "mlp",
                 hidden: Sequence[int] = (16,), activation: str = "tanh", init: str = "fan_in", obs_norm: bool = False,
                 obs_clip: float = 5.0,
                 max_episode_steps: int | None = None, shared_seed: bool = False, device: str | None = None,
                 unroll: int | None = None, reward_shift: float = 0.0):
        gymnax = import_gymnax()
        jax = import_jax("gymnax")
        known = list(gymnax.registered_envs)
        self._check_env("gymnax", env, known)
        self._set_common(jax, env, episodes, shared_seed, obs_norm, obs_clip, device, reward_shift)
        environment, env_params = gymnax.make(env)
        limit = int(env_params.max_steps_in_episode)
        if max_episode_steps is not None:
            limit = check_int("max_episode_steps", max_episode_steps, minimum=1, maximum=limit)
        self.max_episode_steps = limit
        if unroll is None:
            unroll = 4 if env in self.UNROLLED else 1
        self.unroll = check_int_between("unroll", unroll, 1, self.MAX_UNROLL)
        self.where = f"gymnax {env!r}"
        self.obs_shape = tuple(int(s) for s in environment.observation_space(env_params).shape)
        self.obs_size = int(np.prod(self.obs_shape)) if self.obs_shape else 1
        self.actions = Actions(environment.action_space(env_params), self.where)
        self.policy = make_policy(policy, self.obs_size, self.actions.out_size, hidden, activation, init)
        check_output_shape(self.policy, (self.obs_size,), self.actions, self.where)
        self.dim = int(self.policy.dim)
        self._init_statistics()

    @classmethod
    def recommended(cls, env: object = "CartPole-v1", *args: object, strategy: str = "openai-es",
                    **options: object) -> dict[str, dict[str, Any]]:
        """The preset ``blackbox run`` applies for this task (see :mod:`.presets`)."""
        from .presets import recommended

        return recommended(str(env), strategy)

    @classmethod
    def recommended_strategy(cls, env: object = "CartPole-v1", *args: object, **options: object) -> str | None:
        """The strategy ``blackbox run`` takes for this task when none is named (see :mod:`.presets`)."""
        from .presets import recommended_strategy

        return recommended_strategy(str(env))

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "env": self.env_id, "dim": self.dim, "policy": self.policy.describe(),
                "actions": self.actions.describe(), "episodes": self.episodes,
                "max_episode_steps": self.max_episode_steps, "unroll": self.unroll, "obs_norm": self.obs_norm,
                "device": str(self.device), **({"reward_shift": self.reward_shift} if self.reward_shift else {})}

    def _environment_key(self) -> tuple[object, ...]:
        return (self.env_id, self.max_episode_steps, self.unroll)

    def _build(self, episodes: int) -> Generation:
        gymnax = import_gymnax()
        import jax.numpy as jnp

        environment, env_params = gymnax.make(self.env_id)
        env_params = env_params.replace(max_steps_in_episode=self.max_episode_steps)

        def reset(key: Any) -> Any:
            return environment.reset(key, env_params)

        def step(key: Any, state: Any, action: Any) -> Any:
            # step_env without the auto-reset of step(): an ended episode's steps are masked out anyway
            obs, state2, reward, terminated, _ = environment.step_env(key, state, action, env_params)
            return obs, state2, reward, jnp.logical_or(terminated, environment.is_truncated(state2, env_params))

        return make_generation(self, episodes, self.max_episode_steps, reset, step, self.actions,
                               unroll=self.unroll)
