"""Fitness shaping: turn raw fitness into the weights of the search-gradient estimate.

``centered_ranks`` is the transform of Salimans et al. 2017: ranks scaled to [-0.5, 0.5]. It is
invariant to any strictly increasing transform of the fitness, which makes ES robust to reward
scale and outliers. Tied values share their average rank, so a constant fitness gives all-zero
weights (no update) instead of an arbitrary order.

``nes`` is the rank-based utility of Wierstra et al. 2014 (JMLR 15, "Natural Evolution
Strategies", section 3.1): ``u_k = max(0, log(n/2 + 1) - log k) / sum_j max(0, log(n/2 + 1) - log j)
- 1/n`` for the k-th best of n; the weights sum to zero and only the better half gets positive
weight. :func:`rank_weights` hands any such best-first table of weights to the rows of a
population, tied rows sharing the mean of their places' weights (CMA-ES, CEM and the NES family use
it).

Non-finite fitness: NaN and -inf rank worst; +inf ranks best. ``zscore`` and ``raw`` need finite
numbers, so they first clip -inf/NaN to the worst finite value and +inf to the best one.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..errors import ConfigError, did_you_mean

__all__ = [
    "centered_ranks", "zscore", "raw", "average_ranks", "rank_weights", "nes_utility_values",
    "nes_utilities", "get_shaping", "SHAPINGS",
]


def _run_starts(sorted_values: np.ndarray) -> np.ndarray:
    """Index of the first element of each run of equal values (np.r_ costs tens of microseconds)."""
    new_run = np.empty(len(sorted_values), dtype=bool)
    new_run[:1] = True
    np.not_equal(sorted_values[1:], sorted_values[:-1], out=new_run[1:])
    return np.flatnonzero(new_run)


def average_ranks(fitness: np.ndarray) -> np.ndarray:
    """Ranks 0..n-1 from worst to best, ties sharing their average rank; NaN ranks below all."""
    f = np.where(np.isnan(fitness), -np.inf, np.asarray(fitness, dtype=np.float64))
    n = len(f)
    order = np.argsort(f, kind="stable")
    sorted_f = f[order]
    # Start index of each run of equal values, then the mean rank of each run.
    starts = _run_starts(sorted_f)
    ends = np.append(starts[1:], n)
    run_rank = (starts + ends - 1) / 2.0
    ranks = np.empty(n, dtype=np.float64)
    ranks[order] = np.repeat(run_rank, ends - starts)
    return ranks


def centered_ranks(fitness: np.ndarray) -> np.ndarray:
    """Ranks mapped linearly onto [-0.5, 0.5]; the weights sum to zero."""
    n = len(fitness)
    if n < 2:
        return np.zeros(n, dtype=np.float64)
    return average_ranks(fitness) / (n - 1) - 0.5


def rank_weights(fitness: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Give the best row ``values[0]``, the second best ``values[1]``, ...; NaN ranks worst.

    Rows with equal fitness share the mean of the values of the places they occupy, so the result
    does not depend on the order of the rows and a constant fitness gives every row the mean value.
    """
    f = np.where(np.isnan(fitness), -np.inf, np.asarray(fitness, dtype=np.float64))
    values = np.asarray(values, dtype=np.float64)
    if values.shape != f.shape:
        raise ValueError(f"need one value per row: {values.shape} values for {f.shape} fitness")
    order = np.argsort(-f, kind="stable")  # best first
    sorted_f = f[order]
    starts = _run_starts(sorted_f) if len(f) else np.array([], int)
    counts = np.diff(np.append(starts, len(f)))
    means = np.add.reduceat(values, starts) / counts if len(f) else values
    out = np.empty_like(values)
    out[order] = np.repeat(means, counts)
    return out


def nes_utility_values(n: int) -> np.ndarray:
    """The NES utilities of places 1..n, best first (Wierstra et al. 2014); they sum to zero."""
    if n < 1:
        return np.zeros(0, dtype=np.float64)
    raw_values = np.maximum(0.0, np.log(n / 2 + 1) - np.log(np.arange(1, n + 1)))
    utilities: np.ndarray = raw_values / raw_values.sum() - 1.0 / n  # numpy leaves the scalar sum untyped
    return utilities


def nes_utilities(fitness: np.ndarray) -> np.ndarray:
    """NES rank-based utilities of each row (ties share their mean; all tied: exactly zero)."""
    f = np.where(np.isnan(fitness), -np.inf, np.asarray(fitness, dtype=np.float64))
    if len(f) == 0 or np.all(f == f[0]):
        return np.zeros(len(f), dtype=np.float64)  # no information: no update, not rounding noise
    return rank_weights(f, nes_utility_values(len(f)))


def _finite(fitness: np.ndarray) -> np.ndarray:
    f = np.asarray(fitness, dtype=np.float64)
    finite = np.isfinite(f)
    if finite.all():
        return f
    if not finite.any():
        return np.zeros_like(f)
    lo, hi = f[finite].min(), f[finite].max()
    f = np.where(np.isnan(f) | (f == -np.inf), lo, f)
    return np.where(f == np.inf, hi, f)


def zscore(fitness: np.ndarray) -> np.ndarray:
    """``(f - mean) / std``; all zeros when every value is the same.

    Z-scores do not change when the fitness is scaled, so they are computed from ``f / max|f|``:
    fitness values near the float64 limit (1e308) cannot overflow the mean or the variance.
    """
    f = _finite(fitness)
    largest = float(np.max(np.abs(f))) if len(f) else 0.0
    if largest > 0:
        f = f / largest
    std = f.std()
    if not std > 0:
        return np.zeros_like(f)
    scores: np.ndarray = (f - f.mean()) / std  # numpy leaves std() untyped
    return scores


def raw(fitness: np.ndarray) -> np.ndarray:
    """The fitness itself (non-finite values clipped to the finite range)."""
    return _finite(fitness)


SHAPINGS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "centered_ranks": centered_ranks,
    "zscore": zscore,
    "raw": raw,
    "nes": nes_utilities,
}


def get_shaping(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """The shaping function called ``name``; a ConfigError lists the choices otherwise."""
    try:
        return SHAPINGS[name]
    except (KeyError, TypeError):
        raise ConfigError(
            f"unknown fitness shaping {name!r}.{did_you_mean(name, SHAPINGS)} "
            f"Choose one of: {', '.join(SHAPINGS)}"
        ) from None
