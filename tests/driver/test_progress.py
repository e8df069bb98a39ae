"""The progress display, the record files, and the learning-curve figure."""

import io
import math
import re

import numpy as np
import pytest
from rich.console import Console

import blackbox as bb
from blackbox.driver import progress
from blackbox.driver.logs import CSVRecords, JSONLRecords, read_csv_records, read_jsonl_records
from blackbox.driver.progress import (
    ProgressDisplay,
    budget_fraction,
    fit_line,
    format_duration,
    progress_fields,
)
from blackbox.driver.stop import GoalHeld
from blackbox.lab.plots import plot_run
from blackbox.lab.runs import describe_summary
from tests.helpers.extras import requires
from tests.helpers.run_problems import registered_drift


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
    for part in ("gen 10", "100%", "evals 650", "best ", "center ", "ms/gen", "ETA 0:0", "in 0:00"):
        assert part in text, part
    assert "steps" not in text  # a problem that takes no environment steps shows no empty "steps 0"


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def shown_lines(text: str) -> list[str]:
    """The lines a terminal ends up showing for each refresh of a live display."""
    return [ANSI.sub("", part) for part in re.split(r"[\r\n]", text) if "gen" in ANSI.sub("", part)]


def test_the_line_fits_80_columns_keeping_the_generation_and_the_eta(monkeypatch):
    monkeypatch.setattr(progress, "_REFRESH", 0.0)  # draw every generation
    buffer = io.StringIO()
    display = ProgressDisplay({"generations": 100}, console=Console(file=buffer, force_terminal=True, width=80))
    with registered_drift():
        bb.optimize("openai-es:popsize=16", "drift", generations=100, seed=0, callbacks=[display])
    lines = shown_lines(buffer.getvalue())
    running = [line for line in dict.fromkeys(lines) if " ETA " in line]
    final = lines[-1]
    assert len(running) == 100
    for g, line in enumerate(running, 1):
        assert len(line) < 80 and line.startswith(f"gen {g}/100  ") and line.count(" ETA ") == 1, line
        assert "center " in line and " -" not in line.replace(" -0", "").replace(" -1", "")
    assert final.startswith("gen 100/100  ━━━━━━━━━━") and "100%" in final and len(final) < 80


def test_fields_are_dropped_whole_as_the_width_shrinks():
    fields = progress_fields(record(generation=5, evaluations=1285, steps=271993, generation_time=0.185, best=500.0,
                                    center=500.0), {"generations": 100}, 13.0)
    assert fit_line(fields, 0.05, None, 120) == (
        "gen 5/100  ━───────────────────  5%  evals 1.28k  steps 272k  best 500  center 500  185 ms/gen  ETA 0:13")
    assert fit_line(fields, 0.05, None, 80) == "gen 5/100  ━──────────────────  5%  evals 1.28k  best 500  center 500  ETA 0:13"
    assert fit_line(fields, 0.05, None, 50) == "gen 5/100  ━───────────  5%  center 500  ETA 0:13"
    assert fit_line(fields, 0.05, None, 30) == "gen 5/100  5%  ETA 0:13"
    assert fit_line(fields, 0.05, None, None) == (
        "gen 5/100  5%  evals 1.28k  steps 272k  best 500  center 500  185 ms/gen  ETA 0:13")
    no_center = progress_fields(record(center=None, steps=0), {"max_time": 60.0}, None)
    assert fit_line(no_center, 0.5, None, None) == "gen 5  50%  evals 100  best 1  500 ms/gen"


def test_a_log_gets_plain_lines_every_few_seconds_not_a_bar():
    buffer = io.StringIO()
    display = ProgressDisplay({"generations": 30}, console=Console(file=buffer, force_terminal=False, width=80),
                              log_every=3600.0)
    bb.optimize("openai-es", bb.make_problem("sphere", dim=3), generations=30, seed=0, callbacks=[display])
    lines = buffer.getvalue().splitlines()
    assert len(lines) == 2 and "\x1b" not in buffer.getvalue() and "━" not in buffer.getvalue()
    assert lines[0].startswith("gen 1/30  3%  evals 65  best ") and " ETA " in lines[0]
    assert lines[1].startswith("gen 30/30  100%  evals 1.95k  best ") and " in 0:0" in lines[1]
    assert len(lines[0]) > 80 or "ms/gen" in lines[0]  # nothing dropped for a width: a log has none
    every = io.StringIO()
    display = ProgressDisplay({"generations": 30}, console=Console(file=every, force_terminal=False), log_every=0.0)
    bb.optimize("openai-es", bb.make_problem("sphere", dim=3), generations=30, seed=0, callbacks=[display])
    assert [line.split("  ")[0] for line in every.getvalue().splitlines()] == [f"gen {g}/30" for g in range(1, 31)] + [
        "gen 30/30"]


