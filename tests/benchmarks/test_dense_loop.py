"""Smoke test of benchmarks/dense_loop.py on tiny settings: each blackbox contender reports what it measured."""

from __future__ import annotations

import importlib
import sys

import pytest

from tests.helpers import ROOT

BENCHMARKS = ROOT / "benchmarks"


@pytest.fixture(scope="module")
def dense_loop():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield importlib.import_module("dense_loop")
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.mark.parametrize("name", ["blackbox cem float64", "blackbox cem float32", "blackbox ga ask+tell"])
def test_a_contender_reports_time_and_memory(dense_loop, name):
    measured = dense_loop.child(name, dim=2000, popsize=16, generations=2)
    assert set(measured) == {"cpu", "sys", "wall", "loop_private", "peak_rss"}
    assert measured["cpu"] >= 0 and measured["wall"] > 0 and measured["peak_rss"] > 0
    text = dense_loop.table("t", [2000], (name,), {(name, 2000): measured}, name, {2000: 16})
    assert f"| 2e+03 | 16 | {name} |" in text and "1.00x" in text
