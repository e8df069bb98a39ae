"""Run configuration: a TOML file and command-line flags merged into one resolved config.

The file ``blackbox run --config`` reads, and the one it writes into every run directory (with
every option filled in, so that ``blackbox run --config RUN/config.toml`` repeats the run)::

    seed = 0                    # the run seed: strategy RNG and every evaluation seed
    evaluate_center = true      # evaluate the unperturbed center each generation
    preset = true               # fill what is not given from the problem's recommended settings
    out = "runs/nes"            # optional: the run directory (never written into RUN/config.toml)

    [strategy]                  # or a spec string: strategy = "nes:popsize=100"
    name = "nes"                # or spec = "nes:popsize=100", options below override the spec's
    popsize = 100               # any option of the strategy (`blackbox list strategies`)

    [problem]
    name = "quadratic"
    dim = 10

    [executor]
    name = "serial"

    [stop]                      # at least one budget: generations, max_evaluations, max_steps, max_time
    generations = 500
    target = -0.001             # stop once the best fitness reaches it
    goal = 475                  # stop once the center's fitness holds the goal ...
    goal_generations = 5        # ... for this many generations in a row, or instead
    goal_episodes = 20          # ... confirmed by the center's mean over this many fresh episodes

    [checkpoint]
    every = 10                  # generations between checkpoints; 0: only at the end
    keep = 3                    # newest checkpoints kept (the best one is always kept too)

    [log]
    tensorboard = false         # TensorBoard event files in RUN/tensorboard
    plot = true                 # RUN/curve.png at the end

An unknown key is reported with its line and a did-you-mean hint; a value of the wrong type names
the key, the expected type and the line.
"""

from __future__ import annotations

import inspect
import re
import sys
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._validate import check_float, check_int
from ..core.problem import Recommends
from ..errors import ConfigError, UnknownNameError, did_you_mean
from ..registry.plugins import (
    executors,
    make_executor,
    make_problem,
    make_strategy,
    problems,
    resolved_config,
    strategies,
)
from ..registry.spec import Spec, parse_spec, parse_value
from .legacy import upgrade_v010

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["ConfigDoc", "Component", "make_component", "check_section", "RunConfig", "load_toml", "read_run_config", "resolve_run_config", "build_components", "config_changes", "breaking_changes", "set_override", "component_override", "STOP_KEYS", "BUDGET_KEYS", "run_config", "set_value", "parse_set", "problem_preset", "empty_preset"]

COMPONENTS = ("strategy", "problem", "executor")
BUDGET_KEYS = ("generations", "max_evaluations", "max_steps", "max_time")
_REGISTRY = {"strategy": strategies, "problem": problems, "executor": executors}
_RESERVED = {"strategy": ("dim", "seed")}


def _int(minimum: int) -> Callable[[str, Any], int]:
    return lambda name, value: check_int(name, value, minimum=minimum)


def _number(name: str, value: Any) -> float:
    if isinstance(value, str):
        raise ConfigError(f"{name} must be a number, got {value!r}")
    return check_float(name, value)


def _positive(name: str, value: Any) -> float:
    if isinstance(value, str):
        raise ConfigError(f"{name} must be a number, got {value!r}")
    return check_float(name, value, positive=True)


def _bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be true or false, got {value!r}")
    return value


