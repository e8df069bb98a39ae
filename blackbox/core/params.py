"""Declared hyperparameters: a strategy's ``Params`` dataclass and the constructor signature built from it.

A strategy declares its hyperparameters once, as a frozen dataclass that subclasses :class:`Params`
and sits on the strategy as ``Params``: the defaults on the fields, a ``#:`` comment above each
field as its documentation (the Sphinx convention), and the checks in ``__post_init__`` through
:mod:`blackbox._validate` (checks that need the dimension run when the strategy is built). The
strategy then takes them as keywords, ``OpenAIES(dim=10, sigma=0.05)``, or as one object,
``OpenAIES(10, OpenAIES.Params(sigma=0.05))``; :func:`options_signature` gives the class a signature
that lists every field, so ``help()``, the registry and the config layer see each option with its
default and type, spelled as on the command line.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

from ..errors import ConfigError, UnknownNameError, did_you_mean

__all__ = ["Params", "make_params", "options_signature"]

P = TypeVar("P", bound="Params")


@dataclasses.dataclass(frozen=True)
class Params:
    """Base of every strategy's hyperparameters: a frozen dataclass checked when it is made.

    Subclasses declare fields with defaults and check them in ``__post_init__`` (calling
    ``super().__post_init__()``), normalizing values through :meth:`_check`.
    """

    #: Fields that evolve as the strategy runs (a step size) and may reach exactly 0 on their own,
    #: as a size adapted by multiplying underflows after a long convergence: :meth:`check_evolved`
    #: accepts 0 for them although the constructor would not.
    may_vanish: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        """Check the fields; the base has none."""

    def check_evolved(self, name: str, value: object) -> None:
        """Check ``value``, the current value of the field ``name`` in a loaded state (a sigma that
        adapted as the strategy ran), with the field's own checks: a ConfigError where these Params
        would refuse it as that field (0 passes for the fields in ``may_vanish``)."""
        if name in self.may_vanish and value == 0:
            return
        dataclasses.replace(self, **{name: value})

    def _check(self, name: str, checker: Callable[..., object], *args: object, **kwargs: object) -> None:
        """Replace field ``name`` by ``checker(name, value, *args, **kwargs)`` (which raises ConfigError)."""
        object.__setattr__(self, name, checker(name, getattr(self, name), *args, **kwargs))

    def replace(self, **changes: Any) -> Params:
        """A copy with ``changes`` applied and checked again (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def options(cls) -> list[str]:
        """The field names, in declaration order."""
        return [f.name for f in dataclasses.fields(cls) if f.init]

    @classmethod
    def with_defaults(cls: type[P], qualname: str, doc: str | None = None, **defaults: Any) -> type[P]:
        """A subclass with other defaults for some fields (``NES.Params`` from OpenAI-ES's):
        the same fields, types, documentation and checks."""
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = [name for name in defaults if name not in known]
        if unknown:
            raise TypeError(f"{cls.__qualname__} has no field {unknown[0]!r}")
        namespace: dict[str, Any] = {
            "__annotations__": {name: known[name].type for name in defaults},
            "__module__": sys._getframe(1).f_globals.get("__name__", cls.__module__),
            "__qualname__": qualname,
            "__doc__": doc or cls.__doc__,
            **defaults,
        }
        subclass = type(qualname.rpartition(".")[2], (cls,), namespace)
        return dataclasses.dataclass(frozen=True)(subclass)


def make_params(cls: type[Params], params: Any, overrides: Mapping[str, Any], owner: str) -> Params:
    """``params`` (an instance of ``cls``, a dict of its fields, or None) with ``overrides`` applied.

    Unknown names are refused with an UnknownNameError that suggests the close one and lists the
    options, as the registry does.
    """
    options = cls.options()
    for key in overrides:
        if key not in options:
            raise UnknownNameError(
                f"strategy {owner!r} has no option {key!r}.{did_you_mean(key, options)} Options: {', '.join(options)}"
            )
    if params is None:
        return cls(**overrides)
    if isinstance(params, Mapping):
        return make_params(cls, None, {**params, **overrides}, owner)
    if not isinstance(params, cls):
        raise ConfigError(
            f"params of strategy {owner!r} must be a {cls.__qualname__} (or a dict of its fields), "
            f"got {type(params).__name__}"
        )
    return dataclasses.replace(params, **overrides) if overrides else params


def _field_default(field: dataclasses.Field[object]) -> object:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return inspect.Parameter.empty


def options_signature(factory: type[object]) -> inspect.Signature | None:
    """The constructor's signature with the ``Params`` fields in place of its ``**overrides``.

    Explicit parameters of the constructor keep their places (``dim``, ``params`` first; ``x0``,
    ``seed`` and the like after the fields); a field replaces an explicit parameter of the same
    name, and keeps its place when the constructor takes it by position (the gym problem's
    ``env``). None when the class declares no ``Params`` or its constructor takes no ``**kwargs``.
    Strategies and the gym problem publish it as their ``__signature__``: what ``help()`` shows.
    """
    params_cls = getattr(factory, "Params", None)
    if params_cls is None or not dataclasses.is_dataclass(params_cls):
        return None
    init = inspect.signature(factory.__init__, eval_str=True)
    explicit = list(init.parameters.values())[1:]  # without self
    if not any(p.kind is p.VAR_KEYWORD for p in explicit):
        return None
    hints = typing.get_type_hints(params_cls)
    fields = {
        f.name: inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=_field_default(f),
                                  annotation=hints.get(f.name, inspect.Parameter.empty))
        for f in dataclasses.fields(params_cls) if f.init
    }
    positional: list[inspect.Parameter] = []
    keyword: list[inspect.Parameter] = []
    for p in explicit:
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        if p.name in fields:
            if p.kind is not p.KEYWORD_ONLY:  # a field the constructor also takes by position
                positional.append(fields.pop(p.name).replace(kind=p.kind))
            continue
        (keyword if p.kind is p.KEYWORD_ONLY else positional).append(p)
    return inspect.Signature(positional + list(fields.values()) + keyword)
