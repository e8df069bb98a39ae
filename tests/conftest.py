"""Shared test set-up: a private noise-table cache so tests never touch the user's cache, and the quick subset."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

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


def _jax_last(items: list[pytest.Item]) -> None:
    """Run the tests that import JAX last. JAX starts threads of its own, and a process that forks
    while they run can deadlock in the child (JAX warns so at each ``os.fork``); the executors' and
    reliability tests fork worker processes, so they run before JAX is ever imported."""
    items.sort(key=_imports_jax)  # stable: the order within each group is kept


#: The quick subset (``python -m pytest -m quick``, about a minute on 2 cores): the protocols, the
#: strategies, configs, the registry, checkpoints, the driver, the CLI's own tests and the golden
#: results; no subprocess-heavy reliability, executor, Gym or docs tests.
QUICK = ("test_api.py", "test_errors.py", "test_files.py", "test_moved.py", "test_validate.py", "core", "strategies",
         "config", "store", "driver", "golden", "cli/test_cli.py", "cli/test_failure.py")


def _in_quick(relative: str) -> bool:
    return any(relative == q or relative.startswith(q + "/") or q.startswith(relative + "/") for q in QUICK)


def pytest_ignore_collect(collection_path, config):
    """With ``-m quick``, do not even import the other test modules (collecting them all takes longer
    than the quick tests take to run)."""
    if config.getoption("markexpr", "") != "quick":
        return None
    try:
        relative = Path(collection_path).relative_to(Path(__file__).parent).as_posix()
    except ValueError:
        return None
    if relative == "." or Path(collection_path).name in ("__init__.py", "conftest.py"):
        return None
    if Path(collection_path).is_dir() or relative.endswith(".py"):
        return True if not _in_quick(relative) else None
    return None


def pytest_collection_modifyitems(config, items):
    """Mark the quick subset (``QUICK``, paths under tests/) with ``quick`` (slow tests never are), and
    run the tests that import JAX last (:func:`_jax_last`)."""
    tests = Path(__file__).parent
    for item in items:
        try:
            relative = Path(item.fspath).relative_to(tests).as_posix()
        except ValueError:
            continue
        if any(relative == q or relative.startswith(q + "/") for q in QUICK) and not (
                item.get_closest_marker("slow") or item.get_closest_marker("reliability_long")):
            item.add_marker(pytest.mark.quick)
    _jax_last(items)
