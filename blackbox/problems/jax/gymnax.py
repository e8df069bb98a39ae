"""The ``gymnax`` problem: a whole generation's episodes as one compiled JAX call.

    bb.make_problem("gymnax:CartPole-v1")                        # MLP 16 tanh, 1 episode per row
    bb.make_problem("gymnax:Pendulum-v1,policy=linear,episodes=3,obs_norm=true")

Any environment gymnax registers (classic control: CartPole-v1, Pendulum-v1, Acrobot-v1,
MountainCar-v0, MountainCarContinuous-v0; MinAtar: Breakout-MinAtar, ...). The policy is a pure
JAX function of a parameter row (:mod:`.policies`). ``evaluate`` runs every row's episodes side by
side in one ``jit(vmap(rollout))`` call, compiled once per process and shape: episodes have the
task's fixed length with done-masking (rewards after an episode ends are masked out; the loop
stops early once every episode of the batch has ended, which changes no result).

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

import difflib
from typing import Any

import numpy as np

from ..._validate import check_float, check_int
from ...core.population import Population
from ...core.problem import EvalResult, Problem
from ...errors import ConfigError, StateError
from .device_noise import DeviceNoise, compact_arrays, expand
from .policies import Actions, check_output_shape, make_policy
from .runtime import import_gymnax, import_jax

__all__ = ["GymnaxProblem", "row_keys", "fold_moments"]

_VARIANCE_FLOOR = 1e-2  # as the gym problem's (std >= 0.1)


def row_keys(seeds: np.ndarray) -> np.ndarray:
    """``(m, 2)`` uint32: each row's int64 seed as its two 32-bit halves (the JAX key is made from both)."""
    as_unsigned = np.asarray(seeds, dtype=np.int64).astype(np.uint64)
    return np.stack([(as_unsigned & 0xFFFFFFFF).astype(np.uint32), (as_unsigned >> 32).astype(np.uint32)], axis=1)


