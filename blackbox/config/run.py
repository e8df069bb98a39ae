"""Run configuration: a TOML file and command-line flags merged into one resolved config.

The file ``blackbox run --config`` reads, and the one it writes into every run directory (with
every option filled in, so that ``blackbox run --config RUN/config.toml`` repeats the run)::

    seed = 0                    # the run seed: strategy RNG and every evaluation seed
    evaluate_center = true      # evaluate the unperturbed center each generation
    pipelined = false           # sample generation g+1 before g is told (its update one generation old)
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
    target = -0.001             # stop once the best ever fitness (any row scored, the center included) reaches it
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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, TypedDict

from .._validate import check_bool, check_int, check_number, check_string
from ..core.problem import ChoosesStrategy, Recommends
from ..errors import ConfigError, UnknownNameError, did_you_mean
from ..files import to_plain
from ..registry.component import KINDS, Component, Options
from ..registry.options import Factory, options_of, resolve, resolved_options
from ..registry.spec import parse_value
from .component import component_override, factory_of, named, read_component
from .legacy import upgrade_v010
from .resolved import BUDGET_KEYS, Checkpointing, Logging, ResolvedRun, Stop, build_components
from .toml import ConfigDoc, Table, key_lines, load_toml

__all__ = ["ConfigDoc", "Component", "read_component", "check_section", "RunConfig", "ResolvedRun", "Stop",
           "Checkpointing", "Logging", "load_toml", "key_lines", "read_run_config", "resolve_run_config",
           "resolved_run", "build_components", "config_changes", "breaking_changes", "set_override",
           "component_override", "STOP_KEYS", "BUDGET_KEYS", "COMPONENTS", "run_config", "set_value",
           "parse_set", "problem_preset", "empty_preset", "preset_strategy", "Preset"]

COMPONENTS = KINDS
#: Strategy options the run gives (refused as options, with what each is instead), and those never
#: written into the resolved config unless set (``x0``: the problem's start by default).
_RESERVED = {"strategy": {"dim": "the problem's dimension", "seed": "the run's seed (top-level seed, --seed)"}}
_UNWRITTEN = {"strategy": ("dim", "seed", "x0")}


_COUNT, _NONNEGATIVE = partial(check_int, minimum=1), partial(check_int, minimum=0)
#: Each key of ``[stop]`` with its check, ``check(name, value) -> value`` (from :mod:`blackbox._validate`).
STOP_KEYS: dict[str, Callable] = {
    "generations": _COUNT, "max_evaluations": _COUNT, "max_steps": _COUNT,
    "max_time": partial(check_number, positive=True), "target": check_number, "goal": check_number,
    "goal_generations": _COUNT, "goal_episodes": _COUNT,
}
_SECTIONS: dict[str, dict[str, Callable]] = {
    "stop": STOP_KEYS,
    "checkpoint": {"every": _NONNEGATIVE, "keep": _COUNT},
    "log": {"tensorboard": check_bool, "plot": check_bool},
}
_SCALARS: dict[str, Callable] = {"seed": _NONNEGATIVE, "evaluate_center": check_bool, "pipelined": check_bool,
                                 "preset": check_bool, "out": check_string}
_COMPONENT_DEFAULTS = {"strategy": "openai-es", "problem": "quadratic", "executor": "serial"}
TOP_KEYS = (*_SCALARS, *COMPONENTS, *_SECTIONS)


# -- the run config as read, before resolution ---------------------------------------------------
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
    if doc is None:
        return config
    for key, value in upgrade_v010(doc.data).items():
        where = doc.where(key)
        if key in _SCALARS:
            config.values[key] = _check(where, _SCALARS[key], key, value)
        elif key in COMPONENTS:
            config.components[key] = read_component(key, value, where, doc)
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


# -- flags over the file -------------------------------------------------------------------------
def _default_component(kind: str, where: str) -> Component:
    return read_component(kind, _COMPONENT_DEFAULTS[kind], where)


def set_override(config: RunConfig, dotted: str, value: Any, source: str) -> None:
    """Apply ``--set KEY=VALUE``: a bare key is a strategy option, a dotted key any config key."""
    path = tuple(dotted.split(".")) if "." in dotted else ("strategy", dotted)
    head = path[0]
    if head in COMPONENTS:
        if len(path) != 2:
            raise ConfigError(f"{source}: expected {head}.OPTION=VALUE, got {dotted!r}")
        component = config.components.get(head) or _default_component(head, "default")
        if path[1] == "name":
            component = component_override(head, component, _check(source, check_string, dotted, value), source)
        else:
            component = named(component).with_options({path[1]: value}, source)
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


def parse_set(pair: str) -> tuple[str, Any]:
    """``KEY=VALUE`` from ``--set``, the value parsed like a spec value."""
    key, eq, value = pair.partition("=")
    if not eq or not key.strip():
        raise ConfigError(f"--set expects KEY=VALUE, got {pair!r}")
    return key.strip(), parse_value(value)


# -- resolution ----------------------------------------------------------------------------------
def resolve_run_config(config: RunConfig, require_budget: bool = True) -> ResolvedRun:
    """Every value of the run, defaults filled in and options named and checked: a :class:`ResolvedRun`.

    This gathers the sources (the file and flags in ``config``, the defaults, the problem's preset)
    and hands each component to :func:`~blackbox.registry.options.resolve`, its factory loaded once:
    first the user's values of every component are checked (strategy, problem, executor: the first
    error found is the one reported), then the problem's preset is laid under them and each is
    completed. A run without a budget could never stop and is refused unless ``require_budget`` is False.
    """
    components: dict[str, Component] = {}
    factories: dict[str, Factory] = {}
    preset = config.values.get("preset", True)
    deferred: ConfigError | None = None  # the default strategy refused the user's options: the preset may pick another
    for kind in COMPONENTS:
        component = config.components.get(kind) or _default_component(kind, f"default {kind}")
        factories[kind] = factory_of(kind, component.name, component.where)
        try:
            components[kind] = resolve(component, factories[kind], refuse=_RESERVED.get(kind), complete=False)
        except ConfigError as exc:
            if kind != "strategy" or not preset or not component.where.startswith("default"):
                raise deferred or exc from None
            deferred, components[kind] = exc, component
    if deferred is not None and preset_strategy(components["problem"], factories["problem"]) in (
            None, components["strategy"].name):
        raise deferred
    stop = dict(config.sections.get("stop", {}))
    tables = _apply_preset(config, components, factories, stop) if preset else empty_preset()
    source, laid = f"preset of {components['problem'].name}", {"problem": tables["problem"], "strategy": tables["strategy"]}
    for kind in COMPONENTS:
        components[kind] = resolve(components[kind], factories[kind], under=laid.get(kind), under_where=source,
                                   unwritten=_UNWRITTEN.get(kind, ()))
        if components[kind].args:
            raise ConfigError(f"{components[kind].where}: {kind} {components[kind].name!r} takes no positional "
                              f"values in a config; name them")
    if require_budget and not any(key in stop for key in BUDGET_KEYS):
        where = f"{config.located('stop')}: " if config.doc is not None else ""
        raise ConfigError(
            f"{where}the run has no budget and could never stop: give one of "
            f"[stop] {', '.join(BUDGET_KEYS)} (flags --generations, --max-evaluations, --max-steps, "
            f"--max-time); a target or goal alone may never be reached{_no_preset(components, preset, factories)}"
        )
    for key in ("goal_generations", "goal_episodes"):
        if key in stop and "goal" not in stop:
            raise ConfigError(f"{config.located('stop', key)}: [stop] {key} needs a goal")
    if "goal_generations" in stop and "goal_episodes" in stop:
        raise ConfigError(
            f"{config.located('stop', 'goal_episodes')}: [stop] give goal_generations (the training "
            f"fitness holds the goal k generations) or goal_episodes (confirmed on fresh episodes), not both"
        )
    sections = {name: config.sections.get(name, {}) for name in ("checkpoint", "log")}
    out = config.values.get("out")
    return ResolvedRun(
        strategy=components["strategy"], problem=components["problem"], executor=components["executor"],
        stop=Stop(**stop), checkpoint=Checkpointing(**sections["checkpoint"]), log=Logging(**sections["log"]),
        seed=config.values.get("seed", 0), evaluate_center=config.values.get("evaluate_center", True),
        pipelined=config.values.get("pipelined", False), preset=preset, out=out,
    )


def resolved_run(value: ResolvedRun | Table, where: str = "config") -> ResolvedRun:
    """A :class:`ResolvedRun` as it is, or resolved from a table such as ``RUN/config.toml`` holds."""
    if isinstance(value, ResolvedRun):
        return value
    if not isinstance(value, dict):
        raise ConfigError(f"a resolved run must be a ResolvedRun or a table, got {type(value).__name__}")
    return resolve_run_config(read_run_config(ConfigDoc(None, value)))


# -- presets: the settings a problem recommends --------------------------------------------------
_PRESET_SECTIONS = ("problem", "strategy", "run")


class Preset(TypedDict):
    """The settings a problem recommends (its ``recommended()``), laid under the user's values."""

    #: Options of the problem and of the strategy.
    problem: Options
    strategy: Options
    #: ``[stop]`` keys: the budget (used when none is given) and the goal (when none is given).
    run: Options


