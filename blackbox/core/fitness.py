"""The one check of what ``tell()`` receives: real numbers, one per row of the population."""

from __future__ import annotations

import numpy as np

from .._validate import real_array
from ..errors import TellError

__all__ = ["check_fitness"]


def check_fitness(fitness: object, popsize: int) -> np.ndarray:
    """Fitness as a float64 vector of length ``popsize``, or a TellError saying what is wrong.

    Accepts any array-like of real numbers (booleans count as 0 and 1) or an object with a
    ``fitness`` attribute (an EvalResult). NaN is allowed and ranks worst, and so do the masked
    entries of a masked array. Complex numbers, strings, dates and other objects are refused rather
    than converted (numpy would drop an imaginary part or parse ``"1.5"`` silently).
    """
    fitness = getattr(fitness, "fitness", fitness)
    try:
        f = real_array(fitness)
    except TypeError as exc:
        raise TellError(
            f"tell() needs real numbers, got {type(fitness).__name__} that does not convert to floats "
            f"({exc}); pass one fitness value per row of the population from ask()"
        ) from None
    if f.ndim != 1:
        raise TellError(
            f"tell() got fitness of shape {f.shape}; expected shape ({popsize},): "
            f"pass a flat array with one value per row of the population from ask()"
        )
    if len(f) != popsize:
        raise TellError(
            f"tell() got {len(f)} fitness values for a population of {popsize}; "
            f"pass one value per row of the population from ask()"
        )
    return f
