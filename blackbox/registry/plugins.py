"""Plugins by name: entry-point discovery, provenance, and ``make`` (a name or Component -> object).

Three entry-point groups, ``blackbox.strategies``, ``blackbox.problems`` and
``blackbox.executors``. The built-ins are registered through this project's own
``pyproject.toml``, exactly like a third party's. Entry points are read on first use, never at
import. Each entry remembers the distribution and version that provides it. A plugin that fails to
import is reported with its distribution and cause while every other plugin keeps working; two
distributions claiming one name is an error naming both; an object that does not satisfy its
protocol is rejected at load with the missing method named.
"""

from __future__ import annotations

import importlib.metadata as metadata
import inspect
import threading
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError, PluginError, UnknownNameError, did_you_mean
from .component import Component
from .imports import import_object
from .options import Factory, call, check_options, options_of, resolve
from .spec import Spec

__all__ = [
    "PluginEntry", "BrokenDistribution", "Registry", "strategies", "problems", "executors",
    "registry_for", "refresh", "broken_distributions", "check_protocol", "make", "make_strategy",
    "make_problem", "make_executor",
]


@dataclass
class PluginEntry:
    """One named plugin: where it comes from and, once loaded, the object itself."""

    kind: str
    name: str
    value: str
    distribution: str
    version: str
    _loaded: object = field(default=None, repr=False)
    _error: BaseException | None = field(default=None, repr=False)

    @property
    def source(self) -> str:
        """``distribution version``, as error messages name it."""
        return f"{self.distribution} {self.version}".strip()

    @property
    def description(self) -> str:
        """First line of the plugin's docstring ('(fails to import)' if it cannot be imported)."""
        try:
            obj = self.load_unchecked()
        except PluginError:
            return "(fails to import)"
        doc = inspect.getdoc(obj) or ""
        return doc.strip().splitlines()[0] if doc.strip() else ""

    def load_unchecked(self) -> object:
        """Import the object the entry point names (once); a PluginError naming the distribution."""
        if self._loaded is not None:
            return self._loaded
        if self._error is not None:
            raise self._error
        try:
            obj = import_object(self.value)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - report any import failure with provenance
            error = PluginError(
                f"{self.kind} {self.name!r} from distribution {self.source} "
                f"failed to load ({self.value}): {type(exc).__name__}: {exc}"
            )
            error.__cause__ = exc
            self._error = error
            raise error from exc
        self._loaded = obj
        return obj


@dataclass(frozen=True)
class BrokenDistribution:
    """An installed distribution whose entry-point metadata cannot be read at all."""

    distribution: str
    version: str
    error: str


_PROTOCOLS: dict[str, tuple[str, ...]] = {
    "strategy": ("ask", "tell", "state_dict", "load_state_dict", "center"),
    "problem": ("evaluate", "initial_params"),
    "executor": ("start", "evaluate", "close"),
}


def check_protocol(kind: str, obj: object, name: str, source: str) -> None:
    """Refuse ``obj`` if it lacks a method of the ``kind`` protocol (or is abstract), naming it."""
    missing = [m for m in _PROTOCOLS[kind] if not hasattr(obj, m)]
    if missing:
        raise PluginError(
            f"{kind} {name!r} from {source} does not satisfy the {kind} protocol: "
            f"missing {', '.join(missing)}"
        )
    if inspect.isclass(obj) and inspect.isabstract(obj):
        abstract = sorted(getattr(obj, "__abstractmethods__", ()))
        raise PluginError(
            f"{kind} {name!r} from {source} is an abstract class: it does not implement "
            f"{', '.join(abstract)}"
        )


def _plural(kind: str) -> str:
    return "strategies" if kind == "strategy" else kind + "s"


# -- discovery: one scan of the installed distributions serves all three groups ------------------
GROUPS = {"strategy": "blackbox.strategies", "problem": "blackbox.problems", "executor": "blackbox.executors"}

_scan_lock = threading.Lock()
_scan: tuple[dict[str, list[PluginEntry]], list[BrokenDistribution]] | None = None


