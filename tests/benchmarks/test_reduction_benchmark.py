"""Smoke test of benchmarks/reduction.py on a tiny setting: it runs and reports what it measured."""

from __future__ import annotations

from tests.helpers import benchmark_module


def test_reduction_benchmark_prints_its_table(capsys):
    reduction = benchmark_module("reduction")
    reduction.main(["--dims", "300", "--popsize", "400", "--repeats", "1", "--columns", "4", "--nodes", "1", "3"])
    out = capsys.readouterr().out
    assert "| dim | popsize | blocks | float32 pass ms | fixed blocks ms |" in out
    row = [line for line in out.splitlines() if line.startswith("| 300 |")]
    assert len(row) == 1 and row[0].endswith("| yes |")
    assert row[0].split("|")[3].strip() == "4"  # 200 pairs: blocks of 64 slices
