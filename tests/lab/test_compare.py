"""``blackbox compare``: the grid, resumability, the report's numbers and where they come from."""

import csv
import json
import math
import textwrap
from pathlib import Path

import numpy as np
import pytest

from blackbox.cli import main
from blackbox.driver.logs import read_csv_records
from blackbox.lab import stats
from blackbox.lab.experiment import load_experiment
from tests.helpers.extras import requires
from tests.helpers.run_problems import registered_drift

EXPERIMENT = """\
name = "tiny"
seeds = 2

[budget]
generations = 6

[checkpoint]
every = 3

[log]
plot = false

[strategies.openai-es]
popsize = 10
sigma = 0.1

[strategies.nes-fast]
name = "nes"
popsize = 10
lr = 0.05

[problems.drift]
spec = "drift:dim=3"
target = -0.5

[problems.sphere]
name = "sphere"
dim = 3
budget = { max_evaluations = 44 }

[report]
reference = "openai-es"
resamples = 500
plots = false
"""


@pytest.fixture
def drift():
    with registered_drift():
        yield


def write(tmp_path, text=EXPERIMENT):
    path = tmp_path / "exp.toml"
    path.write_text(textwrap.dedent(text))
    return path


def read_results(out):
    with open(Path(out) / "results.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def compare(path, out, *extra):
    return main(["compare", str(path), "--out", str(out), "--quiet", *extra])


def test_grid_runs_and_every_number_names_its_run(tmp_path, drift):
    out = tmp_path / "out"
    assert compare(write(tmp_path), out) == 0
    rows = read_results(out)
    assert len(rows) == 8
    assert {(r["problem"], r["strategy"], r["seed"]) for r in rows} == {
        (p, s, str(seed)) for p in ("drift", "sphere") for s in ("openai-es", "nes-fast") for seed in (0, 1)}
    for row in rows:
        run_dir = out / row["run_dir"]
        assert row["run_dir"] == f"runs/{row['problem']}/{row['strategy']}/seed-{row['seed']}"
        records = read_csv_records(run_dir / "records.csv")
        assert float(row["final_center"]) == records[-1]["center"]
        assert int(row["evaluations"]) == records[-1]["evaluations"] and row["status"] == "finished"
        config = (run_dir / "config.toml").read_text()
        assert f"seed = {row['seed']}" in config
    sphere = [r for r in rows if r["problem"] == "sphere"]
    assert all(int(r["generations"]) == 4 for r in sphere)  # its own budget: 44 evaluations = 4 x 11
    assert {r["target"] for r in sphere} == {""}
    drift_rows = [r for r in rows if r["problem"] == "drift"]
    for row in drift_rows:
        records = read_csv_records(out / row["run_dir"] / "records.csv")
        first = next((r for r in records if r["center"] >= -0.5), None)
        assert row["success"] == str(first is not None)
        if first:
            assert int(row["steps_to_target"]) == first["steps"] and int(row["evaluations_to_target"]) == first["evaluations"]

    summary = (out / "summary.md").read_text()
    assert "## drift" in summary and "## sphere" in summary
    assert "`runs/drift/nes-fast/seed-0`, `runs/drift/nes-fast/seed-1`" in summary
    assert "### Progress ratios (Salimans et al. 2017, Table 1)" in summary
    assert "Environment steps each strategy needs" in summary  # drift counts steps
    assert "Evaluations each strategy needs" in summary  # sphere does not
    with open(out / "summary.csv", newline="") as handle:
        summary_rows = list(csv.DictReader(handle))
    for row in summary_rows:
        finals = [float(r["final_center"]) for r in rows if r["problem"] == row["problem"] and r["strategy"] == row["strategy"]]
        assert float(row["final_mean"]) == pytest.approx(np.mean(finals))
        assert float(row["final_low"]) <= float(row["final_mean"]) <= float(row["final_high"])
        assert row["run_dirs"].split() == [r["run_dir"] for r in rows
                                           if r["problem"] == row["problem"] and r["strategy"] == row["strategy"]]
    with open(out / "progress_ratios.csv", newline="") as handle:
        ratios = list(csv.DictReader(handle))
    assert {(r["problem"], r["strategy"], r["axis"]) for r in ratios} == {("drift", "nes-fast", "steps"),
                                                                          ("sphere", "nes-fast", "evaluations")}
    assert [float(r["fraction"]) for r in ratios[:4]] == [0.25, 0.5, 0.75, 1.0]
    assert ratios[0]["reference_runs"] == "runs/drift/openai-es/seed-0 runs/drift/openai-es/seed-1"
    for r in ratios:
        if r["ratio"] not in ("inf", "nan"):
            assert float(r["ratio"]) == pytest.approx(float(r["strategy_x"]) / float(r["reference_x"]))
    report = json.loads((out / "report.json").read_text())
    assert report["runs"] == 8 and report["plots"] == []
    assert not (out / "runs" / "drift" / "openai-es" / "seed-0" / "curve.png").exists()


def test_rerun_skips_finished_runs_and_extends_on_a_larger_budget(tmp_path, drift):
    out = tmp_path / "out"
    path = write(tmp_path)
    assert compare(path, out) == 0
    records = out / "runs" / "drift" / "openai-es" / "seed-0" / "records.csv"
    stamp = records.stat().st_mtime_ns
    assert compare(path, out) == 0
    assert records.stat().st_mtime_ns == stamp  # skipped, untouched
    path.write_text(path.read_text().replace("generations = 6", "generations = 9"))
    assert compare(path, out) == 0
    assert len(read_csv_records(records)) == 9
    fresh = tmp_path / "fresh"
    assert compare(path, fresh) == 0
    for a, b in zip(read_results(out), read_results(fresh)):
        for key in ("final_center", "evaluations", "steps", "success", "steps_to_target", "best_ever"):
            assert a[key] == b[key]


def test_a_killed_experiment_continues_where_it_stopped(tmp_path, drift):
    out = tmp_path / "out"
    path = write(tmp_path)
    assert compare(path, out) == 0
    victim = out / "runs" / "drift" / "nes-fast" / "seed-1"
    reference = read_csv_records(victim / "records.csv")
    (victim / "result.json").unlink()  # killed in flight after its checkpoint at generation 3
    for name in ("gen-000006",):
        import shutil

        shutil.rmtree(victim / "checkpoints" / name)
    untouched = out / "runs" / "drift" / "nes-fast" / "seed-0" / "records.csv"
    stamp = untouched.stat().st_mtime_ns
    assert compare(path, out) == 0
    assert untouched.stat().st_mtime_ns == stamp
    after = read_csv_records(victim / "records.csv")
    drop = ("time", "generation_time")
    assert [{k: v for k, v in r.items() if k not in drop} for r in after] == [
        {k: v for k, v in r.items() if k not in drop} for r in reference]


def test_changed_settings_are_refused_unless_overwrite(tmp_path, drift, capsys):
    out = tmp_path / "out"
    path = write(tmp_path)
    assert compare(path, out) == 0
    capsys.readouterr()
    path.write_text(path.read_text().replace("lr = 0.05", "lr = 0.07"))
    assert compare(path, out) == 2
    err = capsys.readouterr().err
    assert "4 run directories of experiment 'tiny' hold runs with other settings" in err
    assert "runs/drift/nes-fast/seed-0: strategy.lr: 0.05 -> 0.07" in err and "--overwrite" in err
    assert compare(path, out, "--overwrite") == 0
    assert "lr = 0.07" in (out / "runs" / "sphere" / "nes-fast" / "seed-1" / "config.toml").read_text()


@requires("plot")
def test_optional_strategies_and_plots(tmp_path, drift):
    text = EXPERIMENT.replace("plots = false", "plots = true").replace("seeds = 2", "seeds = 1")
    text += '\n[strategies.not-installed]\nname = "cmaes-x"\noptional = true\n'
    out = tmp_path / "out"
    assert compare(write(tmp_path, text), out) == 0
    summary = (out / "summary.md").read_text()
    assert "Skipped strategy `not-installed`: strategy 'cmaes-x' is not installed." in summary
    plots = json.loads((out / "report.json").read_text())["plots"]
    assert sorted(Path(p).name for p in plots) == [
        "drift-evaluations.png", "drift-steps.png", "drift-time.png", "sphere-evaluations.png", "sphere-time.png"]
    for plot in plots:
        assert Path(plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_parallel_jobs_give_the_same_numbers(tmp_path):
    text = EXPERIMENT.replace('[problems.drift]\nspec = "drift:dim=3"\ntarget = -0.5\n', "")
    path = write(tmp_path, text)
    assert compare(path, tmp_path / "serial") == 0
    assert compare(path, tmp_path / "parallel", "--jobs", "2") == 0
    for a, b in zip(read_results(tmp_path / "serial"), read_results(tmp_path / "parallel")):
        assert (a["run_dir"], a["final_center"], a["best_ever"]) == (b["run_dir"], b["final_center"], b["best_ever"])


@pytest.mark.parametrize("edit,message", [
    (("seeds = 2", "seeds = 2\nseedz = 3"), "exp.toml:3: unknown key 'seedz'. Did you mean 'seeds'?"),
    (("sigma = 0.1", "sigmaa = 0.1"),
     "exp.toml:15: unknown key 'sigmaa' in [strategy]: strategy 'openai-es' has no option 'sigmaa'"),
    (("generations = 6", "generationz = 6"), "exp.toml:5: unknown key 'generationz' in [budget]."),
    (('reference = "openai-es"', 'reference = "openai"'), "exp.toml:32: reference 'openai' is not a strategy"),
    (("target = -0.5", 'target = "high"'), "exp.toml:24: target must be a number, got 'high'"),
    (("dim = 3", "dimm = 3"), "exp.toml:28: unknown key 'dimm' in [problem]: problem 'sphere' has no option 'dimm'"),
    (("[budget]\ngenerations = 6", "[budgets]\ngenerations = 6"), "exp.toml:4: unknown key 'budgets'"),
    (("seeds = 2", "seeds = [1, 1]"), "seeds has duplicates: [1, 1]"),
    (('[strategies.nes-fast]\nname = "nes"', '[strategies.nes-fast]\nname = "nesx"'), "exp.toml:18: unknown strategy 'nesx'"),
])
def test_experiment_errors_name_the_line(tmp_path, drift, capsys, edit, message):
    assert edit[0] in EXPERIMENT
    code = compare(write(tmp_path, EXPERIMENT.replace(*edit)), tmp_path / "out")
    assert code == 2
    assert message in capsys.readouterr().err


def test_an_experiment_needs_a_budget(tmp_path, drift, capsys):
    text = EXPERIMENT.replace("[budget]\ngenerations = 6\n", "")
    assert compare(write(tmp_path, text), tmp_path / "out") == 2
    assert "give a shared [budget] (generations, max_evaluations, max_steps, max_time)" in capsys.readouterr().err


def test_smoke_mode_shrinks_seeds_and_every_budget(tmp_path, drift, monkeypatch):
    path = write(tmp_path, EXPERIMENT + "\n[smoke]\nseeds = 1\nbudget = { generations = 2 }\n")
    experiment = load_experiment(path, smoke=True)
    assert experiment.seeds == [0] and len(experiment.cells) == 4
    assert {cell.resolved.stop.generations for cell in experiment.cells} == {2}
    assert all(cell.resolved.stop.max_evaluations is None for cell in experiment.cells)
    monkeypatch.setenv("BLACKBOX_SMOKE", "1")
    assert load_experiment(path).smoke
    monkeypatch.setenv("BLACKBOX_SMOKE", "0")
    assert not load_experiment(path).smoke


def test_bootstrap_and_medians():
    mean, low, high = stats.bootstrap_mean([1.0, 2.0, 3.0, 4.0], resamples=4000)
    assert mean == 2.5 and 1.25 <= low < 2.5 < high <= 3.75
    assert stats.bootstrap_mean([5.0]) == (5.0, 5.0, 5.0)
    assert all(math.isnan(v) for v in stats.bootstrap_mean([]))
    assert stats.bootstrap_mean([1.0, 2.0], seed=3) == stats.bootstrap_mean([1.0, 2.0], seed=3)
    assert stats.median_or_inf([3.0, math.inf, 1.0]) == 3.0
    assert stats.median_or_inf([1.0, math.inf, math.inf]) == math.inf
    assert stats.median_or_inf([1.0, 3.0]) == 2.0


def test_carry_forward_and_first_reach():
    x, y = np.array([10.0, 20.0, 30.0]), np.array([1.0, 5.0, 3.0])
    assert np.array_equal(stats.carry_forward(x, y, np.array([5.0, 10.0, 25.0, 99.0])),
                          np.array([np.nan, 1.0, 5.0, 3.0]), equal_nan=True)
    assert stats.first_reach(x, y, 4.0) == 20.0 and stats.first_reach(x, y, 6.0) == math.inf
    grid, mean = stats.mean_curve([(x, y), (np.array([15.0, 30.0]), np.array([2.0, 4.0]))])
    assert list(grid) == [15.0, 20.0, 30.0] and list(mean) == [1.5, 3.5, 3.5]


def test_progress_ratios_follow_the_papers_table():
    reference = (np.array([100.0, 200.0, 300.0, 400.0]), np.array([0.0, 50.0, 80.0, 100.0]))
    method = (np.array([50.0, 100.0, 150.0, 200.0]), np.array([0.0, 30.0, 75.0, 90.0]))
    rows = stats.progress_ratio_table(method, reference)
    assert [r["level"] for r in rows] == [25.0, 50.0, 75.0, 100.0]
    assert [r["reference"] for r in rows] == [200.0, 200.0, 300.0, 400.0]
    assert [r["method"] for r in rows] == [100.0, 150.0, 150.0, math.inf]
    assert [r["ratio"] for r in rows] == [0.5, 0.75, 0.5, math.inf]
    flat = stats.progress_ratio_table(method, (reference[0], np.full(4, 7.0)))
    assert all(math.isnan(r["ratio"]) for r in flat)


def test_a_failing_run_does_not_stop_the_grid(tmp_path, drift, capsys):
    import blackbox as bb
    from blackbox.registry.plugins import problems

    class Boom(bb.Problem):
        """Always fails."""

        dim = 3

        def evaluate(self, params, seeds):
            raise RuntimeError("simulator crashed")

    problems.register("boom", Boom)
    try:
        text = EXPERIMENT.replace('[problems.sphere]\nname = "sphere"', '[problems.sphere]\nname = "boom"')
        text = text.replace("dim = 3\nbudget = { max_evaluations = 44 }\n", "")
        code = main(["compare", str(write(tmp_path, text)), "--out", str(tmp_path / "out"), "--json"])
    finally:
        problems.unregister("boom")
    captured = capsys.readouterr()
    assert code == 1
    assert "4 run(s) failed" in captured.err and "simulator crashed" in captured.err
    index = json.loads(captured.out)
    assert len(index["failed"]) == 4 and all("runs/sphere/" in f for f in index["failed"])
    rows = read_results(tmp_path / "out")
    assert {r["status"] for r in rows if r["problem"] == "sphere"} == {"error"}
    assert {r["status"] for r in rows if r["problem"] == "drift"} == {"finished"}


@pytest.mark.parametrize("flags", [[], ["--overwrite"]])
def test_a_cell_folder_that_is_not_a_run_is_refused_whatever_the_flags(tmp_path, drift, capsys, flags):
    """--overwrite replaces runs, never a folder that is something else (issue 16)."""
    out = tmp_path / "out"
    path = write(tmp_path)
    cell = out / "runs" / "drift" / "nes-fast" / "seed-0"
    (cell / "checkpoints").mkdir(parents=True)
    (cell / "records.csv").write_text("my,data\n")
    (cell / "thesis.tex").write_text("mine")
    capsys.readouterr()
    assert compare(path, out, *flags) == 2
    err = capsys.readouterr().err
    assert "1 run directory of experiment 'tiny' holds something other than a blackbox run" in err
    assert f"{cell}: it is not a blackbox run directory (it has no config.toml)" in err
    assert "--overwrite" not in err
    assert sorted(p.name for p in cell.iterdir()) == ["checkpoints", "records.csv", "thesis.tex"]
    assert (cell / "records.csv").read_text() == "my,data\n"


def test_the_terminal_shows_each_ranking_with_its_rule_and_a_rerun_shows_no_empty_bar(tmp_path, drift, capsys,
                                                                                     monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path)
    assert main(["compare", str(path)]) == 0
    printed = capsys.readouterr().out
    out = "\n".join(line.rstrip() for line in printed.splitlines()) + "\n"  # rich pads lines to the width
    assert (tmp_path / "runs" / "experiments" / "tiny" / "summary.md").exists()  # git-ignored, not the root
    assert "drift (drift:dim=3; target: center fitness >= -0.5)" in out
    assert out.count("ranked by success rate, then median evaluations to target, then mean final\ncenter fitness") == 1
    assert "sphere (sphere:dim=3)" in out and "ranked by mean final center fitness" in out
    rows = read_results(tmp_path / "runs" / "experiments" / "tiny")
    best_sphere = max((r for r in rows if r["problem"] == "sphere"), key=lambda r: float(r["final_center"]))
    table = out[out.index("sphere (sphere:dim=3)"):]
    assert table.splitlines()[4].split()[:2] == ["1", best_sphere["strategy"]]
    assert all(len(line.rstrip()) <= 80 for line in out.splitlines())
    assert out.endswith("results: runs/experiments/tiny/results.csv\nsummary: runs/experiments/tiny/summary.md\n"
                        "plots: none\n")
    assert main(["compare", str(path)]) == 0
    again = capsys.readouterr()
    assert again.err == "experiment tiny: all 8 runs are finished; nothing to run, the report is rebuilt from them\n"
    assert "0/0" not in again.err and again.out == printed


def test_probability_of_improvement_counts_every_pair_and_a_miss_against_a_miss_half():
    from blackbox.lab.stats import probability_of_improvement

    inf = float("inf")
    point, low, high = probability_of_improvement([100, 200, inf], [150, inf, 50])
    assert point == pytest.approx(3.5 / 9) and 0.0 <= low <= point <= high <= 1.0
    assert probability_of_improvement([100, 200, inf], [150, inf, 50]) == (point, low, high)  # a fixed stream
    assert probability_of_improvement([1, 2], [5, 6]) == (1.0, 1.0, 1.0)
    assert probability_of_improvement([5, 6], [1, 2]) == (0.0, 0.0, 0.0)


def test_wilson_interval_matches_the_textbook_values():
    from blackbox.lab.stats import wilson_interval

    assert wilson_interval(1, 2) == pytest.approx((0.0945, 0.9055), abs=5e-5)
    assert wilson_interval(8, 10) == pytest.approx((0.4902, 0.9433), abs=5e-5)
    assert wilson_interval(0, 4)[0] == 0.0 and wilson_interval(5, 5)[1] == 1.0
