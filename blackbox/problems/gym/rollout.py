"""The episode loops: many members' episodes side by side, one after another, and one alone.

:class:`BatchedRollouts` runs the episodes of a slice of the population (``episodes`` per
member, each a "job") in up to ``capacity`` environment slots. Every step it calls the policy ONCE
for all live slots, turns the outputs into actions, and steps all live environments together.
When an episode ends, its slot takes the next job of the queue (reset with that job's own seed);
once the queue is empty, the last live slots move into the finished ones, so dead environments
are never stepped and the batch stays dense.

:class:`OneByOneRollouts` is the reference engine (``batched=False``): each member's episodes one
after another in one environment, through :func:`rollout_episode`, the plain one-environment loop
(also what ``play`` and ``score`` of a single episode use). Both engines do exactly the same
arithmetic per episode (the policy's output for a slot depends only on that slot), so batched
evaluation returns bit for bit the returns of evaluating members one by one, whatever the capacity
and order; the test suite checks this on every supported task.

What the loops need from their parts is written down as protocols: :class:`Slots` (environments
stepped together, :mod:`.slots`), :class:`PolicyRecipe` and :class:`PolicyRuntime` (a policy and its
per-process parameter slots, :mod:`.policies`), and :class:`Adapter` (outputs to actions,
:mod:`.actions`).

Seeds: episode ``e`` of a row with seed ``s`` resets with ``s`` itself for ``e = 0`` and with a
seed derived from ``(s, e)`` otherwise (:func:`episode_seeds`). Action noise comes from a
generator derived from the episode's reset seed, so it too is independent of the batching.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast

import numpy as np
from numpy.typing import DTypeLike

from ...core.row_source import RowSource
from .obs_norm import Moments, Normalizer, SlotMoments, combine_moments

__all__ = ["BatchedRollouts", "OneByOneRollouts", "Rollouts", "rollout_episode", "episode_seeds",
           "noise_generator", "Slots", "PolicyRecipe", "PolicyRuntime", "Adapter"]

_NOISE_KEY = 0x6E6F6973  # "nois": action-noise streams, independent of the environment's own


class Slots(Protocol):
    """Environments stepped together, one episode per slot (:mod:`.slots`)."""

    @property
    def capacity(self) -> int: ...

    @property
    def obs_dtype(self) -> DTypeLike:
        """The dtype of the observation buffer ``step`` writes into."""

    @property
    def finite_rewards(self) -> bool:
        """True when rewards need no check for NaN and infinity."""

    def reset(self, slot: int, seed: int) -> np.ndarray:
        """Start an episode in ``slot`` with reset seed ``seed``; its first flat observation."""

    def step(self, actions: np.ndarray, live: int,
             obs_out: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None]:
        """Step slots ``[0, live)``, writing observations into ``obs_out[:live]``: rewards (None:
        every reward is 1), terminated flags, truncated flags (None: never truncates)."""

    def move(self, src: int, dst: int) -> None:
        """Give the finished slot ``dst`` the running episode of slot ``src``."""

    def close(self) -> None: ...


class PolicyRuntime(Protocol):
    """A policy's parameter slots in one process (:meth:`PolicyRecipe.batch`)."""

    def set_reference(self, inputs: np.ndarray) -> None:
        """The VBN reference batch (float32 policy inputs) for members loaded from now on."""

    def load(self, slot: int, params: np.ndarray) -> None:
        """Put one member's flat parameters into ``slot``."""

    def move(self, src: int, dst: int) -> None:
        """Copy slot ``src`` into slot ``dst``."""

    def forward(self, x: np.ndarray, live: int) -> np.ndarray:
        """Outputs ``(live, out)`` of slots ``[0, live)`` for float32 inputs ``x``, in ONE call."""


class PolicyRecipe(Protocol):
    """A picklable policy that makes its runtime in the process that evaluates (:mod:`.policies`)."""

    def batch(self, capacity: int) -> PolicyRuntime: ...


class Adapter(Protocol):
    """Policy outputs to actions for a batch of slots (:mod:`.actions`)."""

    @property
    def noise_size(self) -> int:
        """How many action-noise values one action takes."""

    def __call__(self, out: np.ndarray, noise: np.ndarray | None = None) -> np.ndarray: ...


def episode_seeds(row_seeds: np.ndarray, episodes: int) -> np.ndarray:
    """Reset seeds ``(m, episodes)``: episode 0 uses the row's seed, later ones derive from it."""
    row_seeds = np.asarray(row_seeds, dtype=np.int64).reshape(-1)
    out = np.empty((len(row_seeds), int(episodes)), dtype=np.int64)
    out[:, 0] = row_seeds
    for e in range(1, int(episodes)):
        out[:, e] = [np.random.SeedSequence(int(s), spawn_key=(e,)).generate_state(1)[0] for s in row_seeds]
    return out


