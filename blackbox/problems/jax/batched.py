"""What the JAX-native problems share: a generation of episodes as one compiled call, fed compact.

:class:`BatchedJaxProblem` holds the protocol side of ``gymnax:ENV`` and ``brax:ENV``: dense rows
(rounded to float32) or a compact population expanded on the device (:mod:`.device_noise`), row
seeds as JAX keys (:func:`row_keys`), one read-back of the returns, lengths and observation moments,
running observation statistics folded in row order in float64 (:func:`fold_moments`), NaN returns
counted. A subclass builds its environment and policy and compiles its generation with
:func:`make_generation` (reset and step of one episode -> the batched rollout with done-masking).

Unrolling. ``make_generation(..., unroll=k)`` runs ``k`` steps per pass of the ``lax.while_loop``
(the loop still stops after the pass in which every episode has ended; the steps after an
episode's end are masked, so they change no return, length or moment). On XLA's CPU backend
``k = 4`` takes about 6% off a popsize-256 CartPole-v1 generation (4.53 -> 4.24 ms CPU over one run's
20 generations, 2026-11-28, jax 0.10.2, 2 idle cores; 13% before the policy's row was cut into layers
outside the loop, see :func:`make_generation`); ``k = 8`` is slower again, and compiling takes longer
as ``k`` grows. XLA does not promise the same fusion, hence the same float rounding, for bodies of different
``k``, and it differs: on this CPU backend CartPole-v1 (``k`` = 2, 3, 4, 8), Acrobot-v1 and
MountainCar-v0 (``k`` = 4) gave returns bit-identical to ``k = 1``, but Pendulum-v1's float32
returns moved by up to 3e-5 at ``k`` = 2 and 4 (tests/problems/jax/test_gymnax.py). A fixed ``k``
keeps same seeds -> same returns; across ``k``, or on another backend or XLA version, compare first.
"""

from __future__ import annotations

import difflib
import threading
from abc import abstractmethod
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from ..._validate import check_float, check_int
from ...core.population import Population
from ...core.problem import EvalResult, Problem
from ...errors import ConfigError, StateError
from .device_noise import DeviceNoise, compact_arrays, expand
from .policies import MLPPolicy, step_functions
from .runtime import import_jax

if TYPE_CHECKING:
    import jax

    from .policies import JaxPolicy

__all__ = ["BatchedJaxProblem", "Generation", "make_generation", "row_keys", "fold_moments", "shared_programs",
           "forget_programs"]

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


class Generation(TypedDict):
    """A compiled generation (:func:`make_generation`): ``dense(rows, keys, mean, std)`` and ``compact(table,
    arrays, keys, mean, std)`` each return ``(returns, lengths, counts, means, m2s)``; ``jax`` the module."""

    jax: ModuleType
    dense: Callable[..., tuple[jax.Array, ...]]
    compact: Callable[..., tuple[jax.Array, ...]]


