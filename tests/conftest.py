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


def _imports_jax(item: pytest.Item) -> bool:
    """Tests that load JAX into the test process: the gymnax problems, their conformance subjects,
    the Accelerators page and the JAX benchmark."""
    name = item.nodeid.lower()
    return any(word in name for word in ("gymnax", "/jax/", "jax_", "accelerators"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the tests that import JAX last. JAX starts threads of its own, and a process that forks
    while they run can deadlock in the child (JAX warns so at each ``os.fork``); the executors' and
    reliability tests fork worker processes, so they run before JAX is ever imported."""
    items.sort(key=_imports_jax)  # stable: the order within each group is kept
