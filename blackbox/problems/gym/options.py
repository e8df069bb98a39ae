"""The gym problem's options: one flat key per option at the boundary, seven small groups inside.

Spec strings, TOML files, ``config.toml`` and Python spell every option the same way, flat, with
its group's prefix (``gym:Hopper-v5,obs_norm=true,obs_norm_prob=0.01``;
``GymProblem("Hopper-v5", obs_norm=True, obs_norm_prob=0.01)``). :class:`GymParams` lists the
flat keys with their defaults; it is ``GymProblem.Params``, which is how option checking and the
resolved config see them. Inside, the problem reads them in groups, frozen dataclasses checked
when they are made (:meth:`GymParams.groups`, the problem's ``config``):

- :class:`Environment` ``(id, kwargs, max_episode_steps)``: ``env``, ``env_kwargs``, ``max_episode_steps``
- :class:`Episodes` ``(count, batched, vectorized, direct, slots, reward_shift, reward_floor, shared_seed)``:
  ``episodes``, ``batched``, ``vectorized``, ``direct``, ``slots``, ``reward_shift``, ``reward_floor``, ``shared_seed``
- :class:`Policy` ``(network, hidden, activation, action_noise, action_bounds, bins, device, torch_threads, bias)``:
  ``policy`` and the other names as they are
- :class:`ObsNorm` ``(prob, clip)``, None when off: ``obs_norm`` (on or off), ``obs_norm_prob``, ``obs_clip``
- :class:`EpisodeCap` ``(rule, factor, start, threshold, ratio, steps, lift)``, None when off: ``episode_cap``
  (the rule), ``episode_cap_factor``, ``episode_cap_start``, ``episode_cap_threshold``, ``episode_cap_ratio``,
  ``episode_cap_steps``, ``episode_cap_lift``
- :class:`Frames` ``(skip, stack, atari)``: ``frame_skip``, ``frame_stack``, ``atari``
- :class:`VBN` ``(size, seed)``, None when off: ``vbn`` (on or off), ``vbn_size``, ``vbn_seed``

A group object given to ``GymProblem`` under its keyword (``obs_norm=ObsNorm(prob=0.5)``, 0.1's
second spelling) still works for a release, with a DeprecationWarning naming the flat keys to give
instead. Error messages name options by their flat keys.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..._validate import check_bool, check_choice, check_float, check_int
from ...errors import ConfigError, UnknownNameError, did_you_mean
from ..devices import check_device
from .actions import ACTION_BOUNDS
from .policies import ACTIVATIONS

__all__ = ["Environment", "Episodes", "Policy", "ObsNorm", "EpisodeCap", "Frames", "VBN", "GymConfig",
           "GymParams", "gym_config", "CAP_RULES", "CAP_DEFAULTS", "CAP_OPTIONS"]

#: Episode cap rules (``none``: no cap) and the defaults of the rules' options (:mod:`.episode_cap`);
#: ``fixed`` has no default for its ``steps``: it must be given; its ``lift`` (None) never lifts the cap.
CAP_RULES = ("none", "mean", "adaptive", "fixed")
CAP_DEFAULTS: dict[str, float | None] = {"factor": 2.0, "start": 100, "threshold": 0.5, "ratio": 2.0, "steps": 0,
                                         "lift": None}
CAP_OPTIONS = {"mean": ("factor",), "adaptive": ("start", "threshold", "ratio"), "fixed": ("steps", "lift")}


def _set(group: Any, name: str, value: Any) -> None:
    object.__setattr__(group, name, value)  # a frozen dataclass normalizing its own fields


class _Group:
    """A group of options: ``FLAT`` maps each field to its flat key; ``SWITCH`` is the flat key
    that turns the group on (the group is then given as None when off)."""

    FLAT: ClassVar[dict[str, str]]
    SWITCH: ClassVar[str | None] = None

    def flat(self) -> dict[str, Any]:
        """This group as flat keys (its switch on)."""
        values = {self.SWITCH: True} if self.SWITCH else {}
        values.update({key: getattr(self, name) for name, key in self.FLAT.items()})
        return values

    def enabled(self) -> bool:
        return True

    @classmethod
    def from_flat(cls, params: GymParams) -> Any:
        """The group of ``params`` (checked even when off), or None when it is off."""
        group = cls(**{name: getattr(params, key) for name, key in cls.FLAT.items()})
        if (cls.SWITCH and not getattr(params, cls.SWITCH)) or not group.enabled():
            return None
        return group


@dataclass(frozen=True)
class Environment(_Group):
    """The task: a Gymnasium id or a factory returning a ``gymnasium.Env``, its keyword arguments,
    and a time limit (required where the task has none)."""

    id: str | Callable[..., Any] = "CartPole-v1"
    kwargs: dict[str, Any] | None = field(default_factory=dict)
    max_episode_steps: int | None = None
    FLAT = {"id": "env", "kwargs": "env_kwargs", "max_episode_steps": "max_episode_steps"}

    def __post_init__(self) -> None:
        if not (isinstance(self.id, str) or callable(self.id)):
            raise ConfigError(f"env must be a Gymnasium id such as 'CartPole-v1' or a factory, got {self.id!r}")
        if self.kwargs is not None and not isinstance(self.kwargs, dict):
            raise ConfigError(f"env_kwargs must be a table of keyword arguments for the environment, "
                              f"got {self.kwargs!r}")
        _set(self, "kwargs", dict(self.kwargs or {}))
        if self.max_episode_steps is not None:
            _set(self, "max_episode_steps", check_int("max_episode_steps", self.max_episode_steps, minimum=1))


def _group_size(value: Any) -> int | None:
    """``slots``: a positive integer, or ``"auto"`` (None: measured, :mod:`.groups`)."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return None
    plain = value.item() if isinstance(value, np.generic) else value
    if isinstance(plain, (int, float)) and not isinstance(plain, bool) and float(plain).is_integer() and plain >= 1:
        return int(plain)
    raise ConfigError(f"slots must be a positive integer (environments stepped side by side) or 'auto' "
                      f"(measured per task and machine), got {value!r}")


