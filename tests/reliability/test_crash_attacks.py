"""One clear line, never a traceback (issue 16): every attack that escaped as a traceback, tried
through the command line or the Python API, ends as one ``BlackboxError`` line (exit status 2) or
exception. Each attack counts for ``benchmarks/reliability_figures.py``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import blackbox as bb
from blackbox.cli import main
from blackbox.driver.loop import Run
from blackbox.driver.stop import GoalHeld
from blackbox.registry.plugins import problems
from tests.helpers import subprocess_env
from tests.helpers.crash_problems import BAD_OUTPUTS, Misbehaves
from tests.helpers.extras import requires
from tests.reliability.helpers import note
from tests.reliability.test_untrusted_files import arrays_of, forge, npz_bytes, run_dir  # noqa: F401 - a fixture

COUNTS = {"tried": 0, "clean": 0}


def teardown_module(module):
    note("crash attacks: one clear line, never a traceback", inputs=COUNTS["tried"], refused=COUNTS["clean"],
         uncaught=COUNTS["tried"] - COUNTS["clean"])


def one_line(status: int, err: str, command: str, message: str) -> None:
    """Count an attack on the command line; it must end with status 2 and one error line matching ``message``."""
    COUNTS["tried"] += 1
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and "Traceback" not in err, f"status {status}:\n{err}"
    assert lines[0].startswith(f"blackbox {command}: error: "), err
    assert re.search(message, lines[0]), lines[0]
    COUNTS["clean"] += 1


def refused(call, message: str, error: type = bb.BlackboxError) -> None:
    """Count an attack through the API; it must raise ``error`` matching ``message``."""
    COUNTS["tried"] += 1
    with pytest.raises(error, match=message):
        call()
    COUNTS["clean"] += 1


# -- config files and output folders ----------------------------------------------------------------
def _deep(path: Path) -> Path:
    path.write_text("a = " + "[" * 3000 + "]" * 3000 + "\n")
    return path


def _digits(path: Path) -> Path:
    path.write_text("seed = 1" + "0" * 5000 + "\n")
    return path


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _huge(path: Path) -> Path:
    with open(path, "wb") as handle:
        handle.truncate(20 * 2**20)  # 20 MB of nothing, written in no time
    return path


CONFIGS = {
    "nested-3000-levels": (_deep, "not valid TOML: its tables or arrays are nested too deeply"),
    "5000-digit-integer": (_digits, "not valid TOML: Exceeds the limit \\(4300 digits\\)"),
    "dev-zero": (lambda path: Path("/dev/zero"), "/dev/zero is a character device, not a regular file"),
    "fifo": (_fifo, "is a FIFO \\(named pipe\\), not a regular file"),
    "folder": (lambda path: path.parent, "is a folder, not a regular file"),
    "huge-file": (_huge, "is larger than 16,777,216 bytes; that is not a file blackbox reads"),
}


BOUNDED = textwrap.dedent("""
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, resource.RLIM_INFINITY))  # /dev/zero read whole
    from blackbox.cli import main
    sys.exit(main(sys.argv[1:]))