def noise_generator(episode_seed: int) -> np.random.Generator:
    """The action-noise stream of the episode reset with ``episode_seed``."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(episode_seed), spawn_key=(_NOISE_KEY,))))


def nonfinite_reward(where: str, reward: float, step: int, seed: int) -> ValueError:
    return ValueError(
        f"{where} returned a non-finite reward ({reward}) at step {step} of the episode reset with "
        f"seed {seed}; rewards must be finite numbers (clip or fix them in the environment)"
    )


@dataclass
class Rollouts:
    """Per job results: ``returns`` and ``lengths`` are ``(m, episodes)``; ``moments`` per row."""

    returns: np.ndarray
    lengths: np.ndarray
    counts: np.ndarray | None = None
    means: np.ndarray | None = None
    m2s: np.ndarray | None = None


def _row_moments(per_job: dict[int, Moments], m: int, episodes: int,
                 size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Combine each sampled row's episode moments in episode order (zeros for the other rows)."""
    counts = np.zeros(m, dtype=np.float64)
    means = np.zeros((m, size), dtype=np.float64)
    m2s = np.zeros((m, size), dtype=np.float64)
    for row in sorted({job // episodes for job in per_job}):
        total: Moments = (0.0, np.zeros(size), np.zeros(size))
        for e in range(episodes):
            job = row * episodes + e
            if job in per_job:
                total = combine_moments(total, per_job[job])
        counts[row], means[row], m2s[row] = total
    return counts, means, m2s


def _results(returns: np.ndarray, lengths: np.ndarray, moments: dict[int, Moments], collect: np.ndarray | None,
             size: int) -> Rollouts:
    m, episodes = returns.shape
    result = Rollouts(returns, lengths)
    if collect is not None:
        result.counts, result.means, result.m2s = _row_moments(moments, m, episodes, size)
    return result


def _limits(limit: int | np.ndarray | None, task_limit: int, m: int) -> np.ndarray:
    """Each row's episode length limit in one call: ``limit`` (an episode cap, one for every row or one
    per row) below the task's own."""
    if limit is None:
        return np.full(m, task_limit, dtype=np.int64)
    return np.clip(np.broadcast_to(np.asarray(limit, dtype=np.int64), (m,)), 1, task_limit)


class BatchedRollouts:
    """Episodes of many members in ``capacity`` slots, one batched policy call per step."""

    def __init__(self, slots: Slots, policy: PolicyRecipe, adapter: Adapter, obs_size: int, limit: int,
                 action_noise: float = 0.0, where: str = "the environment"):
        self.slots = slots
        self.capacity = slots.capacity
        self.batch = policy.batch(self.capacity)
        self.adapter = adapter
        self.obs_size = int(obs_size)
        self.limit = int(limit)
        self.action_noise = float(action_noise)
        self.where = where

    def run(self, params: np.ndarray | RowSource, seeds: np.ndarray, collect: np.ndarray | None = None,
            normalizer: Normalizer | None = None, reference: np.ndarray | None = None,
            limit: int | np.ndarray | None = None, floor: float | None = None) -> Rollouts:
        """Returns and lengths of every (row, episode) of ``params`` under ``seeds`` ``(m, E)``.

        ``collect`` marks the rows that gather observation statistics; ``reference`` (float32
        policy inputs) is the VBN reference batch of this call; ``limit`` caps the episodes below
        the task's own limit (an episode cap: one for all rows, or one per row); ``floor`` raises
        every reward below it to it (a training episode's ``reward_floor``).
        """
        m, episodes = seeds.shape
        if reference is not None:
            self.batch.set_reference(reference)
        jobs = m * episodes
        returns = np.zeros(jobs, dtype=np.float64)
        lengths = np.zeros(jobs, dtype=np.int64)
        moments: dict[int, Moments] = {}
        cap = self.capacity
        slots, batch, adapter = self.slots, self.batch, self.adapter
        obs = np.zeros((cap, self.obs_size), dtype=slots.obs_dtype)
        as_is = normalizer is None and obs.dtype == np.float32  # feed the buffer to the policy directly
        # the policy's float32 inputs and the normalizer's float64 scratch, rewritten every step
        inputs_buffer = np.zeros((cap, self.obs_size), dtype=np.float32)
        scratch = np.zeros((cap, self.obs_size), dtype=np.float64) if normalizer is not None else None
        check_rewards = not slots.finite_rewards
        job_of = np.zeros(cap, dtype=np.int64)
        ret = np.zeros(cap, dtype=np.float64)
        born = np.zeros(cap, dtype=np.int64)  # the step count t at which the slot's episode began
        collecting = np.zeros(cap, dtype=bool)
        stats = SlotMoments(cap, self.obs_size) if collect is not None else None  # of collecting slots
        running = cast(SlotMoments, stats)  # used only where a slot collects (stats is then not None)
        noise_rngs: list[np.random.Generator | None] = [None] * cap
        flat_seeds = seeds.reshape(-1)
        noise_std = np.float32(self.action_noise)
        limits = _limits(limit, self.limit, m)
        stop_at = np.zeros(cap, dtype=np.int64)  # the step count t at which the slot's episode is cut
        unit = 1.0 if floor is None else max(1.0, float(floor))  # the reward of a task whose rewards are all 1
        next_job = 0
        sampling = 0  # how many live slots collect observation statistics
        t = 0  # steps taken by this batch so far; a slot's episode length is t - born[slot]

        def start(slot: int) -> None:
            nonlocal next_job, sampling
            job = next_job
            next_job += 1
            row = job // episodes
            seed = int(flat_seeds[job])
            obs[slot] = slots.reset(slot, seed)
            batch.load(slot, params[row])
            job_of[slot] = job
            ret[slot] = 0.0
            born[slot] = t
            stop_at[slot] = t + limits[row]
            sampled = collect is not None and bool(collect[row])
            collecting[slot] = sampled
            sampling += sampled
            if sampled:
                running.start(slot, obs[slot])
            noise_rngs[slot] = noise_generator(seed) if noise_std else None

        def move(src: int, dst: int) -> None:
            slots.move(src, dst)
            batch.move(src, dst)
            obs[dst] = obs[src]
            job_of[dst], ret[dst], born[dst], stop_at[dst] = job_of[src], ret[src], born[src], stop_at[src]
            if collecting[src]:
                running.move(src, dst)
            collecting[dst], collecting[src] = collecting[src], False
            noise_rngs[dst], noise_rngs[src] = noise_rngs[src], None

        live = 0
        while live < cap and next_job < jobs:
            start(live)
            live += 1
        deadline = int(stop_at[:live].min()) if live else 0  # no live episode reaches its limit before this
        # Views of the live slots' rows, made again only when the number of live slots changes
        # (a few numpy calls fewer per step: they are most of the engine's cost at small groups).
        x, z, inputs_view, ret_live = obs[:live], scratch[:live] if scratch is not None else None, \
            inputs_buffer[:live], ret[:live]
        everyone = slice(0, live)
        while live:
            if as_is:
                inputs = x
            elif normalizer is not None:
                inputs = normalizer.into(x, cast(np.ndarray, z), inputs_view)
            else:
                inputs = inputs_view
                np.copyto(inputs, x, casting="same_kind")  # what x.astype(np.float32) gives
            if sampling:  # the collecting slots' running sums, in one update for all of them
                running.add(x, everyone if sampling == live else np.flatnonzero(collecting[:live]))
            out = batch.forward(inputs, live)
            noise = None
            if noise_std:
                rngs = cast(list[np.random.Generator], noise_rngs)  # every live slot has one when noise_std
                noise = np.stack([rngs[s].standard_normal(adapter.noise_size, dtype=np.float32)
                                  for s in range(live)]) * noise_std
            actions = adapter(out, noise)
            # rewards None: every reward is 1 (the return is the length); truncated None: never
            rewards, terminated, truncated = slots.step(actions, live, obs)
            t += 1
            if rewards is not None:
                if check_rewards and np.count_nonzero(np.isfinite(rewards)) != live:
                    bad = int(np.flatnonzero(~np.isfinite(rewards))[0])
                    raise nonfinite_reward(self.where, rewards[bad], int(t - born[bad]),
                                           int(flat_seeds[job_of[bad]]))
                ret_live += rewards if floor is None else np.maximum(rewards, floor)
            done = terminated if truncated is None else terminated | truncated
            if t >= deadline:
                done = done | (stop_at[:live] <= t)
            if not np.count_nonzero(done):  # done.any(), without its Python wrapper
                continue
            free = []
            for s in np.flatnonzero(done).tolist():
                job = int(job_of[s])
                lengths[job] = t - born[s]
                returns[job] = ret[s] if rewards is not None else unit * float(lengths[job])
                if collecting[s]:
                    moments[job] = running.take(s)
                    collecting[s] = False
                    sampling -= 1
                if next_job < jobs:
                    start(s)
                else:
                    free.append(s)
            if free:
                # Move live slots from the tail into the holes, so [0, live) stays dense.
                new_live = live - len(free)
                free_set = set(free)
                holes = [s for s in free if s < new_live]
                movers = [s for s in range(new_live, live) if s not in free_set]
                for hole, mover in zip(holes, movers):
                    move(mover, hole)
                live = new_live
                x, z, inputs_view, ret_live = obs[:live], scratch[:live] if scratch is not None else None, \
                    inputs_buffer[:live], ret[:live]
                everyone = slice(0, live)
            if live:
                deadline = int(stop_at[:live].min())
        return _results(returns.reshape(m, episodes), lengths.reshape(m, episodes), moments, collect,
                        self.obs_size)

    def close(self) -> None:
        self.slots.close()


class OneByOneRollouts:
    """The reference engine: every episode in turn in one environment, through :func:`rollout_episode`.

    ``make_env()`` makes the environment (once, when the engine is made); ``flatten`` turns one of
    its observations into a flat vector.
    """

    def __init__(self, make_env: Callable[[], Any], flatten: Callable[[Any], np.ndarray], policy: PolicyRecipe,
                 adapter: Adapter, obs_size: int, limit: int, action_noise: float = 0.0,
                 where: str = "the environment"):
        self.env = make_env()
        self.flatten = flatten
        self.batch = policy.batch(1)
        self.adapter = adapter
        self.obs_size = int(obs_size)
        self.limit = int(limit)
        self.action_noise = float(action_noise)
        self.where = where

    def run(self, params: np.ndarray | RowSource, seeds: np.ndarray, collect: np.ndarray | None = None,
            normalizer: Normalizer | None = None, reference: np.ndarray | None = None,
            limit: int | np.ndarray | None = None, floor: float | None = None) -> Rollouts:
        """What :meth:`BatchedRollouts.run` returns for the same arguments, one episode at a time."""
        if reference is not None:
            self.batch.set_reference(reference)
        m, episodes = seeds.shape
        limits = _limits(limit, self.limit, m)
        returns = np.zeros((m, episodes))
        lengths = np.zeros((m, episodes), dtype=np.int64)
        moments: dict[int, Moments] = {}
        stats = SlotMoments(1, self.obs_size) if collect is not None else None
        for row in range(m):
            self.batch.load(0, params[row])
            sampled = collect is not None and bool(collect[row])
            for e in range(episodes):
                returns[row, e], lengths[row, e] = rollout_episode(
                    self.env, self.flatten, self.batch, self.adapter, int(seeds[row, e]), int(limits[row]),
                    normalizer, self.action_noise, stats=stats if sampled else None, where=self.where,
                    floor=floor)
                if sampled:
                    moments[row * episodes + e] = cast(SlotMoments, stats).take(0)
        return _results(returns, lengths, moments, collect, self.obs_size)

    def close(self) -> None:
        self.env.close()


def rollout_episode(env: Any, flatten: Callable[[Any], np.ndarray], batch: PolicyRuntime, adapter: Adapter,
                    seed: int, limit: int, normalizer: Normalizer | None = None, action_noise: float = 0.0,
                    stats: SlotMoments | None = None, frames: list[Any] | None = None,
                    where: str = "the environment", every: int = 1,
                    floor: float | None = None) -> tuple[float, int]:
    """One episode of the policy loaded in slot 0 of ``batch``: ``(return, length)``.

    The reference loop: a gymnasium environment reset with ``seed``, one policy call per step.
    The moments of the observations fed to the policy go into slot 0 of ``stats`` (started here)
    and rendered frames into ``frames`` when given; only every ``every``-th frame is rendered (after the reset and
    after steps ``every``, ``2 every``, ...), as rendering can cost far more than a step (MuJoCo).
    Rewards below ``floor`` count as ``floor`` (a training episode's ``reward_floor``).
    """
    rng = noise_generator(seed) if action_noise else None
    noise_std = np.float32(action_noise)
    observation, _ = env.reset(seed=int(seed))
    if frames is not None:
        frames.append(env.render())
    every = max(1, int(every))
    total, steps = 0.0, 0
    first = True
    while True:
        x = flatten(observation)[None, :]
        if stats is not None:
            if first:
                stats.start(0, x[0])
                first = False
            stats.add(x, slice(0, 1))
        inputs = normalizer(x) if normalizer is not None else x.astype(np.float32)
        out = batch.forward(inputs, 1)
        noise = None if rng is None else rng.standard_normal((1, adapter.noise_size), dtype=np.float32) * noise_std
        action = adapter(out, noise)[0]
        observation, reward, terminated, truncated, _ = env.step(action)
        if frames is not None and (steps + 1) % every == 0:
            frames.append(env.render())
        reward = float(reward)
        if not np.isfinite(reward):
            raise nonfinite_reward(where, reward, steps + 1, seed)
        if floor is not None and reward < floor:
            reward = float(floor)
        total = float(np.float64(total) + np.float64(reward))
        steps += 1
        if terminated or truncated or steps >= limit:
            return total, steps