@dataclass(frozen=True)
class Episodes(_Group):
    """``count`` episodes per evaluation (the fitness is their mean return), run side by side in
    ``slots`` environments (``batched``; ``"auto"`` or None: a group size measured per task and
    machine, :mod:`.groups`), CartPole in one numpy operation (``vectorized``), MuJoCo's locomotion
    tasks by calling ``mj_step`` directly (``direct``, :mod:`.mujoco_slots`; both bit for bit gymnasium's);
    ``reward_shift`` is added to every reward of a training episode (Mania et al. 2018 remove
    Hopper's survival bonus with -1), never to ``score``, ``play`` or the goal check;
    ``reward_floor`` (None: off) raises every reward of a training episode below it to it before the
    shift (BipedalWalker's -100 for a fall counts as -1 with -1), never in ``score``, ``play`` or the
    goal check: a floor only raises returns, so the goal screen stays sound;
    ``shared_seed``: every row of a generation plays from the same starts (common random numbers)."""

    count: int = 1
    batched: bool = True
    vectorized: bool = True
    direct: bool = True
    slots: int | str | None = None
    reward_shift: float = 0.0
    reward_floor: float | None = None
    shared_seed: bool = False
    FLAT = {"count": "episodes", "batched": "batched", "vectorized": "vectorized", "direct": "direct",
            "slots": "slots",
            "reward_shift": "reward_shift", "reward_floor": "reward_floor", "shared_seed": "shared_seed"}

    def __post_init__(self) -> None:
        _set(self, "count", check_int("episodes", self.count, minimum=1))
        _set(self, "batched", bool(self.batched))
        _set(self, "vectorized", bool(self.vectorized))
        _set(self, "direct", bool(self.direct))
        if self.slots is not None:
            _set(self, "slots", _group_size(self.slots))
        _set(self, "reward_shift", check_float("reward_shift", self.reward_shift))
        if self.reward_floor is not None:
            _set(self, "reward_floor", check_float("reward_floor", self.reward_floor))
        _set(self, "shared_seed", bool(self.shared_seed))


@dataclass(frozen=True)
class Policy(_Group):
    """The network (``"mlp"``, ``"linear"``, ``"cnn"``, ``"nature-cnn"``, a ``torch.nn.Module``, a
    factory or an import path), how its outputs become actions, and where torch runs it."""

    network: Any = "mlp"
    hidden: Sequence[int] = (64, 64)
    activation: str = "tanh"
    action_noise: float = 0.0
    action_bounds: str = "tanh"
    bins: int = 0
    device: str | None = None
    torch_threads: int | None = 1
    bias: bool = True
    FLAT = {"network": "policy", "hidden": "hidden", "activation": "activation", "action_noise": "action_noise",
            "action_bounds": "action_bounds", "bins": "bins", "device": "device", "torch_threads": "torch_threads",
            "bias": "bias"}

    def __post_init__(self) -> None:
        if isinstance(self.hidden, list):
            _set(self, "hidden", tuple(self.hidden))
        _set(self, "action_noise", check_float("action_noise", self.action_noise, nonnegative=True))
        check_choice("action_bounds", self.action_bounds, ACTION_BOUNDS)
        _set(self, "bins", check_int("bins", self.bins, minimum=0))
        check_choice("activation", self.activation, ACTIVATIONS)
        check_device(self.device)
        if self.torch_threads is not None:
            _set(self, "torch_threads", check_int("torch_threads", self.torch_threads, minimum=1))
        _set(self, "bias", check_bool("bias", self.bias))