def empty_preset() -> Preset:
    return Preset(problem={}, strategy={}, run={})


def problem_preset(problem: Component, strategy: str, factory: Factory | None = None) -> Preset:
    """The preset the ``problem`` component recommends for ``strategy`` (empty if none)."""
    factory = factory_of("problem", problem.name, problem.where) if factory is None else factory
    hook = factory.recommended if isinstance(factory, Recommends) else None
    if not callable(hook):
        return empty_preset()
    try:
        preset = hook(*problem.args, strategy=strategy, **problem.options)
    except ConfigError as exc:  # worded as when the problem is built (an unknown task, say)
        raise type(exc)(f"config [problem] {problem.name}: {exc}") from None
    if not isinstance(preset, dict) or not set(preset) <= set(_PRESET_SECTIONS):
        raise ConfigError(f"problem {problem.name!r}: recommended() must return a dict with keys {_PRESET_SECTIONS}")
    return Preset(problem=dict(preset.get("problem") or {}), strategy=dict(preset.get("strategy") or {}),
                  run=dict(preset.get("run") or {}))


def preset_strategy(problem: Component, factory: Factory | None = None) -> str | None:
    """The strategy the ``problem`` component's preset picks when the user names none (None: no choice).

    A problem factory offers it as ``recommended_strategy(*args, **options)``.
    """
    factory = factory_of("problem", problem.name, problem.where) if factory is None else factory
    if not isinstance(factory, ChoosesStrategy):
        return None
    chosen = factory.recommended_strategy(*problem.args, **problem.options)
    if chosen is not None and not isinstance(chosen, str):
        raise ConfigError(f"problem {problem.name!r}: recommended_strategy() must return a strategy name or None, "
                          f"got {chosen!r}")
    return chosen