def _scan_distributions() -> tuple[dict[str, list[PluginEntry]], list[BrokenDistribution]]:
    """Entries of every blackbox group from every installed distribution, read once.

    Each distribution is read on its own, so one with unreadable metadata is recorded as broken
    instead of hiding every other plugin (``importlib.metadata.entry_points()`` gives up on all
    of them). As in ``importlib.metadata``, the first copy of a distribution on ``sys.path`` wins.
    """
    global _scan
    with _scan_lock:
        if _scan is not None:
            return _scan
        kinds = {group: kind for kind, group in GROUPS.items()}
        found: dict[str, list[PluginEntry]] = {group: [] for group in kinds}
        broken: list[BrokenDistribution] = []
        seen: set[str] = set()
        for dist in metadata.distributions():
            key = getattr(dist, "_normalized_name", None)
            try:
                key = key or dist.metadata["Name"]
                if key in seen:
                    continue
                seen.add(key)
                eps = [ep for ep in dist.entry_points if ep.group in kinds]
                if not eps:
                    continue
                name, version = dist.metadata["Name"] or str(key), dist.version or "?"
            except Exception as exc:  # noqa: BLE001 - a broken distribution must not hide the others
                if _mentions_blackbox(dist):  # others' broken metadata is not ours to report
                    label = str(key or getattr(dist, "_path", "?"))
                    broken.append(BrokenDistribution(label, "?", f"{type(exc).__name__}: {exc}"))
                continue
            for ep in eps:
                found[ep.group].append(PluginEntry(kinds[ep.group], ep.name, ep.value, name, version))
        _scan = (found, broken)
        return _scan


def _mentions_blackbox(dist: metadata.Distribution) -> bool:
    try:
        return "[blackbox." in (dist.read_text("entry_points.txt") or "")
    except Exception:  # noqa: BLE001
        return False


def broken_distributions() -> list[BrokenDistribution]:
    """Installed distributions whose entry points could not be read."""
    return list(_scan_distributions()[1])


def refresh() -> None:
    """Forget what was discovered, so that plugins installed since are found (runtime ones stay)."""
    global _scan
    with _scan_lock:
        _scan = None
    for registry in _REGISTRIES.values():
        registry._forget()


class Registry:
    """The plugins of one kind: discovered from an entry-point group, plus in-process ones."""

    def __init__(self, kind: str, group: str):
        self.kind = kind
        self.group = group
        self._entries: dict[str, PluginEntry] | None = None
        self._conflicts: dict[str, list[PluginEntry]] = {}
        self._runtime: dict[str, PluginEntry] = {}
        self._lock = threading.RLock()

    def _discover(self) -> dict[str, PluginEntry]:
        with self._lock:
            if self._entries is not None:
                return self._entries
            entries: dict[str, PluginEntry] = {}
            conflicts: dict[str, list[PluginEntry]] = {}
            discovered = _scan_distributions()[0].get(self.group, [])
            for entry in [*discovered, *self._runtime.values()]:
                previous = entries.get(entry.name)
                if previous is None:
                    entries[entry.name] = entry
                elif (previous.distribution, previous.value) != (entry.distribution, entry.value):
                    conflicts.setdefault(entry.name, [previous]).append(entry)
            self._entries, self._conflicts = entries, conflicts
            return entries

    def _forget(self) -> None:
        with self._lock:
            self._entries = None
            self._conflicts = {}

    def names(self) -> list[str]:
        """Every registered name, sorted (names claimed twice included)."""
        return sorted(self._discover())

    def entries(self) -> list[PluginEntry]:
        """Every entry with a single provider, sorted by name; see :meth:`conflicts` for the rest."""
        found = self._discover()
        return [found[n] for n in sorted(found) if n not in self._conflicts]

    def conflicts(self) -> dict[str, list[PluginEntry]]:
        """Names claimed by more than one distribution, with every claim."""
        self._discover()
        return {name: list(claims) for name, claims in self._conflicts.items()}

    def entry(self, name: str) -> PluginEntry:
        """The entry called ``name``; UnknownNameError with a hint and the installed names otherwise."""
        found = self._discover()
        if name in self._conflicts:
            claims = "; ".join(f"{e.source} ({e.value})" for e in self._conflicts[name])
            raise PluginError(
                f"{self.kind} name {name!r} is claimed by more than one distribution: {claims}. "
                f"Uninstall one of them or rename its entry point in group {self.group!r}"
            )
        if name not in found:
            installed = ", ".join(sorted(found)) or "none"
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}.{did_you_mean(name, found)} Installed {_plural(self.kind)}: {installed}"
            )
        return found[name]

    def load(self, name: str) -> Factory:
        """Import the plugin called ``name`` and check it against its protocol."""
        entry = self.entry(name)
        obj = entry.load_unchecked()
        if not callable(obj):
            raise PluginError(
                f"{self.kind} {name!r} from {entry.source} points to "
                f"{type(obj).__name__}, not a class or factory function"
            )
        if inspect.isclass(obj):
            check_protocol(self.kind, obj, name, entry.source)
        return obj

    def register(self, name: str, obj: Any, distribution: str = "<runtime>") -> None:
        """Register ``obj`` in this process only (notebooks, tests); a taken name is an error."""
        with self._lock:
            found = self._discover()
            if name in found:
                other = found[name]
                raise PluginError(f"{self.kind} name {name!r} is already provided by {other.source}")
            if inspect.isclass(obj):
                check_protocol(self.kind, obj, name, distribution)
            elif not callable(obj):
                raise PluginError(f"{self.kind} {name!r}: expected a class or factory function, got {obj!r}")
            value = f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', repr(obj))}"
            entry = PluginEntry(self.kind, name, value, distribution, "", _loaded=obj)
            self._runtime[name] = entry
            found[name] = entry

    def unregister(self, name: str) -> None:
        """Drop an entry registered with :meth:`register` (installed plugins cannot be dropped)."""
        with self._lock:
            if self._runtime.pop(name, None) is not None:
                self._forget()

    def refresh(self) -> None:
        """Forget discovered entries of every kind so that newly installed plugins are found."""
        refresh()


