"""How a command ends when something raises (issue 16): one line and an exit status, never a
traceback unless asked for with --debug or BLACKBOX_DEBUG."""

from __future__ import annotations

import pytest

from blackbox.cli import main
from blackbox.registry.plugins import problems


def buggy():
    """A problem factory with a bug of its own (not bad input)."""
    raise ZeroDivisionError("division by zero in the plugin")


def exits():
    """A problem factory that ends the program as it is built."""
    raise SystemExit(0)


def out_of_memory():
    """Runs out of memory, and a cleanup fails in turn (the MemoryError is the context)."""
    try:
        raise MemoryError("Unable to allocate 7.45 TiB for an array with shape (1000000000000,)")
    except MemoryError:
        raise ValueError("I/O operation on closed file.")  # noqa: B904 - as zipfile's cleanup does


@pytest.fixture
def registered():
    names = {"buggy": buggy, "exits": exits, "out-of-memory": out_of_memory}
    for name, factory in names.items():
        problems.register(name, factory)
    yield
    for name in names:
        problems.unregister(name)


def run_problem(name: str, tmp_path, *extra: str) -> list[str]:
    return [*extra, "run", "--problem", name, "--generations", "1", "--out", str(tmp_path / "run"), "--quiet"]


def test_an_unexpected_exception_is_one_line_with_how_to_report_it(registered, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("BLACKBOX_DEBUG", raising=False)
    assert main(run_problem("buggy", tmp_path)) == 70
    err = capsys.readouterr().err
    assert err == ("blackbox run: internal error: ZeroDivisionError: division by zero in the plugin. This is a bug "
                   "in blackbox or in a plugin, not in your input: please report it with the command you ran "
                   "(blackbox --debug run ... shows the traceback)\n")


@pytest.mark.parametrize("how", ["--debug before", "--debug after", "BLACKBOX_DEBUG=1"])
def test_the_traceback_is_printed_when_asked_for(how, registered, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("BLACKBOX_DEBUG", raising=False)
    args = run_problem("buggy", tmp_path)
    if how == "--debug before":
        args = ["--debug", *args]
    elif how == "--debug after":
        args = [*args, "--debug"]
    else:
        monkeypatch.setenv("BLACKBOX_DEBUG", "1")
    assert main(args) == 70
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):") and 'raise ZeroDivisionError("division by zero' in err
    assert err.splitlines()[-1].startswith("blackbox run: internal error: ZeroDivisionError")


def test_an_exit_called_by_a_plugin_is_an_error_not_a_success(registered, tmp_path, capsys):
    assert main(run_problem("exits", tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.startswith("blackbox run: error: code it ran (a plugin, a problem or a callback) called sys.exit(0)")
    assert len(err.splitlines()) == 1


def test_running_out_of_memory_is_said_even_when_a_cleanup_failed_after_it(registered, tmp_path, capsys):
    assert main(run_problem("out-of-memory", tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.startswith("blackbox run: error: out of memory: MemoryError: Unable to allocate 7.45 TiB for an array")
    assert "lower what sizes the run (dim, popsize, workers, batch_size)" in err and len(err.splitlines()) == 1


def test_bad_input_stays_an_error_with_status_2(tmp_path, capsys):
    assert main(["run", "--problem", "quadratic:dim=0", "--out", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err.startswith("blackbox run: error: ")


class Interrupted:
    """Evaluates ``at - 1`` generations, then Ctrl-C lands inside the next one."""

    def __init__(self, at: int = 8):
        import numpy as np

        import blackbox as bb

        class Problem(bb.Problem):
            dim = 2

            def __init__(self):
                self.calls = 0

            def evaluate(self, params, seeds):
                self.calls += 1
                if self.calls >= at:
                    raise KeyboardInterrupt
                return bb.EvalResult(-np.sum(params**2, axis=1), np.ones(len(params), dtype=np.int64))

        self.problem = Problem


@pytest.mark.parametrize("every, expected", [
    (2, "blackbox run: interrupted; continue it with `blackbox resume '{out}'`\n"),
    (1000, "blackbox run: interrupted; no checkpoint was written yet, so there is nothing to resume\n"),
])
def test_ctrl_c_says_how_to_resume_the_run(tmp_path, capsys, every, expected):
    out = tmp_path / "a run"  # a space: the command shown quotes the folder
    problems.register("interrupted", Interrupted().problem)
    try:
        code = main(["run", "--problem", "interrupted", "--no-center-eval", "--generations", "100",
                     "--checkpoint-every", str(every), "--quiet", "--out", str(out)])
        assert code == 130
        assert capsys.readouterr().err == expected.format(out=out)
        if every == 2:  # the hint works as printed (a budget the fresh problem can finish)
            assert main(["resume", str(out), "--generations", "10", "--quiet"]) == 0
    finally:
        problems.unregister("interrupted")
