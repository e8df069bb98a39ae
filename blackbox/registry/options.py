"""A factory's options, and binding a :class:`Component` to them: the one place options are checked.

A factory's options are the keyword parameters of its signature; when the factory is a class with
a ``Params`` attribute that is a dataclass, they are read from ``Params`` directly: its fields
(defaults and type annotations included) in the place of the constructor's ``params`` parameter
(after its positional parameters when it has none), plus the other explicit parameters of the
constructor's own ``__init__`` (``**kwargs`` aside, which set the fields); a published
``__signature__`` (what ``help()`` shows) is not read. :func:`options_of` reads them;
:func:`bind` names a component's positional values after them and refuses an unknown name (with a
did-you-mean hint) or a value of the wrong type, naming where the value came from;
:func:`resolved_options` fills in the defaults, as ``RUN/config.toml`` writes them.

:func:`resolve` is the one pass that takes a component from the values as given to what a run
holds: positional values named (once), reserved keys refused, a preset laid under the user's values
with its provenance, every option checked, the defaults filled in. :func:`bind` and
:func:`bind_more` are its first two steps alone.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import textwrap
import types
import typing
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

import numpy as np

from ..errors import ConfigError, UnknownNameError, did_you_mean
from ..files import to_plain
from .component import Component
from .spec import Options

#: What the registry reads and calls: a class or function building a component.
Factory: TypeAlias = Callable[..., object]

__all__ = ["Option", "FactoryOptions", "REQUIRED", "options_of", "name_args", "resolve", "bind", "bind_more",
           "check_options", "resolved_options", "resolved_config", "call"]

#: The default of an option that has none.
REQUIRED = inspect.Parameter.empty
#: The constructor parameter that receives a ``Params`` instance.
_PARAMS_ARGUMENT = "params"


@dataclass(frozen=True)
class Option:
    """One option of a factory: name, default, type annotation and a one-line description."""

    name: str
    default: Any = REQUIRED
    #: The type annotation (``inspect.Parameter.empty`` when there is none).
    annotation: Any = inspect.Parameter.empty
    doc: str = ""
    #: A spec's positional values fill the positional options, in order (``gym:CartPole-v1``).
    positional: bool = False
    #: Passed to the factory by position (a positional-only parameter).
    by_position: bool = False

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def describe_type(self) -> str:
        """The expected type in words (``an integer``, ``a number or a string``); '' if not known."""
        expected = _expected(self)
        return "" if expected in (Any, object, inspect.Parameter.empty) else _describe(expected)


@dataclass(frozen=True)
class FactoryOptions:
    """Every option of one factory, in declaration order."""

    options: dict[str, Option] = field(default_factory=dict)
    #: The factory takes ``**kwargs``: names it does not declare are passed on unchecked.
    open: bool = False
    #: False when the signature cannot be read: nothing is named or checked.
    readable: bool = True
    #: The factory's ``Params`` dataclass, when it has one, and whether the fields are passed as one
    #: ``params=Params(...)`` (a constructor with a ``params`` parameter and no ``**overrides``).
    params_class: type | None = None
    params_argument: bool = False

    @property
    def names(self) -> list[str]:
        return list(self.options)

    @property
    def positional(self) -> list[str]:
        return [o.name for o in self.options.values() if o.positional]


# -- reading a factory --------------------------------------------------------------------------
def _signature(factory: Factory) -> inspect.Signature | None:
    for eval_str in (True, False):
        try:
            return inspect.signature(factory, eval_str=eval_str)
        except (TypeError, ValueError, NameError, SyntaxError, AttributeError):
            continue
    return None


def _params_class(factory: object) -> type | None:
    params = getattr(factory, "Params", None) if inspect.isclass(factory) else None
    return params if inspect.isclass(params) and dataclasses.is_dataclass(params) else None


_read: weakref.WeakKeyDictionary[Any, FactoryOptions] = weakref.WeakKeyDictionary()


def options_of(factory: Factory) -> FactoryOptions:
    """The options ``factory`` takes: names, defaults, annotations and one-line docs.

    Each factory is read once per process (its signature, ``Params`` and docstrings).
    """
    try:
        return _read[factory]
    except (KeyError, TypeError):
        pass
    known = _read_options(factory)
    try:
        _read[factory] = known
    except TypeError:  # neither hashable nor weakly referable: read it again next time
        pass
    return known


def _constructor_signature(factory: Factory, params_class: type | None) -> inspect.Signature | None:
    """The signature the options are read from: for a class with ``Params``, its constructor's own
    explicit parameters (the fields come from ``Params`` itself, never from a published
    ``__signature__``); otherwise the factory's signature as :func:`inspect.signature` reads it."""
    if params_class is None:
        return _signature(factory)
    init = _signature(factory.__init__)
    if init is None:
        return None
    return init.replace(parameters=list(init.parameters.values())[1:])  # without self


