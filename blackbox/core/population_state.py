"""A population as plain data and back: how a strategy keeps a population asked ahead (the
pipelined mode) in its ``state_dict``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import ConfigError
from .population import Population

__all__ = ["population_state", "population_from_state"]


def population_state(population: Population) -> dict[str, Any]:
    """A population as plain data (arrays and numbers), to keep in a state."""
    if population.table is None:
        return {"dense": population.params.copy(), "groups": population.groups.copy()}
    table, bases, parents, offsets, signs = population._compact("population_state")
    return {"bases": bases.copy(), "parents": parents.copy(),
            "offsets": offsets.copy(), "signs": signs.copy(),
            "groups": population.groups.copy(), "sigma": np.array(population.sigma, dtype=np.float64),
            "table": np.array([table.size, table.seed], dtype=np.int64)}


def population_from_state(state: Mapping[str, Any], dim: int) -> Population:
    """The population :func:`population_state` describes (ConfigError if it does not fit ``dim``)."""
    from .noise import NoiseTable

    try:
        groups = np.asarray(state["groups"], dtype=np.int64)
        if "dense" in state:
            dense = np.asarray(state["dense"], dtype=np.float64)
            if dense.ndim != 2 or dense.shape[1] != dim or len(dense) != len(groups):
                raise ValueError(f"dense rows of shape {dense.shape}")
            return Population.from_dense(dense, groups)
        size, seed = (int(v) for v in np.asarray(state["table"]).reshape(2))
        bases = np.atleast_2d(np.asarray(state["bases"], dtype=np.float64))
        offsets = np.asarray(state["offsets"], dtype=np.int64)
        if bases.shape[1] != dim or not (len(offsets) == len(groups) == len(state["signs"]) == len(state["parents"])):
            raise ValueError("arrays of other lengths")
        sigma = np.asarray(state["sigma"], dtype=np.float64)
        return Population.compact(NoiseTable.get(size, seed), bases, offsets, np.asarray(state["signs"], dtype=np.int8),
                                  float(sigma) if sigma.ndim == 0 else sigma,
                                  np.asarray(state["parents"], dtype=np.int64), groups)
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"state_dict asked_ahead population does not fit this strategy: {exc}") from None
