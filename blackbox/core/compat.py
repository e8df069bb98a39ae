"""What a strategy keeps of 0.1.0: its reduction, the states it wrote, its plain constructor.

- 0.1.0 reduced a population in one float32 pass over the distinct slices in offset order
  (:data:`LEGACY_REDUCTION`, :func:`population_sums`); a run it started records no ``"reduction"``
  in its state and resumes with that pass, bit-identically (:func:`state_reduction`).
- A strategy written as in 0.1.0 (no ``Params``, the base constructor inherited) is built with
  ``dim``, ``popsize``, ``x0`` and ``seed``: :data:`PLAIN_SIGNATURE` is that constructor as the
  registry reads it.

:mod:`blackbox.core.strategy` re-exports the public names, where 0.1.0 code imports them from.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import ConfigError
from .population import Population
from .reduce import REDUCTION

__all__ = ["LEGACY_REDUCTION", "REDUCTIONS", "population_sums", "state_reduction", "PLAIN_SIGNATURE",
           "factory_signature"]

#: 0.1.0's reduction: one float32 pass over the distinct slices in offset order, in one process.
LEGACY_REDUCTION = "float32"
#: The reductions this version computes, by the name a state records.
REDUCTIONS = (REDUCTION, LEGACY_REDUCTION)


def population_sums(population: Population, coefficients: np.ndarray,
                    square_coefficients: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """0.1.0's reduction (:data:`LEGACY_REDUCTION`): ``Population.noise_weighted_sum(s)``, float32, in
    this process. A strategy whose state says ``"float32"`` (a run started by 0.1.0) reduces with it."""
    if square_coefficients is None:
        return population.noise_weighted_sum(coefficients), None
    return population.noise_weighted_sums(coefficients, square_coefficients)


def state_reduction(state: Mapping[str, object]) -> str:
    """The reduction a loaded state records (absent: written by 0.1.0, :data:`LEGACY_REDUCTION`);
    ConfigError for one this version does not compute."""
    reduction = state.get("reduction", LEGACY_REDUCTION)
    if reduction not in REDUCTIONS:
        raise ConfigError(
            f"state_dict reduction {reduction!r} is not known to this version of blackbox (it knows "
            f"{', '.join(repr(r) for r in REDUCTIONS)}); resume the run with the version that wrote it"
        )
    return str(reduction)


#: The constructor a strategy without ``Params`` inherits, as it reads in 0.1.0.
PLAIN_SIGNATURE = inspect.Signature([
    inspect.Parameter("dim", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None, annotation=int | None),
    inspect.Parameter("popsize", inspect.Parameter.KEYWORD_ONLY, annotation=int),
    inspect.Parameter("x0", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Any),
    inspect.Parameter("seed", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=int | None),
])


def factory_signature(cls: type[object], plain: bool) -> inspect.Signature | None:
    """The constructor a strategy without ``Params`` publishes: for one written as in 0.1.0
    (``plain``: the base constructor inherited), :data:`PLAIN_SIGNATURE`, which the registry reads;
    None otherwise (its own constructor's). A strategy with ``Params`` needs none: the registry reads
    its ``Params`` directly."""
    return PLAIN_SIGNATURE if plain else None
