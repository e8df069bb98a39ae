"""MuJoCo's locomotion tasks stepped by calling MuJoCo directly: gymnasium's step, bit for bit.

A gymnasium MuJoCo step is ``mj_step`` plus Python: the action's shape check, ``mj_rnePostConstraint``
(contact forces, which only some tasks read), the reward terms one scalar at a time, an ``info``
dictionary, and the wrappers' calls. On a 2-core EPYC that Python is 20-35 % of HalfCheetah-v5's and
Hopper-v5's step. :class:`MujocoSlots` keeps one gymnasium environment per slot (made, seeded and
reset by gymnasium, so every episode starts as gymnasium starts it) but steps it by writing the
action into ``MjData.ctrl`` and calling ``mj_step``; the observation, reward and termination of the
whole group are then computed in a few numpy operations, with gymnasium's formulas in gymnasium's
order and dtypes. The test suite checks every task against ``gymnasium.make`` bit for bit, and
:func:`direct_task` checks one short episode at start-up, so that a gymnasium whose step differs
from these formulas (another release) is stepped through gymnasium instead.

Supported: the v5 HalfCheetah, Hopper, Walker2d, Swimmer, Ant and Humanoid environments, with any
of their constructor options (read from the environment), made by ``gymnasium.make`` from their id
with no wrapper but the time limit (which the rollout engine applies itself).
"""

from __future__ import annotations

import abc
import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from .slots import close_all

__all__ = ["MujocoSlots", "DirectTask", "direct_task", "registered_task", "TASKS"]


class DirectTask(abc.ABC):
    """One task's step after ``mj_step``: what it tracks, its observation, reward and termination.

    Made from one environment of the task; reads its options (weights, ranges, observation parts)
    from that environment's attributes, as gymnasium's step does.
    """

    #: ``mj_rnePostConstraint`` after the step: the task reads contact forces (``cfrc_ext``).
    post_constraint = False

    def __init__(self, env: Any):
        self.env = env
        self.model = env.model
        self.frame_skip = int(env.frame_skip)
        self.dt = env.dt  # model.opt.timestep * frame_skip, the value gymnasium divides by
        self.obs_size = int(env.observation_space.shape[0])
        self.exclude = int(bool(env._exclude_current_positions_from_observation))

    def tracked(self, data: Any) -> np.ndarray:
        """The position whose change over a step is the forward velocity (x, or x and y)."""
        return data.qpos[0:1]

    def extras(self, data: Any, row: np.ndarray) -> None:
        """Copy what the observation or reward needs besides ``qpos``/``qvel`` into ``row``."""

    def extras_size(self) -> int:
        return 0

    @abc.abstractmethod
    def finish(self, qpos: np.ndarray, qvel: np.ndarray, extra: np.ndarray, before: np.ndarray,
               after: np.ndarray, actions: np.ndarray, obs: np.ndarray, rewards: np.ndarray,
               terminated: np.ndarray) -> None:
        """Write the group's observations, rewards and termination flags from its state after the
        step (``qpos``, ``qvel``, ``extra``), the tracked positions ``before`` and ``after`` it, and
        its ``actions``."""


def _velocity(before: np.ndarray, after: np.ndarray, dt: float) -> np.ndarray:
    """gymnasium's ``(position_after - position_before) / self.dt``, for every slot."""
    return (after - before) / dt


def _ctrl_cost(weight: Any, actions: np.ndarray) -> np.ndarray:
    """gymnasium's ``weight * np.sum(np.square(action))`` per row (the same dtype rules: a Python
    float weight keeps a float32 action's sum float32)."""
    return weight * np.square(actions).sum(axis=1)


class HalfCheetah(DirectTask):
    """``half_cheetah_v5.HalfCheetahEnv``: forward velocity minus control cost; never terminates."""

    def finish(self, qpos: np.ndarray, qvel: np.ndarray, extra: np.ndarray, before: np.ndarray, after: np.ndarray,
               actions: np.ndarray, obs: np.ndarray, rewards: np.ndarray, terminated: np.ndarray) -> None:
        env = self.env
        _positions_and_velocities(qpos, qvel, self.exclude, obs)
        forward = env._forward_reward_weight * _velocity(before[:, 0], after[:, 0], self.dt)
        np.subtract(forward, _ctrl_cost(env._ctrl_cost_weight, actions), out=rewards)
        terminated[:] = False


