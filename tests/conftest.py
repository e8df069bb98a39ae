"""Shared test set-up: a private noise-table cache so tests never touch the user's cache."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import numpy as np
import pytest

if "BLACKBOX_CACHE_DIR" not in os.environ:  # removed when the session ends (tables are 16 MB and up)
    os.environ["BLACKBOX_CACHE_DIR"] = tempfile.mkdtemp(prefix="blackbox-test-cache-")
    atexit.register(shutil.rmtree, os.environ["BLACKBOX_CACHE_DIR"], ignore_errors=True)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


def quadratic_loss(x, solution):
    """Plain numpy reference loss, independent of the library."""
    return float(np.sum((np.asarray(x) - np.asarray(solution)) ** 2))