@pytest.mark.parametrize("stop,word", [({"target": -0.5}, "target reached"),
                                       ({"stop": [GoalHeld(-0.5, 2)]}, "goal reached")])
def test_a_run_that_reaches_its_goal_early_ends_with_a_full_bar_saying_so(stop, word):
    buffer = io.StringIO()
    display = ProgressDisplay({"generations": 1000}, console=Console(file=buffer, force_terminal=True, width=100))
    result = bb.optimize("openai-es:sigma=0.1,lr=0.1", bb.make_problem("sphere", dim=3), generations=1000, seed=0,
                         callbacks=[display], **stop)
    assert result.generations < 100
    final = shown_lines(buffer.getvalue())[-1]
    assert re.match(f"gen {result.generations}/1000  ━{{10,20}}  {word}  ", final), final
    assert "%" not in final


def test_an_interrupted_run_keeps_its_bar_where_it_was():
    buffer = io.StringIO()
    display = ProgressDisplay({"generations": 10}, console=Console(file=buffer, force_terminal=False))

    def stop_at_3(record):
        if record.generation == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        bb.optimize("openai-es", bb.make_problem("sphere", dim=3), generations=10, seed=0,
                    callbacks=[display, stop_at_3])
    assert buffer.getvalue().splitlines()[-1].startswith("gen 3/10  interrupted  evals 195  ")


def test_the_summary_names_best_ever_and_both_times():
    summary = {"run_dir": "runs/cp", "strategy": "openai-es", "problem": "gym", "problem_label": "gym:CartPole-v1",
               "resumed_from": None, "generations": 5, "evaluations": 1285, "steps": 271993, "wall_time": 0.6123,
               "best_fitness": 500.0, "center_fitness": 500.0,
               "stop_reason": "center's mean over 20 fresh episodes 500 >= goal 475"}
    assert describe_summary(summary, 2.931) == (
        "openai-es on gym:CartPole-v1 after 5 generations: center fitness 500, best ever 500\n"
        "stopped: center's mean over 20 fresh episodes 500 >= goal 475\n"
        "1,285 evaluations, 271,993 environment steps\n"
        "time: 0.61 s inside generations, 2.93 s wall time of this command\n"
        "run saved in runs/cp")
    summary.update(steps=0, resumed_from=3)
    assert describe_summary(summary).splitlines()[1:3] == [
        "stopped: center's mean over 20 fresh episodes 500 >= goal 475 (resumed at generation 3)",
        "1,285 evaluations"]


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


@pytest.mark.parametrize("terminal", [False, True])
def test_a_run_says_what_starts_before_its_first_generation_ends(tmp_path, terminal):
    """The first line comes at once (a first generation can take minutes): what, how many workers, where."""
    buffer = io.StringIO()
    seen = []

    class Peek(bb.Callback):
        def on_start(self, run):
            seen.append(buffer.getvalue())  # what was shown before the first generation ran

    from blackbox.lab.runs import start_run

    console = Console(file=buffer, force_terminal=terminal, width=200)
    start_run({"strategy": {"name": "openai-es", "popsize": 8}, "problem": {"name": "quadratic", "dim": 3},
               "executor": {"name": "serial"}, "stop": {"generations": 2}, "log": {"plot": False}},
              tmp_path / "run", show_progress=True, console=console, callbacks=[Peek()])
    intro = f"starting openai-es on quadratic (seed 0), serial executor with 1 worker, in {tmp_path / 'run'}"
    assert seen[0].splitlines()[0] == intro
    if terminal:
        assert "gen 1/2  running" in seen[0]