class Swimmer(HalfCheetah):
    """``swimmer_v5.SwimmerEnv``: as HalfCheetah, with x and y left out of the observation."""

    def __init__(self, env: Any):
        super().__init__(env)
        self.exclude *= 2

    def tracked(self, data: Any) -> np.ndarray:
        return data.qpos[0:2]


class Hopper(DirectTask):
    """``hopper_v5.HopperEnv``: forward velocity, a survival bonus while healthy, control cost;
    velocities clipped to [-10, 10] in the observation; ends when unhealthy."""

    def _healthy(self, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
        env = self.env
        z, angle = qpos[:, 1], qpos[:, 2]
        min_state, max_state = env._healthy_state_range
        min_z, max_z = env._healthy_z_range
        min_angle, max_angle = env._healthy_angle_range
        state_ok = ((min_state < qpos[:, 2:]) & (qpos[:, 2:] < max_state)).all(axis=1)
        state_ok &= ((min_state < qvel) & (qvel < max_state)).all(axis=1)
        return state_ok & (min_z < z) & (z < max_z) & (min_angle < angle) & (angle < max_angle)

    def finish(self, qpos: np.ndarray, qvel: np.ndarray, extra: np.ndarray, before: np.ndarray, after: np.ndarray,
               actions: np.ndarray, obs: np.ndarray, rewards: np.ndarray, terminated: np.ndarray) -> None:
        env = self.env
        _positions_and_velocities(qpos, qvel, self.exclude, obs, clip=10.0)
        healthy = self._healthy(qpos, qvel)
        forward = env._forward_reward_weight * _velocity(before[:, 0], after[:, 0], self.dt)
        survive = healthy * env._healthy_reward
        np.subtract(forward + survive, _ctrl_cost(env._ctrl_cost_weight, actions), out=rewards)
        np.logical_and(~healthy, bool(env._terminate_when_unhealthy), out=terminated)


class Walker2d(Hopper):
    """``walker2d_v5.Walker2dEnv``: Hopper's reward; healthy by height and angle only."""

    def _healthy(self, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
        env = self.env
        z, angle = qpos[:, 1], qpos[:, 2]
        min_z, max_z = env._healthy_z_range
        min_angle, max_angle = env._healthy_angle_range
        return (min_z < z) & (z < max_z) & (min_angle < angle) & (angle < max_angle)


class Ant(DirectTask):
    """``ant_v5.AntEnv``: the main body's x velocity, a survival bonus, control and contact costs
    (contact forces clipped); contact forces in the observation unless left out."""

    post_constraint = True

    def __init__(self, env: Any):
        super().__init__(env)
        self.exclude *= 2
        self.body = env.data.body(env._main_body).id
        self.nbody = int(self.model.nbody)
        self.with_forces = bool(env._include_cfrc_ext_in_observation)

    def tracked(self, data: Any) -> np.ndarray:
        return data.xpos[self.body, :2]

    def extras_size(self) -> int:
        return self.nbody * 6

    def extras(self, data: Any, row: np.ndarray) -> None:
        row[:] = data.cfrc_ext.reshape(-1)

    def finish(self, qpos: np.ndarray, qvel: np.ndarray, extra: np.ndarray, before: np.ndarray, after: np.ndarray,
               actions: np.ndarray, obs: np.ndarray, rewards: np.ndarray, terminated: np.ndarray) -> None:
        env = self.env
        min_force, max_force = env._contact_force_range
        forces = np.clip(extra, min_force, max_force)
        width = _positions_and_velocities(qpos, qvel, self.exclude, obs)
        if self.with_forces:
            obs[:, width:] = forces[:, 6:]
        min_z, max_z = env._healthy_z_range
        finite = np.isfinite(qpos).all(axis=1) & np.isfinite(qvel).all(axis=1)
        healthy = finite & (min_z <= qpos[:, 2]) & (qpos[:, 2] <= max_z)
        forward = _velocity(before[:, 0], after[:, 0], self.dt) * env._forward_reward_weight
        survive = healthy * env._healthy_reward
        contact = env._contact_cost_weight * np.square(forces).sum(axis=1)
        costs = _ctrl_cost(env._ctrl_cost_weight, actions) + contact
        np.subtract(forward + survive, costs, out=rewards)
        np.logical_and(~healthy, bool(env._terminate_when_unhealthy), out=terminated)


class Humanoid(DirectTask):
    """``humanoid_v5.HumanoidEnv``: the centre of mass's x velocity, a survival bonus, control cost
    (of ``MjData.ctrl``) and a clipped contact cost; the observation's optional parts (inertia,
    centre-of-mass velocities, actuator forces, contact forces) as the environment's options say."""

    post_constraint = True

    def __init__(self, env: Any):
        super().__init__(env)
        self.exclude *= 2
        from gymnasium.envs.mujoco.humanoid_v5 import mass_center

        self.mass_center = mass_center
        model = self.model
        nbody = int(model.nbody)
        # (attribute, rows from, flat size) of the observation's optional parts, in gymnasium's order
        parts = [("cinert", 1, (nbody - 1) * 10, env._include_cinert_in_observation is True),
                 ("cvel", 1, (nbody - 1) * 6, env._include_cvel_in_observation is True),
                 ("qfrc_actuator", 6, int(model.nv) - 6, env._include_qfrc_actuator_in_observation is True),
                 ("cfrc_ext", 1, (nbody - 1) * 6, env._include_cfrc_ext_in_observation is True)]
        self.parts = [(name, start, size) for name, start, size, on in parts if on]
        self.forces_size = nbody * 6
        self.parts_size = sum(size for _, _, size in self.parts)

    def tracked(self, data: Any) -> np.ndarray:
        return self.mass_center(self.model, data)

    def extras_size(self) -> int:
        return self.forces_size + self.parts_size

    def extras(self, data: Any, row: np.ndarray) -> None:
        row[:self.forces_size] = data.cfrc_ext.reshape(-1)
        at = self.forces_size
        for name, start, size in self.parts:
            row[at:at + size] = getattr(data, name)[start:].reshape(-1)
            at += size

    def finish(self, qpos: np.ndarray, qvel: np.ndarray, extra: np.ndarray, before: np.ndarray, after: np.ndarray,
               actions: np.ndarray, obs: np.ndarray, rewards: np.ndarray, terminated: np.ndarray) -> None:
        env = self.env
        width = _positions_and_velocities(qpos, qvel, self.exclude, obs)
        obs[:, width:] = extra[:, self.forces_size:]
        min_z, max_z = env._healthy_z_range
        healthy = (min_z < qpos[:, 2]) & (qpos[:, 2] < max_z)
        forward = env._forward_reward_weight * _velocity(before[:, 0], after[:, 0], self.dt)
        survive = healthy * env._healthy_reward
        ctrl = env._ctrl_cost_weight * np.square(actions.astype(np.float64)).sum(axis=1)  # of MjData.ctrl
        min_cost, max_cost = env._contact_cost_range
        contact = np.clip(env._contact_cost_weight * np.square(extra[:, :self.forces_size]).sum(axis=1),
                          min_cost, max_cost)
        np.subtract(forward + survive, ctrl + contact, out=rewards)
        np.logical_and(~healthy, bool(env._terminate_when_unhealthy), out=terminated)


def _positions_and_velocities(qpos: np.ndarray, qvel: np.ndarray, exclude: int, obs: np.ndarray,
                              clip: float | None = None) -> int:
    """Write ``qpos[exclude:]`` then ``qvel`` (clipped when ``clip``) into ``obs``; their width."""
    width = qpos.shape[1] - exclude
    obs[:, :width] = qpos[:, exclude:]
    end = width + qvel.shape[1]
    if clip is None:
        obs[:, width:end] = qvel
    else:
        np.clip(qvel, -clip, clip, out=obs[:, width:end])
    return end


#: The gymnasium classes stepped directly, by ``module.Class``.
TASKS: dict[str, type[DirectTask]] = {
    "gymnasium.envs.mujoco.half_cheetah_v5.HalfCheetahEnv": HalfCheetah,
    "gymnasium.envs.mujoco.hopper_v5.HopperEnv": Hopper,
    "gymnasium.envs.mujoco.walker2d_v5.Walker2dEnv": Walker2d,
    "gymnasium.envs.mujoco.swimmer_v5.SwimmerEnv": Swimmer,
    "gymnasium.envs.mujoco.ant_v5.AntEnv": Ant,
    "gymnasium.envs.mujoco.humanoid_v5.HumanoidEnv": Humanoid,
}

#: Wrappers whose step the rollout engine does itself (the time limit) or that only check.
_PASSIVE_WRAPPERS = ("TimeLimit", "OrderEnforcing", "PassiveEnvChecker")
_CHECK_STEPS = 40  # steps of the start-up comparison with gymnasium's own step


def _task_class(env: Any) -> type[DirectTask] | None:
    layer = env
    while hasattr(layer, "env") and layer is not getattr(layer, "unwrapped", layer):
        if type(layer).__name__ not in _PASSIVE_WRAPPERS:
            return None
        layer = layer.env
    kind = type(env.unwrapped)
    task = TASKS.get(f"{kind.__module__}.{kind.__qualname__}")
    if task is None or getattr(env.unwrapped, "render_mode", None) is not None:
        return None
    return task


def registered_task(env_id: str) -> type[DirectTask] | None:
    """The task class of a registered id whose entry point is one of :data:`TASKS`, read from
    gymnasium's registry without making anything (None for every other id)."""
    import gymnasium

    try:
        entry = gymnasium.spec(env_id).entry_point
    except gymnasium.error.Error:
        return None
    return TASKS.get(entry.replace(":", ".")) if isinstance(entry, str) else None


def direct_task(make_env: Callable[[], Any]) -> type[DirectTask] | None:
    """The task class that steps ``make_env()``'s environment directly, or None: not a supported
    class, wrapped in more than a time limit, rendering, or (checked on one seeded episode of
    :data:`_CHECK_STEPS` steps against gymnasium's own step) not giving gymnasium's bits."""
    env = make_env()
    try:
        task = _task_class(env)
        if task is None:
            return None
        reference = make_env()
        try:
            return task if _same_as_gymnasium(task, make_env, reference) else None
        finally:
            reference.close()
    finally:
        env.close()


def _same_as_gymnasium(task: type[DirectTask], make_env: Callable[[], Any], reference: Any) -> bool:
    slots = MujocoSlots(make_env, 1, task)
    try:
        space = copy.deepcopy(reference.action_space)
        space.seed(0)
        expected, _ = reference.unwrapped.reset(seed=0)
        first = slots.reset(0, 0)
        if not np.array_equal(first, expected):
            return False
        obs = np.zeros((1, slots.obs_size))
        for _ in range(_CHECK_STEPS):
            action = np.asarray(space.sample())
            expected, reward, terminated, _, _ = reference.unwrapped.step(action)
            rewards, done, _ = slots.step(action[None], 1, obs)
            if (obs[0].tobytes() != np.asarray(expected, dtype=np.float64).tobytes()
                    or np.float64(rewards[0]).tobytes() != np.float64(reward).tobytes()
                    or bool(done[0]) != bool(terminated)):
                return False
            if terminated:
                break
        return True
    finally:
        slots.close()


class MujocoSlots:
    """``capacity`` gymnasium MuJoCo environments, reset by gymnasium and stepped by ``mj_step``."""

    vectorized = False
    #: Rewards are checked for NaN and infinity after every step (MuJoCo can diverge).
    finite_rewards = False
    obs_dtype = np.dtype(np.float64)

    def __init__(self, make_env: Callable[[], Any], capacity: int, task: type[DirectTask]):
        import mujoco

        self._mj_step = mujoco.mj_step
        self._post = mujoco.mj_rnePostConstraint
        self.make_env = make_env
        self.capacity = int(capacity)
        self.envs: list[Any] = []
        self.datas: list[Any] = []
        self._ctrls: list[np.ndarray] = []
        self._qposes: list[np.ndarray] = []
        self._qvels: list[np.ndarray] = []
        first = self._ensure(0)
        self.task = task(first.unwrapped)
        self.model = first.unwrapped.model  # one model for every slot: the same compiled file
        self.obs_size = self.task.obs_size
        model = self.model
        self._qpos = np.zeros((self.capacity, int(model.nq)))
        self._qvel = np.zeros((self.capacity, int(model.nv)))
        self._extra = np.zeros((self.capacity, self.task.extras_size()))
        width = len(self.task.tracked(first.unwrapped.data))
        self._position = np.zeros((self.capacity, width))  # the tracked position after the last step
        self._before = np.zeros((self.capacity, width))
        self._rewards = np.zeros(self.capacity)
        self._terminated = np.zeros(self.capacity, dtype=bool)

    def _ensure(self, slot: int) -> Any:
        while len(self.envs) <= slot:
            env = self.make_env()
            data = env.unwrapped.data
            self.envs.append(env)
            self.datas.append(data)
            # views of MjData's own buffers, valid for its lifetime: no attribute lookups a step
            self._ctrls.append(data.ctrl)
            self._qposes.append(data.qpos)
            self._qvels.append(data.qvel)
        return self.envs[slot]

    def reset(self, slot: int, seed: int) -> np.ndarray:
        """Start a new episode in ``slot``: gymnasium's reset with ``seed``; its first observation."""
        env = self._ensure(slot)
        obs, _ = env.reset(seed=int(seed))
        data = self.datas[slot]
        self._position[slot] = self.task.tracked(data)
        return np.asarray(obs, dtype=np.float64).reshape(-1)

    def step(self, actions: np.ndarray, live: int, obs_out: np.ndarray):
        """Step slots ``[0, live)`` with ``mj_step``; observations into ``obs_out[:live]``.

        Returns rewards and terminated flags (views of buffers the next step rewrites) and None for
        truncation: the engine applies the time limit.
        """
        task, model, frames = self.task, self.model, self.task.frame_skip
        mj_step, post = self._mj_step, self._post if task.post_constraint else None
        datas, ctrls, qposes, qvels = self.datas, self._ctrls, self._qposes, self._qvels
        qpos, qvel, extra, position = self._qpos, self._qvel, self._extra, self._position
        before = self._before[:live]
        before[:] = position[:live]
        tracked, extras = task.tracked, task.extras
        has_extras = extra.shape[1] > 0
        for i in range(live):
            data = datas[i]
            ctrls[i][:] = actions[i]
            mj_step(model, data, frames)
            if post is not None:
                post(model, data)
            qpos[i] = qposes[i]
            qvel[i] = qvels[i]
            position[i] = tracked(data)
            if has_extras:
                extras(data, extra[i])
        rewards, terminated = self._rewards[:live], self._terminated[:live]
        task.finish(qpos[:live], qvel[:live], extra[:live], before, position[:live], actions[:live],
                    obs_out[:live], rewards, terminated)
        return rewards, terminated, None

    def move(self, src: int, dst: int) -> None:
        """Give slot ``dst`` (finished) the running episode of slot ``src``; environments are swapped
        so that every one made is kept for later episodes."""
        for items in (self.envs, self.datas, self._ctrls, self._qposes, self._qvels):
            items[src], items[dst] = items[dst], items[src]
        self._position[[src, dst]] = self._position[[dst, src]]

    def close(self) -> None:
        close_all(self.envs)
        self.envs, self.datas, self._ctrls, self._qposes, self._qvels = [], [], [], [], []
