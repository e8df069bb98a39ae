"""Gradient-ascent optimizers for the search-gradient strategies: SGD, momentum, Adam, ClipUp, and
weight decay around any of them.

An optimizer is an object of its own, as in optax: ``Adam(beta1=0.8)`` holds the hyperparameters and
the spec string ``"adam:beta1=0.8"`` says the same, so a strategy takes either
(``OpenAIES(dim=10, optimizer=Adam(lr=0.02))``, ``openai-es:optimizer="adam:beta1=0.8"``). ``lr=None``
(the default) means the strategy's ``lr``. The strategy binds the optimizer to its dimension
(:meth:`Optimizer.bind`: a fresh copy with zeroed moments) and each generation calls
:meth:`Optimizer.step` with an estimate of the gradient of the expected fitness. Weight decay wraps
any optimizer: :class:`WeightDecay` folds an L2 penalty into the gradient as in OpenAI's ES code
(``g - rate * theta``) or, ``decoupled=True``, takes ``lr * rate * theta`` off the step (AdamW
style); in a spec string it is ``"adam:weight_decay=0.01,decoupled=true"``. What evolves (the step
count and the moments) is each rule's ``State`` dataclass (``optimizer.state``, fields declared with
:func:`~blackbox.core.state.state_field` as a strategy's are), made by :meth:`Optimizer.bind` and
round-tripped through ``state_dict`` as plain arrays and numbers; ``adam.m`` reads ``adam.state.m``.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

import numpy as np

from .._validate import check_choice, check_nonnegative
from ..core.state import (
    NONNEGATIVE,
    StateView,
    check_fields,
    load_fields,
    save_fields,
    state_field,
    state_layout,
)
from ..errors import ConfigError, StateError, UnknownNameError, did_you_mean
from ..registry.spec import format_spec, parse_spec

__all__ = [
    "Optimizer", "Rule", "SGD", "Momentum", "Adam", "ClipUp", "WeightDecay", "parse_optimizer", "read_optimizer_spec",
    "not_used", "build_optimizer", "make_optimizer", "check_nonnegative", "RULES", "OPTIMIZERS",
]


def _check_unit(name: str, value: object) -> float:
    """A decay rate in [0, 1) (momentum, Adam's betas)."""
    checked = check_nonnegative(name, value)
    if checked >= 1:
        raise ConfigError(f"{name} must be in [0, 1), got {checked!r}")
    return checked


class Optimizer(ABC):
    """Base class: hyperparameters, and once bound to a dimension, the state of the moments.

    ``step(theta, grad) -> (new_theta, step_norm)`` moves ``theta`` along the ascent direction
    ``grad``; ``update(grad, theta)`` returns the step itself (what a wrapper adds to).
    """

    #: The name in spec strings (``"adam"``).
    name: ClassVar[str] = ""

    @abstractmethod
    def bind(self, dim: int, lr: float | None = None) -> Optimizer:
        """A fresh copy for ``dim`` parameters (moments at zero), with ``lr`` if it has none of its own."""

    @abstractmethod
    def update(self, grad: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """The step for ascent direction ``grad`` at ``theta``; advances the state."""

    @property
    @abstractmethod
    def spec(self) -> str:
        """The spec string that :func:`parse_optimizer` turns back into an equal optimizer."""

    @property
    @abstractmethod
    def t(self) -> int:
        """Steps taken since bind()."""

    @abstractmethod
    def state_dict(self) -> dict[str, object]:
        """The state as plain arrays and numbers (``{"t": 3, "m": ..., "v": ...}`` for Adam)."""

    @abstractmethod
    def load_state_dict(self, state: Mapping[str, object]) -> None:
        """Put back what :meth:`state_dict` returned, checked first (:meth:`check_state_dict`)."""

    @abstractmethod
    def check_state_dict(self, state: object, path: str = "state_dict/optimizer") -> None:
        """Refuse a state this optimizer could not have had (ConfigError naming the key), changing nothing."""

    def step(self, theta: np.ndarray, grad: np.ndarray) -> tuple[np.ndarray, float]:
        """Move ``theta`` along the ascent direction ``grad``; returns new theta and step norm."""
        step = self.update(np.asarray(grad, dtype=np.float64), theta)
        return theta + step, float(np.linalg.norm(step))

    def __str__(self) -> str:
        return self.spec


R = TypeVar("R", bound="Rule")


@dataclasses.dataclass(kw_only=True)
class Rule(Optimizer):
    """An update rule with a learning rate of its own (None: the strategy's ``lr``); what evolves
    is its ``State`` (``self.state``), made at zero by :meth:`bind`."""

    @dataclasses.dataclass
    class State:
        """What evolves: the steps taken since bind()."""

        #: Never negative: Adam's bias correction divides by ``1 - beta1**t``, which -1 makes 0.
        t: int = state_field(bound=NONNEGATIVE)

    lr: float | None = None
    #: What evolves (not a hyperparameter: neither compared nor in the spec).
    state: State = dataclasses.field(init=False, repr=False, compare=False)
    #: Steps taken since bind() (``state.t``).
    t = StateView[int]("optimizer")

    def __post_init__(self) -> None:
        if self.lr is not None:
            self.lr = check_nonnegative("lr", self.lr, positive=True)
        self.dim: int | None = None
        self.state = self._start(0)

    @classmethod
    def option_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls) if f.init]

    @property
    def spec(self) -> str:
        changed = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                   if f.init and getattr(self, f.name) != f.default}
        return format_spec(self.name, **changed)

    def bind(self: R, dim: int, lr: float | None = None) -> R:
        bound = dataclasses.replace(self, lr=self.lr if self.lr is not None else lr)
        if bound.lr is None:
            raise ConfigError(f"optimizer {self.spec!r} has no learning rate: give it lr= (or the strategy's lr)")
        bound.dim = int(dim)
        bound.state = bound._start(int(dim))
        return bound

    def _start(self, dim: int) -> Rule.State:
        """A fresh state for ``dim`` parameters: no step taken, moments at zero (bind() keeps it)."""
        return self.State(t=0)

    def update(self, grad: np.ndarray, theta: np.ndarray) -> np.ndarray:
        if self.dim is None or self.lr is None:
            raise StateError(f"optimizer {self.spec!r} is not bound to a dimension; call bind(dim) first")
        self.state.t += 1
        return self._direction(grad, self.lr)

    @abstractmethod
    def _direction(self, g: np.ndarray, lr: float) -> np.ndarray:
        """The step for ascent direction ``g`` (weight decay already folded in) at learning rate ``lr``."""

    def state_dict(self) -> dict[str, object]:
        return save_fields(self.state, state_layout(type(self.state)).fields)

    def load_state_dict(self, state: Mapping[str, object]) -> None:
        self.check_state_dict(state)
        layout = state_layout(type(self.state))
        load_fields(self.state, layout.fields, state, path="state_dict/optimizer", bounds=layout.bounds)

    def check_state_dict(self, state: object, path: str = "state_dict/optimizer") -> None:
        if not isinstance(state, dict):
            raise ConfigError(f"{path} must be a table, got {type(state).__name__}")
        layout = state_layout(type(self.state))
        check_fields(self.state, layout.fields, state, path=path, bounds=layout.bounds)


