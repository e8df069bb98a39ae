"""A strategy's state as plain data: :func:`save_state` and :func:`load_state`, behind
``Strategy.state_dict`` and ``Strategy.load_state_dict``.

The state holds the base keys (:data:`BASE_STATE`: the strategy's name, dim, popsize, seed,
generation, generator, center, sigma, update norm; and the reduction in use), the saved fields of
the strategy's ``State`` dataclass (or, for a strategy written before it, its ``state_fields``:
:mod:`blackbox.core.state`), what ``_state_dict`` adds, and a population asked ahead in the
pipelined mode (:mod:`blackbox.core.pipeline`). :class:`DeclaredState` holds those declarations. Taken between ``ask()`` and ``tell()``
it describes the strategy before that ``ask()``.

Loading is as strict as the constructor: the state is the strategy's (name, dim, popsize), has
every base key and declared field with the layout this strategy has, and its values are ones this
strategy could hold (finite center, seed and generation integers >= 0, a generator state of the
seed's stream, sigma and the update norm finite and >= 0, an optimizer whose step count agrees
with the generation). A bad state is one ConfigError naming its key, and changes nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from .._validate import check_float, check_int, check_state_layout
from ..errors import ConfigError
from .compat import state_reduction
from .pipeline import ASKED_AHEAD
from .state import StateLayout, check_fields, check_rng_state, save_fields, state_layout

if TYPE_CHECKING:
    from .strategy import Strategy

__all__ = ["BASE_STATE", "DeclaredState", "save_state", "load_state", "check_loaded_state", "declared_state"]

#: The keys every ``state_dict()`` has, whatever the strategy (``"reduction"`` too, but a state
#: written by 0.1.0 lacks it).
BASE_STATE = ("strategy", "dim", "popsize", "seed", "generation", "rng", "center", "sigma", "update_norm")


class DeclaredState:
    """What a strategy declares about its state, read by :func:`save_state` and :func:`load_state`."""

    #: What evolves as the strategy runs, beside the center, sigma, the generation and the generator:
    #: a dataclass whose fields are arrays, numbers or objects with their own ``state_dict()``, each
    #: saved as :func:`~blackbox.core.state.state_field` says; the strategy keeps one in ``self.state``.
    State: ClassVar[type[object] | None] = None
    #: Without a ``State`` (a strategy written before it): the attributes that evolve, by name, the
    #: arrays among them whose number of rows changes, and their bounds beyond "finite".
    state_fields: ClassVar[tuple[str, ...]] = ()
    state_rows: ClassVar[tuple[str, ...]] = ()
    state_bounds: ClassVar[Mapping[str, str]] = {}
    #: Optimizer steps each ``tell()`` takes, for a strategy whose ``optimizer`` (a state field with a
    #: step count ``t``) steps a fixed number of times a generation: a loaded state must agree
    #: (``t == optimizer_steps_per_generation * generation``). None: no such relation is checked.
    optimizer_steps_per_generation: ClassVar[int | None] = None
    #: True when ``sigma`` is the ``Params`` field of that name, evolved (a loaded sigma passes its checks,
    #: ``Params.check_evolved``); False when sigma summarizes a per-dimension ``stdev`` state field.
    sigma_is_param: ClassVar[bool] = True

    def _state_dict(self) -> dict[str, Any]:
        """State that the declarations cannot describe (a wrapped library's object graph); plain data."""
        return {}

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        """Check and restore what ``_state_dict`` returned (the base does not know its layout)."""


def declared_state(strategy: DeclaredState) -> tuple[object, StateLayout]:
    """Where a strategy's evolving values are and how they are saved: its ``state`` and its
    ``State``'s layout, or (written before ``State``) itself and its ``state_fields``."""
    if strategy.State is not None:
        return vars(strategy)["state"], state_layout(strategy.State)
    return strategy, StateLayout(strategy.state_fields, strategy.state_rows, strategy.state_bounds, {})


def save_state(strategy: Strategy) -> dict[str, Any]:
    """``strategy.state_dict()``: the base keys, the declared fields and ``_state_dict()``."""
    pending = strategy._pending
    rng_state = strategy._rng_state_at_ask if pending is not None else strategy.rng.bit_generator.state
    # A pending population sampled before the last update (pipelined mode): kept, with the generator after it.
    kept = strategy._pipeline.save(pending, strategy.rng)
    if kept is not None:
        rng_state = kept[1]
    state = {
        "strategy": strategy.name or type(strategy).__name__,
        "dim": strategy.dim,
        "popsize": strategy.popsize,
        "seed": strategy.seed,
        "generation": strategy.generation,
        "rng": copy.deepcopy(rng_state),
        "center": strategy._center.copy(),
        "sigma": strategy.sigma,
        "update_norm": strategy.update_norm,
        "reduction": strategy.reduction,
    }
    if kept is not None:
        state[ASKED_AHEAD] = kept[0]
    holder, layout = declared_state(strategy)
    state.update(save_fields(holder, layout.fields))
    state.update(strategy._state_dict())
    return state


def load_state(strategy: Strategy, state: dict[str, Any]) -> None:
    """``strategy.load_state_dict(state)``: checked first (:func:`check_loaded_state`), then restored."""
    fields, reduction = check_loaded_state(strategy, state)
    strategy.rng.bit_generator.state = copy.deepcopy(state["rng"])
    strategy.seed = int(state["seed"])
    strategy.generation = int(state["generation"])
    strategy._center = np.array(state["center"], dtype=np.float64)
    strategy.sigma = float(state["sigma"])
    strategy.update_norm = float(state["update_norm"])
    strategy._pending = None
    strategy._rng_state_at_ask = None
    strategy._diverged = None
    strategy._pending = strategy._pipeline.load(state, strategy.dim)  # a population asked ahead: pending again
    strategy.reduction = reduction
    holder, layout = declared_state(strategy)
    for name in layout.fields:
        current = getattr(holder, name)
        if callable(getattr(current, "load_state_dict", None)):
            current.load_state_dict(state[name])
        else:
            setattr(holder, name, fields[name])
    for name, value in layout.transient.items():  # what the last ask() left for its tell(): nothing is pending
        setattr(holder, name, value)
    strategy._load_state_dict(state)
    strategy._settle_start()


def check_loaded_state(strategy: Strategy, state: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Check ``state`` for ``strategy``: ``(its declared fields as they will be set, its reduction)``."""
    if not isinstance(state, dict):
        raise ConfigError(f"state_dict must be a dict, got {type(state).__name__}")
    expected = {"strategy": strategy.name or type(strategy).__name__, "dim": strategy.dim,
                "popsize": strategy.popsize}
    for key, want in expected.items():
        if key not in state:
            raise ConfigError(f"state_dict has no {key!r}; it was not made by Strategy.state_dict()")
        got = state[key]
        if (got.item() if isinstance(got, np.ndarray) else got) != want:
            raise ConfigError(f"state_dict is for {key}={got!r} but this strategy has {key}={want!r}")
    holder, layout = declared_state(strategy)
    for key in (*BASE_STATE, *layout.fields):
        if key not in state:
            raise ConfigError(f"state_dict has no {key!r}; it was not made by Strategy.state_dict()")
    declared = [key for key in (*BASE_STATE, *layout.fields) if key not in layout.rows]
    template = strategy.state_dict()
    check_state_layout({key: template[key] for key in declared}, state)
    if not np.all(np.isfinite(np.asarray(state["center"], dtype=np.float64))):
        raise ConfigError("state_dict center is not finite")
    reduction = state_reduction(state)
    check_base_state(strategy, state)
    fields = check_fields(holder, layout.fields, state, rows=layout.rows, bounds=layout.bounds)
    check_optimizer_steps(strategy, state)
    return fields, reduction


def check_base_state(strategy: Strategy, state: dict[str, Any]) -> None:
    """The base keys checked as the constructor checks its arguments (ConfigError naming the key):
    the seed and the generation are integers >= 0, the generator's state is one this strategy's
    generator could have (its stream that of the seed), sigma and the update norm are finite
    and >= 0, and where ``sigma`` is a ``Params`` field that evolves, the field's own checks."""
    seed = check_int("state_dict/seed", state["seed"], minimum=0, maximum=2**63 - 1)
    check_int("state_dict/generation", state["generation"], minimum=0, maximum=2**63 - 1)
    sigma = check_float("state_dict/sigma", state["sigma"], nonnegative=True)
    check_float("state_dict/update_norm", state["update_norm"], nonnegative=True)
    check_rng_state("state_dict/rng", state["rng"], strategy.rng, seed if seeded_from_seed(strategy) else None)
    if strategy.sigma_is_param and strategy.Params is not None and "sigma" in strategy.Params.options():
        try:
            strategy.params.check_evolved("sigma", sigma)
        except ConfigError as exc:
            raise ConfigError(f"state_dict/sigma is {sigma!r}, which {strategy.name or type(strategy).__name__} "
                              f"refuses: {exc}") from None


def seeded_from_seed(strategy: Strategy) -> bool:
    """True when the strategy's generator is ``numpy.random.default_rng(strategy.seed)`` (as the base
    makes it): then a saved generator's PCG64 stream must be its saved seed's."""
    current = strategy.rng.bit_generator.state
    if current.get("bit_generator") != "PCG64":
        return False
    same: bool = current["state"]["inc"] == np.random.default_rng(strategy.seed).bit_generator.state["state"]["inc"]
    return same


def check_optimizer_steps(strategy: Strategy, state: dict[str, Any]) -> None:
    """A strategy whose optimizer steps once a generation (``optimizer_steps_per_generation``) has
    taken exactly ``generation`` steps: another step count is an impossible state (a tampered or
    miswritten checkpoint whose checksums were made again), refused before anything is changed."""
    per = strategy.optimizer_steps_per_generation
    optimizer = state.get("optimizer")
    if per is None or not isinstance(optimizer, dict) or "t" not in optimizer:
        return
    steps, generation = int(optimizer["t"]), int(state["generation"])
    if steps != per * generation:
        raise ConfigError(f"state_dict/optimizer/t is {steps}, but a strategy at generation {generation} has "
                          f"taken {per * generation} optimizer steps ({per} a generation): the state is "
                          f"inconsistent")