def _no_preset(components: dict[str, Component], preset: bool, factories: dict[str, Factory]) -> str:
    """'' or, when the problem recommends settings but has none for this task, a sentence saying so."""
    problem, factory = components["problem"], factories["problem"]
    if not preset or not isinstance(factory, Recommends) or any(
            problem_preset(problem, components["strategy"].name, factory).values()):
        return ""
    return f" ({_label(problem)} has no preset to give one)"


def _label(problem: Component) -> str:
    """``gym:Hopper-v5``: the problem's name and the task it names, for messages."""
    env = problem.options.get("env", problem.args[0] if problem.args else None)
    return f"{problem.name}:{env}" if isinstance(env, str) else problem.name


def _apply_preset(config: RunConfig, components: dict[str, Component], factories: dict[str, Factory],
                  stop: dict[str, Any]) -> Preset:
    """The problem's recommended settings, gathered as a source: the tables laid under the user's values.

    The preset's strategy replaces the default one when the user named none (:func:`preset_strategy`;
    the user's strategy options are checked against it, in ``components``); ``stop`` gets the
    budget only when no budget was given and the goal only when no goal was given, located at
    ``preset of NAME``.
    """
    problem = components["problem"]
    source, label = f"preset of {problem.name}", _label(problem)
    chosen = preset_strategy(problem, factories["problem"]) if components["strategy"].where.startswith("default") \
        else None
    if chosen is not None and chosen != components["strategy"].name:
        strategy = replace(components["strategy"], name=chosen, where=f"preset of {label}", bound=False)
        factories["strategy"] = factory_of("strategy", chosen, strategy.where)
        try:
            components["strategy"] = resolve(strategy, factories["strategy"], refuse=_RESERVED["strategy"],
                                             complete=False)
        except ConfigError as exc:
            raise type(exc)(f"{exc} (the preset of {label} runs strategy {chosen!r} when none is named; name one "
                            f"with --strategy, e.g. --strategy openai-es)") from None
    tables = problem_preset(problem, components["strategy"].name, factories["problem"])
    run = tables["run"]
    keys = [key for key in BUDGET_KEYS if key in run] if not any(key in stop for key in BUDGET_KEYS) else []
    if "goal" not in stop and "goal" in run and not {"goal_generations", "goal_episodes"} & set(stop):
        keys += [key for key in ("goal", "goal_generations", "goal_episodes") if key in run]
    for key in keys:
        stop[key] = _check(source, STOP_KEYS[key], f"[stop] {key}", run[key])
        config.where[("stop", key)] = source
    return tables


