"""Problems that fail in the ways issue 16 found, shipped to worker processes by value.

``EnvError(code, message)`` is the exception of simulators and clients whose constructor takes
other arguments than its ``args`` (pickling it the default way cannot be undone). ``Misbehaves``
fails as its ``mode`` says, on the rows whose first parameter is marked (> 0.5), so that a test
can check which row an error names.
"""

from __future__ import annotations

import os
import sys
import time

import cloudpickle
import numpy as np

import blackbox as bb

cloudpickle.register_pickle_by_value(sys.modules[__name__])


class EnvError(Exception):
    """An error whose constructor needs two arguments (``args`` holds only the message)."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


class RebuildsAsInt(Exception):
    """An exception whose ``__reduce__`` rebuilds an int, not an exception (issue 25's red team)."""

    def __reduce__(self):
        return (int, (5,))


#: What ``Misbehaves`` returns for a marked row, by mode (the other rows score their second parameter).
BAD_OUTPUTS = {
    "string-fitness": lambda m: bb.EvalResult(np.array(["a"] * m), np.zeros(m, dtype=np.int64)),
    "none-fitness": lambda m: bb.EvalResult([None] * m, np.zeros(m, dtype=np.int64)),
    "complex-fitness": lambda m: bb.EvalResult(np.zeros(m) + 1j, np.zeros(m, dtype=np.int64)),
    "scalar-info": lambda m: bb.EvalResult(np.zeros(m), np.zeros(m, dtype=np.int64), {"x": 3.0}),
    "none-steps": lambda m: bb.EvalResult(np.zeros(m), None),
    "nan-steps": lambda m: bb.EvalResult(np.zeros(m), np.full(m, np.nan)),
    "negative-steps": lambda m: bb.EvalResult(np.zeros(m), np.full(m, -5)),
    "huge-steps": lambda m: bb.EvalResult(np.zeros(m), np.full(m, 2**62)),
    "fractional-steps": lambda m: bb.EvalResult(np.zeros(m), np.full(m, 2.5)),
    "not-an-evalresult": lambda m: {"fitness": np.zeros(m)},
}


def _grad_fitness(m: int) -> bb.EvalResult:
    import torch

    return bb.EvalResult(torch.zeros(m, requires_grad=True), np.zeros(m, dtype=np.int64))


class Misbehaves(bb.Problem):
    """Scores each row's second parameter; a marked row (first parameter > 0.5) misbehaves by ``mode``:
    ``env-error`` raises EnvError(7, ...), ``reduce-to-int`` raises RebuildsAsInt, ``exit`` calls sys.exit(0), ``hang`` sleeps for an hour
    (in Python, so that a deadline can interrupt it), ``torch-grad`` returns a tensor that requires
    grad, and any key of BAD_OUTPUTS returns that value."""

    name = "misbehaves"

    def __init__(self, mode: str, dim: int = 2):
        self.mode = mode
        self.dim = dim

    def evaluate(self, params, seeds):
        m = len(params)
        if np.any(params[:, 0] > 0.5):
            if self.mode == "env-error":
                raise EnvError(7, "the simulator lost its connection")
            if self.mode == "reduce-to-int":
                raise RebuildsAsInt("pickles as the int 5")
            if self.mode == "exit":
                sys.exit(0)
            if self.mode == "hang":
                time.sleep(3600)
            if self.mode == "torch-grad":
                return _grad_fitness(m)
            if self.mode in BAD_OUTPUTS:
                return BAD_OUTPUTS[self.mode](m)
        return bb.EvalResult(params[:, 1].copy(), np.full(m, 3, dtype=np.int64))


class StateRaises(bb.Problem):
    """A problem whose ``load_state_dict`` raises in the workers (its state is installed each generation)."""

    dim = 2

    def evaluate(self, params, seeds):
        return bb.EvalResult(np.zeros(len(params)), np.zeros(len(params), dtype=np.int64))

    def state_dict(self):
        return {"pid": os.getpid()}

    def load_state_dict(self, state):
        if state["pid"] != os.getpid():
            raise KeyError("no such statistic in this worker")


class Leaks(bb.Problem):
    """Keeps ``megabytes`` of its own (anonymous) memory more on every call: a leaking simulator."""

    dim = 2

    def __init__(self, megabytes: float):
        self.megabytes = megabytes
        self.kept: list[bytearray] = []

    def evaluate(self, params, seeds):
        self.kept.append(bytearray(os.urandom(1)) * int(self.megabytes * 1e6))
        return bb.EvalResult(np.zeros(len(params)), np.full(len(params), os.getpid(), dtype=np.int64))
