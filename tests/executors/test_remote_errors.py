"""Errors raised in workers come back whole (issue 16): the original type, message, attributes and
the worker's traceback text, for exceptions whose class cannot be pickled the default way
(``EnvError(code, msg)``), through every executor; and a worker failure points the right way."""

from __future__ import annotations

import io
import pickle
import re
import threading

import cloudpickle
import numpy as np
import pytest

import blackbox as bb
from blackbox.executors.futures import FuturesExecutor
from blackbox.executors.loky import LokyExecutor
from blackbox.executors.serial import SerialExecutor
from blackbox.executors.worker import Failure, RemoteCause, RemoteTraceback
from tests.helpers.crash_problems import EnvError, Misbehaves, StateRaises

EXECUTORS = {
    "serial": lambda: SerialExecutor(),
    "loky": lambda: LokyExecutor(workers=2),
    "futures-process": lambda: FuturesExecutor(kind="process", workers=2),
    "futures-thread": lambda: FuturesExecutor(kind="thread", workers=2),
}


def marked(rows: int = 6, mark: int = 4) -> bb.Population:
    params = np.zeros((rows, 2))
    params[:, 1] = np.arange(rows)
    params[mark, 0] = 1.0
    return bb.Population.from_dense(params)


def test_an_error_with_constructor_arguments_does_not_pickle_the_default_way():
    """Why the fix is needed: the default pickling calls EnvError(message) and fails. (A pickler
    with its own empty dispatch table: a library such as tblib, which Dask imports, registers
    reducers for every exception class in copyreg's table, process-wide.)"""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer)
    pickler.dispatch_table = {}
    pickler.dump(EnvError(7, "x"))
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        pickle.loads(buffer.getvalue())


@pytest.mark.parametrize("name", list(EXECUTORS))
def test_an_error_with_constructor_arguments_comes_back_whole(name):
    with EXECUTORS[name]() as executor:
        executor.start(Misbehaves("env-error"))
        with pytest.raises(bb.errors.EvaluationError) as info:
            executor.evaluate(marked(), np.arange(30, 36))
    error = info.value
    assert str(error) == "evaluation of row 4 (seed 34) failed: EnvError: the simulator lost its connection"
    assert (error.row, error.seed) == (4, 34)
    cause = error.__cause__
    assert type(cause).__name__ == "EnvError" and str(cause) == "the simulator lost its connection"
    assert cause.code == 7  # its attributes travel too
    if name != "serial":  # the worker's traceback text, chained below the cause
        assert isinstance(cause.__cause__, RemoteTraceback)
        assert 'raise EnvError(7, "the simulator lost its connection")' in cause.__cause__.text


def test_an_error_nothing_can_pickle_comes_back_as_its_type_and_message():
    lock = threading.Lock()

    class Unshippable(Exception):
        held = lock  # the class itself cannot be pickled, by reference or by value

    failure = Failure.capture(Unshippable("details"), pickle.dumps)
    restored = pickle.loads(pickle.dumps(failure)).restore()  # RemoteCause itself must unpickle
    assert isinstance(restored, RemoteCause)
    assert (restored.type_name, restored.message) == ("test_an_error_nothing_can_pickle_comes_back_as_its_type_and_message."
                                                      "<locals>.Unshippable", "details")
    assert "Unshippable: details" in restored.__cause__.text


def test_an_error_whose_message_cannot_be_read_still_travels():
    class Mute(Exception):
        def __str__(self):
            raise RuntimeError("no")

    failure = Failure.capture(Mute(), pickle.dumps)
    assert "Mute" in failure.trace


def test_bad_values_under_loky_are_an_evaluation_error_not_a_module_hint():
    with LokyExecutor(workers=2) as executor:
        executor.start(Misbehaves("string-fitness"))
        with pytest.raises(bb.errors.EvaluationError) as info:
            executor.evaluate(marked(), np.arange(6))
    message = str(info.value)
    assert "problem.evaluate returned fitness of type ndarray that is not real numbers" in message
    assert "cannot import" not in message and "register_pickle_by_value" not in message


def test_a_worker_failing_to_install_the_state_says_so():
    with LokyExecutor(workers=1) as executor:
        executor.start(StateRaises())
        with pytest.raises(bb.errors.WorkerError) as info:
            executor.evaluate(marked(2, 0), np.arange(2), state={"pid": -1})
    assert re.fullmatch(r"a loky worker failed on rows 0\.\.[01] while installing the generation's problem "
                        r"state \(the problem's load_state_dict raised\): KeyError: 'no such statistic in this worker'",
                        str(info.value)), str(info.value)


@pytest.mark.parametrize("name", list(EXECUTORS))
def test_an_error_whose_reduce_rebuilds_a_non_exception_is_still_one_error(name):
    """Issue 25: ``__reduce__`` returning ``(int, (5,))`` made ``'int' object has no attribute '__cause__'``."""
    with EXECUTORS[name]() as executor:
        executor.start(Misbehaves("reduce-to-int"))
        with pytest.raises(bb.errors.EvaluationError) as info:
            executor.evaluate(marked(), np.arange(30, 36))
    assert str(info.value) == "evaluation of row 4 (seed 34) failed: RebuildsAsInt: pickles as the int 5"
    assert isinstance(info.value.__cause__, BaseException)
    assert type(info.value.__cause__).__name__ == "RebuildsAsInt"


@pytest.mark.parametrize("error", [5, cloudpickle.dumps(5), b"not a pickle"])
def test_a_failure_that_loads_as_no_exception_restores_as_one_line(error):
    restored = Failure(error, "Traceback ...\nRebuildsAsInt: x\n").restore()
    assert isinstance(restored, RemoteCause) and restored.type_name == "UnreadableError"
    assert len(str(restored).splitlines()) == 1
    assert isinstance(restored.__cause__, RemoteTraceback)
