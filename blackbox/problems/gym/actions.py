"""From policy outputs to environment actions, for a whole batch of slots at once.

- ``Discrete(n)``: one output per action, the action is the argmax.
- ``MultiDiscrete(nvec)``: one output per choice of every component, argmax per component.
- ``MultiBinary(n)``: one output per bit, the bit is set when the output is positive.
- ``Box``: one output per dimension, squashed into the bounds with ``tanh``
  (``low + (tanh(z) + 1) (high - low) / 2``); dimensions without finite bounds pass through.
  With ``action_bounds="clip"`` the output is the action itself, clipped to the bounds, as in
  OpenAI's ES code (MuJoCo clamps its controls) and EvoTorch: a linear policy then reaches full
  torque at output 1 instead of approaching it, which suits bang-bang locomotion.
- ``Box`` with ``bins=k``: discretized actions as in Salimans et al. 2017 (it helps exploration on
  MuJoCo tasks): ``k`` outputs per dimension, the argmax picks one of ``k`` evenly spaced values
  from ``low`` to ``high``.

Action noise (Gaussian, standard deviation ``action_noise``) is added to the logits of discrete
choices, and to continuous actions after squashing (then clipped to the bounds).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
import numpy.typing as npt

from ...errors import ConfigError

__all__ = ["ACTION_BOUNDS", "ActionAdapter", "make_action_adapter"]


class ActionAdapter(ABC):
    """Maps ``(n, out_size)`` float32 policy outputs to ``n`` actions of one space."""

    out_size: int
    #: How many noise values one action takes (= out_size except for squashed Box spaces).
    noise_size: int

    @abstractmethod
    def __call__(self, out: np.ndarray, noise: np.ndarray | None = None) -> np.ndarray:
        """Actions for the rows of ``out``, with ``noise`` (``(n, noise_size)``) added if given."""

    @abstractmethod
    def describe(self) -> str:
        """How outputs become actions, in words."""


class DiscreteArgmax(ActionAdapter):
    def __init__(self, n: int, start: int):
        self.out_size = self.noise_size = int(n)
        self.start = int(start)

    def __call__(self, out, noise=None):
        logits = out if noise is None else out + noise
        actions = logits.argmax(axis=1)
        return actions + self.start if self.start else actions

    def describe(self):
        return f"argmax over {self.out_size} actions"


class MultiDiscreteArgmax(ActionAdapter):
    def __init__(self, nvec: np.ndarray, start: np.ndarray):
        self.nvec = np.asarray(nvec, dtype=np.int64).reshape(-1)
        self.shape = np.shape(nvec)
        self.start = np.asarray(start, dtype=np.int64).reshape(-1)
        self.out_size = self.noise_size = int(self.nvec.sum())
        self.bounds = np.concatenate([[0], np.cumsum(self.nvec)])

    def __call__(self, out, noise=None):
        logits = out if noise is None else out + noise
        parts = [np.argmax(logits[:, a:b], axis=1) for a, b in zip(self.bounds[:-1], self.bounds[1:])]
        actions = np.stack(parts, axis=1) + self.start
        return actions.reshape(len(out), *self.shape)

    def describe(self):
        return f"argmax per component of MultiDiscrete{self.nvec.tolist()}"


class MultiBinaryThreshold(ActionAdapter):
    def __init__(self, shape: tuple[int, ...]):
        self.shape = tuple(shape)
        self.out_size = self.noise_size = int(np.prod(shape))

    def __call__(self, out, noise=None):
        logits = out if noise is None else out + noise
        return (logits > 0).astype(np.int8).reshape(len(out), *self.shape)

    def describe(self):
        return f"{self.out_size} bits set where the output is > 0"


class BoxSquash(ActionAdapter):
    def __init__(self, low: np.ndarray, high: np.ndarray, dtype: npt.DTypeLike | None):
        self.shape = low.shape
        self.dtype = np.dtype(dtype)
        self.low = low.reshape(-1).astype(np.float32)
        self.high = high.reshape(-1).astype(np.float32)
        self.out_size = self.noise_size = len(self.low)
        self.bounded = np.isfinite(self.low) & np.isfinite(self.high)
        self.all_bounded = bool(self.bounded.all())
        low_f = np.where(self.bounded, self.low, 0).astype(np.float32)
        high_f = np.where(self.bounded, self.high, 0).astype(np.float32)
        self.half_range = ((high_f - low_f) / 2).astype(np.float32)
        self.mid = ((high_f + low_f) / 2).astype(np.float32)

    def __call__(self, out, noise=None):
        squashed = self.mid + np.tanh(out) * self.half_range
        action = squashed if self.all_bounded else np.where(self.bounded, squashed, out)
        if noise is not None:
            action = np.clip(action + noise.astype(np.float32), self.low, self.high)
        return action.astype(self.dtype, copy=False).reshape(len(out), *self.shape)

    def describe(self):
        return f"tanh squashed into the bounds of {self.out_size} continuous dimensions"


class BoxClip(BoxSquash):
    """The output is the action, clipped to the finite bounds; unbounded dimensions pass through."""

    def __call__(self, out, noise=None):
        action = out if noise is None else out + noise.astype(np.float32)
        action = np.clip(action, self.low, self.high)  # infinite bounds clip nothing
        return action.astype(self.dtype, copy=False).reshape(len(out), *self.shape)

    def describe(self):
        return f"clipped to the bounds of {self.out_size} continuous dimensions"


#: How continuous outputs meet a Box's bounds (the gym problem's ``action_bounds=``).
ACTION_BOUNDS = {"tanh": BoxSquash, "clip": BoxClip}


class BoxBins(ActionAdapter):
    def __init__(self, low: np.ndarray, high: np.ndarray, dtype: npt.DTypeLike | None, bins: int):
        self.shape = low.shape
        self.dtype = np.dtype(dtype)
        self.bins = int(bins)
        low = low.reshape(-1).astype(np.float64)
        high = high.reshape(-1).astype(np.float64)
        self.dims = len(low)
        self.out_size = self.noise_size = self.dims * self.bins
        # values[d, k]: the k-th of `bins` evenly spaced values of dimension d
        self.values = np.linspace(low, high, self.bins, axis=1).astype(self.dtype)
        self._rows = np.arange(self.dims)

    def __call__(self, out, noise=None):
        logits = out if noise is None else out + noise
        choice = np.argmax(logits.reshape(len(out), self.dims, self.bins), axis=2)
        return self.values[self._rows, choice].reshape(len(out), *self.shape)

    def describe(self):
        return f"{self.bins} discrete values per dimension of {self.dims} (argmax)"


def make_action_adapter(space: object, bins: int = 0, where: str = "the environment",
                        action_bounds: str = "tanh") -> ActionAdapter:
    """The adapter for a gymnasium action ``space``; ``bins > 0`` discretizes a Box, ``action_bounds``
    (``"tanh"`` or ``"clip"``) says how a continuous output meets the Box's bounds."""
    from gymnasium import spaces

    if isinstance(space, spaces.Discrete):
        if bins:
            raise ConfigError(f"bins={bins} discretizes continuous actions, but {where} has {space}")
        return DiscreteArgmax(space.n, space.start)
    if isinstance(space, spaces.MultiDiscrete):
        return MultiDiscreteArgmax(space.nvec, space.start)
    if isinstance(space, spaces.MultiBinary):
        return MultiBinaryThreshold(tuple(np.atleast_1d(space.n)))
    if isinstance(space, spaces.Box):
        low, high = np.asarray(space.low), np.asarray(space.high)
        if bins:
            if bins < 2:
                raise ConfigError(f"bins must be >= 2 (or 0 for continuous actions), got {bins}")
            if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
                raise ConfigError(f"bins={bins} needs finite action bounds, but {where} has {space}")
            return BoxBins(low, high, space.dtype, bins)
        return ACTION_BOUNDS[action_bounds](low, high, space.dtype)
    raise ConfigError(
        f"{where} has action space {space}, which a policy cannot produce; supported: "
        f"Discrete, MultiDiscrete, MultiBinary and Box"
    )