class BatchedJaxProblem(Problem):
    """The shared protocol of the JAX-native problems (see the module docstring).

    A subclass sets ``name``, ``env_id``, ``where``, ``episodes``, ``obs_norm``, ``obs_size``,
    ``policy``, ``dim``, ``device_name`` and ``device`` (:meth:`_device`), calls :meth:`_init_statistics`,
    and implements :meth:`_build` (its compiled generation for a number of episodes per row).
    """

    name = "jax"
    env_id: str
    where: str
    episodes: int
    obs_norm: bool
    obs_size: int
    policy: JaxPolicy
    dim: int
    max_episode_steps: int
    device_name: str | None
    device: jax.Device

    def _init_statistics(self) -> None:
        self.count, self.mean, self.m2 = 0.0, np.zeros(self.obs_size), np.zeros(self.obs_size)
        #: NaN episode returns seen by ``observe`` (the driver's count over the run).
        self.nan_returns = 0
        self._runtime: dict[int, Generation] | None = None

    @staticmethod
    def _check_env(kind: str, env: str, known: list[str]) -> None:
        """A ConfigError naming close registered names when ``env`` is not one of ``known``."""
        if env not in known:
            close = difflib.get_close_matches(str(env), known, n=3, cutoff=0.5)
            hint = f"close names: {', '.join(close)}" if close else f"known: {', '.join(known)}"
            raise ConfigError(f"unknown {kind} environment {env!r}; {hint}")

    def _set_common(self, jax: ModuleType, env: str, episodes: int, shared_seed: bool, obs_norm: bool, obs_clip: float,
                    device: str | None, reward_shift: float = 0.0) -> None:
        """The options every JAX-native problem takes, checked."""
        self.env_id = self.env = env
        #: Added to every counted reward of a training episode (Mania et al. 2018 remove Hopper's survival
        #: bonus with -1), never in ``score`` or the goal check (:meth:`training_goal`).
        self.reward_shift = check_float("reward_shift", reward_shift)
        self.episodes = check_int("episodes", episodes, minimum=1)
        #: Every row of a generation gets one seed (the same start states for all), read by the driver.
        self.shared_seed = bool(shared_seed)
        self.obs_norm = bool(obs_norm)
        self.obs_clip = check_float("obs_clip", obs_clip, positive=True)
        self.device_name = device
        self.device = self._device(jax, device)

    @staticmethod
    def _device(jax: ModuleType, device: str | None) -> jax.Device:
        if device is None:
            return jax.devices()[0]
        try:
            return jax.devices(device)[0]
        except RuntimeError:
            platforms = sorted({d.platform for d in jax.devices()} | {"cpu"})
            raise ConfigError(f"device={device!r} is not available to JAX here; available: "
                              f"{', '.join(platforms)} (or leave device unset for JAX's default)") from None

    # -- the Problem protocol -----------------------------------------------------------------
    def initial_params(self, rng: np.random.Generator) -> np.ndarray:
        return np.asarray(self.policy.initial_params(rng), dtype=np.float64)

    def evaluate(self, params: np.ndarray, seeds: np.ndarray) -> EvalResult:
        """Dense rows (rounded to float32), one compiled call."""
        params = np.asarray(params, dtype=np.float64)
        if params.ndim != 2 or params.shape[1] != self.dim:
            raise ConfigError(f"{self.name} problem {self.env_id!r} takes parameter vectors of length {self.dim} "
                              f"({self.policy.describe()}), got params of shape {params.shape}")
        return self._evaluate_dense(params, self._seeds(seeds, len(params)), self.episodes)

    def _evaluate_dense(self, params: np.ndarray, seeds: np.ndarray, episodes: int,
                        shifted: bool = True) -> EvalResult:
        runtime = self._compiled(episodes)
        rows = runtime["jax"].device_put(params.astype(np.float32), self.device)
        return self._result(runtime["dense"](rows, *self._inputs(seeds, episodes)), shifted=shifted)

    def evaluate_population(self, population: Population, seeds: np.ndarray) -> EvalResult:
        """A compact population expanded on the device (the noise table uploaded once), one compiled call."""
        if not population.is_compact or population.table is None:
            return self.evaluate(population.params, seeds)
        if population.dim != self.dim:
            raise ConfigError(f"{self.name} problem {self.env_id!r} takes parameter vectors of length {self.dim}, "
                              f"got a population of dimension {population.dim}")
        seeds = self._seeds(seeds, len(population))
        runtime = self._compiled(self.episodes)
        table = DeviceNoise.table(population, self.device)
        return self._result(runtime["compact"](table, compact_arrays(population), *self._inputs(seeds, self.episodes)))

    def observe(self, result: EvalResult) -> None:
        self.nan_returns += int(np.sum(result.info.get("nan_returns", 0)))
        if self.obs_norm and "obs_count" in result.info:
            self.count, self.mean, self.m2 = fold_moments(self.count, self.mean, self.m2, result.info["obs_count"],
                                                          result.info["obs_mean"], result.info["obs_m2"])

    def state_dict(self) -> dict[str, object]:
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
            raise ConfigError(f"{self.name} problem {self.env_id!r} takes parameter vectors of length {self.dim}, "
                              f"got {row.shape[1]}")
        return self._evaluate_dense(np.repeat(row, episodes, axis=0), seeds, 1, shifted=False).fitness

    def training_goal(self, goal: float) -> float:
        """The training fitness at which the task's own return may have reached ``goal``: with
        ``reward_shift`` s < 0 an episode of at most H steps that returns ``goal`` trains at ``goal + s * H``
        or more, so the goal check screens there and confirms with :meth:`score` (as the gym problem's)."""
        return goal + min(self.reward_shift, 0.0) * self.max_episode_steps

    # -- internals ------------------------------------------------------------------------------
    def _seeds(self, seeds: np.ndarray, m: int) -> np.ndarray:
        seeds = np.asarray(seeds, dtype=np.int64).reshape(-1)
        if len(seeds) != m:
            raise ConfigError(f"evaluate() got {m} parameter rows but {len(seeds)} seeds")
        return seeds

    def _inputs(self, seeds: np.ndarray, episodes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Keys and the normalizer (float32 mean and std of the statistics so far), host arrays. They go to
        the compiled call as they are: JAX moves them to the device of the call's committed input (the rows
        or the noise table, put on ``self.device``) in one step of its dispatch, about 0.2-0.4 ms less a
        generation than ``jax.device_put`` from Python first."""
        std = np.ones(self.obs_size) if self.count < 1 else np.sqrt(np.maximum(self.m2 / self.count,
                                                                               _VARIANCE_FLOOR))
        return row_keys(seeds), self.mean.astype(np.float32), std.astype(np.float32)

    def _result(self, outputs: Any, shifted: bool = True) -> EvalResult:
        """One read-back of the generation's small arrays, as an EvalResult (the fitness shifted by
        ``reward_shift`` per counted step when ``shifted``). On the CPU backend the arrays
        are already host memory: ``np.asarray`` reads them (0.01 ms for a generation's five) where
        ``jax.device_get`` spends 0.1 ms in Python; elsewhere ``device_get`` starts every copy at once."""
        import jax

        if self.device.platform == "cpu":
            returns, lengths, counts, means, m2s = (np.asarray(array) for array in outputs)
        else:
            returns, lengths, counts, means, m2s = jax.device_get(outputs)
        returns = np.asarray(returns, dtype=np.float64)  # (m, episodes)
        nan = np.isnan(returns).sum(axis=1).astype(np.int64)
        info: dict[str, Any] = {"nan_returns": nan}
        if self.obs_norm:
            info.update(obs_count=np.asarray(counts, dtype=np.float64), obs_mean=np.asarray(means, dtype=np.float64),
                        obs_m2=np.asarray(m2s, dtype=np.float64))
        lengths = np.asarray(lengths, dtype=np.int64)  # (m, episodes)
        fitness = returns.mean(axis=1)
        if shifted and self.reward_shift:
            fitness = fitness + self.reward_shift * lengths.mean(axis=1)
        return EvalResult(fitness, lengths.sum(axis=1), info)

    def _compiled(self, episodes: int) -> Generation:
        """This process's compiled generation for ``episodes`` per row, made on first use and shared by
        every problem of this process that would compile the same program (:func:`shared_programs`);
        JAX keeps one executable per shape of the inputs."""
        if self._runtime is None:
            self._runtime = {}
        if episodes not in self._runtime:
            key = self._program_key(episodes)
            if key is None:  # a policy of the user's: compiled for this problem alone
                self._runtime[episodes] = self._build(episodes)
            else:
                with _PROGRAMS_LOCK:
                    if key not in _PROGRAMS:
                        _PROGRAMS[key] = self._build(episodes)
                    self._runtime[episodes] = _PROGRAMS[key]
        return self._runtime[episodes]

    def _program_key(self, episodes: int) -> tuple[object, ...] | None:
        """Everything the compiled generation depends on, or None when the policy is not a built-in one
        (an object of the user's may hold state its value does not show, so it is never shared)."""
        if type(self.policy) is not MLPPolicy:
            return None
        return (type(self), self._environment_key(), self.policy, self.obs_norm, float(self.obs_clip), episodes)

    @abstractmethod
    def _environment_key(self) -> tuple[object, ...]:
        """What of the environment the compiled generation depends on (its id, length, unroll, backend)."""

    @abstractmethod
    def _build(self, episodes: int) -> Generation:
        """``{"jax": jax, "dense": jitted(rows, keys, mean, std), "compact": jitted(table, arrays, keys, mean,
        std)}``, each returning ``(returns, lengths, counts, means, m2s)`` per row and episode."""

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["_runtime"] = None
        state["device"] = None  # a JAX device is found again where the problem is unpickled
        return state

    def __setstate__(self, state: Mapping[str, object]) -> None:
        self.__dict__.update(state)
        self.device = self._device(import_jax(self.name), self.device_name)


#: The compiled generations of this process by :meth:`BatchedJaxProblem._program_key`: a second problem of the
#: same settings (another seed of a comparison, a conformance check, a worker's copy) reuses the program
#: instead of tracing and compiling it again (seconds on a CPU, a minute for a Brax task).
_PROGRAMS: dict[tuple[object, ...], Generation] = {}
_PROGRAMS_LOCK = threading.Lock()


def shared_programs() -> int:
    """How many compiled generations this process holds for its JAX-native problems."""
    return len(_PROGRAMS)


def forget_programs() -> None:
    """Drop this process's shared compiled generations, so that the next problem compiles afresh (a
    benchmark that times the compile of each run; problems made before keep theirs)."""
    with _PROGRAMS_LOCK:
        _PROGRAMS.clear()


def make_generation(problem: BatchedJaxProblem, episodes: int, limit: int, reset: Callable[[Any], Any],
                    step: Callable[[Any, Any, Any], Any], actions: Callable[[Any], Any], *,
                    loop: str = "while", unroll: int = 1) -> Generation:
    """The jitted generation of ``problem``: dense rows or a compact population -> returns, lengths, moments.

    ``reset(key) -> (obs, state)`` starts one episode; ``step(key, state, action) -> (obs, state,
    reward, ended)`` advances it, ``ended`` true from the step that ends it (no auto-reset is needed:
    rewards and observations after an episode's first end are masked out). ``limit`` steps at most;
    ``loop="while"`` stops once every episode of the batch has ended (which changes no result),
    ``"scan"`` runs a ``lax.scan`` of exactly ``limit`` steps (cheaper to compile for a heavy step).
    ``unroll`` (``loop="while"``) runs that many steps in each pass of the loop's body: fewer passes
    of XLA's loop machinery for the same steps (see the module docstring); a pass's steps past
    ``limit`` (when ``unroll`` does not divide it) are masked as an ended episode's are. The policy's
    rows are cut into layers once, before the loop (:func:`.policies.step_functions`).
    """
    import jax
    import jax.numpy as jnp

    policy, clip = problem.policy, np.float32(getattr(problem, "obs_clip", 5.0))
    prepare, forward = step_functions(policy)  # the row cut into layers once, before the step loop
    obs_norm, size, dim = problem.obs_norm, problem.obs_size, problem.dim  # copied: a shared program keeps no problem

    def episode_keys(key_halves):
        key = jax.random.fold_in(jax.random.PRNGKey(key_halves[0]), key_halves[1])
        return jax.vmap(lambda e: jax.random.fold_in(key, e))(jnp.arange(episodes))

    def start(key):
        key, reset_key = jax.random.split(key)
        obs, state = reset(reset_key)
        zeros = jnp.zeros(size, jnp.float32)
        return (obs, state, key, jnp.bool_(False), jnp.float32(0), jnp.int32(0), (jnp.float32(0), zeros, zeros))

    def advance_one(row, mean, std, in_time, carry):
        obs, state, key, done, total, length, (n, mu, m2) = carry
        x = obs.reshape(-1).astype(jnp.float32)
        inputs = jnp.clip((x - mean) / std, -clip, clip) if obs_norm else x
        action = actions(forward(row, inputs))
        key, step_key = jax.random.split(key)
        obs2, state2, reward, ended = step(step_key, state, action)
        alive = jnp.logical_and(jnp.logical_not(done), in_time)
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
        rows = jax.vmap(prepare)(rows)
        keys = jax.vmap(episode_keys)(key_halves)  # (m, episodes, key)
        carry = jax.vmap(jax.vmap(start))(keys)
        batched = jax.vmap(jax.vmap(advance_one, in_axes=(None, None, None, None, 0)),
                           in_axes=(0, None, None, None, 0))

        if loop == "scan":
            carry, _ = jax.lax.scan(lambda c, _: (batched(rows, mean, std, jnp.bool_(True), c), None), carry, None,
                                    length=limit)
        else:
            def unfinished(state):
                t, carry = state
                return jnp.logical_and(t < limit, jnp.logical_not(jnp.all(carry[3])))

            def advance(state):
                t, carry = state
                for j in range(unroll):  # a step past the limit (when unroll does not divide it) is masked
                    in_time = t + j < limit if limit % unroll else jnp.bool_(True)
                    carry = batched(rows, mean, std, in_time, carry)
                return t + unroll, carry

            _, carry = jax.lax.while_loop(unfinished, advance, (jnp.int32(0), carry))
        _, _, _, _, total, length, (n, mu, m2) = carry
        return total, length, n, mu, m2

    @jax.jit
    def dense(rows, key_halves, mean, std):
        return generation(rows, key_halves, mean, std)

    @jax.jit
    def compact(table, arrays, key_halves, mean, std):
        rows = expand(table, arrays["bases"], arrays["parents"], arrays["offsets"], arrays["signs"],
                      arrays["sigma"], dim)
        return generation(rows, key_halves, mean, std)

    return {"jax": jax, "dense": dense, "compact": compact}
