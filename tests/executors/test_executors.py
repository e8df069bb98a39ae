"""The parallel executors: identical results to serial, compact traffic, faults, timeouts, Ctrl-C."""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import blackbox as bb
from blackbox.executors.futures import FuturesExecutor
from blackbox.executors.loky import LokyExecutor
from tests.helpers import interruptible, subprocess_env
from tests.helpers.executor_problems import (
    DataError,
    DenseSearch,
    FailsOnMark,
    KillOnce,
    Sleepy,
    Stateful,
    ThreadReport,
)
from tests.helpers.extras import import_or_skip

STRATEGIES = {
    "openai-es": lambda dim: bb.make_strategy("openai-es", dim=dim, popsize=20, sigma=0.1, seed=7),
    "ga": lambda dim: bb.make_strategy("ga", dim=dim, popsize=15, seed=7),
    "dense": lambda dim: DenseSearch(dim=dim, popsize=11, seed=7),
}


def comparable(records):
    """Records without their wall-clock fields."""
    return [{k: v for k, v in r.as_dict().items() if k not in ("time", "generation_time")} for r in records]


def run(strategy: str, executor, problem=None, generations: int = 4):
    problem = problem or Stateful(6)
    return bb.optimize(STRATEGIES[strategy](problem.dim), problem, executor, generations=generations, seed=11)


@pytest.fixture(scope="module")
def reference():
    return {name: run(name, "serial") for name in STRATEGIES}


def assert_same(result, ref):
    assert comparable(result.records) == comparable(ref.records)
    assert np.array_equal(result.center, ref.center)
    assert np.array_equal(result.best_params, ref.best_params)


# -- identical results ------------------------------------------------------------------------------
@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_loky_matches_serial_bit_for_bit(reference, strategy, workers):
    with LokyExecutor(workers=workers) as executor:
        result = run(strategy, executor)
    assert_same(result, reference[strategy])
    assert reference[strategy].records[-1].steps > 0


@pytest.mark.parametrize("chunks", [1, 3, "auto"])
def test_loky_chunking_does_not_change_results(reference, chunks):
    with LokyExecutor(workers=2, chunks_per_worker=chunks) as executor:
        assert_same(run("openai-es", executor), reference["openai-es"])


@pytest.mark.parametrize("make", [
    lambda: FuturesExecutor(kind="thread", workers=3),
    lambda: FuturesExecutor(ThreadPoolExecutor(2)),
], ids=["thread-spec", "thread-pool"])
@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_futures_threads_match_serial(reference, strategy, make):
    executor = make()
    try:
        assert_same(run(strategy, executor), reference[strategy])
    finally:
        executor.close()


def test_futures_process_pools_match_serial(reference):
    with FuturesExecutor(kind="process", workers=2) as executor:
        for strategy in STRATEGIES:
            assert_same(run(strategy, executor), reference[strategy])
    with ProcessPoolExecutor(2) as pool:
        executor = FuturesExecutor(pool)
        assert executor.workers == 2
        assert_same(run("openai-es", executor), reference["openai-es"])
        executor.close()
        assert pool.submit(int, "3").result() == 3  # a pool passed in stays the caller's