""")


@pytest.mark.parametrize("name", list(CONFIGS))
def test_a_config_file_that_is_no_config_is_refused_before_it_is_read(name, tmp_path):
    make, message = CONFIGS[name]
    config = make(tmp_path / "run.toml")
    # In a subprocess with 2 GB of address space and a time limit: a reader that does not refuse
    # /dev/zero or a FIFO fails the test instead of taking the machine or the suite with it.
    try:
        done = subprocess.run([sys.executable, "-c", BOUNDED, "run", "--config", str(config), "--out",
                               str(tmp_path / "out")], capture_output=True, text=True, env=subprocess_env(), timeout=60)
    except subprocess.TimeoutExpired:
        COUNTS["tried"] += 1
        raise AssertionError(f"blackbox run --config {config} did not finish within 60 s") from None
    one_line(done.returncode, done.stderr, "run", message)


@pytest.mark.parametrize("where, message", [
    ("file/run", "could not create the run directory .*/file/run: \\[Errno 20\\] Not a directory"),
    ("/proc/blackbox-run", "could not create the run directory /proc/blackbox-run: \\[Errno 2\\]"),
])
def test_an_out_folder_that_cannot_be_made_is_one_line(where, message, tmp_path, capsys):
    (tmp_path / "file").write_text("a file, not a folder")
    out = where if where.startswith("/") else str(tmp_path / where)
    status = main(["run", "--generations", "1", "--quiet", "--out", out])
    one_line(status, capsys.readouterr().err, "run", message)


@pytest.mark.parametrize("problem, message", [
    ("quadratic:dim=1000000000000", "dim must be <= 2147483648, got 1000000000000"),
    ("rastrigin:dim=99999999999", "dim must be <= 2147483648, got 99999999999"),
    pytest.param("gym:blackbox_no_such_package.envs:Env-v0",
                 "its module 'blackbox_no_such_package.envs' cannot be imported \\(ModuleNotFoundError: No module "
                 "named 'blackbox_no_such_package'\\); install the package that provides it", marks=requires("gym")),
])
def test_a_problem_that_cannot_be_made_is_one_line(problem, message, tmp_path, capsys):
    status = main(["run", "--problem", problem, "--generations", "1", "--quiet", "--out", str(tmp_path / "out")])
    one_line(status, capsys.readouterr().err, "run", message)


# -- what problems do inside an evaluation --------------------------------------------------------
MODES = {
    **{mode: "problem.evaluate returned|problem.evaluate must return" for mode in BAD_OUTPUTS},
    "env-error": "evaluation of row \\d+ \\(seed \\d+\\) failed: EnvError: the simulator lost its connection",
    "exit": "evaluation of row \\d+ \\(seed \\d+\\) failed: SystemExit: the problem called sys.exit\\(0\\)",
    "torch-grad": "returned fitness of type Tensor that is not real numbers \\(Can't call numpy\\(\\) on Tensor "
                  "that requires grad",
}


@pytest.fixture(scope="module")
def misbehaves():
    problems.register("misbehaves", Misbehaves)
    yield
    problems.unregister("misbehaves")


@pytest.mark.parametrize("executor", ["serial", "loky:workers=2"])
@pytest.mark.parametrize("mode", list(MODES))
def test_a_problem_that_misbehaves_stops_the_run_with_one_line(mode, executor, misbehaves, tmp_path, capsys):
    if mode == "torch-grad":
        pytest.importorskip("torch", reason="needs the torch extra")
    args = ["run", "--problem", f"misbehaves:mode={mode}", "--strategy", "openai-es:popsize=8,sigma=2",
            "--executor", executor, "--generations", "3", "--quiet", "--out", str(tmp_path / "out")]
    status = main(args)
    err = capsys.readouterr().err
    one_line(status, err, "run", MODES[mode])
    assert "cannot import" not in err  # a bad value is never blamed on a missing module


# -- checkpoints whose state loads but cannot be used ---------------------------------------------
def _set(*keys, value):
    def change(meta):
        node = meta["state"]
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value
    return change


STATES = {
    "negative-generation": (_set("strategy", "generation", value=-3), "is corrupt: ValueError: state.json names generation 4 but holds the strategy of generation -3"),
    "negative-strategy-seed": (_set("strategy", "seed", value=-1), "state_dict/seed must be >= 0, got -1"),
    "negative-run-seed": (_set("run", "seed", value=-1), "run state/seed must be >= 0, got -1"),
    "negative-steps": (_set("run", "steps", value=-5), "run state/steps must be >= 0, got -5"),
    "huge-counter": (_set("run", "evaluations", value=10**50), "run state/evaluations must be <= 9223372036854775807"),
    "5000-digit-integer": (_set("run", "evaluations", value=10**5000),
                           "state.json is truncated or corrupt \\(Exceeds the limit \\(4300 digits\\)"),
    "stop-not-a-list": (_set("run", "stop", value=5), "run state/stop must be a list of tables"),
    "stop-of-numbers": (_set("run", "stop", value=[5]), "run state/stop must be a list of tables"),
    "stop-state-not-a-table": (_set("run", "stop", value=[{"type": "Generations", "state": 3}]),
                               "run state/stop must be a list of tables"),
    "rng-text": (_set("strategy", "rng", value="x"),
                 "state_dict/rng does not fit this run's generator: it must be the state of a PCG64 generator, got 'x'"),
    "rng-negative": (_set("strategy", "rng", "state", "state", value=-1),
                     "state_dict/rng/state/state must be >= 0, got -1"),
}


@pytest.mark.parametrize("how", list(STATES))
def test_a_checkpoint_state_that_cannot_be_used_is_one_line(how, run_dir, capsys):  # noqa: F811 - the fixture
    path = run_dir / "checkpoints" / "gen-000004"
    change, message = STATES[how]
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # to write the 5000-digit integer
    try:
        forge(path, npz_bytes(arrays_of(path)), meta_change=change)
    finally:
        sys.set_int_max_str_digits(limit)
    capsys.readouterr()
    status = main(["resume", str(run_dir), "--checkpoint", str(path), "--quiet"])
    one_line(status, capsys.readouterr().err, "resume", message)


# -- the Python API -------------------------------------------------------------------------------
@pytest.mark.parametrize("options, message", [
    ({"seed": -1}, "seed must be >= 0, got -1"),
    ({"seed": "a"}, "seed must be an integer, got 'a'"),
    ({"seed": 1.5}, "seed must be an integer, got 1.5"),
    ({"callbacks": 5}, "callbacks must be a list of Callback objects or functions"),
    ({"callbacks": [5]}, "callbacks must be Callback objects or functions \\(record\\) -> bool, got 5"),
    ({"run": "x"}, "run must be a Run to continue"),
    ({"stop": 5}, "stop must be a list of stop conditions"),
    ({"evaluate_center": "yes"}, "evaluate_center must be true or false, got 'yes'"),
])
def test_optimize_with_bad_arguments_raises_a_config_error(options, message):
    refused(lambda: bb.optimize("openai-es", "quadratic:dim=3", max_generations=1, **options), message, bb.ConfigError)


@pytest.mark.parametrize("rng, message", [
    ("x", "state_dict/rng does not fit this run's generator: it must be the state of a PCG64 generator, got 'x'"),
    (5, "state_dict/rng does not fit this run's generator: it must be the state of a PCG64 generator, got 5"),
    ({"bit_generator": "PCG64", "state": "x"},
     "state_dict/rng must be a table with the keys \\['bit_generator', 'has_uint32', 'state', 'uinteger'\\]"),
    ({"bit_generator": "MT19937", "state": {}},
     "state_dict/rng does not fit this run's generator: it must be the state of a PCG64 generator, got 'MT19937'"),
    ({"bit_generator": "PCG64", "state": {"state": "a", "inc": 1}, "has_uint32": 0, "uinteger": 0},
     "state_dict/rng/state/state must be an integer, got 'a'"),
])
def test_load_state_dict_with_a_wrong_typed_rng_state_raises_a_config_error(rng, message):
    strategy = bb.make_strategy("openai-es", dim=3, popsize=4, seed=0)
    state = strategy.state_dict()
    state["rng"] = rng
    before = strategy.rng.bit_generator.state
    refused(lambda: strategy.load_state_dict(state), message, bb.ConfigError)
    assert strategy.rng.bit_generator.state == before  # nothing was changed


def test_tell_with_a_tensor_that_requires_grad_raises_a_tell_error_in_every_strategy():
    torch = pytest.importorskip("torch", reason="needs the torch extra")
    for name in bb.registry.strategies.names():
        strategy = bb.make_strategy(name, dim=3, popsize=8, seed=0)
        population = strategy.ask()
        refused(lambda: strategy.tell(torch.zeros(len(population), requires_grad=True)),  # noqa: B023
                "Can't call numpy\\(\\) on Tensor that requires grad", bb.errors.TellError)


def test_a_run_restored_by_hand_with_a_bad_stop_state_is_a_config_error():
    strategy = bb.make_strategy("openai-es", dim=3, popsize=4, seed=0)
    run = Run(strategy, bb.make_problem("quadratic:dim=3"), bb.make_executor("serial"), 0)
    state = run.state_dict() | {"stop": [{"type": "GoalHeld", "state": {"streak": "many"}}]}
    run.load_state_dict(state)
    refused(lambda: run.attach_stop([GoalHeld(1.0, 2)]),
            "the saved state of stop condition GoalHeld does not fit it: ValueError", bb.ConfigError)


# -- missing extras, memory ---------------------------------------------------------------------------
HIDDEN = textwrap.dedent("""
    import sys
    for module in sys.argv[1].split(","):
        sys.modules[module] = None  # as if it were not installed
    from blackbox.cli import main
    sys.exit(main(sys.argv[2:]))
