"""Which episode loop a process runs a gym problem's rollouts with, made once in that process.

One by one (``batched=False``), or batched: a group of slots stepped side by side with one policy
call per step, the slots either Gymnasium environments, or for CartPole a numpy replica that steps
every slot in one operation (:class:`~blackbox.problems.gym.slots.CartPoleSlots`), or for MuJoCo's
locomotion tasks their environments stepped by ``mj_step`` directly
(:class:`~blackbox.problems.gym.mujoco_slots.MujocoSlots`). The group's size
is ``slots`` when given, else the largest that fits :data:`SLOT_PARAMS_BUDGET` (vectorized) or the
smallest that batches, measured (:func:`~blackbox.problems.gym.groups.measure_group_size`). Every
loop gives the same bits (:mod:`.rollout`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from .groups import measure_group_size, slots_step_seconds
from .mujoco_slots import DirectTask, MujocoSlots, direct_task, registered_task
from .rollout import BatchedRollouts, OneByOneRollouts
from .slots import CARTPOLE_IDS, CartPoleSlots, GymSlots, flatten_observation

if TYPE_CHECKING:
    from .problem import GymProblem

__all__ = ["make_engine", "replica", "direct_task_of", "DEFAULT_SLOTS", "SLOT_PARAMS_BUDGET"]

#: Default number of slots (episodes side by side) per process ...
DEFAULT_SLOTS = {"vectorized": 256, "gym": 64}
#: ... as long as their float32 parameter copies stay under this many values (128 MB).
SLOT_PARAMS_BUDGET = 2**25


def replica(problem: GymProblem) -> type[CartPoleSlots] | None:
    """The numpy replica that steps ``problem``'s environment in slots, or None where there is none."""
    if (isinstance(problem.env, str) and problem.env_id in CARTPOLE_IDS and not problem.env_kwargs
            and problem.frame_skip == 1 and problem.frame_stack == 1):
        return CartPoleSlots
    return None


def direct_task_of(problem: GymProblem) -> type[DirectTask] | None:
    """The MuJoCo task class that steps ``problem``'s environment by ``mj_step`` directly, or None
    where gymnasium's step is used (:func:`~blackbox.problems.gym.mujoco_slots.direct_task`)."""
    if not (isinstance(problem.env, str) and problem.frame_skip == 1 and problem.frame_stack == 1
            and not problem.atari and registered_task(problem.env) is not None):
        return None  # nothing is made for the tasks that have no direct step
    return direct_task(functools.partial(problem.make_env, checked=False))


def make_engine(problem: GymProblem) -> BatchedRollouts | OneByOneRollouts:
    """``problem``'s episode loop for this process: batched, or one by one (sets ``problem.group_size``
    when batched)."""
    episodes, noise = problem.config.episodes, problem.config.policy.action_noise
    make_env = functools.partial(problem.make_env, checked=False)
    if not episodes.batched:
        return OneByOneRollouts(make_env, flatten_observation(problem.observation_space), problem.policy,
                                problem.adapter, problem.obs_size, problem.step_limit, noise, problem.where)
    kind = "vectorized" if problem.vectorized else "gym"
    largest = max(1, min(DEFAULT_SLOTS[kind], SLOT_PARAMS_BUDGET // problem.dim))
    given = episodes.slots if isinstance(episodes.slots, int) else None  # "auto" is None once checked
    capacity = given or largest
    task = problem.direct_task
    if given is None and not problem.vectorized:  # measured: the smallest group that batches
        step = slots_step_seconds(MujocoSlots(make_env, 1, task), problem.action_space) if task else None
        capacity = measure_group_size(make_env, flatten_observation(problem.observation_space), problem.policy,
                                      problem.adapter, problem.obs_size, largest, problem._normalizer(), step)
    problem.group_size = capacity
    slots_class = replica(problem) if problem.vectorized else None
    slots: CartPoleSlots | MujocoSlots | GymSlots
    if slots_class is not None:
        slots = slots_class(capacity)
    elif task is not None:
        slots = MujocoSlots(make_env, capacity, task)
    else:
        slots = GymSlots(make_env, capacity, problem.observation_space)
    return BatchedRollouts(slots, problem.policy, problem.adapter, problem.obs_size, problem.step_limit,
                           noise, problem.where)
