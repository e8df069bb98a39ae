"""Problems for the run, checkpoint and resume tests: stateful, seed-dependent, with steps."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import numpy as np

import blackbox as bb
from blackbox.registry.plugins import problems


class Drift(bb.Problem):
    """A stateful quadratic: the optimum drifts with running statistics of what was evaluated.

    The running mean and variance of the first coordinates (folded in by ``observe``, in row
    order, like observation-normalization statistics) shift the optimum, every score carries
    seed-dependent noise, and every row takes a seed-dependent number of "environment steps".
    A resumed run that lost or garbled any of this state would score differently.
    ``DRIFT_DELAY`` (seconds per evaluate call, from the environment) slows a run down so that a
    test can kill it midway; it changes no number. ``DRIFT_HANG=ROWS:FILE`` makes ``evaluate``
    create FILE and sleep for an hour once ``observe`` has seen ROWS rows, so that a test can
    kill the run at a known point, sure that it has not finished first.
    """

    name = "drift"

    def __init__(self, dim: int = 4, noise: float = 0.05):
        self.dim = int(dim)
        self.noise = float(noise)
        self.count = 0
        self.mean = np.zeros(2)
        self.m2 = np.zeros(2)

    def evaluate(self, params, seeds):
        delay = float(os.environ.get("DRIFT_DELAY", "0") or 0)
        if delay:
            time.sleep(delay)
        hang = os.environ.get("DRIFT_HANG")
        if hang and self.count >= int(hang.split(":", 1)[0]):
            Path(hang.split(":", 1)[1]).write_text(str(os.getpid()))
            time.sleep(3600)
        shift = 0.5 + 0.1 * np.tanh(self.mean).sum() + 0.01 * np.sqrt(self.m2.sum() / max(self.count, 1))
        noise = np.array([np.random.default_rng(int(s)).normal() for s in seeds]) * self.noise
        fitness = -np.sum((params - shift) ** 2, axis=1) + noise
        steps = np.array([10 + int(s) % 7 for s in seeds], dtype=np.int64)
        return bb.EvalResult(fitness, steps, {"obs": params[:, :2].copy()})

    def initial_params(self, rng):
        """Zeros, chosen on purpose (the optimum drifts around 0.5): the start these tests were written for."""
        return np.zeros(self.dim)

    def observe(self, result):
        for row in result.info["obs"]:
            self.count += 1
            delta = row - self.mean
            self.mean = self.mean + delta / self.count
            self.m2 = self.m2 + delta * (row - self.mean)

    def state_dict(self):
        return {"count": self.count, "mean": self.mean.copy(), "m2": self.m2.copy()}

    def load_state_dict(self, state):
        self.count = int(state["count"])
        self.mean = np.array(state["mean"], dtype=np.float64)
        self.m2 = np.array(state["m2"], dtype=np.float64)


@contextlib.contextmanager
def registered_drift():
    """``drift`` registered as a problem for the duration of the block."""
    problems.register("drift", Drift)
    try:
        yield
    finally:
        problems.unregister("drift")


def register_drift() -> None:
    """For subprocesses: register ``drift`` for good."""
    problems.register("drift", Drift)
