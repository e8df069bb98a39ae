"""Statistics for comparisons: bootstrap intervals, curves on a common axis, first-reach times.

A learning curve is a run's records: a counter ``x`` (evaluations, environment steps, seconds)
that only grows, and a fitness ``y``. Curves of different runs are put on one axis by carrying each
run's last value forward (a run that stopped at its goal keeps its last fitness); before its first
record a run has no value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

__all__ = ["bootstrap_mean", "bootstrap_band", "carry_forward", "first_reach", "median_or_inf",
           "mean_curve", "progress_ratio_table", "probability_of_improvement", "wilson_interval"]


def bootstrap_mean(values: Sequence[float], confidence: float = 0.95, resamples: int = 10_000,
                   seed: int = 0) -> tuple[float, float, float]:
    """Mean and percentile-bootstrap interval of the mean (NaN values dropped; one value: no width)."""
    data = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=np.float64)
    if len(data) == 0:
        return math.nan, math.nan, math.nan
    mean = float(np.mean(data))
    if len(data) == 1:
        return mean, mean, mean
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), size=(resamples, len(data)))].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return mean, float(low), float(high)


def bootstrap_band(matrix: np.ndarray, confidence: float = 0.95, resamples: int = 2_000,
                   seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column of ``matrix`` (runs x points): the mean across runs and its bootstrap interval."""
    matrix = np.asarray(matrix, dtype=np.float64)
    mean = np.mean(matrix, axis=0)
    if matrix.shape[0] < 2:
        return mean, mean.copy(), mean.copy()
    rng = np.random.default_rng(seed)
    index = rng.integers(0, matrix.shape[0], size=(resamples, matrix.shape[0]))
    means = matrix[index].mean(axis=1)  # (resamples, points)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail], axis=0)
    return mean, low, high


def probability_of_improvement(x: Sequence[float], y: Sequence[float], confidence: float = 0.95,
                               resamples: int = 10_000, seed: int = 0) -> tuple[float, float, float]:
    """``P(X < Y) + P(X = Y) / 2`` over every pair of ``x`` and ``y`` (Agarwal et al. 2021: the chance that a
    run of X is below one of Y, so for steps to a goal, that X needs fewer), with a percentile-bootstrap
    interval that resamples each side's runs. inf (never reached) compares as more than any number, equal
    to inf."""
    xs, ys = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)

    def improvement(a: np.ndarray, b: np.ndarray) -> np.ndarray:  # one column per draw
        return np.asarray((a[:, None, :] < b[None, :, :]).mean(axis=(0, 1))
                          + (a[:, None, :] == b[None, :, :]).mean(axis=(0, 1)) / 2)

    point = float(improvement(xs[:, None], ys[:, None])[0])
    rng = np.random.default_rng(seed)
    draws = improvement(xs[rng.integers(0, len(xs), (len(xs), resamples))],
                        ys[rng.integers(0, len(ys), (len(ys), resamples))])
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(draws, [tail, 1.0 - tail])
    return point, float(low), float(high)


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a binomial share ``successes / trials``: sound for few trials and for
    shares of 0 or 1, where the normal approximation's interval is not."""
    z = NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)
    share = successes / trials
    centre = (share + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def carry_forward(x: np.ndarray, y: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The run's value at each grid point: its last record with ``x <= point`` (NaN before the first)."""
    x, y, grid = np.asarray(x, float), np.asarray(y, float), np.asarray(grid, float)
    index = np.searchsorted(x, grid, side="right") - 1
    out = np.full(len(grid), np.nan)
    ok = index >= 0
    out[ok] = y[index[ok]]
    return out


def first_reach(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, level: float) -> float:
    """The first ``x`` at which ``y >= level``, or inf if it never gets there."""
    for xi, yi in zip(x, y):
        if yi is not None and not math.isnan(yi) and yi >= level:
            return float(xi)
    return math.inf


def median_or_inf(values: Sequence[float]) -> float:
    """The median, counting runs that never reached as +inf (so more than half failing gives inf)."""
    data = sorted(float(v) for v in values)
    if not data:
        return math.nan
    n = len(data)
    middle = data[n // 2] if n % 2 else (data[n // 2 - 1] + data[n // 2]) / 2.0
    return middle


def mean_curve(curves: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The mean over runs on the union of their x values, from where every run has started."""
    if not curves:
        return np.zeros(0), np.zeros(0)
    start = max(float(x[0]) for x, _ in curves if len(x))
    grid = np.unique(np.concatenate([np.asarray(x, float) for x, _ in curves]))
    grid = grid[grid >= start]
    values = np.vstack([carry_forward(x, y, grid) for x, y in curves])
    return grid, np.mean(values, axis=0)


def progress_ratio_table(
    method: tuple[np.ndarray, np.ndarray], reference: tuple[np.ndarray, np.ndarray],
    fractions: Sequence[float] = (0.25, 0.5, 0.75, 1.0),
) -> list[dict[str, float]]:
    """Salimans et al. (2017), Table 1: the x a method needs to reach a fraction of the reference's
    progress, over the x the reference needs.

    The reference's progress runs from its first to its last value (mean curves). For each
    fraction ``f`` the level is ``start + f * (final - start)``; ``ratio`` is method x / reference x
    (inf when the method never reaches the level, NaN when the reference made no progress).
    """
    ref_x, ref_y = reference
    rows: list[dict[str, float]] = []
    if len(ref_y) == 0:
        return rows
    start, final = float(ref_y[0]), float(ref_y[-1])
    for fraction in fractions:
        level = start + fraction * (final - start)
        if not final > start:
            rows.append({"fraction": fraction, "level": level, "method": math.nan, "reference": math.nan,
                         "ratio": math.nan})
            continue
        x_ref = first_reach(ref_x, ref_y, level)
        x_method = first_reach(method[0], method[1], level)
        ratio = x_method / x_ref if x_ref > 0 else math.nan
        rows.append({"fraction": fraction, "level": level, "method": x_method, "reference": x_ref, "ratio": ratio})
    return rows
