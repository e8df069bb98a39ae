"""The progress display, the record files, and the learning-curve figure."""

import io
import math

import numpy as np
from rich.console import Console

import blackbox as bb
from blackbox.driver.logs import CSVRecords, JSONLRecords, read_csv_records, read_jsonl_records
from blackbox.driver.progress import ProgressDisplay, budget_fraction, format_duration
from blackbox.lab.plots import plot_run
from tests.helpers.extras import requires


def record(**fields):
    base = dict(generation=5, evaluations=100, steps=2000, time=4.0, generation_time=0.5, best=1.0, mean=0.5,
                median=0.5, worst=0.0, center=0.8, center_rank=3, above_mean=10, sigma=0.1, update_norm=0.01,
                best_ever=1.0)
    return bb.Record(**{**base, **fields})


def test_budget_fraction_uses_the_nearest_budget():
    assert budget_fraction(record(), {"generations": 10}) == 0.5
    assert budget_fraction(record(), {"generations": 100, "max_steps": 4000}) == 0.5
    assert budget_fraction(record(), {"generations": 100, "max_evaluations": 1000, "max_time": 5.0}) == 0.8
    assert budget_fraction(record(), {"max_time": 2.0}) == 1.0
    assert budget_fraction(record(), {}) is None


def test_format_duration():
    assert format_duration(59.6) == "1:00" and format_duration(3723) == "1:02:03"
    assert format_duration(None) == "-" and format_duration(math.inf) == "-"


def test_display_shows_counters_fitness_speed_and_eta():
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=200)
    display = ProgressDisplay({"max_evaluations": 650}, console=console)
    bb.optimize("openai-es", bb.make_problem("sphere", dim=3), max_evaluations=650, seed=0, callbacks=[display])
    text = buffer.getvalue()
    for part in ("gen 10", "100%", "evals 650", "steps 0", "best ", "center ", "ms/gen", "ETA 0:00"):
        assert part in text, part


def test_record_files_round_trip(tmp_path):
    problem = bb.make_problem("sphere", dim=2)
    result = bb.optimize("nes", problem, generations=3, seed=0, evaluate_center=False,
                         callbacks=[CSVRecords(tmp_path / "r.csv"), JSONLRecords(tmp_path / "r.jsonl")])
    rows, lines = read_csv_records(tmp_path / "r.csv"), read_jsonl_records(tmp_path / "r.jsonl")
    assert rows == lines == [r.as_dict() for r in result.records]
    assert rows[0]["center"] is None and rows[0]["center_rank"] is None


@requires("plot")
def test_learning_curve_png(tmp_path):
    records = [record(generation=g, steps=100 * g, center=float(g), best=float(g) + 1) for g in range(1, 20)]
    path = plot_run(records, tmp_path / "curve.png", title="a run")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
    negated = [record(generation=g, center=-(10.0 ** -g), best=-(10.0 ** -g), mean=-1.0, best_ever=-(10.0 ** -g))
               for g in range(1, 12)]
    assert plot_run(negated, tmp_path / "log.png").exists()  # a symmetric-log axis for negated losses
    assert np.isfinite([r.center for r in negated]).all()
