"""Environment slots for batched rollouts: many episodes side by side, each reset with its own seed.

The rollout engine runs one episode per slot and keeps the live slots at the front
(``[0, live)``): when an episode ends, its slot takes the next episode of the queue, or the last
live slot is moved into it, so dead environments are never stepped. Two containers:

- :class:`GymSlots` holds one ``gymnasium`` environment per slot and steps them in lockstep in a
  Python loop. It works for every environment (and custom factories) and is exact by construction:
  each slot is the very environment a one-by-one evaluation would use.
- :class:`CartPoleSlots` steps every CartPole slot in one numpy operation. It is a replica of
  gymnasium's ``CartPoleEnv`` (same formulas in the same order, same reset draws from
  ``np.random.default_rng(seed)``), checked bit for bit against ``gymnasium.make("CartPole-v1")``
  by the test suite. gymnasium's own ``CartPoleVectorEnv`` draws every reset from one shared
  generator, so it cannot give each slot its own seed; that is why the replica exists.

``step`` writes observations into the engine's buffer (float32 or uint8 when the observation space is
a Box of that type, float64 otherwise) and returns rewards (float64, or None when every reward is 1),
terminated flags and truncated flags (or None when the container never truncates); time limits are
applied by the engine.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["GymSlots", "CartPoleSlots", "close_all", "flatten_observation", "observation_dtype", "CARTPOLE_IDS"]

#: Environment ids that :class:`CartPoleSlots` replicates exactly.
CARTPOLE_IDS = ("CartPole-v0", "CartPole-v1")


def observation_dtype(space: Any) -> np.dtype:
    """float32 and uint8 (pixels) for Box observations of those types (kept exactly), float64 for
    everything else."""
    from gymnasium import spaces

    if isinstance(space, spaces.Box) and space.dtype in (np.float32, np.uint8):
        return np.dtype(space.dtype)
    return np.dtype(np.float64)


def flatten_observation(space: Any) -> Callable[[Any], np.ndarray]:
    """A function mapping one observation of ``space`` to a flat vector of ``observation_dtype``."""
    from gymnasium import spaces

    dtype = observation_dtype(space)
    if isinstance(space, spaces.Box):
        return lambda obs: np.asarray(obs, dtype=dtype).reshape(-1)
    return lambda obs: np.asarray(spaces.flatten(space, obs), dtype=dtype).reshape(-1)


def close_all(envs: list[Any]) -> None:
    """Close every environment of ``envs``; one that fails to close does not stop the others."""
    for env in envs:
        try:
            env.close()
        except Exception:  # noqa: BLE001 - closing a broken env must not hide the real error
            pass


class GymSlots:
    """``capacity`` gymnasium environments stepped in lockstep; made lazily by ``make_env()``."""

    vectorized = False
    #: Rewards are checked for NaN and infinity after every step.
    finite_rewards = False

    def __init__(self, make_env: Callable[[], Any], capacity: int, observation_space: Any):
        self.make_env = make_env
        self.capacity = int(capacity)
        self.envs: list[Any] = []
        self._flatten = flatten_observation(observation_space)
        self.obs_dtype = observation_dtype(observation_space)
        # A flat Box: an observation is written into its row as it is (numpy casts it as
        # np.asarray(obs, dtype) would), with no temporary array per environment step.
        shape = getattr(observation_space, "shape", None)
        self._flat_box = type(observation_space).__name__ == "Box" and shape is not None and len(shape) == 1
        # step's results, rewritten every step (the engine reads them before the next step)
        self._rewards = np.empty(self.capacity, dtype=np.float64)
        self._terminated = np.empty(self.capacity, dtype=bool)
        self._truncated = np.empty(self.capacity, dtype=bool)

    def _ensure(self, slot: int) -> Any:
        while len(self.envs) <= slot:
            self.envs.append(self.make_env())
        return self.envs[slot]

    def reset(self, slot: int, seed: int) -> np.ndarray:
        """Start a new episode in ``slot`` with reset seed ``seed``; its first observation."""
        obs, _ = self._ensure(slot).reset(seed=int(seed))
        return self._flatten(obs)

    def step(self, actions: np.ndarray, live: int, obs_out: np.ndarray):
        """Step slots ``[0, live)``; write observations into ``obs_out[:live]``.

        Returns rewards, terminated and truncated flags (arrays of length ``live``, views of buffers
        that the next step rewrites).
        """
        rewards, terminated, truncated = self._rewards[:live], self._terminated[:live], self._truncated[:live]
        envs = self.envs
        if self._flat_box:
            for i in range(live):
                obs, reward, term, trunc, _ = envs[i].step(actions[i])
                obs_out[i] = obs
                rewards[i] = reward
                terminated[i] = term
                truncated[i] = trunc
            return rewards, terminated, truncated
        flatten = self._flatten
        for i in range(live):
            obs, reward, term, trunc, _ = envs[i].step(actions[i])
            obs_out[i] = flatten(obs)
            rewards[i] = reward
            terminated[i] = term
            truncated[i] = trunc
        return rewards, terminated, truncated

    def move(self, src: int, dst: int) -> None:
        """Give slot ``dst`` (finished) the running episode of slot ``src``; environments are swapped
        so that every one made is kept for later episodes."""
        self.envs[src], self.envs[dst] = self.envs[dst], self.envs[src]

    def close(self) -> None:
        close_all(self.envs)
        self.envs = []


class CartPoleSlots:
    """Every CartPole slot stepped in one numpy operation, bit-identical to gymnasium's CartPoleEnv."""

    vectorized = True
    finite_rewards = True
    #: Observations are float32 (as gymnasium's CartPole returns them).
    obs_dtype = np.float32

    gravity = 9.8
    masscart = 1.0
    masspole = 0.1
    total_mass = masspole + masscart
    length = 0.5
    polemass_length = masspole * length
    force_mag = 10.0
    tau = 0.02
    theta_threshold_radians = 12 * 2 * math.pi / 360
    x_threshold = 2.4

    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        self.state = np.zeros((4, self.capacity), dtype=np.float64)
        self._deriv = np.zeros((4, self.capacity), dtype=np.float64)
        self._forces = np.array([-self.force_mag, self.force_mag])
        self._limits = np.array([[self.x_threshold], [self.theta_threshold_radians]])

    def reset(self, slot: int, seed: int) -> np.ndarray:
        # gymnasium: np_random = Generator(PCG64(SeedSequence(seed))); state = uniform(-.05, .05, (4,))
        state = np.random.default_rng(int(seed)).uniform(low=-0.05, high=0.05, size=(4,))
        self.state[:, slot] = state
        return state.astype(np.float32)

    def step(self, actions: np.ndarray, live: int, obs_out: np.ndarray):
        """Step slots ``[0, live)``. Every reward is 1 and the time limit is the engine's, so
        rewards and truncated flags come back as None."""
        state = self.state[:, :live]
        x, x_dot, theta, theta_dot = state
        # deriv rows: x_dot, xacc, theta_dot, thetaacc (so that one += does the Euler step)
        deriv = self._deriv[:, :live]
        deriv[::2] = state[1::2]
        force = self._forces[actions]
        costheta = np.cos(theta)
        sintheta = np.sin(theta)
        # The formulas of gymnasium/envs/classic_control/cartpole.py, in the same order.
        temp = (force + self.polemass_length * np.square(theta_dot) * sintheta) / self.total_mass
        thetaacc = np.divide(
            self.gravity * sintheta - costheta * temp,
            self.length * (4.0 / 3.0 - self.masspole * np.square(costheta) / self.total_mass),
            out=deriv[3],
        )
        np.subtract(temp, self.polemass_length * thetaacc * costheta / self.total_mass, out=deriv[1])
        # Euler: x + tau * x_dot, x_dot + tau * xacc, theta + tau * theta_dot, theta_dot + tau * thetaacc
        deriv *= self.tau
        state += deriv
        # x < -2.4 or x > 2.4 or theta < -thr or theta > thr, for rows x and theta at once
        terminated = (np.abs(state[::2]) > self._limits).any(axis=0)
        obs_out[:live] = state.T  # gymnasium returns np.array(state, dtype=float32): same rounding
        return None, terminated, None

    def move(self, src: int, dst: int) -> None:
        """Give slot ``dst`` (finished) the running episode of slot ``src``."""
        self.state[:, dst] = self.state[:, src]

    def close(self) -> None:
        """Nothing to release."""