def test_futures_with_a_dask_client(reference):
    distributed = import_or_skip("dask", "distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        executor = bb.FuturesExecutor(client.get_executor(), workers=2)
        assert_same(run("openai-es", executor), reference["openai-es"])


def test_executors_by_spec_string():
    loky = bb.make_executor("loky:workers=2,timeout=5,on_timeout=worst,threads=2")
    assert (loky.workers, loky.timeout, loky.on_timeout, loky.threads) == (2, 5.0, "worst", 2)
    futures = bb.make_executor("futures:kind=thread,workers=4")
    assert futures.workers == 4 and futures.in_process
    assert bb.make_executor("futures:kind=process,workers=3").workers == 3


@pytest.mark.parametrize("spec,message", [
    ("loky:on_timeout=wrost", "on_timeout must be one of 'error', 'worst', got 'wrost'. Did you mean 'worst'?"),
    ("loky:workers=0", "workers must be >= 1, got 0"),
    ("loky:timeout=-1", "timeout must be > 0, got -1"),
    ("loky:chunks_per_worker=many", "chunks_per_worker must be an integer, got 'many'"),
    ("futures:kind=fork", "kind must be one of 'process', 'thread', got 'fork'"),
])
def test_bad_options_are_named(spec, message):
    with pytest.raises(bb.ConfigError) as info:
        bb.make_executor(spec)
    assert message in str(info.value)


def test_futures_refuses_pool_and_kind_together():
    with ThreadPoolExecutor(1) as pool, pytest.raises(bb.ConfigError, match="either pool= .* or kind="):
        FuturesExecutor(pool, kind="thread")


# -- what crosses the process boundary ----------------------------------------------------------
def test_chunks_keep_mirrored_pairs_together():
    es = bb.make_strategy("openai-es", dim=4, popsize=64, seed=0)
    population = es.ask().with_center(es.center)
    groups = population.groups
    assert np.array_equal(groups, np.append(np.repeat(np.arange(32), 2), 32))  # pairs, and the center row
    _, parts = population.split(6)
    bounds = [(int(rows.index[0]), int(rows.index[-1]) + 1) for rows in parts]
    assert all(np.array_equal(rows.index, np.arange(a, b)) for rows, (a, b) in zip(parts, bounds))
    assert bounds[0][0] == 0 and bounds[-1][1] == 65 and len(bounds) == 6
    assert all(a < b for a, b in bounds) and all(bounds[i][1] == bounds[i + 1][0] for i in range(5))
    assert all(groups[a] != groups[a - 1] for a, _ in bounds[1:])
    assert max(b - a for a, b in bounds) - min(b - a for a, b in bounds) <= 2


def test_loky_ships_problem_once_per_worker_and_compact_rows():
    dim, popsize, workers = 1000, 64, 2
    problem = bb.make_problem("sphere", dim=dim)
    es = bb.make_strategy("openai-es", dim=dim, popsize=popsize, seed=0)
    with LokyExecutor(workers=workers, chunks_per_worker=4) as executor:
        bb.optimize(es, problem, executor, generations=5, seed=0)
        stats = executor.stats
    assert stats.generations == 5 and stats.tasks == 5 * 8
    assert 1 <= stats.problem_loads <= workers  # once per worker per run, never per task
    assert stats.broadcast_reads <= workers * 5  # once per worker per generation
    rows = popsize + 1
    per_generation_tasks = stats.task_bytes / 5
    assert per_generation_tasks < 64 * rows  # offsets, signs, parents, seed groups, seeds: 33 bytes a row
    # The center goes once (the center row points at base 0, the same vector).
    assert stats.broadcast_bytes / 5 < dim * 8 + 4096
    assert stats.broadcast_read_bytes <= workers * 5 * (dim * 8 + 64)


def test_loky_removes_its_shared_files():
    with LokyExecutor(workers=1) as executor:
        executor.start(Stateful(4))
        path = executor._dir.path
        assert (path / "problem").exists()
        executor.close()
    assert not path.exists()


def test_worker_threads_are_limited():
    import_or_skip("mnist", "threadpoolctl")  # scikit-learn brings it
    pop = bb.Population.from_dense(np.zeros((4, 2)))
    with LokyExecutor(workers=2) as executor:
        executor.start(ThreadReport())
        result = executor.evaluate(pop, np.arange(4))
    assert set(result.info["blas"]) <= {1} and set(result.info["omp_env"]) == {1}


@pytest.mark.slow
def test_worker_torch_threads_are_limited():
    import_or_skip("torch", "torch")
    import_or_skip("mnist", "threadpoolctl")  # scikit-learn brings it
    pop = bb.Population.from_dense(np.zeros((4, 2)))
    with LokyExecutor(workers=2) as executor:
        executor.start(ThreadReport(torch=True))
        result = executor.evaluate(pop, np.arange(4))
    assert set(result.info["torch"]) == {1} and set(result.info["blas"]) <= {1}


# -- faults ------------------------------------------------------------------------------------------
def test_killed_worker_is_replaced_and_rows_rerun(reference, tmp_path):
    marker = tmp_path / "killed"
    with LokyExecutor(workers=2) as executor:
        result = run("openai-es", executor, KillOnce(6, str(marker)))
        assert executor.stats.worker_failures == 1 and executor.stats.resubmitted >= 1
    victim = int(marker.read_text())
    assert not _alive(victim)
    assert_same(result, reference["openai-es"])


def test_a_pipe_broken_under_submit_is_a_lost_worker_and_the_rows_rerun(reference, monkeypatch):
    """loky's submit can raise BrokenPipeError (a worker killed while it was being started, the pool's
    wake-up pipe closed as it broke): the rows are retried on a fresh pool, the results stay serial's."""
    real = LokyExecutor._pool
    broken = {"left": 1}

    class BreaksOnce:
        def __init__(self, pool):
            self.pool = pool

        def submit(self, *args, **kwargs):
            if broken["left"]:
                broken["left"] -= 1
                raise BrokenPipeError(32, "Broken pipe")
            return self.pool.submit(*args, **kwargs)

        def shutdown(self, wait=True, kill_workers=False):
            self.pool.shutdown(wait=wait, kill_workers=kill_workers)

    monkeypatch.setattr(LokyExecutor, "_pool", lambda self: BreaksOnce(real(self)))
    with LokyExecutor(workers=2) as executor:
        result = run("openai-es", executor)
        assert executor.stats.worker_failures == 1 and executor.stats.resubmitted == 1
    assert broken["left"] == 0
    assert_same(result, reference["openai-es"])


def test_worker_that_always_dies_gives_up_with_worker_error(tmp_path):
    class AlwaysDies(Stateful):
        def evaluate(self, params, seeds):
            os.kill(os.getpid(), signal.SIGKILL)

    with LokyExecutor(workers=1, max_retries=1, chunks_per_worker=1) as executor:
        executor.start(AlwaysDies(3))
        with pytest.raises(bb.errors.WorkerError, match=r"rows 0\.\.3 were in flight when a worker died 2 times \(max_retries=1\)"):
            executor.evaluate(bb.Population.from_dense(np.zeros((4, 3))), np.arange(4))


@pytest.mark.parametrize("custom", [False, True])
@pytest.mark.parametrize("make", [lambda: LokyExecutor(workers=2), lambda: FuturesExecutor(kind="process", workers=2)],
                         ids=["loky", "futures-process"])
def test_evaluation_error_names_row_seed_and_cause(make, custom):
    params = np.zeros((10, 3))
    params[6, 0] = 99.0
    seeds = np.arange(100, 110)
    with make() as executor:
        executor.start(FailsOnMark(3, custom=custom))
        with pytest.raises(bb.errors.EvaluationError) as info:
            executor.evaluate(bb.Population.from_dense(params), seeds)
    error = info.value
    cause_type = DataError if custom else ValueError
    assert (error.row, error.seed) == (6, 106)
    assert str(error) == (f"evaluation of row 6 (seed 106) failed: {cause_type.__name__}: "
                          "parameter 0 is the forbidden value 99.0")
    assert type(error.__cause__).__name__ == cause_type.__name__
    assert str(error.__cause__) == "parameter 0 is the forbidden value 99.0"
    assert "forbidden value" in str(error.__cause__.__cause__)  # the worker's traceback text


class NotImportable(bb.Problem):
    """Unpickles by importing a module that worker processes do not have."""

    dim = 2

    def evaluate(self, params, seeds):
        return bb.EvalResult(np.zeros(len(params)), np.zeros(len(params), dtype=np.int64))

    def __reduce__(self):
        return (importlib.import_module, ("blackbox_module_that_is_not_installed",))


def test_problem_workers_cannot_import_is_a_worker_error():
    with LokyExecutor(workers=1, chunks_per_worker=1) as executor:
        executor.start(NotImportable())
        with pytest.raises(bb.errors.WorkerError) as info:
            executor.evaluate(bb.Population.from_dense(np.zeros((2, 2))), np.arange(2))
    message = str(info.value)
    assert "a loky worker failed before evaluating rows 0..1: ModuleNotFoundError" in message
    assert "cloudpickle.register_pickle_by_value" in message


@pytest.mark.parametrize("make", [LokyExecutor, FuturesExecutor])
def test_unpicklable_problem_is_a_config_error(make):
    problem = Stateful(3)
    problem.lock = threading.Lock()
    executor = make(workers=1)
    with pytest.raises(bb.ConfigError, match="the problem Stateful cannot be sent to worker processes: "
                       "TypeError: cannot pickle '_thread.lock' object. Keep a problem a small recipe"):
        executor.start(problem)
    executor.close()


@pytest.mark.slow  # over 8 s: the default run stays under 10 minutes; CI runs -m slow
@pytest.mark.parametrize("on_timeout", ["error", "worst"])
def test_hung_rows_are_killed_and_handled(on_timeout, tmp_path):
    params = np.zeros((8, 2))
    params[:, 1] = np.arange(8)
    params[5, 0] = 1.0  # row 5 hangs
    seeds = np.arange(40, 48)
    # 5 s: long enough that no healthy chunk reaches it on a loaded machine (a worker starting, a slow
    # import), short next to the hour row 5 sleeps.
    with LokyExecutor(workers=2, chunks_per_worker=1, timeout=5.0, on_timeout=on_timeout) as executor:
        executor.start(Sleepy(2, hang_above=1.0, hang_dir=str(tmp_path)))
        started = time.perf_counter()
        if on_timeout == "error":
            with pytest.raises(bb.errors.EvaluationError) as info:
                executor.evaluate(bb.Population.from_dense(params), seeds)
            assert (info.value.row, info.value.seed) == (5, 45)
            assert "row 5 (seed 45) did not finish within the timeout of 5 s" in str(info.value)
        else:
            result = executor.evaluate(bb.Population.from_dense(params), seeds)
            expected = -np.sum(params**2, axis=1)
            expected[5] = -np.inf
            assert np.array_equal(result.fitness, expected)
            assert result.steps[5] == 0 and result.info["pid"][5] == 0
            # The run goes on with the replaced workers.
            again = executor.evaluate(bb.Population.from_dense(params[:4]), seeds[:4])
            assert np.array_equal(again.fitness, expected[:4])
        assert executor.stats.timeouts == 2  # the chunk, then row 5 alone
        assert time.perf_counter() - started < 120  # two timeouts and two worker starts, not the hour
    hung = [int(p.name.split("-")[1]) for p in tmp_path.glob("hung-*")]
    assert len(hung) == 2 and not [p for p in hung if _alive(p)]  # both hung workers were killed


# -- Ctrl-C -------------------------------------------------------------------------------------------
CLI_SCRIPT = textwrap.dedent("""
    import sys
    from tests.helpers import executor_problems
    from blackbox.registry.plugins import problems
    from blackbox.cli import main
    problems.register("sleepy", executor_problems.Sleepy)
    sys.exit(main(sys.argv[1:]))
""")


def _descendants(pid: int) -> set[int]:
    from tests.reliability.helpers import descendants  # the one /proc walker of the test suite

    return descendants(pid)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _wait_until(condition, process: subprocess.Popen, failure: str, seconds: float = 300) -> None:
    """Poll ``condition`` until it holds; fail (with the run's stderr) if the run ends or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while not condition():
        if process.poll() is not None:
            raise AssertionError(f"{failure}: the run ended ({process.returncode}): {process.stderr.read()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{failure} within {seconds} s")
        time.sleep(0.05)


def interrupt_cli_run(out: Path, executor: str = "loky:workers=2", group: bool = False) -> tuple[int, str, int, set[int]]:
    """Start ``blackbox run``, hold it inside a generation once it wrote a record, press Ctrl-C; return (exit code,
    stderr, its pid, the processes it had started). ``group`` sends SIGINT to the whole process
    group, as a terminal does; otherwise to the driver alone. The run directory ``out`` is left
    for inspection (a test of checkpoints can look at what the interrupted run left there)."""
    held, gate = out.parent / "held", out.parent / "hold"
    held.mkdir()
    problem = f"sleepy:dim=4,delay=0.05,hang_dir={held},hang_after={gate}"
    command = [sys.executable, "-c", CLI_SCRIPT, "run", "--problem", problem, "--executor",
               executor, "--generations", "1000", "--checkpoint-every", "1000", "--quiet", "--out", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=group, env=subprocess_env(), preexec_fn=interruptible)
    try:
        records = out / "records.csv"
        _wait_until(lambda: records.exists() and len(records.read_text().splitlines()) >= 2, process,
                    "the run wrote no record")
        gate.touch()  # from now on every evaluation hangs: the run is held inside a generation
        _wait_until(lambda: any(held.iterdir()), process, "no worker reached the held evaluation")
        workers = _descendants(process.pid)
        if group:
            os.killpg(process.pid, signal.SIGINT)
        else:
            process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, stderr, process.pid, workers


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to list processes")
@pytest.mark.parametrize("group", [False, True], ids=["driver", "process-group"])
def test_ctrl_c_stops_the_cli_run_and_leaves_no_process(tmp_path, group):
    code, stderr, pid, workers = interrupt_cli_run(tmp_path / "run", group=group)
    assert code == 130, stderr
    assert stderr.endswith("blackbox run: interrupted; no checkpoint was written yet, so there is nothing to resume\n")
    assert len(workers) >= 2
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(_alive(p) for p in workers):
        time.sleep(0.05)
    assert not [p for p in workers if _alive(p)]
    assert not list(Path("/dev/shm").glob(f"blackbox-run-{pid}-*"))  # shared files removed


def test_close_without_reuse_stops_the_workers():
    pop = bb.Population.from_dense(np.zeros((4, 2)))
    executor = LokyExecutor(workers=2, reuse=False, chunks_per_worker=2)
    with executor:
        executor.start(Sleepy(2, delay=0.05))
        pids = {int(p) for p in executor.evaluate(pop, np.arange(4)).info["pid"]}
    assert pids and all(not _alive(p) for p in pids)
