"""The one-line errors of a strategy whose step failed: an update that diverged, memory that ran out.

Both leave the strategy refusing ask/tell until a state is loaded (a diverged search distribution,
or an update stopped half way, is never used silently); the lines say why and what to do.
"""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError

__all__ = ["diverged", "out_of_memory"]


def diverged(generation: int, fitness: np.ndarray, why: str) -> str:
    """Why the update of generation ``generation + 1`` cannot be used, with the fitness it came from."""
    finite = fitness[np.isfinite(fitness)]
    spread = (f"finite fitness from {finite.min():.6g} to {finite.max():.6g}" if len(finite)
              else "no finite fitness")
    return (
        f"the update of generation {generation + 1} diverged ({why}; {spread}); lower sigma or the "
        f"learning rates, or use rank-based shaping (centered_ranks), and restore a state with "
        f"load_state_dict() or from a checkpoint"
    )


def out_of_memory(name: str, stage: str, dim: int, popsize: int, need: str, exc: MemoryError) -> ConfigError:
    """The error for an allocation that failed in ``stage`` (``need``: what the strategy needs, in words)."""
    return ConfigError(
        f"{name} ran out of memory in {stage} at dim={dim}, popsize={popsize}"
        f"{': it needs ' + need if need else ''} ({type(exc).__name__}: {exc or 'no more memory'}); "
        f"lower dim or popsize, or run on a machine with more memory"
    )
