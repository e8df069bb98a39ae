"""Reading a :class:`Component` from a config: a spec string or a table, each value located.

``strategy = "nes:popsize=100"``, ``[strategy]`` with ``name = "nes"`` (or ``spec = "nes:..."``)
and options, and ``--strategy nes:lr=0.1`` all become one Component whose ``where`` and
``option_where`` name the file and line or the flag each value came from. The name is looked up
here, so an unknown one is reported where it is written. Positional values are named
(``gym:CartPole-v1`` -> ``env``) once, by :func:`~blackbox.registry.options.resolve`; here only
where options merge onto a component that has some, so that a flag merges into a file's table key
by key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..errors import ConfigError
from ..registry.component import Component
from ..registry.options import Factory, name_args
from ..registry.plugins import registry_for
from .toml import ConfigDoc

__all__ = ["Component", "read_component", "component_override", "factory_of", "named"]


def factory_of(kind: str, name: str, where: str) -> Factory:
    """The factory registered as ``name``; an unknown name is a ConfigError located at ``where``."""
    try:
        return registry_for(kind).load(name)
    except ConfigError as exc:
        raise type(exc)(f"{where}: {exc}") from None


def _from_spec(kind: str, spec: str, where: str) -> Component:
    component = Component.parse(kind, spec, where)
    factory_of(kind, component.name, where)
    return component


def named(component: Component) -> Component:
    """``component`` with its positional values named, so that options can merge onto it key by key."""
    if not component.args:
        return component
    return name_args(component, factory_of(component.kind, component.name, component.where))


def read_component(kind: str, value: Any, where: str, doc: ConfigDoc | None = None,
                   path: tuple[str, ...] | None = None, ignore: Sequence[str] = ()) -> Component:
    """A component from a spec string or a table with ``name`` or ``spec`` and options.

    ``path`` is where the table sits in ``doc`` (default: ``(kind,)``), for line numbers; keys in
    ``ignore`` belong to the caller (an experiment's ``target``), not to the component.
    """
    path = path or (kind,)
    if isinstance(value, Component):
        return value
    if isinstance(value, str):
        return _from_spec(kind, value, where)
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: {kind} must be a spec string or a table with a name, got {value!r}")
    table = {k: v for k, v in value.items() if k not in ignore}
    if "name" in table and "spec" in table:
        raise ConfigError(f"{where}: [{kind}] has both name and spec; give one of them")
    if "name" not in table and "spec" not in table:
        raise ConfigError(f"{where}: [{kind}] needs a name (or a spec string such as spec = \"nes:popsize=100\")")
    head = table.pop("spec", None)
    if head is None:
        name = table.pop("name")
        name_where = doc.where(*path, "name") if doc else where
        if not isinstance(name, str):
            raise ConfigError(f"{name_where}: [{kind}] name must be a string, got {name!r}")
        factory_of(kind, name, name_where)
        base = Component(kind, name, where=where)
    else:
        if not isinstance(head, str):
            raise ConfigError(f"{where}: [{kind}] spec must be a string, got {head!r}")
        base = replace(_from_spec(kind, head, doc.where(*path, "spec") if doc else where), where=where)
    places = {key: doc.where(*path, key) if doc else where for key in table}
    return named(base).with_options(table, places) if table else base


def component_override(kind: str, base: Component | None, spec: str, source: str) -> Component:
    """``--strategy SPEC`` over a file's component: same name merges options, another name replaces."""
    new = read_component(kind, spec, source)
    if base is None or base.name != new.name:
        return new
    new = named(new)
    return named(base).with_options(new.options, new.option_where)