@dataclasses.dataclass(kw_only=True)
class SGD(Rule):
    """Plain gradient ascent: ``theta + lr * g``."""

    name: ClassVar[str] = "sgd"

    def _direction(self, g: np.ndarray, lr: float) -> np.ndarray:
        return lr * g


@dataclasses.dataclass(kw_only=True)
class Momentum(Rule):
    """SGD with (heavy-ball) momentum: ``v <- momentum v + (1 - momentum) g``, step ``lr * v``."""

    name: ClassVar[str] = "momentum"

    @dataclasses.dataclass
    class State(Rule.State):
        """What evolves: the step count and the velocity."""

        velocity: np.ndarray = state_field()

    momentum: float = 0.9
    state: State = dataclasses.field(init=False, repr=False, compare=False)
    #: The velocity (``state.velocity``).
    velocity = StateView[np.ndarray]("optimizer")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.momentum = _check_unit("momentum", self.momentum)

    def _start(self, dim: int) -> State:
        return self.State(t=0, velocity=np.zeros(dim, dtype=np.float64))

    def _direction(self, g: np.ndarray, lr: float) -> np.ndarray:
        if not self.momentum:
            return lr * g
        state = self.state
        state.velocity *= self.momentum
        state.velocity += (1.0 - self.momentum) * g
        return lr * state.velocity


