"""A generation's mean and median cannot overflow (issue 25: every row scoring 1e308 gave mean=inf and
median=inf beside best=worst=1e308, with numpy and matplotlib overflow warnings)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import blackbox as bb
from blackbox.driver.loop import fitness_statistics
from blackbox.lab.plots import have_matplotlib, plot_run


class Extreme(bb.Problem):
    """Scores its rows with ``values``, in turn."""

    dim = 3

    def __init__(self, values):
        self.values = list(values)

    def evaluate(self, params, seeds):
        n = len(params)
        fitness = np.resize(np.array(self.values, dtype=np.float64), n)
        return bb.EvalResult(fitness, np.ones(n, dtype=np.int64))


@pytest.mark.parametrize("values, mean, median", [
    ([1e308] * 11, 1e308, 1e308),
    ([-1e308] * 10, -1e308, -1e308),
    ([1e308, -1e308] * 5, 0.0, 0.0),
    ([1e308] * 7 + [-1e308] * 4, 1e308 / 11 * 3, 1e308),
    ([1.7e308, 1.6e308], 1.65e308, 1.65e308),
    ([np.finfo(float).max] * 3 + [-np.finfo(float).max], np.finfo(float).max / 2, np.finfo(float).max),
])
def test_mean_and_median_of_huge_finite_rows_are_finite_and_quiet(values, mean, median):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning
        ordered, got_mean, got_median = fitness_statistics(np.array(values))
    assert math.isclose(got_mean, mean, rel_tol=1e-12) and math.isclose(got_median, median, rel_tol=1e-12)
    assert ordered[0] <= got_mean <= ordered[-1]


@pytest.mark.parametrize("values", [[1e308], [-1e308], [1e308, -1e308], [1e308, 1e308, -1e308]])
def test_runs_scoring_1e308_record_finite_statistics_and_draw_quietly(values, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning from numpy or matplotlib
        result = bb.optimize("openai-es:popsize=10", Extreme(values), max_generations=2, seed=1)
        for record in result.records:
            assert math.isfinite(record.mean) and math.isfinite(record.median), record
            assert record.worst <= record.median <= record.best and record.worst <= record.mean <= record.best
        if have_matplotlib():
            plot_run(result.records, tmp_path / "curve.png", "extreme")
            assert (tmp_path / "curve.png").stat().st_size > 0


def test_a_row_of_inf_still_makes_the_mean_inf_and_both_infinities_nan():
    """Not finite for a reason: an infinite row (the mean is that infinity) or both (undefined)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        one = bb.optimize("openai-es:popsize=10", Extreme([np.inf, 1.0]), max_generations=1, seed=1).records[-1]
        both = bb.optimize("openai-es:popsize=10", Extreme([np.inf, -np.inf]), max_generations=1, seed=1).records[-1]
    assert one.mean == np.inf and one.best == np.inf
    assert math.isnan(both.mean) and math.isnan(both.median)


def test_the_scaled_mean_is_used_only_when_the_plain_one_overflows():
    """Every other record keeps its exact value (golden runs are bit-identical)."""
    rows = np.array([0.1, 0.7, 1e300, 3.0, -2.5])
    ordered, mean, median = fitness_statistics(rows)
    assert mean == float(np.mean(np.sort(rows))) and median == 0.7
    assert fitness_statistics(rows[:4])[2] == (0.7 + 3.0) / 2
