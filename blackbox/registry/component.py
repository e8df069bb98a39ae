"""A plugin as a run names it: kind, name, positional values and options, and where each came from.

A spec string (``gym:CartPole-v1,episodes=3``) or a config table becomes one :class:`Component`
(:meth:`Component.parse`, the one door from a string), which travels unchanged from the command line
to the factory: :func:`~blackbox.registry.options.resolve` names its positional values, lays a preset
under its options, checks and completes them in one pass, and :func:`~blackbox.registry.plugins.make`
builds it. ``where`` says where the component was named (``--problem``, ``run.toml:12``, ``default
problem``); ``option_where`` says where each option was set (``--set sigma``, ``run.toml:14``,
``preset of gym``), so that an error names the place to fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import ConfigError
from .spec import Options, Spec, format_spec, parse_spec

__all__ = ["Component", "KINDS", "Options", "as_component"]

#: The three kinds of plugin a run is made of.
KINDS = ("strategy", "problem", "executor")


@dataclass(frozen=True)
class Component:
    """A strategy, problem or executor: registered name, positional values, options, provenance.

    ``bound`` is set by :func:`~blackbox.registry.options.resolve` once the positional values are
    named and every option is checked against the factory; a bound component is built as it is.
    """

    kind: str
    name: str
    args: tuple[Any, ...] = ()
    options: Options = field(default_factory=dict)
    where: str = ""
    option_where: dict[str, str] = field(default_factory=dict)
    bound: bool = False

    @classmethod
    def parse(cls, kind: str, spec: str | Spec | Component, where: str = "") -> Component:
        """The component a spec string names (parsed here, once); every value located at ``where``.

        A :class:`Spec` is taken as parsed, and a Component of this ``kind`` as it is.
        """
        if isinstance(spec, Component):
            if spec.kind != kind:
                raise ConfigError(f"a {spec.kind} component ({spec.name!r}) was given where a {kind} belongs")
            return spec
        if not isinstance(spec, (str, Spec)):
            raise ConfigError(f"{kind} must be named by a string, got {type(spec).__name__}: {spec!r}")
        parsed = spec if isinstance(spec, Spec) else parse_spec(spec)
        options = dict(parsed.kwargs)
        return cls(kind, parsed.name, tuple(parsed.args), options, where, {key: where for key in options})

    def located(self, key: str | None = None) -> str:
        """Where option ``key`` was set (where the component was named if not known, or no key)."""
        return self.option_where.get(key, self.where) if key else self.where

    def with_options(self, options: Mapping[str, Any], where: str | Mapping[str, str] = "") -> Component:
        """A copy with ``options`` set over the present ones (``where``: one place or one per key)."""
        places = dict(where) if isinstance(where, Mapping) else {key: where or self.where for key in options}
        return replace(self, options={**self.options, **options},
                       option_where={**self.option_where, **places}, bound=False)

    def without(self, *keys: str) -> Component:
        """A copy without the options ``keys``."""
        return replace(self, options={k: v for k, v in self.options.items() if k not in keys},
                       option_where={k: v for k, v in self.option_where.items() if k not in keys})

    def spec(self) -> str:
        """The spec string of this component (``name:arg,key=value``)."""
        return format_spec(self.name, *self.args, **self.options)

    def __str__(self) -> str:
        return self.spec()


def as_component(kind: str, value: Any, where: str = "") -> Component:
    """:meth:`Component.parse` under its former name (kept for callers of 0.1's registry)."""
    return Component.parse(kind, value, where)