@dataclasses.dataclass(kw_only=True)
class Adam(Rule):
    """Adam (Kingma & Ba 2015) as in OpenAI's ES code: bias-corrected step size."""

    name: ClassVar[str] = "adam"

    @dataclasses.dataclass
    class State(Rule.State):
        """What evolves: the step count and the two moments."""

        m: np.ndarray = state_field()
        #: An average of squares.
        v: np.ndarray = state_field(bound=NONNEGATIVE)

    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    state: State = dataclasses.field(init=False, repr=False, compare=False)
    #: The first and second moments (``state.m``, ``state.v``).
    m = StateView[np.ndarray]("optimizer")
    v = StateView[np.ndarray]("optimizer")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.beta1 = _check_unit("beta1", self.beta1)
        self.beta2 = _check_unit("beta2", self.beta2)
        self.eps = check_nonnegative("eps", self.eps, positive=True)

    def _start(self, dim: int) -> State:
        return self.State(t=0, m=np.zeros(dim, dtype=np.float64), v=np.zeros(dim, dtype=np.float64))

    def _direction(self, g: np.ndarray, lr: float) -> np.ndarray:
        state = self.state
        a = lr * np.sqrt(1 - self.beta2**state.t) / (1 - self.beta1**state.t)
        state.m *= self.beta1
        state.m += (1 - self.beta1) * g
        state.v *= self.beta2
        state.v += (1 - self.beta2) * (g * g)
        step: np.ndarray = a * state.m / (np.sqrt(state.v) + self.eps)  # numpy leaves np.sqrt(float) untyped
        return step


@dataclasses.dataclass(kw_only=True)
class ClipUp(Rule):
    """ClipUp (Toklu, Liskowski & Srivastava, PPSN 2020): normalized gradient, momentum, clipped speed.

    Each step adds ``lr * g / ||g||`` to a velocity that decays by ``momentum`` and whose norm is
    clipped to ``max_speed`` (default ``2 * lr``, as in EvoTorch); the velocity is the step. The step
    length is thus set in parameter units, independent of the fitness scale. A zero gradient adds
    nothing (the velocity only decays).
    """

    name: ClassVar[str] = "clipup"

    @dataclasses.dataclass
    class State(Rule.State):
        """What evolves: the step count and the velocity (the step)."""

        velocity: np.ndarray = state_field()

    momentum: float = 0.9
    max_speed: float | None = None
    state: State = dataclasses.field(init=False, repr=False, compare=False)
    #: The velocity (``state.velocity``).
    velocity = StateView[np.ndarray]("optimizer")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.momentum = _check_unit("momentum", self.momentum)
        if self.max_speed is not None:
            self.max_speed = check_nonnegative("max_speed", self.max_speed, positive=True)

    def bind(self, dim: int, lr: float | None = None) -> ClipUp:
        bound = super().bind(dim, lr)
        if bound.max_speed is None and bound.lr is not None:
            bound.max_speed = 2.0 * bound.lr
        return bound

    def _start(self, dim: int) -> State:
        return self.State(t=0, velocity=np.zeros(dim, dtype=np.float64))

    def _direction(self, g: np.ndarray, lr: float) -> np.ndarray:
        max_speed = 2.0 * lr if self.max_speed is None else self.max_speed  # bind() sets it
        norm = float(np.linalg.norm(g))
        velocity = self.momentum * self.state.velocity
        if norm > 0 and np.isfinite(norm):
            velocity += (lr / norm) * g
        speed = float(np.linalg.norm(velocity))
        if speed > max_speed:
            velocity *= max_speed / speed
        self.state.velocity = velocity
        step: np.ndarray = velocity.copy()  # numpy leaves copy() of an unparametrized ndarray untyped
        return step


@dataclasses.dataclass
class WeightDecay(Optimizer):
    """L2 weight decay around any optimizer: ``g - rate * theta`` goes in (as in OpenAI's ES code), or
    with ``decoupled=True`` the step loses ``lr * rate * theta`` (AdamW style). A rate of 0 changes nothing."""

    optimizer: Optimizer
    rate: float
    decoupled: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.optimizer, Optimizer) or isinstance(self.optimizer, WeightDecay):
            raise ConfigError(f"WeightDecay wraps an optimizer without weight decay, got {self.optimizer!r}")
        self.rate = check_nonnegative("weight_decay", self.rate)
        self.decoupled = bool(self.decoupled)

    @property
    def lr(self) -> float | None:
        """The wrapped optimizer's learning rate."""
        return getattr(self.optimizer, "lr", None)

    @property
    def t(self) -> int:
        """The wrapped optimizer's step count."""
        return self.optimizer.t

    @property
    def spec(self) -> str:
        extra = ",decoupled=true" if self.decoupled else ""
        inner = self.optimizer.spec
        return f"{inner}{',' if ':' in inner else ':'}weight_decay={self.rate!r}{extra}"

    def bind(self, dim: int, lr: float | None = None) -> WeightDecay:
        return WeightDecay(self.optimizer.bind(dim, lr), self.rate, self.decoupled)

    def update(self, grad: np.ndarray, theta: np.ndarray) -> np.ndarray:
        if self.rate and not self.decoupled:
            grad = grad - self.rate * theta
        step = self.optimizer.update(grad, theta)
        lr = self.lr
        if self.rate and self.decoupled and lr is not None:
            step = step - lr * self.rate * theta
        return step

    def state_dict(self) -> dict[str, object]:
        return self.optimizer.state_dict()

    def load_state_dict(self, state: Mapping[str, object]) -> None:
        self.optimizer.load_state_dict(state)

    def check_state_dict(self, state: object, path: str = "state_dict/optimizer") -> None:
        self.optimizer.check_state_dict(state, path)