""")


@pytest.mark.parametrize("hidden, problem, message", [
    ("torch", "mnist", "the mnist problem needs torch, which is not installed: pip install 'blackbox-es\\[mnist\\]'"),
    pytest.param("torch", "gym:CartPole-v1,policy=cnn",
                 "policy='cnn' needs torch, which is not installed: pip install 'blackbox-es\\[torch\\]'",
                 marks=requires("gym")),
    ("gymnasium", "gym:CartPole-v1", "the gym problem needs gymnasium: pip install \"blackbox-es\\[gym\\]\""),
])
def test_a_problem_whose_extra_is_missing_names_the_extra(hidden, problem, message, tmp_path):
    done = subprocess.run([sys.executable, "-c", HIDDEN, hidden, "run", "--problem", problem, "--generations", "1",
                           "--quiet", "--out", str(tmp_path / "out")], capture_output=True, text=True,
                          env=subprocess_env(), timeout=300)
    one_line(done.returncode, done.stderr, "run", message)


@requires("blackbox-cma", "blackbox_cma")
def test_the_cma_plugin_refuses_a_dimension_its_matrices_cannot_hold(tmp_path):
    done = subprocess.run([sys.executable, "-c", BOUNDED, "run", "--strategy", "cma", "--problem", "quadratic:dim=50000",
                           "--generations", "1", "--quiet", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, env=subprocess_env(), timeout=300)
    one_line(done.returncode, done.stderr, "run",
             "cma keeps dim x dim matrices \\(40 GB for dim=50000\\).*Use CMA_diagonal=true or sep-cma-es")


OUT_OF_MEMORY = textwrap.dedent("""
    import resource, numpy as np, blackbox as bb
    strategy = bb.make_strategy("cma-es", dim=4000, seed=0)
    population = strategy.ask()
    used = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (used + 200 * 2**20, resource.RLIM_INFINITY))  # C and B fit; no update
    try:
        strategy.tell(np.arange(len(population), dtype=float))
    except bb.BlackboxError as exc:
        print(type(exc).__name__, exc)
    try:
        strategy.ask()
    except bb.BlackboxError as exc:
        print(type(exc).__name__, exc)
""")


def test_cma_es_out_of_memory_says_how_much_it_needs():
    env = subprocess_env({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    done = subprocess.run([sys.executable, "-c", OUT_OF_MEMORY], capture_output=True, text=True, env=env, timeout=300)
    COUNTS["tried"] += 1
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("ConfigError cma-es ran out of memory in tell() at dim=4000, popsize=28: it needs about "
                               "0.8 GB at its peak (0.3 GB for the dim x dim matrices C and B"), lines
    assert lines[1].startswith("StateError this strategy cannot go on: cma-es ran out of memory in tell()"), lines
    COUNTS["clean"] += 1
