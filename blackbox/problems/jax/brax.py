"""The ``brax`` problem: a whole generation of Brax episodes as one compiled JAX call.

    bb.make_problem("brax:hopper")                                 # spring backend, MLP 16 tanh, 1000 steps
    bb.make_problem("brax:ant,backend=mjx,policy=linear,episode_length=500,obs_norm=true")

Any environment Brax registers (ant, halfcheetah, hopper, humanoid, humanoidstandup,
inverted_pendulum, inverted_double_pendulum, pusher, reacher, swimmer, walker2d) on any of its
physics pipelines (``backend``): ``spring``, ``positional``, ``generalized`` or ``mjx``.

Default backend: ``spring``, the cheapest on a CPU (on this project's 2-core machine under load, a
hopper step compiled in 37 s with spring, 46 s positional, 90 s generalized, 115 s mjx, and spring
steps fastest); it is Brax's coarsest physics. ``backend=mjx`` is MuJoCo's own dynamics (MJX),
the one to compare with MuJoCo/Gymnasium results and the one Brax tunes for GPUs.

The generation is ``popsize x episodes`` episodes side by side: a ``jit`` of ``vmap``'d rollouts, a
``lax.scan`` over exactly ``episode_length`` steps (Brax's 1000 by default). The environment is
Brax's bare one, with no auto-reset wrapper: an episode's return counts its rewards until its
first ``done`` (the step that ends it included) and nothing after; ``steps`` counts the same steps.

Policies, the compact population expanded on the device, seeds (same seeds -> same returns, bit
for bit, on a fixed device, backend and JAX version), observation normalization and NaN returns
(counted and ranked last: Brax can diverge) are those of the gymnax problem (:mod:`.batched`).
Actions are ``tanh`` squashed into Brax's ``[-1, 1]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._validate import check_int
from ...errors import ConfigError
from .batched import BatchedJaxProblem, Generation, make_generation
from .policies import Actions, Box, check_output_shape, make_policy
from .runtime import BRAX_BACKENDS, import_brax, import_jax

__all__ = ["BraxProblem", "brax_environments"]


def brax_environments() -> list[str]:
    """The environment names Brax registers (less ``fast``, its unit-test stub)."""
    return sorted(name for name in import_brax()._envs if name != "fast")


class BraxProblem(BatchedJaxProblem):
    """Mean episode return of a JAX policy on a Brax environment, a generation per compiled call.

    ``env`` a Brax name; ``backend`` its physics pipeline (``"spring"``, the cheapest on a CPU;
    ``"positional"``, ``"generalized"``, ``"mjx"``); ``episode_length`` steps per episode at most;
    ``episodes`` per row; ``policy`` ``"mlp"`` (``hidden`` units, ``activation``), ``"linear"`` or a
    policy object (:mod:`.policies`); ``init`` the built-in policy's start rows (``"fan_in"`` or ``"es"``,
    as the gymnax problem's); ``obs_norm`` running observation statistics (inputs clipped
    to ``obs_clip``); ``shared_seed`` the same episodes for every row of a generation; ``device`` a
    JAX platform (``"cpu"``, ``"gpu"``; None: JAX's default device); ``reward_shift`` added to every
    counted reward in training, never in ``score`` or the goal check (-1 removes hopper's survival bonus,
    as Mania et al. 2018 do).
    """

    name = "brax"
    needs = {"jax": "jax", "brax": "jax"}

    def __init__(self, env: str = "hopper", *, backend: str = "spring", episode_length: int = 1000,
                 episodes: int = 1, policy: object = "mlp", hidden: Sequence[int] = (16,), activation: str = "tanh",
                 init: str = "fan_in",
                 obs_norm: bool = False, obs_clip: float = 5.0, shared_seed: bool = False,
                 device: str | None = None, reward_shift: float = 0.0):
        envs = import_brax()
        jax = import_jax("brax")
        known = brax_environments()
        self._check_env("Brax", env, known)
        if backend not in BRAX_BACKENDS:
            raise ConfigError(f"unknown Brax backend {backend!r}; expected one of {', '.join(BRAX_BACKENDS)}")
        self._set_common(jax, env, episodes, shared_seed, obs_norm, obs_clip, device, reward_shift)
        self.backend = backend
        self.episode_length = self.max_episode_steps = check_int("episode_length", episode_length, minimum=1)
        self.where = f"brax {env!r}"
        environment = envs.get_environment(env, backend=backend)
        state = jax.eval_shape(environment.reset, jax.ShapeDtypeStruct((2,), np.uint32))
        self.obs_shape = tuple(int(s) for s in state.obs.shape)
        self.obs_size = int(np.prod(self.obs_shape)) if self.obs_shape else 1
        self.actions = Actions(Box(-1.0, 1.0, (int(environment.action_size),)), self.where)
        self.policy = make_policy(policy, self.obs_size, self.actions.out_size, hidden, activation, init)
        check_output_shape(self.policy, (self.obs_size,), self.actions, self.where)
        self.dim = int(self.policy.dim)
        self._init_statistics()

    @classmethod
    def recommended(cls, env: object = "hopper", *args: object, strategy: str = "openai-es",
                    **options: object) -> dict[str, dict[str, Any]]:
        """The preset ``blackbox run`` applies for this task (see :mod:`.presets`)."""
        from .presets import recommended

        return recommended(f"brax:{env}", strategy)

    @classmethod
    def recommended_strategy(cls, env: object = "hopper", *args: object, **options: object) -> str | None:
        """The strategy ``blackbox run`` takes for this task when none is named (see :mod:`.presets`)."""
        from .presets import recommended_strategy

        return recommended_strategy(f"brax:{env}")

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "env": self.env_id, "backend": self.backend, "dim": self.dim,
                "policy": self.policy.describe(), "actions": self.actions.describe(), "episodes": self.episodes,
                "episode_length": self.episode_length, "obs_norm": self.obs_norm, "device": str(self.device),
                **({"reward_shift": self.reward_shift} if self.reward_shift else {})}

    def _environment_key(self) -> tuple[object, ...]:
        return (self.env_id, self.backend, self.episode_length)

    def _build(self, episodes: int) -> Generation:
        environment = import_brax().get_environment(self.env_id, backend=self.backend)
        import jax.numpy as jnp

        def reset(key: Any) -> Any:
            state = environment.reset(key)
            return state.obs, state

        def step(key: Any, state: Any, action: Any) -> Any:
            # Brax's bare environment: no auto-reset, so the state after a done is masked out, never reused
            state = environment.step(state, action)
            # some environments give Python floats (inverted_pendulum's reward is 1.0)
            return state.obs, state, jnp.asarray(state.reward, jnp.float32), jnp.asarray(state.done) > 0.5

        return make_generation(self, episodes, self.episode_length, reset, step, self.actions, loop="scan")