def run_config(strategy: str = "openai-es", problem: str = "quadratic", executor: str = "serial", *,
               seed: int = 0, evaluate_center: bool = True, pipelined: bool = False,
               stop: Mapping[str, float] | None = None,
               checkpoint: Mapping[str, int] | None = None, log: Mapping[str, bool] | None = None,
               **strategy_options: Any) -> ResolvedRun:
    """A resolved run from Python: specs, budget and options, checked like a config file.

    ``run_config("nes:popsize=100", "quadratic:dim=10", stop={"generations": 500}, sigma=0.05)``
    """
    config = RunConfig()
    for kind, spec in (("strategy", strategy), ("problem", problem), ("executor", executor)):
        config.components[kind] = component_override(kind, None, spec, kind)
    for key, value in strategy_options.items():
        set_override(config, key, value, key)
    set_value(config, ("seed",), seed, "seed")
    set_value(config, ("evaluate_center",), evaluate_center, "evaluate_center")
    if pipelined:
        set_value(config, ("pipelined",), True, "pipelined")
    for section, table in (("stop", stop), ("checkpoint", checkpoint), ("log", log)):
        for key, value in (table or {}).items():
            set_value(config, (section, key), value, f"{section}[{key!r}]")
    return resolve_run_config(config)


# -- comparing configs ---------------------------------------------------------------------------
def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, sub in value.items():
            out.update(_flatten(sub, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def _table(config: ResolvedRun | Table) -> Table:
    return to_plain(upgrade_v010(config.to_dict() if isinstance(config, ResolvedRun) else config), drop_none=True)


# Changing these never changes the numbers of the generations that are run: executors are
# bit-identical by design, and stop / checkpoint / log only decide when to stop and what to write.
_HARMLESS = ("stop", "checkpoint", "log", "executor")


def config_changes(old: ResolvedRun | Table, new: ResolvedRun | Table) -> list[tuple[str, Any, Any]]:
    """``(key, old value, new value)`` for every key that differs (None: absent)."""
    a, b = _flatten(_table(old)), _flatten(_table(new))
    return [(key, a.get(key), b.get(key)) for key in sorted(set(a) | set(b)) if a.get(key) != b.get(key)]


def _added_at_default(key: str, value: Any, new: ResolvedRun | Table) -> bool:
    """True for a component option that a config written before it existed lacks, at its default:
    the run behaves as before (``problem.reward_shift = 0.0``)."""
    kind, _, option = key.partition(".")
    table = _table(new).get(kind)
    if kind not in COMPONENTS or not isinstance(table, dict) or "." in option or "name" not in table:
        return False
    try:
        defaults = resolved_options(options_of(factory_of(kind, table["name"], "config")), {})
    except ConfigError:
        return False
    return option in defaults and to_plain(defaults[option], drop_none=True) == value


def breaking_changes(old: ResolvedRun | Table, new: ResolvedRun | Table) -> list[str]:
    """The differences that make a continued run differ from an uninterrupted one, in words."""
    out = []
    for key, before, after in config_changes(old, new):
        if key.split(".")[0] in _HARMLESS or (before is None and _added_at_default(key, after, new)):
            continue
        out.append(f"{key}: {'(unset)' if before is None else repr(before)} -> "
                   f"{'(unset)' if after is None else repr(after)}")
    return out
