"""Gradient-ascent optimizers for search-gradient strategies: SGD, momentum, Adam, ClipUp.

Each takes the current parameters and an ascent direction (an estimate of the gradient of the
expected fitness) and returns the new parameters. ``weight_decay`` is an L2 penalty folded into
the gradient as in OpenAI's ES code (``g - weight_decay * theta``); ``decoupled=True`` applies it
to the parameters directly instead (AdamW style). State (moments, step count) round-trips through
``state_dict`` as plain numpy arrays and numbers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from ..errors import ConfigError, did_you_mean

__all__ = ["Optimizer", "SGD", "Adam", "ClipUp", "make_optimizer", "OPTIMIZERS"]


def _check_nonneg(name: str, value: float, *, positive: bool = False) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, got {value!r}") from None
    if not np.isfinite(value) or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise ConfigError(f"{name} must be a finite number {bound}, got {value!r}")
    return value


class Optimizer(ABC):
    """Base class: ``step(theta, grad) -> (new_theta, step_norm)``."""

    def __init__(self, dim: int, lr: float, weight_decay: float = 0.0, decoupled: bool = False):
        self.dim = int(dim)
        self.lr = _check_nonneg("lr", lr, positive=True)
        self.weight_decay = _check_nonneg("weight_decay", weight_decay)
        self.decoupled = bool(decoupled)
        self.t = 0

    def step(self, theta: np.ndarray, grad: np.ndarray) -> tuple[np.ndarray, float]:
        """Move ``theta`` along the ascent direction ``grad``; returns new theta and step norm."""
        self.t += 1
        g = np.asarray(grad, dtype=np.float64)
        if self.weight_decay and not self.decoupled:
            g = g - self.weight_decay * theta
        step = self._direction(g)
        if self.weight_decay and self.decoupled:
            step = step - self.lr * self.weight_decay * theta
        return theta + step, float(np.linalg.norm(step))

    @abstractmethod
    def _direction(self, g: np.ndarray) -> np.ndarray:
        """The step for ascent direction ``g`` (weight decay already folded in)."""

    def state_dict(self) -> dict[str, Any]:
        return {"t": self.t}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.t = int(state["t"])


class SGD(Optimizer):
    """Plain gradient ascent, with optional (heavy-ball) momentum."""

    def __init__(self, dim: int, lr: float, momentum: float = 0.0, weight_decay: float = 0.0,
                 decoupled: bool = False):
        super().__init__(dim, lr, weight_decay, decoupled)
        self.momentum = _check_nonneg("momentum", momentum)
        if self.momentum >= 1:
            raise ConfigError(f"momentum must be in [0, 1), got {momentum!r}")
        self.velocity = np.zeros(self.dim, dtype=np.float64)

    def _direction(self, g: np.ndarray) -> np.ndarray:
        if not self.momentum:
            return self.lr * g
        self.velocity *= self.momentum
        self.velocity += (1.0 - self.momentum) * g
        return self.lr * self.velocity

    def state_dict(self) -> dict[str, Any]:
        return {"t": self.t, "velocity": self.velocity.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.t = int(state["t"])
        self.velocity = np.array(state["velocity"], dtype=np.float64)


class Adam(Optimizer):
    """Adam (Kingma & Ba 2015) as in OpenAI's ES code: bias-corrected step size."""

    def __init__(self, dim: int, lr: float, beta1: float = 0.9, beta2: float = 0.999,
                 eps: float = 1e-8, weight_decay: float = 0.0, decoupled: bool = False):
        super().__init__(dim, lr, weight_decay, decoupled)
        self.beta1 = _check_nonneg("beta1", beta1)
        self.beta2 = _check_nonneg("beta2", beta2)
        self.eps = _check_nonneg("eps", eps, positive=True)
        for name, beta in (("beta1", self.beta1), ("beta2", self.beta2)):
            if beta >= 1:
                raise ConfigError(f"{name} must be in [0, 1), got {beta!r}")
        self.m = np.zeros(self.dim, dtype=np.float64)
        self.v = np.zeros(self.dim, dtype=np.float64)

    def _direction(self, g: np.ndarray) -> np.ndarray:
        a = self.lr * np.sqrt(1 - self.beta2**self.t) / (1 - self.beta1**self.t)
        self.m *= self.beta1
        self.m += (1 - self.beta1) * g
        self.v *= self.beta2
        self.v += (1 - self.beta2) * (g * g)
        return a * self.m / (np.sqrt(self.v) + self.eps)

    def state_dict(self) -> dict[str, Any]:
        return {"t": self.t, "m": self.m.copy(), "v": self.v.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.t = int(state["t"])
        self.m = np.array(state["m"], dtype=np.float64)
        self.v = np.array(state["v"], dtype=np.float64)


class ClipUp(Optimizer):
    """ClipUp (Toklu, Liskowski & Srivastava, PPSN 2020): normalized gradient, momentum, clipped speed.

    Each step adds ``lr * g / ||g||`` to a velocity that decays by ``momentum`` and whose norm is
    clipped to ``max_speed`` (default ``2 * lr``, as in EvoTorch); the velocity is the step. The step
    length is thus set in parameter units, independent of the fitness scale. A zero gradient adds
    nothing (the velocity only decays).
    """

    def __init__(self, dim: int, lr: float, momentum: float = 0.9, max_speed: float | None = None,
                 weight_decay: float = 0.0, decoupled: bool = False):
        super().__init__(dim, lr, weight_decay, decoupled)
        self.momentum = _check_nonneg("momentum", momentum)
        if self.momentum >= 1:
            raise ConfigError(f"momentum must be in [0, 1), got {momentum!r}")
        self.max_speed = 2.0 * self.lr if max_speed is None else _check_nonneg("max_speed", max_speed, positive=True)
        self.velocity = np.zeros(self.dim, dtype=np.float64)

    def _direction(self, g: np.ndarray) -> np.ndarray:
        norm = float(np.linalg.norm(g))
        velocity = self.momentum * self.velocity
        if norm > 0 and np.isfinite(norm):
            velocity += (self.lr / norm) * g
        speed = float(np.linalg.norm(velocity))
        if speed > self.max_speed:
            velocity *= self.max_speed / speed
        self.velocity = velocity
        return velocity.copy()

    def state_dict(self) -> dict[str, Any]:
        return {"t": self.t, "velocity": self.velocity.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.t = int(state["t"])
        self.velocity = np.array(state["velocity"], dtype=np.float64)


OPTIMIZERS = ("sgd", "momentum", "adam", "clipup")


def make_optimizer(name: str, dim: int, lr: float, *, weight_decay: float = 0.0,
                   momentum: float = 0.9, beta1: float = 0.9, beta2: float = 0.999,
                   eps: float = 1e-8, decoupled: bool = False, max_speed: float | None = None) -> Optimizer:
    """Build ``sgd``, ``momentum`` (SGD with ``momentum``), ``adam`` or ``clipup`` for ``dim`` parameters.

    ``clipup`` uses ``momentum`` and ``max_speed`` (default ``2 * lr``).
    """
    if name == "clipup":
        return ClipUp(dim, lr, momentum, max_speed, weight_decay, decoupled)
    if name == "sgd":
        return SGD(dim, lr, 0.0, weight_decay, decoupled)
    if name == "momentum":
        return SGD(dim, lr, momentum, weight_decay, decoupled)
    if name == "adam":
        return Adam(dim, lr, beta1, beta2, eps, weight_decay, decoupled)
    raise ConfigError(
        f"unknown optimizer {name!r}.{did_you_mean(name, OPTIMIZERS)} Choose one of: {', '.join(OPTIMIZERS)}"
    )
