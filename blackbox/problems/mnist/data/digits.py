"""The offline default: scikit-learn's bundled 8x8 digits with a fixed train/test split.

``sklearn.datasets.load_digits`` reads a file shipped inside scikit-learn (1,797 images of 8x8
pixels, values 0..16, ten classes; the UCI optical-recognition test set), so it needs no network.
It is NOT MNIST: smaller images, far fewer of them, and easier. The split is fixed once and for
all: a permutation from ``numpy.random.default_rng(0)``, the last 360 images held out for testing.
"""

from __future__ import annotations

import numpy as np

from ....errors import ConfigError

__all__ = ["DIGITS_TEST_SIZE", "DIGITS_SPLIT_SEED", "load_digits_arrays"]

DIGITS_TEST_SIZE = 360
DIGITS_SPLIT_SEED = 0
DIGITS_MAX_VALUE = 16.0


def load_digits_arrays() -> dict[str, np.ndarray]:
    """``x_train`` (1437, 8, 8) float64 in 0..16, ``y_train`` (1437,), ``x_test`` (360, 8, 8), ``y_test``."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise ConfigError(
            "the offline digits data needs scikit-learn: pip install 'blackbox-es[mnist]' "
            "(or give the MNIST folder with path=... or $BLACKBOX_MNIST_DIR)"
        ) from None
    bunch = load_digits()
    images, labels = np.asarray(bunch.images, dtype=np.float64), np.asarray(bunch.target, dtype=np.int64)
    order = np.random.default_rng(DIGITS_SPLIT_SEED).permutation(len(images))
    train, test = order[:-DIGITS_TEST_SIZE], order[-DIGITS_TEST_SIZE:]
    return {"x_train": images[train], "y_train": labels[train], "x_test": images[test], "y_test": labels[test]}
