"""ES against backpropagation: the comparison arithmetic, the baseline, and ``blackbox contrast``."""

import json

import numpy as np
import pytest

from blackbox.errors import ConfigError
from blackbox.lab.contrast.curves import Curve, EvalSchedule, compare
from tests.helpers.extras import reason


def curve(method, points):
    c = Curve(method=method, unit="step", pass_kind="forward")
    for i, (t, p, a) in enumerate(points):
        c.add(i, t, p, a, 1.0 - a)
    return c


def test_schedule_is_dense_then_geometric():
    schedule = EvalSchedule(dense=3, growth=1.5)
    last, due = 0, []
    for i in range(1, 30):
        if schedule.due(i, last):
            due.append(i)
            last = i
    assert due == [1, 2, 3, 5, 8, 12, 18, 27]
    with pytest.raises(ConfigError, match="growth must be > 1"):
        EvalSchedule(growth=1.0)


def test_compare_at_the_target_when_both_reach_it():
    es = curve("es", [(0, 0, 0.1), (1.0, 1000, 0.5), (2.0, 2000, 0.91), (4.0, 4000, 0.96)])
    bp = curve("bp", [(0, 0, 0.1), (0.01, 10, 0.6), (0.05, 50, 0.97)])
    c = compare(es, bp, target=0.95, milestones=(0.5, 0.9))
    assert c.level == 0.95 and c.level_reason == "target reached by both"
    assert (c.es_time, c.bp_time, c.es_passes, c.bp_passes) == (4.0, 0.05, 4000, 50)
    assert c.time_ratio == pytest.approx(80.0) and c.pass_ratio == pytest.approx(80.0)
    assert [m["accuracy"] for m in c.milestones] == [0.5, 0.9, 0.95]
    assert c.milestones[0]["time_ratio"] == pytest.approx(1.0 / 0.01)
    assert c.milestones[1]["es_time"] == 2.0 and c.milestones[1]["bp_time"] == 0.05


def test_compare_at_the_lower_best_accuracy_otherwise():
    es = curve("es", [(0, 0, 0.1), (1.0, 100, 0.7), (3.0, 300, 0.85), (5.0, 500, 0.8)])
    bp = curve("bp", [(0, 0, 0.1), (0.1, 10, 0.9)])
    c = compare(es, bp, target=0.95, milestones=(0.5, 0.8, 0.9))
    assert c.level == 0.85 and c.level_reason.startswith("best accuracy of ES")
    assert c.time_ratio == pytest.approx(30.0) and c.pass_ratio == pytest.approx(30.0)
    assert [m["accuracy"] for m in c.milestones] == [0.5, 0.8, 0.85]
    same = compare(curve("es", [(0, 0, 0.3)]), curve("bp", [(0, 0, 0.3), (1, 5, 0.2)]))
    assert same.level == 0.3 and same.time_ratio is None  # only the untrained start reaches it


torch = pytest.importorskip("torch", reason=reason("mnist", "torch"))
pytest.importorskip("sklearn", reason=reason("mnist", "sklearn"))
pytest.importorskip("matplotlib", reason=reason("mnist", "matplotlib"))

import blackbox as bb  # noqa: E402
from blackbox.cli import main  # noqa: E402
from blackbox.lab.contrast import BackpropConfig, train_backprop  # noqa: E402


@pytest.fixture(autouse=True)
def no_mnist_dir(monkeypatch):
    monkeypatch.delenv("BLACKBOX_MNIST_DIR", raising=False)


def test_backprop_baseline_learns_and_counts_passes():
    problem = bb.make_problem("mnist")
    x0 = problem.initial_params(np.random.default_rng(0))
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        result = train_backprop(problem, x0, BackpropConfig("sgd", 0.1, 32), max_steps=300, seed=0)
    finally:
        torch.set_num_threads(previous)
    assert result.accuracies[0] == pytest.approx(problem.split_score(x0)["accuracy"])
    assert result.best_accuracy > 0.9
    assert result.iterations[-1] == 300 and result.passes[-1] == 300 * 32
    assert all(p == i * 32 for i, p in zip(result.iterations, result.passes))
    assert result.stop_reason == "steps 300 >= 300"
    assert np.all(np.diff(result.times) >= 0)
    with pytest.raises(ConfigError, match="optimizer must be one of 'adam', 'sgd', got 'lbfgs'"):
        BackpropConfig("lbfgs")