@dataclass(frozen=True)
class ObsNorm(_Group):
    """Observation normalization: a fraction ``prob`` of the rows gather statistics; inputs are
    clipped to ``[-clip, clip]``."""

    prob: float = 0.01
    clip: float = 5.0
    FLAT = {"prob": "obs_norm_prob", "clip": "obs_clip"}
    SWITCH = "obs_norm"

    def __post_init__(self) -> None:
        _set(self, "prob", check_float("obs_norm_prob", self.prob, nonnegative=True, maximum=1.0))
        _set(self, "clip", check_float("obs_clip", self.clip, positive=True))


@dataclass(frozen=True)
class EpisodeCap(_Group):
    """An episode cap for training: ``rule`` ``"mean"`` (``factor``) or ``"adaptive"`` (``start``,
    ``threshold``, ``ratio``), which follow the population, or ``"fixed"`` (``steps``, required), a
    shorter training horizon, lifted for good once the center row's training fitness reaches ``lift``
    (None: never); options left None take the rule's defaults."""

    rule: str | None = "mean"
    factor: float | None = None
    start: int | None = None
    threshold: float | None = None
    ratio: float | None = None
    steps: int | None = None
    lift: float | None = None
    FLAT = {"rule": "episode_cap", "factor": "episode_cap_factor", "start": "episode_cap_start",
            "threshold": "episode_cap_threshold", "ratio": "episode_cap_ratio", "steps": "episode_cap_steps",
            "lift": "episode_cap_lift"}

    def __post_init__(self) -> None:
        rule = check_choice("episode_cap", "none" if self.rule is None else self.rule, CAP_RULES)
        _set(self, "rule", rule)
        for key in CAP_DEFAULTS:
            if getattr(self, key) is not None and key not in CAP_OPTIONS.get(rule, ()):
                owner = next(r for r, keys in CAP_OPTIONS.items() if key in keys)
                raise ConfigError(f"episode_cap_{key} applies to episode_cap={owner!r}, but episode_cap={rule!r}")
        if rule == "none":
            return
        if rule == "fixed":
            if self.steps is None:
                raise ConfigError("episode_cap='fixed' needs episode_cap_steps=N: the decisions each training "
                                  "episode is cut at (the goal check and score() run full episodes)")
            _set(self, "steps", check_int("episode_cap_steps", self.steps, minimum=1))
            if self.lift is not None:
                _set(self, "lift", check_float("episode_cap_lift", self.lift))
        values = self.values()
        check_float("episode_cap_factor", values["factor"], positive=True)
        check_int("episode_cap_start", values["start"], minimum=1)
        check_float("episode_cap_threshold", values["threshold"], positive=True, maximum=1.0)
        check_float("episode_cap_ratio", values["ratio"], positive=True)
        if values["ratio"] <= 1.0:
            raise ConfigError(f"episode_cap_ratio must be > 1 (the cap only grows), got {values['ratio']}")

    def values(self) -> dict[str, Any]:
        """The rule's options, defaults filled in."""
        return {k: CAP_DEFAULTS[k] if getattr(self, k) is None else getattr(self, k) for k in CAP_DEFAULTS}

    def enabled(self) -> bool:
        return self.rule != "none"


@dataclass(frozen=True)
class Frames(_Group):
    """Repeat each action ``skip`` environment steps, show the policy the last ``stack``
    observations, and ``atari``: the Atari preprocessing. None: 4, 4 and on for ``ALE/...`` ids,
    else 1, 1 and off."""

    skip: int | None = None
    stack: int | None = None
    atari: bool | None = None
    FLAT = {"skip": "frame_skip", "stack": "frame_stack", "atari": "atari"}

    def __post_init__(self) -> None:
        if self.skip is not None:
            _set(self, "skip", check_int("frame_skip", self.skip, minimum=1))
        if self.stack is not None:
            _set(self, "stack", check_int("frame_stack", self.stack, minimum=1))


@dataclass(frozen=True)
class VBN(_Group):
    """Virtual batch normalization from a reference batch of ``size`` observations collected with
    random actions seeded by ``seed``."""

    size: int = 128
    seed: int = 0
    FLAT = {"size": "vbn_size", "seed": "vbn_seed"}
    SWITCH = "vbn"

    def __post_init__(self) -> None:
        _set(self, "size", check_int("vbn_size", self.size, minimum=2))
        _set(self, "seed", check_int("vbn_seed", self.seed, minimum=0))


