import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import blackbox as bb
from blackbox.strategies.shaping import average_ranks, centered_ranks, get_shaping, raw, zscore

# Integers (with ties) keep every transform below strictly increasing in floating point too.
values = st.integers(-1000, 1000).map(float)


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(2, 60), elements=values))
def test_centered_ranks_invariant_to_strictly_increasing_transforms(f):
    base = centered_ranks(f)
    transforms = (lambda x: 3 * x + 7, lambda x: np.tanh(x / 2000), lambda x: np.arctan(x / 100),
                  lambda x: x**3 + x, lambda x: np.exp(x / 1000), lambda x: -1.0 / (x + 2000))
    for transform in transforms:
        np.testing.assert_array_equal(centered_ranks(transform(f)), base)
    assert abs(base.sum()) < 1e-9
    assert base.min() >= -0.5 and base.max() <= 0.5


def test_centered_ranks_values_and_ties():
    np.testing.assert_allclose(centered_ranks(np.array([10.0, 30.0, 20.0])), [-0.5, 0.5, 0.0])
    np.testing.assert_array_equal(centered_ranks(np.full(5, 2.0)), np.zeros(5))
    np.testing.assert_allclose(average_ranks(np.array([1.0, 1.0, 3.0])), [0.5, 0.5, 2.0])


def test_nan_ranks_worst():
    f = np.array([1.0, np.nan, -5.0, 2.0])
    r = centered_ranks(f)
    assert r[1] == r.min() and r[1] < r[2]
    z = zscore(f)
    assert np.all(np.isfinite(z)) and z[1] == z.min()


def test_zscore_and_raw():
    f = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(zscore(f), (f - 2) / np.std(f))
    np.testing.assert_array_equal(zscore(np.ones(4)), np.zeros(4))
    np.testing.assert_array_equal(raw(np.array([1.0, np.inf, -np.inf])), [1.0, 1.0, 1.0])


def test_unknown_shaping_name():
    with pytest.raises(bb.ConfigError, match="unknown fitness shaping 'centred_ranks'. Did you mean 'centered_ranks'"):
        get_shaping("centred_ranks")
