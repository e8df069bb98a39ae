"""``blackbox run`` and ``blackbox list`` end to end, in process and as a real command."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from blackbox.cli import main
from blackbox.driver.logs import read_csv_records
from blackbox.files import load_npz
from tests.helpers import subprocess_env
from tests.helpers.extras import missing


def test_run_writes_a_run_directory(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["run", "--strategy", "openai-es", "--problem", "quadratic:dim=5", "--generations", "30",
                 "--seed", "3", "--out", str(out), "--set", "sigma=0.05", "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["generations"] == 30 and summary["run_dir"] == str(out)
    records = read_csv_records(out / "records.csv")
    assert [r["generation"] for r in records] == list(range(1, 31))
    solution = load_npz(out / "solution.npz")
    assert solution["center"].shape == (5,)
    if missing("matplotlib"):  # the curve comes with the plot extra; without it a run writes none
        assert not (out / "curve.png").exists()
    else:
        assert (out / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "records.jsonl").exists() and (out / "checkpoints" / "gen-000030").is_dir()
    config = (out / "config.toml").read_text()
    assert 'name = "openai-es"' in config and "sigma = 0.05" in config and "seed = 3" in config


def test_same_seed_same_records(tmp_path):
    args = ["run", "--strategy", "nes", "--problem", "sphere:dim=4", "--generations", "10", "--quiet"]
    main(args + ["--out", str(tmp_path / "a")])
    main(args + ["--out", str(tmp_path / "b")])
    a = load_npz(tmp_path / "a" / "solution.npz")["center"]
    b = load_npz(tmp_path / "b" / "solution.npz")["center"]
    assert np.array_equal(a, b)


def test_refuses_existing_run_unless_overwrite(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["run", "--problem", "sphere:dim=2", "--generations", "2", "--quiet", "--out", str(out)]
    assert main(args) == 0
    assert main(args) == 2
    assert "already holds a run; pass --overwrite" in capsys.readouterr().err
    assert main(args + ["--overwrite"]) == 0


@pytest.mark.parametrize("args,message", [
    (["--strategy", "openai_es"], "unknown strategy 'openai_es'. Did you mean 'openai-es'?"),
    (["--set", "sigmaa=0.1"], "has no option 'sigmaa'. Did you mean 'sigma'?"),
    (["--problem", "quadratic:dim="], "option 'dim' has no value"),
])
def test_bad_input_exits_2_with_message(tmp_path, capsys, args, message):
    code = main(["run", "--generations", "2", "--quiet", "--out", str(tmp_path / "x")] + args)
    assert code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("args,line", [
    (["run", "--gens", "3"], "blackbox run: error: unknown option --gens. Did you mean --generations?"),
    (["run", "--genrations=3"], "blackbox run: error: unknown option --genrations. Did you mean --generations?"),
    (["run", "--max-evals", "9"], "blackbox run: error: unknown option --max-evals. Did you mean --max-evaluations?"),
    (["resume", "r", "--chekpoint-every", "2"],
     "blackbox resume: error: unknown option --chekpoint-every. Did you mean --checkpoint-every?"),
    (["list", "--jsno"], "blackbox list: error: unknown option --jsno. Did you mean --json?"),
    (["rn"], "blackbox: error: COMMAND 'rn' is not one of run, list, check, new, contrast, resume, compare, play. "
             "Did you mean run?"),
    (["run", "--zzzzzz"], "blackbox run: error: unknown option --zzzzzz (see blackbox run --help)"),
    (["run", "extra"], "blackbox run: error: unexpected argument 'extra' (see blackbox run --help)"),
    (["run", "--generations", "x"], "blackbox run: error: argument --generations: invalid int value: 'x' "
                                    "(see blackbox run --help)"),
    ([], "blackbox: error: the following arguments are required: COMMAND (see blackbox --help)"),
])
def test_a_usage_error_is_one_line_with_the_nearest_spelling_and_exit_2(capsys, args, line):
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert captured.err == line + "\n" and captured.out == ""


def test_list_json(capsys):
    assert main(["list", "strategies", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = {row["name"]: row for row in rows}
    assert {"openai-es", "nes", "ga"} <= set(names)
    assert names["openai-es"]["distribution"] == "blackbox-es" and names["openai-es"]["status"] == "ok"


def test_list_at_80_columns_wraps_words_whole_and_shows_no_markup(capsys, monkeypatch):
    from blackbox.cli.list import plain_text

    monkeypatch.setenv("COLUMNS", "80")
    assert main(["list"]) == 0
    table = capsys.readouterr().out
    assert main(["list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    lines = [line.rstrip() for line in table.splitlines()]
    assert all(len(line) <= 80 for line in lines) and "`" not in table and ":class:" not in table
    assert [line for line in lines if line in ("strategies", "problems", "executors")] == [
        "strategies", "problems", "executors"]
    words = table.split()
    for row in rows:
        assert row["name"] in words and f"{row['distribution']}" in words
        # a plugin that cannot load (an extra missing) shows its status where the description goes
        description = (plain_text(row["description"]) if row["status"] == "ok" else row["status"]).split()
        start = words.index(description[0], words.index(row["name"]))
        assert words[start:start + len(description)] == description  # every word whole, in order
    quadratic = next(r for r in rows if r["name"] == "quadratic")
    assert quadratic["description"].startswith("``-sum((x - solution)^2)``")  # the JSON keeps the docstring
    assert plain_text(":class:`~blackbox.core.problem.Problem` and ``x`` or `y`") == "Problem and x or y"


def test_console_script_runs(tmp_path):
    done = subprocess.run([sys.executable, "-m", "blackbox", "run", "--generations", "3", "--quiet",
                           "--out", str(tmp_path / "r")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "r" / "records.csv").exists()


def test_top_level_help_describes_contrast_with_both_baselines(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert ("contrast ES against gradient methods, side by side: backpropagation on mnist (contrast [mnist]) "
            "or PPO on a Gymnasium task (contrast rl TASK)") in text


@pytest.mark.parametrize("executor", ["serial", "loky:workers=2"])
def test_a_quick_problem_on_worker_processes_says_why_it_was_slow(tmp_path, executor):
    """Starting loky's workers takes most of a quick run (2.10 of 2.48 s against serial's 0.17 s): a note says so.
    In a process of its own: loky reuses the workers an earlier test of this process left running."""
    done = subprocess.run([sys.executable, "-c", "import sys; from blackbox.cli import main; sys.exit(main())", "run",
                           "--problem", "quadratic:dim=10", "--generations", "20", "--executor", executor,
                           "--no-plot", "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, env=subprocess_env(), timeout=600)
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if line.startswith("note: ")]
    if executor == "serial":
        assert notes == []
    else:
        assert len(notes) == 1 and re.fullmatch(
            r"note: the first generation took \d+\.\d\d s of the \d+\.\d\d s inside generations, the others \d+ ms "
            r"each on average: most of it was starting 2 loky workers; on a problem this quick, --executor serial "
            r"is faster", notes[0]), notes
