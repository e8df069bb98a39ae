"""Fixtures of the reliability tests; their helpers live in ``tests.reliability.helpers`` and
``tests.reliability.fault_problems``."""

import pytest


@pytest.fixture(scope="module")
def faulty():
    """The ``faulty`` problem (fault_problems.py) registered for one test module."""
    from blackbox.registry.plugins import problems
    from tests.reliability.fault_problems import register

    register()
    yield
    problems.unregister("faulty")
