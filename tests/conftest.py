"""Shared test set-up: a private noise-table cache so tests never touch the user's cache."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

os.environ.setdefault("BLACKBOX_CACHE_DIR", tempfile.mkdtemp(prefix="blackbox-test-cache-"))


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


def quadratic_loss(x, solution):
    """Plain numpy reference loss, independent of the library."""
    return float(np.sum((np.asarray(x) - np.asarray(solution)) ** 2))