def _read_options(factory: Factory) -> FactoryOptions:
    params_class = _params_class(factory)
    sig = _constructor_signature(factory, params_class)
    if sig is None:
        return FactoryOptions(readable=False)
    docs = _parameter_docs(factory)
    parameters = [p for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    fields = _params_fields(params_class) if params_class is not None else []
    if params_class is not None and not any(p.name == _PARAMS_ARGUMENT for p in parameters):
        at = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)
        parameters.insert(at, inspect.Parameter(_PARAMS_ARGUMENT, inspect.Parameter.KEYWORD_ONLY))
    given_positionally = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                          and not (params_class is not None and p.name == _PARAMS_ARGUMENT)]
    options: dict[str, Option] = {}
    field_names = {option.name for option in fields}
    positional_names = {p.name for p in given_positionally}
    for p in parameters:
        if params_class is not None and p.name == _PARAMS_ARGUMENT:
            for option in fields:
                # Positional: a field the constructor also takes by position, or every field in
                # order when the constructor takes no positional value of its own.
                positional = option.name in positional_names or not given_positionally
                options[option.name] = replace(option, positional=positional)
            continue
        if p.name in field_names:
            continue  # a field of Params and a parameter of the constructor: the field describes it
        options[p.name] = Option(p.name, p.default, p.annotation, docs.get(p.name, ""),
                                 positional=p in given_positionally, by_position=p.kind is p.POSITIONAL_ONLY)
    # A Params class's **kwargs set its fields: the options are exactly those, nothing is passed on.
    takes_keywords = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    params_argument = False
    if params_class is not None:
        params_argument = _PARAMS_ARGUMENT in sig.parameters and not takes_keywords
    return FactoryOptions(options, open=params_class is None and takes_keywords, params_class=params_class,
                          params_argument=params_argument)


def _params_fields(params_class: type) -> list[Option]:
    try:
        hints = typing.get_type_hints(params_class)
    except Exception:  # noqa: BLE001 - an annotation that cannot be evaluated is left unchecked
        hints = {}
    docs = _attribute_docs(params_class)
    out = []
    for f in dataclasses.fields(params_class):
        if not f.init or f.name.startswith("_"):
            continue
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = REQUIRED
        doc = str(f.metadata.get("doc", "")) or docs.get(f.name, "")
        annotation = hints.get(f.name, inspect.Parameter.empty)
        out.append(Option(f.name, default, annotation, doc.strip().splitlines()[0] if doc.strip() else ""))
    return out


