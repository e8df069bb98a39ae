"""Smoke tests of the peer benchmarks (benchmarks/run_all.py and its sections) on tiny settings.

They check that every section runs and reports what it measured, and that the report is assembled
from saved sections; they time nothing (speed targets are checked by the benchmarks themselves).
Peers that are not installed are skipped, as the benchmarks skip them.
"""

from __future__ import annotations

import importlib
import json
import math
import sys

import numpy as np
import pytest

from tests.helpers import ROOT
from tests.helpers.extras import import_or_skip

BENCHMARKS = ROOT / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    """The benchmark scripts, imported as modules (they are scripts, not a package)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield lambda name: importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_overhead_measures_ours_beside_the_floor(bench):
    peers_overhead = bench("peers_overhead")
    measured = peers_overhead.measure([1000], popsize=16, repeats=1, libraries=["blackbox"], log=lambda _: None)
    results = measured["results"]
    assert ("blackbox", "openai-es") in results and ("blackbox", "sep-cma-es") in results
    assert all(isinstance(v[1000], float) and v[1000] > 0 for v in results.values())
    text = peers_overhead.markdown(measured)
    assert "| floor | stream popsize x dim float32 |" in text and "| blackbox | ga |" in text
    assert "x floor)" in text


def test_overhead_skips_a_missing_peer_with_the_reason(bench, monkeypatch):
    peers_overhead = bench("peers_overhead")
    monkeypatch.setitem(peers_overhead.LIBRARY_MODULES, "nevergrad", "no_such_module_for_blackbox_tests")
    measured = peers_overhead.measure([1000], popsize=16, repeats=1, libraries=["nevergrad"], log=lambda _: None)
    assert measured["results"][("nevergrad", "DiagonalCMA")][1000] == "skipped: nevergrad is not installed"


def test_bbob_quality_runs_ours_and_pycma_on_equal_budgets(bench):
    import_or_skip("bench", "cocoex")
    import_or_skip("blackbox-cma", "cma")
    bbob = bench("bbob_quality")
    results = bbob.measure([2], [1, 8], 2, 30, libraries=["blackbox", "pycma"], ours=("openai-es", "cma-es"),
                           log=lambda _: None)
    assert set(results.losses) == {"blackbox openai-es", "blackbox cma-es", "pycma CMA-ES"}
    for per_function in results.losses.values():
        assert set(per_function) == {"2:1", "2:8"}
        assert all(len(v) == 2 and math.isfinite(min(v)) and min(v) >= 0 for v in per_function.values())
    text = bbob.markdown(results)
    assert "#### Dimension 2: median best loss f - f_opt after 60 evaluations" in text
    assert "- cma-es vs pycma:" in text and "pycma beats every strategy of ours on" in text
    again = bbob.from_json(json.loads(json.dumps(bbob.to_json(results))))
    assert again.losses == results.losses


def test_bbob_budget_counts_only_the_evaluations_within_it(bench):
    import_or_skip("bench", "cocoex")
    bbob = bench("bbob_quality")
    problem = bbob.bbob_problem(1, 2, 1)
    budget = bbob.Budget(problem, 3)
    far = np.full((2, 2), 4.0)
    budget.losses(far)
    at_optimum = np.vstack([far[0], problem.x_opt, problem.x_opt])
    budget.losses(at_optimum)  # only the first of these three rows is within the budget of 3
    assert budget.used == 5 and budget.best > 1.0 and not budget.left


def test_head_to_head_counts_only_clear_and_significant_losses(bench):
    bbob = bench("bbob_quality")
    results = bbob.Results([10], [1, 2, 3, 4], 5, 10, losses={
        "blackbox openai-es": {"10:1": [1.0] * 5, "10:2": [1e-9] * 5, "10:3": [5.0, 5.1, 5.2, 5.3, 5.4],
                               "10:4": [0.1, 9.0, 9.0, 9.0, 0.2]},
        "evosax Open_ES": {"10:1": [0.9] * 5, "10:2": [1e-12] * 5, "10:3": [2.0, 2.1, 2.2, 2.3, 2.4],
                           "10:4": [0.3, 0.4, 5.0, 6.0, 7.0]},
    })
    verdict = bbob.head_to_head(results, "blackbox openai-es", "evosax Open_ES")
    assert verdict["worse"] == ["f3 d=10 (5.2e+00 vs 2.2e+00, p=0.004)"]
    assert len(verdict["noise"]) == 1 and verdict["noise"][0].startswith("f4 d=10 (9.0e+00 vs 5.0e+00, p=")
    assert verdict["even"] == 3 and verdict["better"] == 0


def test_rank_sum_p_is_exact(bench):
    bbob = bench("bbob_quality")
    assert bbob.rank_sum_p([5, 6, 7], [1, 2, 3]) == 1 / 20  # the one split of 20 with the top rank sum
    assert bbob.rank_sum_p([1, 2, 3], [5, 6, 7]) == 1.0
    assert bbob.rank_sum_p([2, 2], [2, 2]) == 1.0  # all tied: nothing to see


def test_solve_summary_counts_an_unsolved_run_as_infinitely_slow(bench):
    peers_solve = bench("peers_solve")
    runs = [{"solved": True, "wall": 2.0, "steps": 100}, {"solved": False, "wall": 9.0, "steps": 900},
            {"solved": True, "wall": 1.0, "steps": 50}, {"error": "exit 1"}]
    summary = peers_solve.summarize(runs)
    assert summary["solved"] == 2 and summary["runs_ok"] == 3
    assert summary["wall_median"] == 2.0 and summary["wall_worst"] == math.inf and summary["steps_median"] == 100


def test_solve_reaches_the_goal_at_the_first_snapshot_that_scores_it(bench):
    peers_solve = bench("peers_solve")
    run = {"wall": 30.0, "steps": 3000, "curve": [[10.0, 1000, 5.0], [20.0, 2000, 50.0], [30.0, 3000, 40.0]]}
    peers_solve.reach(run, 45.0)
    assert run["solved"] and (run["wall"], run["steps"]) == (20.0, 2000)
    assert run["best_return"] == 50.0 and run["final_return"] == 40.0 and run["train_wall"] == 30.0
    rows = [{"library": "evotorch", "runs": [run, {**run, "curve": [[1.0, 10, 30.0]]}]}]
    assert peers_solve.evotorch_return(rows) == 40.0  # the median over seeds of each run's best


def test_solve_cartpole_runs_our_snes_in_a_fresh_process(bench):
    import_or_skip("gym", "gymnasium")
    peers_solve = bench("peers_solve")
    task = peers_solve.Task(**{**peers_solve.CARTPOLE.as_dict(), "max_seconds": 60.0, "max_generations": 3})
    result = peers_solve.measure(task, 1, libraries=["blackbox"], labels=["snes"], log=lambda _: None)
    (row,) = result["contenders"]
    (run,) = row["runs"]
    assert "error" not in run, run
    assert run["generations"] <= 3 and run["steps"] > 0 and run["wall"] > 0
    assert "| blackbox | snes, serial (1 core) |" in peers_solve.markdown(result)


def test_run_all_quick_section_writes_the_report(bench, tmp_path):
    run_all = bench("run_all")
    out, report = tmp_path / "results", tmp_path / "BENCHMARKS.md"
    assert run_all.main(["--quick", "--only", "executors", "--out", str(out), "--markdown", str(report)]) == 0
    saved = json.loads((out / "executors.json").read_text())
    assert saved["quick"] and saved["command"].startswith("python benchmarks/run_all.py --quick --only executors")
    assert [r["same_center"] for r in saved["data"]["speedup"]] == [True, True]
    ceiling = saved["data"]["ceiling"]
    assert ceiling["copies"] == 2 and ceiling["alone"] > 0 and ceiling["together"] > 0
    assert ceiling["speedup"] == pytest.approx(2 * ceiling["alone"] / ceiling["together"])
    text = report.read_text()
    assert "Machine ceiling: the same serial run alone takes" in text
    assert "## 1. Executors: dispatch overhead and speed-up" in text
    assert "> **Preliminary:** executors measured with `--quick`" in text
    assert "| executors: parallel runs give the serial run's center bit for bit |" in text
    assert "Not measured yet: `overhead` (`python benchmarks/run_all.py --only overhead`)" in text


def test_assemble_merges_saved_sections_and_flags_missed_targets(bench, tmp_path):
    run_all = bench("run_all")
    record = {"section": "solve-cartpole", "title": run_all.TITLES["solve-cartpole"], "quick": False,
              "command": "python benchmarks/run_all.py --only solve-cartpole", "date": "2026-01-01 00:00 UTC",
              "seconds": 12.0, "machine": "test machine", "load": "0.10 0.10 0.10 -> 0.20 0.10 0.10",
              "versions": {"numpy": "2.0", "evotorch": "not installed"}, "markdown": "| a | b |",
              "targets": [{"target": "CartPole 3x", "measured": "2.0x", "met": False}], "plots": []}
    (tmp_path / "solve-cartpole.json").write_text(json.dumps(record))
    text = run_all.assemble(tmp_path, tmp_path / "B.md")
    assert "| CartPole 3x | 2.0x | **no** |" in text
    assert "## 1. Solving CartPole-v1 against EvoTorch" in text and "Versions: numpy 2.0." in text
    assert "Preliminary" not in text and "Loaded machine" not in text


def test_before_after_reports_a_missing_baseline(bench, tmp_path):
    before_after = bench("before_after")
    reason = before_after.extract_baseline("0" * 40, tmp_path)
    assert reason is not None and ("git archive" in reason or "git is not installed" in reason)
    assert before_after.markdown({"baseline": "x", "skipped": reason, "rows": []}) == f"Skipped: {reason}."


def test_rollout_cost_reports_paired_rounds_with_median_ratios_iqr_and_load(bench, capsys):
    import_or_skip("gym", "gymnasium")
    rollout_cost = bench("rollout_cost")
    measured = rollout_cost.measure("Pendulum-v1", popsize=3, rounds=2, steps=300)
    assert set(measured["rates"]) == {"raw", "lockstep", "linear", "mlp", "replay linear", "replay mlp"}
    assert all(len(v) == 2 and min(v) > 0 for v in measured["rates"].values())
    assert set(measured["groups"]) == {"linear", "mlp"} and all(1 <= g <= 64 for g in measured["groups"].values())
    forced = rollout_cost.measure("Pendulum-v1", popsize=3, rounds=1, steps=200, groups=[1, 4], replay=False)
    assert forced["groups"] == {"linear@1": 1, "linear@4": 4, "mlp@1": 1, "mlp@4": 4}
    assert set(forced["rates"]) == {"raw", "lockstep", "linear@1", "linear@4", "mlp@1", "mlp@4"}
    assert rollout_cost.main(["--envs", "Pendulum-v1", "--popsize", "3", "--rounds", "1", "--steps", "200",
                              "--groups", "2"]) == 0
    out = capsys.readouterr().out
    assert "load average at start:" in out and "load average at end:" in out and "paired rounds" in out
    assert out.splitlines()[1].startswith("commit ")
    assert out.count("| Pendulum-v1 | ") == 6 and "| Pendulum-v1 | mlp@2 | 2 | " in out
    assert "| Pendulum-v1 | lockstep | 4 | " in out


def test_rollout_cost_times_the_engine_alone_per_group_size(bench, capsys):
    import_or_skip("gym", "gymnasium")
    rollout_cost = bench("rollout_cost")
    cost = rollout_cost.engine_cost("Pendulum-v1", [1, 4], steps=20, repeats=2)
    assert set(cost) == {("linear", 1), ("linear", 4), ("mlp", 1), ("mlp", 4)} and min(cost.values()) > 0
    assert rollout_cost.main(["--envs", "Pendulum-v1", "--engine", "--groups", "2"]) == 0
    out = capsys.readouterr().out
    assert "| Pendulum-v1 | linear | " in out and "| Pendulum-v1 | mlp | " in out and "| task | policy | group 2 |" in out


def test_two_workers_pairs_a_loky_generation_with_two_raw_loops(bench, capsys):
    import_or_skip("gym", "gymnasium")
    pytest.importorskip("psutil")
    two_workers = bench("two_workers")
    assert two_workers.main(["--env", "Pendulum-v1", "--rounds", "1", "--steps", "2000"]) == 0
    out = capsys.readouterr().out
    assert "load average at start:" in out and "load average at end:" in out and "round 0: wall " in out
    row = next(line for line in out.splitlines() if line.startswith("| Pendulum-v1, linear | "))
    assert row.count("x [") == 2  # the wall and CPU ratios with their quartiles


def test_rollout_cost_replays_the_very_episodes_the_policy_played(bench):
    import_or_skip("gym", "gymnasium")
    rollout_cost = bench("rollout_cost")
    ours = rollout_cost.Ours("Pendulum-v1", {"policy": "linear"}, popsize=3, slots=1)
    replay = rollout_cost.Replay("Pendulum-v1", ours, episodes=2)
    assert [seed for seed, _ in replay.episodes] == [500_000, 500_001]
    assert [len(actions) for _, actions in replay.episodes] == [200, 200]  # Pendulum's time limit
    played = ours.problem.rollouts(ours.params[:2], np.array([[500_000], [500_001]]))
    assert played.lengths.tolist() == [[200], [200]]
    for (seed, actions), want in zip(replay.episodes, played.returns[:, 0]):  # the same actions: the same return
        replay.env.reset(seed=seed)
        assert sum(float(replay.env.step(a)[1]) for a in actions) == pytest.approx(want, rel=1e-12)
    assert replay.run(450) > 0 and (replay.episode, replay.k) == (0, 50)  # 200 + 200 + 50 steps: back to the first
    ours.close()
    replay.close()


def test_rollout_cost_takes_the_median_of_per_round_ratios_not_the_ratio_of_medians(bench):
    rollout_cost = bench("rollout_cost")
    rates = {"raw": np.array([10.0, 20.0, 40.0, 80.0]), "lockstep": np.array([5.0, 10.0, 20.0, 40.0]),
             "linear": np.array([9.0, 18.0, 36.0, 72.0]), "mlp": np.array([80.0, 40.0, 20.0, 10.0])}
    ratios = rollout_cost.summary(rates)
    assert ratios["linear/raw"] == (0.9, 0.9, 0.9)  # every round 0.9x, whatever the drift between rounds
    assert ratios["lockstep/raw"] == (0.5, 0.5, 0.5) and ratios["linear/lockstep"] == (1.8, 1.8, 1.8)
    assert ratios["mlp/raw"] == pytest.approx((1.25, 0.40625, 3.5))  # median, q25, q75 of 8, 2, 0.5, 0.125
    assert set(ratios) == {"lockstep/raw", "linear/raw", "mlp/raw", "linear/lockstep", "mlp/lockstep"}
    rates["replay mlp"] = rates["raw"] / 2
    assert rollout_cost.summary(rates)["mlp/replay mlp"] == pytest.approx((2.5, 0.8125, 7.0))
    assert rollout_cost.summary(rates)["replay mlp/raw"] == (0.5, 0.5, 0.5)