@dataclass(frozen=True)
class GymConfig:
    """Every option of a gym problem, in its groups."""

    environment: Environment
    episodes: Episodes
    policy: Policy
    obs_norm: ObsNorm | None
    episode_cap: EpisodeCap | None
    frames: Frames
    vbn: VBN | None


@dataclass(frozen=True)
class GymParams:
    """The gym problem's options as spec strings, TOML files and ``config.toml`` spell them."""

    env: str | Callable[..., Any] = "CartPole-v1"
    episodes: int = 1
    max_episode_steps: int | None = None
    policy: Any = "mlp"
    hidden: Sequence[int] = (64, 64)
    activation: str = "tanh"
    obs_norm: bool = False
    obs_norm_prob: float = 0.01
    obs_clip: float = 5.0
    action_noise: float = 0.0
    action_bounds: str = "tanh"
    bins: int = 0
    batched: bool = True
    vectorized: bool = True
    slots: int | str | None = None
    env_kwargs: dict[str, Any] | None = None
    vbn: bool = False
    vbn_size: int = 128
    vbn_seed: int = 0
    episode_cap: str | None = None
    episode_cap_factor: float | None = None
    episode_cap_start: int | None = None
    episode_cap_threshold: float | None = None
    episode_cap_ratio: float | None = None
    atari: bool | None = None
    frame_skip: int | None = None
    frame_stack: int | None = None
    device: str | None = None
    torch_threads: int | None = 1
    reward_shift: float = 0.0
    reward_floor: float | None = None
    shared_seed: bool = False
    direct: bool = True
    bias: bool = True
    episode_cap_steps: int | None = None  # added last, as every option after 0.1.0's (issue 22)
    episode_cap_lift: float | None = None

    def groups(self) -> GymConfig:
        """These options in their groups, every value checked (those of a group that is off too)."""
        environment = Environment.from_flat(self)
        frames = Frames.from_flat(self)
        episodes = Episodes.from_flat(self)
        obs_norm = ObsNorm.from_flat(self)
        policy = Policy.from_flat(self)
        vbn = VBN.from_flat(self)
        episode_cap = EpisodeCap.from_flat(self)
        return GymConfig(environment, episodes, policy, obs_norm, episode_cap, frames, vbn)


#: The groups a GymProblem takes as objects, by the keyword that takes them.
_GROUPS: dict[str, type[_Group]] = {"env": Environment, "episodes": Episodes, "policy": Policy, "obs_norm": ObsNorm,
                                    "episode_cap": EpisodeCap, "frames": Frames, "vbn": VBN}
FLAT_KEYS = tuple(f.name for f in dataclasses.fields(GymParams))


def gym_config(given: dict[str, Any]) -> GymConfig:
    """The groups of a ``GymProblem(...)`` call's keywords, flat keys (the one spelling).

    A group object under its keyword is unfolded into its flat keys, with a DeprecationWarning
    that names them; a flat key that belongs to a group given as an object is refused (one place
    says each value), and so is a key that is no option, with the closest one named.
    """
    flat: dict[str, Any] = {}
    groups: dict[str, _Group] = {}
    for key, value in given.items():
        kind = _GROUPS.get(key)
        if kind is not None and isinstance(value, _Group):
            if not isinstance(value, kind):
                raise ConfigError(f"{key}= takes {kind.__name__}(...) or a plain value, got {value!r}")
            spelled = ", ".join(f"{name}={item!r}" for name, item in value.flat().items())
            warnings.warn(f"GymProblem({key}={value!r}) is deprecated: give the flat keys instead, {spelled} "
                          f"(the one spelling of specs, TOML files and Python)", DeprecationWarning, stacklevel=3)
            groups[key] = value
        elif key == "frames":
            if value is not None:
                raise ConfigError(f"frames must be Frames(skip, stack, atari), got {value!r}; in a spec or "
                                  f"TOML file, give frame_skip=, frame_stack= and atari=")
        elif key in FLAT_KEYS:
            flat[key] = value
        else:
            raise UnknownNameError(f"problem 'gym' has no option {key!r}.{did_you_mean(key, FLAT_KEYS)} "
                                   f"Options: {', '.join(FLAT_KEYS)}")
    for key, group in groups.items():
        values = group.flat()
        for name in values:
            if name != key and name in flat:
                raise ConfigError(f"{name} is given twice: as {name}= and in {key}={group!r}; give it in one place")
        flat.update(values)
    return GymParams(**flat).groups()