strategies = Registry("strategy", GROUPS["strategy"])
problems = Registry("problem", GROUPS["problem"])
executors = Registry("executor", GROUPS["executor"])
_REGISTRIES = {"strategy": strategies, "problem": problems, "executor": executors}


def registry_for(kind: str) -> Registry:
    """The registry of ``strategy``, ``problem`` or ``executor`` (plurals accepted)."""
    aliases = {**_REGISTRIES, "strategies": strategies, "problems": problems, "executors": executors}
    if kind not in aliases:
        raise ConfigError(f"unknown plugin kind {kind!r}; choose strategies, problems or executors")
    return aliases[kind]


def make(kind: str, spec: str | Spec | Component, /, **options: Any) -> Any:
    """Build the ``kind`` plugin that ``spec`` names, with ``options`` over the spec's own.

    A spec string is parsed once into a :class:`Component` (:meth:`Component.parse`); an unbound
    component is bound (its positional values named, every option checked) by
    :func:`~blackbox.registry.options.resolve`. A component bound already (a resolved run's) is
    built as it is; only ``options`` are checked.
    """
    component = spec if isinstance(spec, Component) and spec.kind == kind else Component.parse(kind, spec)
    registry = registry_for(kind)
    factory = registry.load(component.name)
    known = options_of(factory)
    if component.bound:
        extra = Component(kind, component.name, (), dict(options), component.where)
        check_options(extra, known)
    else:
        if options:
            component = component.with_options(options)
        component = resolve(component, known, complete=False)
        options = {}
    obj = call(factory, component, options)
    if not inspect.isclass(factory):
        check_protocol(kind, obj, component.name, registry.entry(component.name).source)
    return obj


def make_strategy(name: str | Spec | Component, **config: Any) -> Any:
    """Build a strategy by name or spec: ``make_strategy("openai-es", dim=10, sigma=0.05)``."""
    return make("strategy", name, **config)


def make_problem(name: str | Spec | Component, **config: Any) -> Any:
    """Build a problem by name or spec: ``make_problem("quadratic:dim=100")``."""
    return make("problem", name, **config)


def make_executor(name: str | Spec | Component, **config: Any) -> Any:
    """Build an executor by name or spec: ``make_executor("serial")``."""
    return make("executor", name, **config)
