"""The pipelined mode's bookkeeping: one population asked ahead of the pending one's ``tell``.

In the pipelined mode generation g+1 is sampled (``Strategy.ask_ahead``) around the current center
while g is still being evaluated; its update is one generation old when it is told. Three facts
follow it from ``ask_ahead`` to ``tell`` and into the state, and :class:`Pipeline` holds them:

- the population asked ahead (None when none is);
- the generator's state before that sample, which a state taken now saves, so that loading it
  asks that population again;
- whether the pending population was asked ahead (``kept``): it was sampled before an update it
  now follows, so it cannot be asked again from the state and the state keeps it (``"asked_ahead"``),
  with the generator after it.

:class:`~blackbox.core.strategy.Strategy` holds one and calls it from ``ask_ahead``, ``tell``,
``state_dict`` and ``load_state_dict``; the protocol's checks (call order, fitness) stay there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import StateError
from .population import Population
from .population_state import population_from_state, population_state

if TYPE_CHECKING:
    from .strategy import Strategy

__all__ = ["Pipeline", "ASKED_AHEAD"]

#: The state key of a pending population that was asked ahead.
ASKED_AHEAD = "asked_ahead"


class Pipeline:
    """A strategy's population asked ahead, and what its state must keep of it."""

    def __init__(self) -> None:
        #: The population asked ahead of the pending one's tell (None: none).
        self.ahead: Population | None = None
        #: The generator's state before :attr:`ahead` was sampled (None: nothing asked ahead).
        self.rng_state: Mapping[str, Any] | None = None
        #: True when the pending population was asked ahead: the state keeps it.
        self.kept = False

    def ask(self, strategy: Strategy) -> Population:
        """``strategy.ask_ahead()``: its population after the pending one, sampled now, with the
        generator's state before it recorded. StateError where the strategy cannot sample ahead
        (``asks_ahead`` False), nothing is pending, or a population is already asked ahead."""
        if not strategy.asks_ahead:
            raise StateError(
                f"{strategy.name or type(strategy).__name__} cannot sample ahead: its tell() uses what its last "
                f"ask() kept; run it without the pipelined mode"
            )
        if not strategy.pending:
            raise StateError("ask_ahead() needs a pending population; call ask() first, then ask_ahead()")
        if self.ahead is not None:
            raise StateError(
                "ask_ahead() called twice without tell(); tell() the pending population's fitness first"
            )
        self.rng_state = strategy.rng.bit_generator.state
        self.ahead = strategy._ask()
        return self.ahead

    def advance(self) -> Population | None:
        """At ``tell``: the population asked ahead, which becomes the pending one (None if none)."""
        ahead, self.ahead, self.rng_state = self.ahead, None, None
        self.kept = ahead is not None
        return ahead

    def save(self, pending: Population | None,
             rng: np.random.Generator) -> tuple[dict[str, Any], Mapping[str, Any]] | None:
        """``(the pending population as data, the generator's state to save)`` when the pending
        population was asked ahead; None otherwise (the state then describes the one before ``ask``)."""
        if not self.kept or pending is None:
            return None
        return population_state(pending), self.rng_state or rng.bit_generator.state

    def load(self, state: Mapping[str, Any], dim: int) -> Population | None:
        """Reset from a loaded state: the population it kept, pending again (None if it kept none)."""
        self.ahead, self.rng_state, self.kept = None, None, False
        if ASKED_AHEAD not in state:
            return None
        pending = population_from_state(state[ASKED_AHEAD], dim)
        self.kept = True
        return pending