def test_contrast_command_reports_consistent_figures(tmp_path, capsys):
    out = tmp_path / "c"
    code = main(["contrast", "mnist:hidden=[16]", "--max-time", "1.5", "--target", "0.8", "--set", "popsize=20",
                 "--out", str(out), "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert "NOT MNIST" in report["data"] and report["problem"]["data"]["kind"] == "digits"
    es, bp, c = report["es"], report["backprop"], report["comparison"]
    assert es["config"]["name"] == "openai-es" and es["config"]["popsize"] == 20
    assert es["config"]["sigma"] == 0.05  # this job's tuned default
    assert bp["config"] == {"optimizer": "adam", "lr": 0.01, "batch_size": 64}
    # passes: ES = generations x popsize x minibatch (forward); backprop = steps x batch (forward+backward)
    assert es["curve"]["passes"] == [g * 20 * 256 for g in es["curve"]["iterations"]]
    assert bp["curve"]["passes"] == [s * 64 for s in bp["curve"]["iterations"]]
    assert es["curve"]["pass_kind"] == "forward" and bp["curve"]["pass_kind"] == "forward+backward"
    for side in (es, bp):
        assert side["curve"]["times"][0] == 0 and side["curve"]["accuracies"][0] == es["curve"]["accuracies"][0]
        assert np.all(np.diff(side["curve"]["times"]) >= 0)
        assert side["final"]["accuracy"] == side["curve"]["accuracies"][-1]
    level = c["level"]
    for side, key in ((es, "es"), (bp, "bp")):
        accuracies = side["curve"]["accuracies"]
        if max(accuracies) >= level:
            first = next(i for i, a in enumerate(accuracies) if a >= level)
            assert c[f"{key}_time"] == side["curve"]["times"][first]
            assert c[f"{key}_passes"] == side["curve"]["passes"][first]
    assert level == (0.8 if min(max(es["curve"]["accuracies"]), max(bp["curve"]["accuracies"])) >= 0.8
                     else min(max(es["curve"]["accuracies"]), max(bp["curve"]["accuracies"])))
    if c["time_ratio"] is not None:
        assert c["time_ratio"] == pytest.approx(c["es_time"] / c["bp_time"])
        assert c["pass_ratio"] == pytest.approx(c["es_passes"] / c["bp_passes"])
        assert "slowdown ratio of ES to reach" in report["slowdown"] and "1,000 times slower" in report["slowdown"]
    assert report["blog"]["slowdown"] == 1000
    assert (out / "contrast.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((out / "contrast.json").read_text())["comparison"] == c
    assert main(["contrast", "--max-time", "0.1", "--out", str(out), "--no-plot"]) == 2
    assert "already holds contrast.json, contrast.png; pass --overwrite" in capsys.readouterr().err


def test_contrast_text_output(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    code = main(["contrast", "mnist:hidden=[]", "--max-time", "0.5", "--no-target", "--set", "popsize=10",
                 "--optimizer", "sgd", "--lr", "0.1", "--out", str(tmp_path), "--no-plot"])
    assert code == 0
    text = capsys.readouterr().out
    assert "NOT MNIST" in text and "ES (openai-es)" in text and "backprop (sgd, lr 0.1, batch 64" in text
    assert "slowdown ratio" in text and "1,000 times slower" in text
    assert not (tmp_path / "contrast.png").exists()
    report = json.loads((tmp_path / "contrast.json").read_text())
    assert report["settings"]["target"] is None and report["settings"]["threads"] == 1
    assert report["backprop"]["curve"]["stop_reason"].startswith("training time")


@pytest.mark.parametrize("args,message", [
    (["quadratic"], "contrast needs a supervised problem with a torch network and data (such as 'mnist'); problem 'quadratic' lacks"),
    (["--set", "seed=3"], "seed is set by the contrast"),
    (["--target", "1.5"], "target must be <= 1.0, got 1.5"),
    (["--strategy", "openai_es"], "unknown strategy 'openai_es'. Did you mean 'openai-es'?"),
    (["--lr", "-1"], "lr must be > 0, got -1.0"),
    (["--eval-growth", "1"], "growth must be > 1"),
])
def test_contrast_bad_input(tmp_path, capsys, args, message):
    assert main(["contrast", "--max-time", "0.2", "--out", str(tmp_path), "--no-plot"] + args) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_done_when_both_pass_90_percent_with_the_default_budget(tmp_path, capsys):
    """The issue's acceptance run: the default command on the offline digits."""
    assert main(["contrast", "mnist", "--out", str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert max(report["es"]["curve"]["accuracies"]) >= 0.9
    assert max(report["backprop"]["curve"]["accuracies"]) >= 0.9
    c = report["comparison"]
    assert c["level"] >= 0.9 and c["time_ratio"] > 1 and c["pass_ratio"] > 1
    print(report["slowdown"])
