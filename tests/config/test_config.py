"""``blackbox run --config``: TOML files, flags over files, exact errors with line numbers, reproduction."""

import json
import textwrap

import pytest

from blackbox.cli import main
from blackbox.config.run import key_lines, run_config
from blackbox.driver.logs import read_csv_records, read_jsonl_records
from blackbox.errors import ConfigError
from blackbox.files import load_npz

TIMINGS = ("time", "generation_time")

BASE = """\
seed = 3

[strategy]
name = "nes"
popsize = 20
sigma = 0.1

[problem]
name = "sphere"
dim = 4

[stop]
generations = 8
"""


def write(tmp_path, text, name="run.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def without_timings(records):
    return [{k: v for k, v in r.items() if k not in TIMINGS} for r in records]


def run_cli(args, capsys):
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("edit,message", [
    (("sigma = 0.1", "sigmaa = 0.1"),
     "run.toml:6: unknown key 'sigmaa' in [strategy]: strategy 'nes' has no option 'sigmaa'. Did you mean 'sigma'?"),
    (("generations = 8", "generation = 8"),
     "run.toml:13: unknown key 'generation' in [stop]. Did you mean 'generations'?"),
    (("seed = 3", "sed = 3"), "run.toml:1: unknown key 'sed'. Did you mean 'seed'?"),
    (("popsize = 20", 'popsize = "20"'), "run.toml:5: [strategy] popsize must be an integer (strategy 'nes'), got '20'"),
    (("generations = 8", 'generations = "8"'), "run.toml:13: [stop] generations must be an integer, got '8'"),
    (("seed = 3", "seed = -1"), "run.toml:1: seed must be >= 0, got -1"),
    (("seed = 3", "seed = 3\nevaluate_center = 1"), "run.toml:2: evaluate_center must be true or false, got 1"),
    (("generations = 8", "generations = 0"), "run.toml:13: [stop] generations must be >= 1, got 0"),
    (('name = "nes"', 'name = "nse"'), "run.toml:4: unknown strategy 'nse'. Did you mean 'nes'?"),
    (("dim = 4", "dim = 4.5"), "run.toml:10: [problem] dim must be an integer (problem 'sphere'), got 4.5"),
    (("[stop]\ngenerations = 8", "[stop]\ntarget = 1.0"),
     "run.toml:12: the run has no budget and could never stop: give one of [stop] generations"),
    (("generations = 8", "generations = 8\ngoal_generations = 3"), "run.toml:14: [stop] goal_generations needs a goal"),
    (('name = "nes"', 'name = "nes"\nspec = "nes"'), "run.toml:3: [strategy] has both name and spec"),
    (("sigma = 0.1", "seed = 4"), "run.toml:6: seed is the run's seed (top-level seed, --seed); do not set it"),
    (("[problem]", "[problem]]"), "run.toml: not valid TOML"),
])
def test_config_errors_name_the_line(tmp_path, capsys, edit, message):
    path = write(tmp_path, BASE.replace(*edit))
    code, _, err = run_cli(["run", "--config", str(path), "--out", str(tmp_path / "r"), "--quiet"], capsys)
    assert code == 2
    assert message in err
    assert not (tmp_path / "r").exists()


def test_inline_table_and_spec_string_components(tmp_path, capsys):
    path = write(tmp_path, """\
        strategy = "nes:popsize=20,sigmaa=0.2"
        problem = { name = "sphere", dimm = 4 }
        [stop]
        generations = 2
        """)
    code, _, err = run_cli(["run", "--config", str(path), "--quiet", "--out", str(tmp_path / "r")], capsys)
    assert code == 2 and "run.toml:1: unknown key 'sigmaa' in [strategy]" in err
    path.write_text(path.read_text().replace("sigmaa", "sigma"))
    code, _, err = run_cli(["run", "--config", str(path), "--quiet", "--out", str(tmp_path / "r")], capsys)
    assert code == 2 and "run.toml:2: unknown key 'dimm' in [problem]: problem 'sphere' has no option 'dimm'" in err


def test_missing_config_file(tmp_path, capsys):
    code, _, err = run_cli(["run", "--config", str(tmp_path / "nope.toml"), "--quiet"], capsys)
    assert code == 2 and f"config file {tmp_path / 'nope.toml'} does not exist" in err


def test_flags_override_the_file_key_by_key(tmp_path, capsys):
    path = write(tmp_path, BASE)
    out = tmp_path / "r"
    code, stdout, _ = run_cli(["run", "--config", str(path), "--out", str(out), "--json", "--generations", "5",
                               "--set", "lr=0.05", "--set", "problem.dim=3", "--strategy", "nes:popsize=10",
                               "--seed", "7", "--no-plot", "--checkpoint-every", "2"], capsys)
    assert code == 0
    summary = json.loads(stdout)
    assert summary["generations"] == 5 and summary["seed"] == 7
    from blackbox.config.run import load_toml

    written = load_toml(out / "config.toml").data
    assert written["seed"] == 7
    assert written["strategy"]["name"] == "nes"
    assert written["strategy"]["popsize"] == 10 and written["strategy"]["sigma"] == 0.1  # file's sigma kept
    assert written["strategy"]["lr"] == 0.05
    assert written["problem"] == {"name": "sphere", "dim": 3}
    assert written["stop"] == {"generations": 5}
    assert written["checkpoint"] == {"every": 2, "keep": 3}
    assert written["log"] == {"tensorboard": False, "plot": False}
    assert "x0" not in written["strategy"] and "dim" not in written["strategy"]


def test_another_strategy_name_replaces_the_files_options(tmp_path, capsys):
    path = write(tmp_path, BASE)
    out = tmp_path / "r"
    code, _, err = run_cli(["run", "--config", str(path), "--out", str(out), "--quiet", "--strategy", "ga",
                            "--no-plot"], capsys)
    assert code == 0, err
    from blackbox.config.run import load_toml

    strategy = load_toml(out / "config.toml").data["strategy"]
    assert strategy["name"] == "ga" and strategy["popsize"] == 64 and strategy["sigma"] == 0.02


def test_resolved_config_reproduces_the_run(tmp_path, capsys):
    path = write(tmp_path, BASE.replace('name = "sphere"', 'name = "quadratic"') + "goal = -0.5\n")
    first, second = tmp_path / "first", tmp_path / "second"
    assert main(["run", "--config", str(path), "--out", str(first), "--quiet", "--no-plot"]) == 0
    assert main(["run", "--config", str(first / "config.toml"), "--out", str(second), "--quiet", "--no-plot"]) == 0
    a, b = read_csv_records(first / "records.csv"), read_csv_records(second / "records.csv")
    assert len(a) == 8 and without_timings(a) == without_timings(b)
    assert (load_npz(first / "solution.npz")["center"] == load_npz(second / "solution.npz")["center"]).all()
    assert without_timings(read_jsonl_records(first / "records.jsonl")) == without_timings(
        read_jsonl_records(second / "records.jsonl"))
    assert (first / "config.toml").read_text() == (second / "config.toml").read_text()


def test_refuses_a_directory_holding_a_different_run(tmp_path, capsys):
    path = write(tmp_path, BASE)
    out = tmp_path / "r"
    assert main(["run", "--config", str(path), "--out", str(out), "--quiet", "--no-plot"]) == 0
    code, _, err = run_cli(["run", "--config", str(path), "--out", str(out), "--quiet", "--set", "sigma=0.3"], capsys)
    assert code == 2
    assert f"{out} already holds a different run (strategy.sigma: 0.1 there, 0.3 now); pass --overwrite" in err
    code, _, err = run_cli(["run", "--config", str(path), "--out", str(out), "--quiet"], capsys)
    assert code == 2 and f"{out} already holds a run; pass --overwrite to replace it, choose another --out" in err
    (out / "result.json").unlink()  # as if it had been killed
    code, _, err = run_cli(["run", "--config", str(path), "--out", str(out), "--quiet"], capsys)
    assert code == 2 and f"or continue it with `blackbox resume {out}`" in err
    assert main(["run", "--config", str(path), "--out", str(out), "--quiet", "--no-plot", "--overwrite",
                 "--set", "sigma=0.3"]) == 0


def test_a_steps_budget_on_a_problem_without_steps_is_refused(tmp_path, capsys):
    code, _, err = run_cli(["run", "--problem", "sphere:dim=2", "--max-steps", "1000", "--quiet",
                            "--out", str(tmp_path / "r")], capsys)
    assert code == 2
    assert ("max_steps=1000 can never be reached: the problem took no environment steps in generation 1 "
            "(it does not count steps)") in err


def test_json_prints_exactly_one_object(tmp_path, capsys):
    code, stdout, _ = run_cli(["run", "--problem", "sphere:dim=2", "--generations", "3", "--json",
                               "--out", str(tmp_path / "r"), "--no-plot"], capsys)
    assert code == 0
    summary = json.loads(stdout)
    assert stdout.strip().count("\n") == 0
    assert summary["finished"] is True and summary["stop_reason"] == "generations 3 >= 3"


def test_run_config_from_python_checks_like_a_file():
    config = run_config("nes:popsize=10", "sphere:dim=3", stop={"generations": 4}, sigma=0.2)
    assert config.strategy.options["sigma"] == 0.2 and config.problem.options["dim"] == 3
    with pytest.raises(ConfigError, match="has no option 'sigmaa'"):
        run_config("nes", "sphere", stop={"generations": 4}, sigmaa=0.2)
    with pytest.raises(ConfigError, match="could never stop"):
        run_config("nes", "sphere")


def test_key_lines_reads_tables_dotted_quoted_and_inline_keys():
    text = textwrap.dedent('''\
        seed = 1
        # a comment
        [strategy]
        name = "nes"
        "quoted key" = 2
        notes = """
        x = 1
        """
        a.b = 3
        [problem]
        inline = { p = 1, q = 2 }
        [[runs]]
        ''')
    lines = key_lines(text)
    assert lines[("seed",)] == 1
    assert lines[("strategy",)] == 3 and lines[("strategy", "name")] == 4
    assert lines[("strategy", "quoted key")] == 5
    assert ("strategy", "x") not in lines  # inside a multi-line string
    assert lines[("strategy", "a", "b")] == 9
    assert lines[("problem", "inline", "q")] == 11
    assert lines[("runs",)] == 12


def test_out_from_the_file_and_default_out(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, 'out = "runs/from-file"\n' + BASE)
    assert main(["run", "--config", str(path), "--quiet", "--no-plot"]) == 0
    assert (tmp_path / "runs" / "from-file" / "records.csv").exists()
    assert "out" not in (tmp_path / "runs" / "from-file" / "config.toml").read_text()
    assert main(["run", "--config", str(path), "--quiet", "--no-plot", "--out", "elsewhere"]) == 0
    assert (tmp_path / "elsewhere" / "records.csv").exists()
    assert main(["run", "--problem", "sphere:dim=2", "--generations", "2", "--quiet", "--no-plot"]) == 0
    assert [p.name.startswith("openai-es-sphere-") for p in (tmp_path / "runs").iterdir() if p.name != "from-file"] == [True]
