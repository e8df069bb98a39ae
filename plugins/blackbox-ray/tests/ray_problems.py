"""Problems for the Ray executor tests, pickled by value (Ray workers cannot import tests/)."""

from __future__ import annotations

import os
import signal
import sys

import cloudpickle
import numpy as np

import blackbox as bb

cloudpickle.register_pickle_by_value(sys.modules[__name__])


class Stateful(bb.Problem):
    """A noisy quadratic whose fitness depends on a running mean folded from per-row info."""

    def __init__(self, dim: int = 6):
        self.dim = dim
        self.count = 0
        self.total = np.zeros(3)
        self.mean = np.zeros(3)

    def evaluate(self, params, seeds):
        fitness = np.empty(len(params))
        obs = np.empty((len(params), 3))
        for i, (x, seed) in enumerate(zip(params, seeds)):
            rng = np.random.default_rng(int(seed))
            obs[i] = x[:3] + rng.standard_normal(3)
            fitness[i] = -np.sum((x - 0.5) ** 2) - 0.1 * float(np.dot(x[:3], self.mean)) + 0.01 * rng.standard_normal()
        steps = (np.asarray(seeds) % 7 + 1).astype(np.int64)
        return bb.EvalResult(fitness, steps, {"obs": obs})

    def observe(self, result):
        self.count += len(result)
        self.total = self.total + result.info["obs"].sum(axis=0)

    def state_dict(self):
        return {"count": self.count, "mean": self.total / max(self.count, 1)}

    def load_state_dict(self, state):
        self.count = int(state["count"])
        self.mean = np.array(state["mean"], dtype=np.float64)


class KillOnce(Stateful):
    """SIGKILLs the actor process evaluating it once, in the first generation with state."""

    def __init__(self, dim: int, marker: str):
        super().__init__(dim)
        self.marker = marker

    def evaluate(self, params, seeds):
        if self.count > 0:
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass
            else:
                os.write(fd, str(os.getpid()).encode())
                os.close(fd)
                os.kill(os.getpid(), signal.SIGKILL)
        return super().evaluate(params, seeds)


class FailsOnMark(bb.Problem):
    """Raises ValueError for rows whose first parameter is 99."""

    dim = 3

    def evaluate(self, params, seeds):
        if np.any(params[:, 0] == 99.0):
            raise ValueError("parameter 0 is the forbidden value 99.0")
        return bb.EvalResult(-np.sum(params**2, axis=1), np.ones(len(params), dtype=np.int64))


class Slow(Stateful):
    """Stateful, after sleeping ``delay`` seconds a row: generations long enough to lose a node in one."""

    def __init__(self, dim: int = 6, delay: float = 0.05):
        super().__init__(dim)
        self.delay = delay

    def evaluate(self, params, seeds):
        import time

        time.sleep(self.delay * len(params))
        return super().evaluate(params, seeds)


def _descends_from(pid: int) -> bool:
    """Whether this process runs under process ``pid`` (read from /proc: Linux)."""
    current = os.getpid()
    while current > 1:
        if current == pid:
            return True
        try:
            with open(f"/proc/{current}/stat") as stat:
                current = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


class SlowerUnder(Stateful):
    """Stateful, after sleeping ``delay`` seconds a row, ``factor`` times longer in the processes under
    process ``slow_pid`` (one simulated node's raylet): a node that many times slower than the others."""

    def __init__(self, dim: int, delay: float, slow_pid: int, factor: float = 5.0):
        super().__init__(dim)
        self.delay, self.slow_pid, self.factor = delay, slow_pid, factor
        self._slow: bool | None = None

    def evaluate(self, params, seeds):
        import time

        if self._slow is None:
            self._slow = _descends_from(self.slow_pid)
        time.sleep(self.delay * len(params) * (self.factor if self._slow else 1.0))
        return super().evaluate(params, seeds)