#: The update rules by spec name.
RULES: dict[str, type[Rule]] = {rule.name: rule for rule in (SGD, Momentum, Adam, ClipUp)}
OPTIMIZERS = tuple(RULES)
#: Options of the weight-decay wrapper that a spec string may add to any rule.
_WRAPPER_OPTIONS = ("weight_decay", "decoupled")


def not_used(name: str, key: str, value: object) -> tuple[str, str]:
    """For an option that rule ``name`` does not take: the sentence that says which rules take it, and the fix."""
    users = [rule.name for rule in RULES.values() if key in rule.option_names()]
    who = " and ".join(repr(user) for user in users)
    fix = f"optimizer={users[0]}" if len(users) == 1 else "one of those optimizers"
    return f"optimizer {name!r} does not use {key} (got {key}={value!r}); {key} is an option of {who}", fix


def build_optimizer(name: str, options: dict[str, Any]) -> Optimizer:
    """Rule ``name`` with ``options`` (its own, plus weight_decay / decoupled for the wrapper); an
    option of another rule is refused, naming the rules that take it."""
    rule_cls = RULES[name]
    own = rule_cls.option_names()
    for key, value in options.items():
        if key in own or key in _WRAPPER_OPTIONS:
            continue
        if any(key in rule.option_names() for rule in RULES.values()):
            sentence, fix = not_used(name, key, value)
            raise ConfigError(f"{sentence}: drop it or choose {fix}")
        known = [*own, *_WRAPPER_OPTIONS]
        raise UnknownNameError(f"optimizer {name!r} has no option {key!r}.{did_you_mean(key, known)} "
                               f"Options: {', '.join(known)}")
    rule = rule_cls(**{key: value for key, value in options.items() if key in own})
    if any(key in options for key in _WRAPPER_OPTIONS):
        return WeightDecay(rule, options.get("weight_decay", 0.0), options.get("decoupled", False))
    return rule


def read_optimizer_spec(value: Any) -> tuple[str, dict[str, Any]]:
    """The name and the options of an optimizer spec string (the name checked)."""
    if not isinstance(value, str):
        raise ConfigError(f"optimizer must be a name such as 'adam', a spec such as 'adam:beta1=0.9' or an "
                          f"optimizer object (blackbox.strategies.optim), got {value!r}")
    spec = parse_spec(value)
    check_choice("optimizer", spec.name, OPTIMIZERS)
    if spec.args:
        raise ConfigError(f"optimizer options need names, as in 'adam:beta1=0.9'; got {value!r}")
    return spec.name, dict(spec.kwargs)


def parse_optimizer(value: str | Optimizer) -> Optimizer:
    """An optimizer from a spec string (``"adam:beta1=0.9"``); an optimizer object as it is."""
    if isinstance(value, Optimizer):
        return value
    return build_optimizer(*read_optimizer_spec(value))


def make_optimizer(name: str, dim: int, lr: float, *, weight_decay: float = 0.0, decoupled: bool = False,
                   **options: Any) -> Optimizer:
    """Build ``sgd``, ``momentum``, ``adam`` or ``clipup`` with ``options`` for ``dim`` parameters,
    wrapped in :class:`WeightDecay` when ``weight_decay`` is not 0; an option the rule does not take
    is refused."""
    if name not in RULES:
        raise ConfigError(
            f"unknown optimizer {name!r}.{did_you_mean(name, OPTIMIZERS)} Choose one of: {', '.join(OPTIMIZERS)}"
        )
    rule = build_optimizer(name, options)
    optimizer = WeightDecay(rule, weight_decay, decoupled) if weight_decay else rule
    return optimizer.bind(dim, check_nonnegative("lr", lr, positive=True))
