"""An error whose class needs constructor arguments, raised in a Ray actor, comes back whole: its
type, message, attributes and the actor's traceback text (issue 16)."""

from __future__ import annotations

import sys

import cloudpickle
import numpy as np
import pytest

pytest.importorskip("blackbox_ray", reason="needs the blackbox-ray plugin: pip install -e plugins/blackbox-ray")

from blackbox_ray import RayExecutor

import blackbox as bb
from blackbox.executors.worker import RemoteTraceback

cloudpickle.register_pickle_by_value(sys.modules[__name__])


class EnvError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


class RaisesEnvError(bb.Problem):
    dim = 2

    def evaluate(self, params, seeds):
        if np.any(params[:, 0] > 0.5):
            raise EnvError(7, "the simulator lost its connection")
        return bb.EvalResult(params[:, 1].copy(), np.zeros(len(params), dtype=np.int64))


def test_an_error_with_constructor_arguments_comes_back_from_a_ray_actor():
    params = np.zeros((6, 2))
    params[4, 0] = 1.0
    with RayExecutor(num_cpus=2) as executor:
        executor.start(RaisesEnvError())
        with pytest.raises(bb.errors.EvaluationError) as info:
            executor.evaluate(bb.Population.from_dense(params), np.arange(30, 36))
    assert str(info.value) == "evaluation of row 4 (seed 34) failed: EnvError: the simulator lost its connection"
    cause = info.value.__cause__
    assert type(cause).__name__ == "EnvError" and cause.code == 7
    assert isinstance(cause.__cause__, RemoteTraceback)
    assert 'raise EnvError(7, "the simulator lost its connection")' in cause.__cause__.text


class RebuildsAsInt(Exception):
    """Its ``__reduce__`` rebuilds an int, not an exception (issue 25)."""

    def __reduce__(self):
        return (int, (5,))


class RaisesRebuildsAsInt(bb.Problem):
    dim = 2

    def evaluate(self, params, seeds):
        if np.any(params[:, 0] > 0.5):
            raise RebuildsAsInt("pickles as the int 5")
        return bb.EvalResult(params[:, 1].copy(), np.zeros(len(params), dtype=np.int64))


def test_an_error_whose_reduce_rebuilds_a_non_exception_comes_back_as_one_error():
    """Issue 25: ``'int' object has no attribute '__cause__'`` (an internal error) under Ray too."""
    params = np.zeros((6, 2))
    params[4, 0] = 1.0
    with RayExecutor(num_cpus=2) as executor:
        executor.start(RaisesRebuildsAsInt())
        with pytest.raises(bb.errors.EvaluationError) as info:
            executor.evaluate(bb.Population.from_dense(params), np.arange(30, 36))
    assert str(info.value) == "evaluation of row 4 (seed 34) failed: RebuildsAsInt: pickles as the int 5"
    assert isinstance(info.value.__cause__, BaseException)
