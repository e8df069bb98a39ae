"""Hyperparameter groups that several built-in strategies share, each declared once.

:class:`SamplingParams` (``popsize`` and ``sigma``, which every built-in has and redeclares with its
own default), :class:`SigmaScheduleOptions` (``sigma_decay``, ``sigma_min``) and
:class:`OptimizerOptions` (``lr``, ``weight_decay``, ``optimizer`` and the optimizer options that
0.1.0 took flat: ``momentum``, ``beta1``, ``beta2``, ``max_speed``). A strategy's ``Params`` subclasses
the groups it needs; the fields come out in that order (``popsize, sigma, sigma_decay, ..., lr, ...``).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from ..core.params import Params
from ..errors import ConfigError
from ._gaussian import SigmaSchedule
from .optim import (
    RULES,
    Optimizer,
    WeightDecay,
    build_optimizer,
    check_nonnegative,
    not_used,
    read_optimizer_spec,
)

__all__ = ["SamplingParams", "SigmaScheduleOptions", "OptimizerOptions", "FLAT_OPTIONS"]


@dataclasses.dataclass(frozen=True)
class SamplingParams(Params):
    """``popsize`` and ``sigma``; each strategy redeclares them with its own default and meaning."""

    #: Rows per generation (None: the strategy's default for the dimension).
    popsize: int | None = None
    #: The initial step size.
    sigma: Any = 0.1


@dataclasses.dataclass(frozen=True)
class SigmaScheduleOptions(SamplingParams):
    """Multiplicative decay of a sigma that does not adapt itself, down to a floor."""

    #: Factor that sigma is multiplied by after every generation, in (0, 1]; 1 keeps it fixed.
    sigma_decay: float = 1.0
    #: Floor that the decay stops at, in [0, sigma].
    sigma_min: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        schedule = SigmaSchedule.checked(self.sigma, self.sigma_decay, self.sigma_min)
        object.__setattr__(self, "sigma_decay", schedule.decay)
        object.__setattr__(self, "sigma_min", schedule.minimum)

    def sigma_schedule(self) -> SigmaSchedule:
        return SigmaSchedule(self.sigma_decay, self.sigma_min)

    def check_evolved(self, name: str, value: object) -> None:
        """A decaying sigma without a floor may underflow to 0; otherwise the field's own checks
        (> 0, and >= sigma_min: the schedule never goes below its floor)."""
        if name == "sigma" and value == 0 and self.sigma_decay < 1 and self.sigma_min == 0:
            return
        super().check_evolved(name, value)


#: Options of the optimizers that strategies take flat, beside ``optimizer`` (``pgpe:optimizer=adam,
#: beta1=0.8``), with the defaults that 0.1.0 wrote into every run config whether the optimizer
#: used them or not.
FLAT_OPTIONS: dict[str, float | None] = {"momentum": 0.9, "beta1": 0.9, "beta2": 0.999, "max_speed": None}


@dataclasses.dataclass(frozen=True)
class OptimizerOptions(SamplingParams):
    """The options of a strategy that moves its center with an optimizer (:mod:`.optim`)."""

    #: Learning rate (an optimizer object or spec with an lr of its own uses that one).
    lr: float = 0.01
    #: L2 weight decay, ``g - weight_decay * center`` as in OpenAI's ES code; 0 switches it off.
    weight_decay: float = 0.0
    #: ``sgd``, ``momentum``, ``adam`` or ``clipup``; with options as a spec (``"adam:beta1=0.8"``), or
    #: an optimizer object (``blackbox.strategies.optim.Adam(beta1=0.8)``).
    optimizer: str | Optimizer = "adam"
    #: Momentum of ``momentum`` and ``clipup`` (their default: 0.9); short for ``"clipup:momentum=..."``.
    momentum: float | None = None
    #: Adam's first-moment decay (its default: 0.9).
    beta1: float | None = None
    #: Adam's second-moment decay (its default: 0.999).
    beta2: float | None = None
    #: ClipUp's largest step (its default: ``2 * lr``).
    max_speed: float | None = None

    if TYPE_CHECKING:
        # Set in __post_init__ (object.__setattr__: the options are frozen); declared for the type
        # checker only, so that it is no dataclass field (not an option, not in the config).
        _optimizer: Optimizer = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check("lr", check_nonnegative, positive=True)
        self._check("weight_decay", check_nonnegative)
        object.__setattr__(self, "_optimizer", self._configured())

    def make_optimizer(self, dim: int) -> Optimizer:
        """The optimizer these options describe, bound to ``dim`` parameters (moments at zero)."""
        return self._optimizer.bind(dim, self.lr)

    def _configured(self) -> Optimizer:
        """``optimizer`` with the flat options and ``weight_decay`` folded in, unbound (``lr`` comes at bind()).

        A flat option the chosen rule does not take is refused (0.1.0 ignored it: run configs
        written by 0.1.0 are upgraded by :func:`blackbox.config.legacy.upgrade_v010`). An lr
        or a weight decay set both here (other than the default, or 0 for the weight decay) and on
        the optimizer is refused unless they agree.
        """
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        given = {key: getattr(self, key) for key in FLAT_OPTIONS if getattr(self, key) is not None}
        if isinstance(self.optimizer, Optimizer):
            if given:
                key, value = next(iter(given.items()))
                raise ConfigError(f"{key}={value!r} goes with an optimizer name; set it on the optimizer object "
                                  f"{self.optimizer!r} instead")
            configured = self.optimizer
        else:
            name, options = read_optimizer_spec(self.optimizer)
            for key, value in given.items():
                if key in options:
                    raise ConfigError(f"{key} is given twice, as {key}={value!r} and in optimizer={self.optimizer!r}; "
                                      f"give it once")
                if key in RULES[name].option_names():
                    options[key] = value
                    continue
                sentence, fix = not_used(name, key, value)
                raise ConfigError(f"{sentence}: drop it or choose {fix}")
            configured = build_optimizer(name, options)
        own_lr = getattr(configured, "lr", None)
        if own_lr is not None and self.lr not in (defaults["lr"], own_lr):
            raise ConfigError(f"the learning rate is given twice, lr={self.lr!r} and optimizer={configured.spec!r}; "
                              f"give it once")
        if isinstance(configured, WeightDecay):
            if self.weight_decay not in (defaults["weight_decay"], 0.0, configured.rate):
                raise ConfigError(f"weight decay is given twice, weight_decay={self.weight_decay!r} and "
                                  f"optimizer={configured.spec!r}; give it once")
            return configured
        return WeightDecay(configured, self.weight_decay) if self.weight_decay else configured
