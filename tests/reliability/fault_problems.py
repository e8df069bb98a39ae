"""A problem that misbehaves on cue, for the fault-injection tests; shipped to workers by value.

``Faulty`` is a stateful, seed-dependent quadratic (like ``tests/helpers/run_problems.Drift``): the driver
folds per-row statistics into its state each generation, every score carries seed-dependent
noise, and every row takes a seed-dependent number of "environment steps". A resumed or retried
run that lost or garbled any of it would score differently, so "same records, same center" is a
strong check.

Faults come from the environment, so that a test can switch one on for a run and off for the
``blackbox resume`` that follows (as a user fixes a bug or a flaky machine recovers):

- ``FAULTY_MODE``: ``raise`` (every row raises ``ValueError``), ``nonfinite`` (rows score NaN,
  +inf or -inf by seed), ``hang`` (the row of seed group 0 sleeps for an hour) or empty;
- ``FAULTY_FROM`` / ``FAULTY_UNTIL``: the fault applies while the observed row count is in
  ``[FROM, UNTIL)`` (the count grows by one generation's rows each generation);
- ``FAULTY_DELAY``: seconds each ``evaluate`` call sleeps (slows a run down; changes no number);
- ``FAULTY_MARK``: a file that a hanging row creates before it sleeps, so that a test can wait for
  it and know the run is inside that generation (it cannot finish before the test acts).
"""

from __future__ import annotations

import os
import sys
import time

import cloudpickle
import numpy as np

import blackbox as bb

cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _fault_active(count: int) -> str:
    mode = os.environ.get("FAULTY_MODE", "")
    if not mode:
        return ""
    start = int(os.environ.get("FAULTY_FROM", "0") or 0)
    stop = int(os.environ.get("FAULTY_UNTIL", str(2**62)) or 2**62)
    return mode if start <= count < stop else ""


class Faulty(bb.Problem):
    """Noisy quadratic with driver-synced statistics; misbehaves as ``FAULTY_*`` says."""

    name = "faulty"

    def __init__(self, dim: int = 4, noise: float = 0.05, delay: float = 0.0):
        self.dim = int(dim)
        self.noise = float(noise)
        self.delay = float(delay)
        self.count = 0
        self.mean = np.zeros(2)
        self.m2 = np.zeros(2)

    def evaluate(self, params, seeds):
        delay = self.delay + float(os.environ.get("FAULTY_DELAY", "0") or 0)
        if delay:
            time.sleep(delay)
        mode = _fault_active(self.count)
        if mode == "raise":
            raise ValueError(f"simulated failure after {self.count} observed rows")
        if mode == "hang" and np.any(np.asarray(seeds) % 5 == 0):
            mark = os.environ.get("FAULTY_MARK")
            if mark:
                with open(mark, "a", encoding="utf-8") as handle:
                    handle.write(f"{os.getpid()}\n")
            time.sleep(3600)
        shift = 0.5 + 0.1 * np.tanh(self.mean).sum() + 0.01 * np.sqrt(self.m2.sum() / max(self.count, 1))
        noise = np.array([np.random.default_rng(int(s)).normal() for s in seeds]) * self.noise
        fitness = -np.sum((params - shift) ** 2, axis=1) + noise
        if mode == "nonfinite":
            kind = np.asarray(seeds) % 4
            fitness = np.where(kind == 0, np.nan, np.where(kind == 1, np.inf, np.where(kind == 2, -np.inf, fitness)))
        steps = np.array([10 + int(s) % 7 for s in seeds], dtype=np.int64)
        return bb.EvalResult(fitness, steps, {"obs": params[:, :2].copy(), "pid": np.full(len(seeds), os.getpid())})

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


def register() -> None:
    """Register ``faulty`` as a problem (in a test process or a driver subprocess)."""
    from blackbox.registry.plugins import problems

    if "faulty" not in problems.names():
        problems.register("faulty", Faulty)