def _string(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{name} must be a string, got {value!r}")
    return value


STOP_KEYS: dict[str, Callable] = {
    "generations": _int(1), "max_evaluations": _int(1), "max_steps": _int(1), "max_time": _positive,
    "target": _number, "goal": _number, "goal_generations": _int(1), "goal_episodes": _int(1),
}
_SECTIONS: dict[str, dict[str, Callable]] = {
    "stop": STOP_KEYS,
    "checkpoint": {"every": _int(0), "keep": _int(1)},
    "log": {"tensorboard": _bool, "plot": _bool},
}
_SCALARS: dict[str, Callable] = {"seed": _int(0), "evaluate_center": _bool, "preset": _bool, "out": _string}
_DEFAULTS: dict[str, Any] = {"seed": 0, "evaluate_center": True, "preset": True}
_SECTION_DEFAULTS = {"stop": {}, "checkpoint": {"every": 10, "keep": 3}, "log": {"tensorboard": False, "plot": True}}
_COMPONENT_DEFAULTS = {"strategy": "openai-es", "problem": "quadratic", "executor": "serial"}
TOP_KEYS = (*_SCALARS, *COMPONENTS, *_SECTIONS)


# -- TOML with line numbers ----------------------------------------------------------------------
_BARE_OR_QUOTED = r'(?:[A-Za-z0-9_-]+|"[^"]*"|\'[^\']*\')'
_KEY_PATH = rf"{_BARE_OR_QUOTED}(?:\s*\.\s*{_BARE_OR_QUOTED})*"
_HEADER = re.compile(rf"^\s*\[\[?\s*({_KEY_PATH})\s*\]\]?\s*(?:#.*)?$")
_KEYVAL = re.compile(rf"^\s*({_KEY_PATH})\s*=\s*(.*)$")
_INLINE_KEY = re.compile(rf"[{{,]\s*({_BARE_OR_QUOTED})\s*=")


def _split_key(text: str) -> tuple[str, ...]:
    parts = re.findall(_BARE_OR_QUOTED, text)
    return tuple(p[1:-1] if p[:1] in "\"'" else p for p in parts)


def key_lines(text: str) -> dict[tuple[str, ...], int]:
    """The line (1-based) where each key path of a TOML document is written."""
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    in_string = None
    for number, line in enumerate(text.splitlines(), 1):
        if in_string:
            if line.count(in_string) % 2:
                in_string = None
            continue
        header = _HEADER.match(line)
        if header:
            table = _split_key(header.group(1))
            lines.setdefault(table, number)
            continue
        keyval = _KEYVAL.match(line)
        if not keyval:
            continue
        path = table + _split_key(keyval.group(1))
        for i in range(len(table) + 1, len(path) + 1):
            lines.setdefault(path[:i], number)
        rest = keyval.group(2)
        for quote in ('"""', "'''"):
            if rest.count(quote) % 2:
                in_string = quote
        if rest.lstrip().startswith("{"):
            for inner in _INLINE_KEY.finditer(rest):
                lines.setdefault(path + _split_key(inner.group(1)), number)
    return lines


@dataclass
class ConfigDoc:
    """A parsed TOML file and where each of its keys is written."""

    path: Path | None
    data: dict[str, Any]
    lines: dict[tuple[str, ...], int] = field(default_factory=dict)

    def where(self, *path: str) -> str:
        """``FILE:LINE`` of the deepest written prefix of ``path`` (``FILE`` if none)."""
        name = str(self.path) if self.path else "<config>"
        for i in range(len(path), 0, -1):
            if tuple(path[:i]) in self.lines:
                return f"{name}:{self.lines[tuple(path[:i])]}"
        return name


def load_toml(path: str | Path) -> ConfigDoc:
    """Parse a TOML file; a syntax error or a missing file is a ConfigError naming the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return ConfigDoc(path, data, key_lines(text))


# -- components ----------------------------------------------------------------------------------
@dataclass
class Component:
    """A strategy, problem or executor: its registered name and options (positional ones named)."""

    kind: str
    name: str
    options: dict[str, Any] = field(default_factory=dict)
    where: str = ""
    option_where: dict[str, str] = field(default_factory=dict)

    def located(self, key: str | None = None) -> str:
        return self.option_where.get(key, self.where) if key else self.where


def _factory(kind: str, name: str, where: str) -> Any:
    try:
        return _REGISTRY[kind].load(name)
    except ConfigError as exc:
        raise type(exc)(f"{where}: {exc}") from None


def _signature(factory: Any) -> inspect.Signature | None:
    for eval_str in (True, False):
        try:
            return inspect.signature(factory, eval_str=eval_str)
        except (TypeError, ValueError, NameError, SyntaxError, AttributeError):
            continue
    return None


def _bind_args(kind: str, name: str, factory: Any, args: Sequence[Any], where: str) -> dict[str, Any]:
    """Name the positional values of a spec (``gym:CartPole-v1``) after the factory's parameters."""
    if not args:
        return {}
    sig = _signature(factory)
    if sig is None:
        raise ConfigError(f"{where}: {kind} {name!r} takes no positional values in a config; name them")
    positional = [p.name for p in sig.parameters.values()
                  if p.kind in (p.POSITIONAL_OR_KEYWORD,)]
    if len(args) > len(positional):
        raise ConfigError(
            f"{where}: {kind} {name!r} takes at most {len(positional)} positional value(s) "
            f"({', '.join(positional) or 'none'}), got {len(args)}: {list(args)!r}"
        )
    return dict(zip(positional, args))


def _component(kind: str, value: Any, where: str, doc: ConfigDoc | None = None,
               path: tuple[str, ...] | None = None, ignore: Sequence[str] = ()) -> Component:
    """A component from a spec string or a table with ``name`` or ``spec`` and options.

    ``path`` is where the table sits in ``doc`` (default: ``(kind,)``), for line numbers; keys in
    ``ignore`` belong to the caller (an experiment's ``target``), not to the component.
    """
    path = path or (kind,)
    if isinstance(value, Component):
        return value
    if isinstance(value, str):
        spec = parse_spec(value)
        factory = _factory(kind, spec.name, where)
        options = {**_bind_args(kind, spec.name, factory, spec.args, where), **spec.kwargs}
        return Component(kind, spec.name, options, where, {k: where for k in options})
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
        base = Component(kind, name, {}, where)
        _factory(kind, name, name_where)
    else:
        if not isinstance(head, str):
            raise ConfigError(f"{where}: [{kind}] spec must be a string, got {head!r}")
        base = _component(kind, head, doc.where(*path, "spec") if doc else where)
        base.where = where
    for key, option in table.items():
        base.options[key] = option
        base.option_where[key] = doc.where(*path, key) if doc else where
    return base


def make_component(kind: str, value: Any, where: str, doc: ConfigDoc | None = None,
                   path: tuple[str, ...] | None = None, ignore: Sequence[str] = ()) -> Component:
    """Public form of the component reader, for other config files (experiments)."""
    return _component(kind, value, where, doc, path, ignore)


def component_override(kind: str, base: Component | None, spec: str, source: str) -> Component:
    """``--strategy SPEC`` over a file's component: same name merges options, another name replaces."""
    new = _component(kind, spec, source)
    if base is None or base.name != new.name:
        return new
    return Component(kind, base.name, {**base.options, **new.options}, base.where,
                     {**base.option_where, **new.option_where})


# -- type checks of plugin options ---------------------------------------------------------------
def _matches(value: Any, annotation: Any) -> bool:
    if annotation in (inspect.Parameter.empty, Any, object) or isinstance(annotation, str):
        return True
    if annotation is None or annotation is type(None):
        return value is None
    origin = typing.get_origin(annotation)
    if origin is typing.Union or (hasattr(types, "UnionType") and isinstance(annotation, types.UnionType)):
        return any(_matches(value, arg) for arg in typing.get_args(annotation))
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if annotation is str:
        return isinstance(value, str)
    if origin in (list, tuple, Sequence) or annotation in (list, tuple):
        return isinstance(value, (list, tuple))
    return True


def _describe(annotation: Any) -> str:
    if typing.get_origin(annotation) is typing.Union or (
        hasattr(types, "UnionType") and isinstance(annotation, types.UnionType)
    ):
        return " or ".join(_describe(a) for a in typing.get_args(annotation) if a is not type(None))
    names = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _check_component(component: Component) -> None:
    """Unknown option names (with did-you-mean) and values of the wrong type, with their location."""
    kind, name = component.kind, component.name
    factory = _factory(kind, name, component.where)
    for key in _RESERVED.get(kind, ()):
        if key in component.options:
            what = "the problem's dimension" if key == "dim" else "the run's seed (top-level seed, --seed)"
            raise ConfigError(f"{component.located(key)}: {key} is {what}; do not set it as a {kind} option")
    sig = _signature(factory)
    if sig is None:
        return
    params = sig.parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    known = [p.name for p in params.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for key, value in component.options.items():
        if key not in params:
            raise UnknownNameError(
                f"{component.located(key)}: unknown key {key!r} in [{kind}]: {kind} {name!r} has no option "
                f"{key!r}.{did_you_mean(key, known)} Options: {', '.join(known) or 'none'}"
            )
        param = params[key]
        annotation = param.annotation
        if annotation is inspect.Parameter.empty and param.default not in (inspect.Parameter.empty, None):
            annotation = type(param.default)
        if not _matches(value, annotation):
            raise ConfigError(
                f"{component.located(key)}: [{kind}] {key} must be {_describe(annotation)} "
                f"({kind} {name!r}), got {value!r}"
            )


# -- the run config ------------------------------------------------------------------------------
@dataclass
class RunConfig:
    """A run config before resolution: plain values, components, and where each came from."""

    values: dict[str, Any] = field(default_factory=dict)
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)
    components: dict[str, Component] = field(default_factory=dict)
    where: dict[tuple[str, ...], str] = field(default_factory=dict)
    doc: ConfigDoc | None = None

    def located(self, *path: str) -> str:
        for i in range(len(path), 0, -1):
            if tuple(path[:i]) in self.where:
                return self.where[tuple(path[:i])]
        return self.doc.where(*path) if self.doc else "<config>"


def _check(where: str, checker: Callable, name: str, value: Any) -> Any:
    try:
        return checker(name, value)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _unknown(where: str, key: str, section: str | None, known: Sequence[str]) -> UnknownNameError:
    place = f" in [{section}]" if section else ""
    return UnknownNameError(
        f"{where}: unknown key {key!r}{place}.{did_you_mean(key, known)} Known keys: {', '.join(known)}"
    )


def read_run_config(doc: ConfigDoc | None) -> RunConfig:
    """Check a parsed run-config file key by key (unknown keys and wrong types, with lines)."""
    config = RunConfig(doc=doc)
    data = upgrade_v010(doc.data) if doc else {}
    for key, value in data.items():
        where = doc.where(key)
        if key in _SCALARS:
            config.values[key] = _check(where, _SCALARS[key], key, value)
        elif key in COMPONENTS:
            config.components[key] = _component(key, value, where, doc)
        elif key in _SECTIONS:
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: {key} must be a table ([{key}]), got {value!r}")
            schema = _SECTIONS[key]
            section = config.sections.setdefault(key, {})
            for sub, sub_value in value.items():
                sub_where = doc.where(key, sub)
                if sub not in schema:
                    raise _unknown(sub_where, sub, key, list(schema))
                section[sub] = _check(sub_where, schema[sub], f"[{key}] {sub}", sub_value)
        else:
            raise _unknown(where, key, None, list(TOP_KEYS))
    return config


def check_section(section: str, table: Any, where: Callable[..., str], path: tuple[str, ...],
                  allowed: Sequence[str] | None = None) -> dict[str, Any]:
    """Check a ``[stop]`` / ``[checkpoint]`` / ``[log]`` table found at ``path`` of another file."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where(*path)}: {'.'.join(path)} must be a table, got {table!r}")
    schema = _SECTIONS[section]
    keys = list(allowed) if allowed is not None else list(schema)
    out = {}
    for key, value in table.items():
        if key not in keys:
            raise _unknown(where(*path, key), key, ".".join(path), keys)
        out[key] = _check(where(*path, key), schema[key], f"[{'.'.join(path)}] {key}", value)
    return out


def set_override(config: RunConfig, dotted: str, value: Any, source: str) -> None:
    """Apply ``--set KEY=VALUE``: a bare key is a strategy option, a dotted key any config key."""
    path = tuple(dotted.split(".")) if "." in dotted else ("strategy", dotted)
    head = path[0]
    if head in COMPONENTS:
        if len(path) != 2:
            raise ConfigError(f"{source}: expected {head}.OPTION=VALUE, got {dotted!r}")
        component = config.components.get(head) or _component(head, _COMPONENT_DEFAULTS[head], "default")
        if path[1] == "name":
            component = component_override(head, component, _check(source, _string, dotted, value), source)
        else:
            component.options[path[1]] = value
            component.option_where[path[1]] = source
        config.components[head] = component
    elif head in _SECTIONS:
        schema = _SECTIONS[head]
        if len(path) != 2 or path[1] not in schema:
            raise _unknown(source, path[-1], head, list(schema))
        config.sections.setdefault(head, {})[path[1]] = _check(source, schema[path[1]], f"[{head}] {path[1]}", value)
        config.where[path] = source
    elif head in _SCALARS and len(path) == 1:
        config.values[head] = _check(source, _SCALARS[head], head, value)
        config.where[path] = source
    else:
        raise _unknown(source, dotted, None, [*TOP_KEYS])


def set_value(config: RunConfig, path: tuple[str, ...], value: Any, source: str) -> None:
    """Apply a flag such as ``--generations 10`` (``path`` = ("stop", "generations")) or ``--seed``."""
    if len(path) == 1:
        config.values[path[0]] = _check(source, _SCALARS[path[0]], path[0], value)
        config.where[path] = source
    else:
        set_override(config, ".".join(path), value, source)


def resolve_run_config(config: RunConfig, require_budget: bool = True) -> dict[str, Any]:
    """Every value of the run, defaults filled in and options named: what RUN/config.toml holds.

    A run without a budget could never stop and is refused unless ``require_budget`` is False.
    """
    for kind in COMPONENTS:
        if kind not in config.components:
            config.components[kind] = _component(kind, _COMPONENT_DEFAULTS[kind], f"default {kind}")
        _check_component(config.components[kind])
    if config.values.get("preset", _DEFAULTS["preset"]):
        _apply_preset(config)
    stop = dict(config.sections.get("stop", {}))
    if require_budget and not any(key in stop for key in BUDGET_KEYS):
        where = f"{config.located('stop')}: " if config.doc is not None else ""
        raise ConfigError(
            f"{where}the run has no budget and could never stop: give one of "
            f"[stop] {', '.join(BUDGET_KEYS)} (flags --generations, --max-evaluations, --max-steps, "
            f"--max-time); a target or goal alone may never be reached"
        )
    for key in ("goal_generations", "goal_episodes"):
        if key in stop and "goal" not in stop:
            raise ConfigError(f"{config.located('stop', key)}: [stop] {key} needs a goal")
    if "goal_generations" in stop and "goal_episodes" in stop:
        raise ConfigError(
            f"{config.located('stop', 'goal_episodes')}: [stop] give goal_generations (the training "
            f"fitness holds the goal k generations) or goal_episodes (confirmed on fresh episodes), not both"
        )
    resolved: dict[str, Any] = {}
    for key in ("seed", "evaluate_center", "preset"):
        resolved[key] = config.values.get(key, _DEFAULTS[key])
    for kind in COMPONENTS:
        component = config.components[kind]
        factory = _factory(kind, component.name, component.where)
        try:
            options = resolved_config(factory, (), component.options)
        except TypeError as exc:
            raise ConfigError(f"{component.where}: [{kind}] {exc}") from None
        for key in _RESERVED.get(kind, ()):
            options.pop(key, None)
        if kind == "strategy" and "x0" not in component.options:
            options.pop("x0", None)
        resolved[kind] = {"name": component.name, **options}
    resolved["stop"] = stop
    for section in ("checkpoint", "log"):
        resolved[section] = {**_SECTION_DEFAULTS[section], **config.sections.get(section, {})}
    return _plain(resolved)


def _apply_preset(config: RunConfig) -> None:
    """Fill what the user left out from the problem's recommended settings (:mod:`blackbox.config.run`).

    Problem and strategy options one by one; the budget only when no budget was given; the goal
    only when no goal was given. The resolved config then holds every value explicitly.
    """
    from ..registry.spec import Spec

    problem, strategy = config.components["problem"], config.components["strategy"]
    preset = problem_preset(Spec(problem.name, [], dict(problem.options)), strategy.name)
    for component, options in ((problem, preset["problem"]), (strategy, preset["strategy"])):
        for key, value in options.items():
            if key not in component.options:
                component.options[key] = value
                component.option_where[key] = f"preset of {problem.name}"
    stop = config.sections.setdefault("stop", {})
    run = preset["run"]
    if not any(key in stop for key in BUDGET_KEYS):
        for key in BUDGET_KEYS:
            if key in run:
                stop[key] = run[key]
                config.where[("stop", key)] = f"preset of {problem.name}"
    if "goal" not in stop and "goal" in run:
        given = {key for key in ("goal_generations", "goal_episodes") if key in stop}
        for key in ("goal", "goal_generations", "goal_episodes"):
            if key in run and not given:
                stop[key] = run[key]
                config.where[("stop", key)] = f"preset of {problem.name}"


def run_config(strategy: str = "openai-es", problem: str = "quadratic", executor: str = "serial", *,
               seed: int = 0, evaluate_center: bool = True, stop: dict[str, Any] | None = None,
               checkpoint: dict[str, Any] | None = None, log: dict[str, Any] | None = None,
               **strategy_options: Any) -> dict[str, Any]:
    """A resolved run config from Python: specs, budget and options, checked like a config file.

    ``run_config("nes:popsize=100", "quadratic:dim=10", stop={"generations": 500}, sigma=0.05)``
    """
    config = RunConfig()
    for kind, spec in (("strategy", strategy), ("problem", problem), ("executor", executor)):
        config.components[kind] = component_override(kind, None, spec, kind)
    for key, value in strategy_options.items():
        set_override(config, key, value, key)
    set_value(config, ("seed",), seed, "seed")
    set_value(config, ("evaluate_center",), evaluate_center, "evaluate_center")
    for section, table in (("stop", stop), ("checkpoint", checkpoint), ("log", log)):
        for key, value in (table or {}).items():
            set_value(config, (section, key), value, f"{section}[{key!r}]")
    return resolve_run_config(config)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _options(table: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in table.items() if k != "name"}


def build_components(resolved: dict[str, Any], where: str = "config") -> tuple[Any, Any, Any]:
    """Strategy, problem and executor of a resolved config (``x0`` from the problem if unset)."""
    seed = int(resolved["seed"])

    def make(kind: str, maker: Callable, **extra: Any) -> Any:
        table = resolved[kind]
        try:
            return maker(table["name"], **_options(table), **extra)
        except ConfigError as exc:
            raise type(exc)(f"{where} [{kind}] {table['name']}: {exc}") from None

    problem = make("problem", make_problem)
    extra: dict[str, Any] = {"dim": problem.dim, "seed": seed}
    if "x0" not in resolved["strategy"]:
        extra["x0"] = problem.initial_params(np.random.default_rng(seed))
    strategy = make("strategy", make_strategy, **extra)
    executor = make("executor", make_executor)
    return strategy, problem, executor


# -- comparing configs ---------------------------------------------------------------------------
def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, sub in value.items():
            out.update(_flatten(sub, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


# Changing these never changes the numbers of the generations that are run: executors are
# bit-identical by design, and stop / checkpoint / log only decide when to stop and what to write.
_HARMLESS = ("stop", "checkpoint", "log", "executor")


def config_changes(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """``(key, old value, new value)`` for every key that differs (None: absent)."""
    a, b = _flatten(_plain(upgrade_v010(old))), _flatten(_plain(upgrade_v010(new)))
    return [(key, a.get(key), b.get(key)) for key in sorted(set(a) | set(b)) if a.get(key) != b.get(key)]


def breaking_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The differences that make a continued run differ from an uninterrupted one, in words."""
    out = []
    for key, before, after in config_changes(old, new):
        if key.split(".")[0] in _HARMLESS:
            continue
        out.append(f"{key}: {'(unset)' if before is None else repr(before)} -> "
                   f"{'(unset)' if after is None else repr(after)}")
    return out


def parse_set(pair: str) -> tuple[str, Any]:
    """``KEY=VALUE`` from ``--set``, the value parsed like a spec value."""
    key, eq, value = pair.partition("=")
    if not eq or not key.strip():
        raise ConfigError(f"--set expects KEY=VALUE, got {pair!r}")
    return key.strip(), parse_value(value)


# -- from presets.py: Problem presets: recommended settings a problem offers for ``blackbox run``.

_PRESET_SECTIONS = ("problem", "strategy", "run")


def empty_preset() -> dict[str, dict[str, Any]]:
    return {section: {} for section in _PRESET_SECTIONS}


def problem_preset(spec: Spec, strategy: str) -> dict[str, dict[str, Any]]:
    """The preset the problem named by ``spec`` recommends for ``strategy`` (empty if none)."""
    factory = problems.load(spec.name)
    hook = factory.recommended if isinstance(factory, Recommends) else None
    if not callable(hook):
        return empty_preset()
    preset = hook(*spec.args, strategy=strategy, **spec.kwargs)
    if not isinstance(preset, dict) or not set(preset) <= set(_PRESET_SECTIONS):
        raise ConfigError(f"problem {spec.name!r}: recommended() must return a dict with keys {_PRESET_SECTIONS}")
    return {section: dict(preset.get(section) or {}) for section in _PRESET_SECTIONS}