def _attribute_docs(cls: type) -> dict[str, str]:
    """``#: text`` above a field, or a string right below it (attribute docstrings)."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
        body = ast.parse(source).body[0].body  # type: ignore[attr-defined]
    except (OSError, TypeError, SyntaxError, IndexError, AttributeError):
        return {}
    lines = source.splitlines()
    docs: dict[str, str] = {}
    for i, node in enumerate(body):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        name = node.target.id
        following = body[i + 1] if i + 1 < len(body) else None
        text = following.value.value if isinstance(following, ast.Expr) \
            and isinstance(following.value, ast.Constant) else None
        if isinstance(text, str):
            docs[name] = text.strip().splitlines()[0] if text.strip() else ""
            continue
        above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
        if above.startswith("#:"):
            docs[name] = above[2:].strip()
    return docs


_DOC_LINE = re.compile(r"^\s*(?::param\s+)?(?:``)?(\w+)(?:``)?\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _parameter_docs(factory: object) -> dict[str, str]:
    """One line per parameter from the docstrings (``name: text``, ``:param name: text``, numpy style)."""
    texts = [inspect.getdoc(factory) or ""]
    if inspect.isclass(factory) and factory.__init__ is not object.__init__:
        texts.append(inspect.getdoc(factory.__init__) or "")
    docs: dict[str, str] = {}
    for text in texts:
        lines = text.splitlines()
        for i, line in enumerate(lines):
            match = _DOC_LINE.match(line)
            if not match or match.group(1) in docs:
                continue
            rest = match.group(2).strip()
            if not rest and i + 1 < len(lines) and lines[i + 1].startswith((" ", "\t")):
                rest = lines[i + 1].strip()  # numpy style: "name : type" then the text indented
            if rest:
                docs[match.group(1)] = rest
    return docs


# -- checking values ----------------------------------------------------------------------------
def _is_union(annotation: object) -> bool:
    return typing.get_origin(annotation) is typing.Union or (
        hasattr(types, "UnionType") and isinstance(annotation, types.UnionType))


def _matches(value: object, annotation: object) -> bool:
    if annotation in (inspect.Parameter.empty, Any, object) or isinstance(annotation, str):
        return True
    if annotation is None or annotation is type(None):
        return value is None
    if _is_union(annotation):
        return any(_matches(value, arg) for arg in typing.get_args(annotation))
    if annotation is bool:
        return isinstance(value, (bool, np.bool_))
    if annotation is int:
        return isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if annotation is str:
        return isinstance(value, str)
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, Sequence) or annotation in (list, tuple):
        return isinstance(value, (list, tuple, np.ndarray))
    return True


def _describe(annotation: object) -> str:
    if _is_union(annotation):
        return " or ".join(_describe(a) for a in typing.get_args(annotation) if a is not type(None))
    names: dict[object, str] = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    described: str = names.get(annotation, getattr(annotation, "__name__", str(annotation)))
    return described


def _expected(option: Option) -> object:
    """The option's annotation, or the type of its default when it has none."""
    if option.annotation is inspect.Parameter.empty and option.default not in (REQUIRED, None):
        return type(option.default)
    return option.annotation


def _at(place: str) -> str:
    return f"{place}: " if place else ""


def check_options(component: Component, known: FactoryOptions, keys: Sequence[str] | None = None) -> None:
    """Refuse an unknown option name (unless the factory is open) or a value of the wrong type.

    Names are always checked. Types are checked for values whose origin is known (a config file
    and line, a flag, a preset: text a person wrote and can fix there) against the annotation,
    or the type of the default; a value passed from Python goes to the factory, which validates
    objects an annotation cannot describe (a vector for a float sigma, a policy callable). Every
    error names where the value came from (``component.located(key)``) and the options that
    exist. ``keys`` limits the check to those options.
    """
    if not known.readable:
        return
    kind, name, places = component.kind, component.name, component.option_where
    for key in component.options if keys is None else keys:
        value = component.options[key]
        option = known.options.get(key)
        place = places.get(key, component.where)
        if option is None:
            if known.open:
                continue
            unknown = f"unknown key {key!r} in [{kind}]: " if place else ""
            raise UnknownNameError(
                f"{_at(place)}{unknown}{kind} {name!r} has no option {key!r}.{did_you_mean(key, known.names)} "
                f"Options: {', '.join(known.names) or 'none'}"
            )
        expected = _expected(option)
        if place and not _matches(value, expected):
            raise ConfigError(
                f"{_at(place)}[{kind}] {key} must be {_describe(expected)} ({kind} {name!r}), got {value!r}"
            )


def _known(factory: Factory | FactoryOptions) -> FactoryOptions:
    return factory if isinstance(factory, FactoryOptions) else options_of(factory)


def name_args(component: Component, factory: Factory | FactoryOptions) -> Component:
    """The component with its positional values named after the factory's positional options.

    ``sphere:3`` becomes ``dim=3``. More values than positional options, or an option given both
    ways, is a ConfigError naming where the component was written. Nothing else is checked; a
    factory whose signature cannot be read keeps its values as given.
    """
    known = _known(factory)
    if not component.args or not known.readable:
        return component
    args, kind, name = component.args, component.kind, component.name
    positional = known.positional
    if len(args) > len(positional):
        raise ConfigError(
            f"{_at(component.where)}{kind} {name!r} takes at most {len(positional)} positional value(s) "
            f"({', '.join(positional) or 'none'}), got {len(args)}: {list(args)!r}"
        )
    named = dict(zip(positional, args))
    for key in named:
        if key in component.options:
            raise ConfigError(f"{_at(component.where)}{kind} {name!r} got {key} twice: as the positional "
                              f"value {named[key]!r} and as {key}={component.options[key]!r}; give it once")
    return replace(component, args=(), options={**named, **component.options},
                   option_where={**{key: component.where for key in named}, **component.option_where})