def fold_moments(count: float, mean: np.ndarray, m2: np.ndarray, counts: np.ndarray, means: np.ndarray,
                 m2s: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """The running ``(count, mean, m2)`` with the reports ``counts (k,)``, ``means (k, d)``, ``m2s (k, d)``
    folded in (Chan et al.'s parallel formula: the batch's moments first, then the union), float64."""
    counts = np.asarray(counts, dtype=np.float64).reshape(-1)
    means = np.asarray(means, dtype=np.float64).reshape(len(counts), -1)
    m2s = np.asarray(m2s, dtype=np.float64).reshape(len(counts), -1)
    n = float(counts.sum())
    if n <= 0:
        return count, mean, m2
    batch_mean = (counts[:, None] * means).sum(axis=0) / n
    batch_m2 = m2s[counts > 0].sum(axis=0) + (counts[:, None] * np.square(means - batch_mean)).sum(axis=0)
    if count <= 0:
        return n, batch_mean, batch_m2
    total = count + n
    delta = batch_mean - mean
    return total, mean + delta * (n / total), m2 + batch_m2 + np.square(delta) * (count * n / total)


class GymnaxProblem(Problem):
    """Mean episode return of a JAX policy on a gymnax environment, a generation per compiled call.

    ``env`` a gymnax id; ``episodes`` per row; ``policy`` ``"mlp"`` (``hidden`` units,
    ``activation``), ``"linear"`` or a policy object (:mod:`.policies`); ``obs_norm`` running
    observation statistics (inputs clipped to ``obs_clip``); ``max_episode_steps`` below the task's
    own limit; ``shared_seed`` the same episodes for every row of a generation; ``device`` a JAX platform (``"cpu"``, ``"gpu"``; None: JAX's default device).
    """

    name = "gymnax"
    needs = {"jax": "jax", "gymnax": "jax"}

    def __init__(self, env: str = "CartPole-v1", *, episodes: int = 1, policy: Any = "mlp",
                 hidden: Any = (16,), activation: str = "tanh", obs_norm: bool = False, obs_clip: float = 5.0,
                 max_episode_steps: int | None = None, shared_seed: bool = False, device: str | None = None):
        gymnax = import_gymnax()
        jax = import_jax("gymnax")
        known = list(gymnax.registered_envs)
        if env not in known:
            close = difflib.get_close_matches(str(env), known, n=3, cutoff=0.5)
            hint = f"close names: {', '.join(close)}" if close else f"known: {', '.join(known)}"
            raise ConfigError(f"unknown gymnax environment {env!r}; {hint}")
        self.env_id = self.env = env
        self.episodes = check_int("episodes", episodes, minimum=1)
        #: Every row of a generation gets one seed (the same start states for all), read by the driver.
        self.shared_seed = bool(shared_seed)
        self.obs_norm = bool(obs_norm)
        self.obs_clip = check_float("obs_clip", obs_clip, positive=True)
        self.device_name = device
        self.device = self._device(jax, device)
        environment, env_params = gymnax.make(env)
        limit = int(env_params.max_steps_in_episode)
        if max_episode_steps is not None:
            limit = check_int("max_episode_steps", max_episode_steps, minimum=1, maximum=limit)
        self.max_episode_steps = limit
        self.where = f"gymnax {env!r}"
        self.obs_shape = tuple(int(s) for s in environment.observation_space(env_params).shape)
        self.obs_size = int(np.prod(self.obs_shape)) if self.obs_shape else 1
        self.actions = Actions(environment.action_space(env_params), self.where)
        self.policy = make_policy(policy, self.obs_size, self.actions.out_size, hidden, activation)
        check_output_shape(self.policy, (self.obs_size,), self.actions, self.where)
        self.dim = int(self.policy.dim)
        self.count, self.mean, self.m2 = 0.0, np.zeros(self.obs_size), np.zeros(self.obs_size)
        #: NaN episode returns seen by ``observe`` (the driver's count over the run).
        self.nan_returns = 0
        self._runtime: dict[int, dict[str, Any]] | None = None

    @staticmethod
    def _device(jax: Any, device: str | None) -> Any:
        if device is None:
            return jax.devices()[0]
        try:
            return jax.devices(device)[0]
        except RuntimeError:
            platforms = sorted({d.platform for d in jax.devices()} | {"cpu"})
            raise ConfigError(f"device={device!r} is not available to JAX here; available: "
                              f"{', '.join(platforms)} (or leave device unset for JAX's default)") from None

    @classmethod
    def recommended(cls, env: Any = "CartPole-v1", *args: Any, strategy: str = "openai-es",
                    **options: Any) -> dict[str, dict[str, Any]]:
        """The preset ``blackbox run`` applies for this task (see :mod:`.presets`)."""
        from .presets import recommended

        return recommended(str(env), strategy)

    @classmethod
    def recommended_strategy(cls, env: Any = "CartPole-v1", *args: Any, **options: Any) -> str | None:
        """The strategy ``blackbox run`` takes for this task when none is named (see :mod:`.presets`)."""
        from .presets import recommended_strategy

        return recommended_strategy(str(env))

    # -- the Problem protocol -----------------------------------------------------------------
    def initial_params(self, rng: np.random.Generator) -> np.ndarray:
        return np.asarray(self.policy.initial_params(rng), dtype=np.float64)

    def evaluate(self, params: np.ndarray, seeds: np.ndarray) -> EvalResult:
        """Dense rows (rounded to float32), one compiled call."""
        params = np.asarray(params, dtype=np.float64)
        if params.ndim != 2 or params.shape[1] != self.dim:
            raise ConfigError(f"gymnax problem {self.env_id!r} takes parameter vectors of length {self.dim} "
                              f"({self.policy.describe()}), got params of shape {params.shape}")
        return self._evaluate_dense(params, self._seeds(seeds, len(params)), self.episodes)

    def _evaluate_dense(self, params: np.ndarray, seeds: np.ndarray, episodes: int) -> EvalResult:
        runtime = self._compiled(episodes)
        rows = runtime["jax"].device_put(params.astype(np.float32), self.device)
        return self._result(runtime["dense"](rows, *self._inputs(seeds, episodes)))

    def evaluate_population(self, population: Population, seeds: np.ndarray) -> EvalResult:
        """A compact population expanded on the device (the noise table uploaded once), one compiled call."""
        if not population.is_compact or population.table is None:
            return self.evaluate(population.params, seeds)
        if population.dim != self.dim:
            raise ConfigError(f"gymnax problem {self.env_id!r} takes parameter vectors of length {self.dim}, "
                              f"got a population of dimension {population.dim}")
        seeds = self._seeds(seeds, len(population))
        runtime = self._compiled(self.episodes)
        table = DeviceNoise.table(population, self.device)
        arrays = runtime["jax"].device_put(compact_arrays(population), self.device)
        return self._result(runtime["compact"](table, arrays, *self._inputs(seeds, self.episodes)))

    def observe(self, result: EvalResult) -> None:
        self.nan_returns += int(np.sum(result.info.get("nan_returns", 0)))
        if self.obs_norm and "obs_count" in result.info:
            self.count, self.mean, self.m2 = fold_moments(self.count, self.mean, self.m2, result.info["obs_count"],
                                                          result.info["obs_mean"], result.info["obs_m2"])

    def state_dict(self) -> dict[str, Any]:
        if not self.obs_norm:
            return {}
        return {"obs_count": self.count, "obs_mean": self.mean.copy(), "obs_m2": self.m2.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if not state or not self.obs_norm or "obs_mean" not in state:
            return
        mean = np.array(state["obs_mean"], dtype=np.float64).reshape(-1)
        m2 = np.array(state["obs_m2"], dtype=np.float64).reshape(-1)
        if mean.shape != (self.obs_size,) or m2.shape != (self.obs_size,):
            raise StateError(f"observation statistics are for {mean.size} features, but {self.where} observations "
                             f"have {self.obs_size}; the state comes from another environment")
        self.count, self.mean, self.m2 = float(np.asarray(state["obs_count"])), mean, m2

    def score(self, params: np.ndarray, episodes: int = 20, seed: int = 0) -> np.ndarray:
        """Returns of ``params`` on ``episodes`` episodes whose seeds derive from ``seed``."""
        episodes = check_int("episodes", episodes, minimum=1)
        seeds = np.random.default_rng(check_int("seed", seed, minimum=0)).integers(0, 2**62, episodes)
        row = np.asarray(params, dtype=np.float64).reshape(1, -1)
        if row.shape[1] != self.dim:
            raise ConfigError(f"gymnax problem {self.env_id!r} takes parameter vectors of length {self.dim}, "
                              f"got {row.shape[1]}")
        return self._evaluate_dense(np.repeat(row, episodes, axis=0), seeds, 1).fitness

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "env": self.env_id, "dim": self.dim, "policy": self.policy.describe(),
                "actions": self.actions.describe(), "episodes": self.episodes,
                "max_episode_steps": self.max_episode_steps, "obs_norm": self.obs_norm,
                "device": str(self.device)}

    # -- internals ------------------------------------------------------------------------------
    def _seeds(self, seeds: np.ndarray, m: int) -> np.ndarray:
        seeds = np.asarray(seeds, dtype=np.int64).reshape(-1)
        if len(seeds) != m:
            raise ConfigError(f"evaluate() got {m} parameter rows but {len(seeds)} seeds")
        return seeds

    def _inputs(self, seeds: np.ndarray, episodes: int) -> tuple[Any, Any, Any]:
        """Keys and the normalizer (float32 mean and std of the statistics so far) on the device."""
        std = np.ones(self.obs_size) if self.count < 1 else np.sqrt(np.maximum(self.m2 / self.count,
                                                                               _VARIANCE_FLOOR))
        import jax

        return tuple(jax.device_put([row_keys(seeds), self.mean.astype(np.float32),
                                     std.astype(np.float32)], self.device))

    def _result(self, outputs: Any) -> EvalResult:
        """One read-back of the generation's small arrays, as an EvalResult."""
        import jax

        returns, lengths, counts, means, m2s = jax.device_get(outputs)
        returns = np.asarray(returns, dtype=np.float64)  # (m, episodes)
        nan = np.isnan(returns).sum(axis=1).astype(np.int64)
        info: dict[str, Any] = {"nan_returns": nan}
        if self.obs_norm:
            info.update(obs_count=np.asarray(counts, dtype=np.float64), obs_mean=np.asarray(means, dtype=np.float64),
                        obs_m2=np.asarray(m2s, dtype=np.float64))
        return EvalResult(returns.mean(axis=1), np.asarray(lengths, dtype=np.int64).sum(axis=1), info)

    def _compiled(self, episodes: int) -> dict[str, Any]:
        """This process's compiled generation for ``episodes`` per row (made on first use; JAX keeps one
        program per shape of the inputs)."""
        if self._runtime is None:
            self._runtime = {}
        if episodes not in self._runtime:
            self._runtime[episodes] = _compile(self, episodes)
        return self._runtime[episodes]

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_runtime"] = None
        state["device"] = None  # a JAX device is found again where the problem is unpickled
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.device = self._device(import_jax("gymnax"), self.device_name)


def _compile(problem: GymnaxProblem, episodes: int) -> dict[str, Any]:
    """The jitted generation of ``problem``: dense rows or a compact population -> returns, lengths, moments."""
    gymnax = import_gymnax()
    import jax
    import jax.numpy as jnp

    environment, env_params = gymnax.make(problem.env_id)
    env_params = env_params.replace(max_steps_in_episode=problem.max_episode_steps)
    policy, actions, clip = problem.policy, problem.actions, np.float32(problem.obs_clip)
    limit, obs_norm, size = problem.max_episode_steps, problem.obs_norm, problem.obs_size

    def episode_keys(key_halves):
        key = jax.random.fold_in(jax.random.PRNGKey(key_halves[0]), key_halves[1])
        return jax.vmap(lambda e: jax.random.fold_in(key, e))(jnp.arange(episodes))

    def start(key):
        key, reset_key = jax.random.split(key)
        obs, state = environment.reset(reset_key, env_params)
        zeros = jnp.zeros(size, jnp.float32)
        return (obs, state, key, jnp.bool_(False), jnp.float32(0), jnp.int32(0), (jnp.float32(0), zeros, zeros))

    def step(row, mean, std, carry):
        obs, state, key, done, total, length, (n, mu, m2) = carry
        x = obs.reshape(-1).astype(jnp.float32)
        inputs = jnp.clip((x - mean) / std, -clip, clip) if obs_norm else x
        action = actions(policy.apply(row, inputs))
        key, step_key = jax.random.split(key)
        # step_env without the auto-reset of step(): an ended episode's steps are masked out anyway
        obs2, state2, reward, terminated, _ = environment.step_env(step_key, state, action, env_params)
        ended = jnp.logical_or(terminated, environment.is_truncated(state2, env_params))
        alive = jnp.logical_not(done)
        total = total + jnp.where(alive, reward.astype(jnp.float32), jnp.float32(0))
        length = length + alive.astype(jnp.int32)
        if obs_norm:  # Welford's update over the observations this episode acted on
            n2 = n + alive.astype(jnp.float32)
            delta = x - mu
            mu2 = jnp.where(alive, mu + delta / jnp.maximum(n2, 1.0), mu)
            m2 = jnp.where(alive, m2 + delta * (x - mu2), m2)
            n, mu = n2, mu2
        return (obs2, state2, key, jnp.logical_or(done, ended), total, length, (n, mu, m2))

    def generation(rows, key_halves, mean, std):
        keys = jax.vmap(episode_keys)(key_halves)  # (m, episodes, key)
        carry = jax.vmap(jax.vmap(start))(keys)
        batched = jax.vmap(jax.vmap(step, in_axes=(None, None, None, 0)), in_axes=(0, None, None, 0))

        def unfinished(loop):
            t, carry = loop
            return jnp.logical_and(t < limit, jnp.logical_not(jnp.all(carry[3])))

        def advance(loop):
            t, carry = loop
            return t + 1, batched(rows, mean, std, carry)

        _, carry = jax.lax.while_loop(unfinished, advance, (jnp.int32(0), carry))
        _, _, _, _, total, length, (n, mu, m2) = carry
        return total, length, n, mu, m2

    @jax.jit
    def dense(rows, key_halves, mean, std):
        return generation(rows, key_halves, mean, std)

    @jax.jit
    def compact(table, arrays, key_halves, mean, std):
        rows = expand(table, arrays["bases"], arrays["parents"], arrays["offsets"], arrays["signs"],
                      arrays["sigma"], problem.dim)
        return generation(rows, key_halves, mean, std)

    return {"jax": jax, "dense": dense, "compact": compact}
