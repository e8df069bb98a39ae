"""How many environments the rollout engine steps side by side (its slots): measured, not fixed.

Stepping ``g`` environments in lockstep has two costs that pull in opposite ways. Each step visits
every environment of the group, so the simulator state of all ``g`` (MuJoCo's ``MjData``, the
wrappers, the Python objects) must stay in the CPU's caches between visits: a small group. The
policy's forward runs once per step for the whole group, and its fixed cost (a numpy or torch call
per layer) is shared by ``g``: a large group. Past the point where the forward's cost per
environment is a small share of an environment step, a larger group buys nothing and loses cache.

The rule (:func:`measure_group_size`), run once per process when its engine is built: time one
environment's step (a fresh environment, reset and stepped, CPU time), time what the engine spends
per step besides the simulator (policy forward, actions, normalizer, bookkeeping: the engine run on
idle slots) for groups of :data:`MIN_GROUP`, twice that, ... up to the largest allowed, and take the
smallest group whose engine step costs at most :data:`FORWARD_SHARE` of an environment step per
environment. A task whose steps are cheap (CartPole through gymnasium) gets a large group, a MuJoCo
task with a linear or small MLP policy :data:`MIN_GROUP`. Below :data:`MIN_GROUP` slots the engine's
own per-step cost (about 17 us at one slot, a third of HalfCheetah-v5's step on a 2-core EPYC) is
not shared enough, whatever the cache gains: with groups forced to 1, 2, 4, 8, 16 and 65
(``benchmarks/rollout_cost.py --groups``, BENCHMARKS.md section 9) HalfCheetah-v5 and Hopper-v5
ran fastest at 8-16 slots, with the linear policy and the MLP 64-64, and 20-35% slower at 1. The group's float32 policy weights are also read every step, so they count against the
cache as the simulators' state does: the rule never picks a group whose slots hold more than
:data:`SLOT_CACHE_BYTES` of weights (the largest power of two within it, at least 1), unless the
policy's weights live on another device (``device=cuda``: :func:`weights_group_limit`). On a 2-core
EPYC under load, HalfCheetah-v5's MLP 64-64 (22.8 KB per slot) ran at 0.81x of the bare lockstep
loop with the 64 slots the timing alone picked (1.4 MB of weights a step) and at 0.96x with 8. The measurement changes no result: a slot's output depends on its own parameters and
observation only, so every group size gives the same bits (the test suite checks it).

``slots=N`` sets the group size instead (``slots="auto"`` or none: measured).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["measure_group_size", "slots_step_seconds", "cache_group_limit", "weights_group_limit", "FORWARD_SHARE", "MAX_GROUP",
           "MIN_GROUP", "SLOT_CACHE_BYTES"]

#: The largest share of an environment step the engine's own work may cost per environment.
FORWARD_SHARE = 0.05
#: The largest group the rule picks.
MAX_GROUP = 64
#: The smallest group the rule picks (unless the cache budget or the population allows fewer).
MIN_GROUP = 8
#: The most bytes of float32 policy weights the measured group's slots hold (a quarter of a 1 MiB L2).
SLOT_CACHE_BYTES = 256 * 1024
_ENV_STEPS = 24  # environment steps timed (after a reset and 4 warm-up steps)
_ENGINE_STEPS = 16  # engine steps timed per round


def _cpu_per_call(call: Callable[[], Any], repeats: int) -> float:
    """The least CPU time of one ``call()`` over ``repeats`` rounds of a few calls."""
    best = float("inf")
    for _ in range(repeats):
        start = time.thread_time()
        for _ in range(4):
            call()
        best = min(best, (time.thread_time() - start) / 4)
    return best


def env_step_seconds(make_env: Callable[[], Any], flatten: Callable[[Any], np.ndarray]) -> float:
    """CPU seconds of one step of a fresh environment (made, reset with seed 0, stepped, closed)."""
    env = make_env()
    try:
        env.reset(seed=0)
        space = copy.deepcopy(env.action_space)
        space.seed(0)
        actions = [space.sample() for _ in range(4 + _ENV_STEPS)]
        for action in actions[:4]:
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset(seed=1)
        start = time.thread_time()
        for action in actions[4:]:
            observation, _, terminated, truncated, _ = env.step(action)
            flatten(observation)
            if terminated or truncated:
                env.reset(seed=1)
        return max((time.thread_time() - start) / _ENV_STEPS, 1e-9)
    finally:
        env.close()


def slots_step_seconds(slots: Any, action_space: Any) -> float:
    """CPU seconds of one step of a one-slot container (reset with seed 0, stepped as
    :func:`env_step_seconds` steps an environment), then closed: the environment step of an engine
    that does not step through gymnasium (:mod:`.mujoco_slots`)."""
    try:
        space = copy.deepcopy(action_space)
        space.seed(0)
        actions = [np.asarray(space.sample())[None] for _ in range(4 + _ENV_STEPS)]
        obs = np.zeros((1, slots.obs_size), dtype=slots.obs_dtype)
        slots.reset(0, 0)
        elapsed = 0.0
        for k, action in enumerate(actions):
            start = time.thread_time()
            _, terminated, truncated = slots.step(action, 1, obs)
            if k >= 4:
                elapsed += time.thread_time() - start
            if terminated[0] or (truncated is not None and truncated[0]):
                slots.reset(0, 1)
        return max(elapsed / _ENV_STEPS, 1e-9)
    finally:
        slots.close()


class _IdleSlots:
    """Slots whose environments cost nothing: what the engine spends per step besides the simulator."""

    obs_dtype = np.dtype(np.float64)
    finite_rewards = True

    def __init__(self, capacity: int, obs_size: int):
        self.capacity = int(capacity)
        self.first = np.zeros(int(obs_size))
        self.rewards = np.zeros(self.capacity)
        self.terminated = np.zeros(self.capacity, dtype=bool)

    def reset(self, slot: int, seed: int) -> np.ndarray:
        return self.first

    def step(self, actions: np.ndarray, live: int, obs_out: np.ndarray):
        return self.rewards[:live], self.terminated[:live], None

    def move(self, src: int, dst: int) -> None:
        """Nothing to move."""

    def close(self) -> None:
        """Nothing to release."""


def engine_step_seconds(policy: Any, adapter: Any, obs_size: int, group: int, normalizer: Any = None) -> float:
    """CPU seconds the rollout engine spends per step of ``group`` slots besides the simulator:
    policy forward, actions, normalizer, bookkeeping (the engine run on idle slots)."""
    from .rollout import BatchedRollouts

    engine = BatchedRollouts(_IdleSlots(group, obs_size), policy, adapter, obs_size, _ENGINE_STEPS)
    params = np.zeros((group, policy.dim))
    seeds = np.arange(group, dtype=np.int64)[:, None]
    reference = np.zeros((2, obs_size), dtype=np.float32) if getattr(policy, "vbn", False) else None
    best = float("inf")
    for _ in range(3):
        start = time.thread_time()
        engine.run(params, seeds, normalizer=normalizer, reference=reference)
        best = min(best, (time.thread_time() - start) / _ENGINE_STEPS)
    return best


def cache_group_limit(dim: int) -> int:
    """The largest power of two of slots whose float32 weights (``dim`` each) fit in
    :data:`SLOT_CACHE_BYTES`; at least 1."""
    group = 1
    while 2 * group * 4 * int(dim) <= SLOT_CACHE_BYTES:
        group *= 2
    return group


def weights_group_limit(policy: Any) -> int:
    """:func:`cache_group_limit` for a policy whose weights the CPU reads each step (numpy, or torch on
    the CPU); no limit (:data:`MAX_GROUP`) for one whose weights live on another device (``cuda``),
    where a large group is what makes each forward worth its launch and copy."""
    device = getattr(policy, "device", None)
    if device is None or str(device) == "cpu":
        return cache_group_limit(policy.dim)
    return MAX_GROUP


def measure_group_size(make_env: Callable[[], Any], flatten: Callable[[Any], np.ndarray], policy: Any,
                       adapter: Any, obs_size: int, largest: int, normalizer: Any = None,
                       env_step: float | None = None) -> int:
    """The smallest group (:data:`MIN_GROUP` times a power of two below ``largest``, or ``largest``)
    whose engine step costs at most :data:`FORWARD_SHARE` of one environment step per environment
    (``env_step`` seconds where measured already, else :func:`env_step_seconds`), and never more slots
    than :func:`cache_group_limit` allows for the policy's weights."""
    largest = max(1, min(int(largest), MAX_GROUP, weights_group_limit(policy)))
    group = min(MIN_GROUP, largest)
    if group == largest:
        return group
    budget = FORWARD_SHARE * (env_step if env_step is not None else env_step_seconds(make_env, flatten))
    while group < largest:
        if engine_step_seconds(policy, adapter, obs_size, group, normalizer) / group <= budget:
            return group
        group *= 2
    return largest