def resolve(component: Component, factory: Factory | FactoryOptions, *,
            under: Mapping[str, Any] | None = None, under_where: str = "",
            refuse: Mapping[str, str] | None = None, unwritten: Sequence[str] = (),
            complete: bool = True) -> Component:
    """One component in one pass: named, refused keys, a preset under the user's values, checked, completed.

    An unbound ``component`` has its positional values named after the factory's positional options
    (:func:`name_args`) and every option checked (:func:`check_options`); a key of ``refuse`` set at
    all is refused first (``{"dim": "the problem's dimension"}``: the run gives it). ``under`` is a
    preset: its values for the options the user left out are laid under the user's, located at
    ``under_where``, and checked. With
    ``complete``, every option gets its value (the defaults filled in, as plain TOML values, as
    ``RUN/config.toml`` writes them), but ``unwritten`` ones the user did not set. The result is
    marked ``bound``: :func:`~blackbox.registry.plugins.make` builds it as it is.
    """
    known = _known(factory)
    options, places = component.options, component.option_where
    if not component.bound:
        for key, what in (refuse or {}).items():
            if key in options:
                raise ConfigError(f"{places.get(key, component.where)}: {key} is {what}; do not set it as a "
                                  f"{component.kind} option")
        component = name_args(component, known)
        check_options(component, known)
        options, places = component.options, component.option_where
    new = {key: value for key, value in (under or {}).items() if key not in options}
    if new:
        options, places = {**options, **new}, {**places, **dict.fromkeys(new, under_where or component.where)}
        component = replace(component, options=options, option_where=places)
        check_options(component, known, keys=list(new))
    if not complete:
        return replace(component, options=options, bound=True)
    filled = {key: value for key, value in resolved_options(known, options).items()
              if key in options or key not in unwritten}
    return replace(component, options=to_plain(filled, drop_none=True), bound=True)


def bind(component: Component, factory: Factory | FactoryOptions) -> Component:
    """Name the positional values (:func:`name_args`), then check every option (:func:`check_options`).

    The first steps of :func:`resolve`; the result is marked ``bound``.
    """
    return resolve(component, factory, complete=False)


def bind_more(component: Component, options: Mapping[str, Any], where: str,
              factory: Factory | FactoryOptions) -> Component:
    """A bound component with ``options`` (set at ``where``) added; only those are checked."""
    added = replace(component.with_options(options, where), bound=True)
    check_options(added, _known(factory), keys=list(options))
    return added


def resolved_options(factory: Factory | FactoryOptions, options: Mapping[str, Any]) -> Options:
    """Every option with its value: the given ones, then the defaults (declaration order).

    Options a factory takes through ``**kwargs`` are kept after its own; required options that
    were not given are left out.
    """
    known = _known(factory)
    if not known.readable:
        return dict(options)
    out: Options = {}
    for option in known.options.values():
        if option.name in options:
            out[option.name] = options[option.name]
        elif not option.required:
            out[option.name] = option.default
    out.update({key: value for key, value in options.items() if key not in known.options})
    return out


def resolved_config(factory: Factory, args: Sequence[Any] = (), options: Mapping[str, Any] | None = None,
                    kind: str = "plugin", name: str = "") -> Options:
    """Every option of ``factory`` with its value, ``args`` named and ``options`` checked first."""
    known = options_of(factory)
    component = bind(Component(kind, name or getattr(factory, "__name__", "?"), tuple(args), dict(options or {})),
                     known)
    return resolved_options(known, component.options)


def call(factory: Factory, component: Component, extra: Mapping[str, Any] | None = None) -> Any:
    """``factory(...)`` with a bound component's values (positional-only ones by position) and ``extra``.

    An option without a default that is still missing is a ConfigError, not a TypeError.
    """
    options = {**component.options, **(extra or {})}
    known = options_of(factory)
    missing = [o.name for o in known.options.values() if o.required and o.name not in options]
    if missing and not component.args:
        raise ConfigError(f"{_at(component.where)}{component.kind} {component.name!r} needs the option "
                          f"{missing[0]!r}, which has no default")
    positional = [options.pop(o.name) for o in known.options.values() if o.by_position and o.name in options]
    if known.params_argument and known.params_class is not None:
        names = {f.name for f in dataclasses.fields(known.params_class)}
        fields = {key: options.pop(key) for key in list(options) if key in names}
        options[_PARAMS_ARGUMENT] = known.params_class(**fields)
    return factory(*component.args, *positional, **options)
