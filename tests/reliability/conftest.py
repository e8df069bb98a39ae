"""The reliability tests import their helpers (``helpers``, ``fault_problems``) by plain name."""

import sys
from pathlib import Path

import pytest

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)


@pytest.fixture(scope="module")
def faulty():
    """The ``faulty`` problem (fault_problems.py) registered for one test module."""
    from fault_problems import register

    from blackbox.registry.plugins import problems

    register()
    yield
    problems.unregister("faulty")
