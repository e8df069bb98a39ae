"""Problems and a dense strategy for the executor tests, shipped to worker processes by value.

Worker processes cannot import ``tests/``, so this module registers itself with cloudpickle to be
pickled by value: its classes travel with the problem, as a user's notebook classes would.
"""

from __future__ import annotations

import os
import signal
import sys
import time

import cloudpickle
import numpy as np

import blackbox as bb

cloudpickle.register_pickle_by_value(sys.modules[__name__])


class Stateful(bb.Problem):
    """A noisy quadratic whose fitness depends on state folded from per-row info by ``observe``.

    Each row reports an observation vector (info ``obs``) drawn from its seed; the driver folds
    them into a running mean in row order, and the next generation's fitness uses that mean, so a
    worker with stale or missing state gives different numbers than ``serial``.
    """

    name = "stateful"

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
        return bb.EvalResult(fitness, steps, {"obs": obs, "count": np.ones(len(params), dtype=np.int64)})

    def observe(self, result):
        self.count += int(result.info["count"].sum())
        self.total = self.total + result.info["obs"].sum(axis=0)

    def state_dict(self):
        return {"count": self.count, "mean": self.total / max(self.count, 1)}

    def load_state_dict(self, state):
        self.count = int(state["count"])
        self.mean = np.array(state["mean"], dtype=np.float64)


class KillOnce(Stateful):
    """Kills the process evaluating it (SIGKILL) once, in the first generation with state.

    Only the first worker to create ``marker`` dies, so the run finishes after one replacement.
    """

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


class DataError(Exception):
    """An exception type the workers only know because this module travels by value."""


class FailsOnMark(bb.Problem):
    """Raises for every row whose first parameter equals ``mark`` (ValueError or DataError)."""

    name = "fails"

    def __init__(self, dim: int = 3, mark: float = 99.0, custom: bool = False):
        self.dim, self.mark, self.custom = dim, mark, custom

    def evaluate(self, params, seeds):
        if np.any(params[:, 0] == self.mark):
            error = DataError if self.custom else ValueError
            raise error(f"parameter 0 is the forbidden value {self.mark}")
        return bb.EvalResult(-np.sum(params**2, axis=1), np.ones(len(params), dtype=np.int64))


class Sleepy(bb.Problem):
    """Sleeps ``delay`` seconds per call; rows whose first parameter is >= ``hang_above`` hang
    (after leaving a file named ``hung-<pid>`` in ``hang_dir``, when given), and so does every
    call once the file ``hang_after`` exists (a test creates it when it wants the run held)."""

    name = "sleepy"

    def __init__(self, dim: int = 2, delay: float = 0.0, hang_above: float = np.inf, hang_dir: str | None = None,
                 hang_after: str | None = None):
        self.dim, self.delay, self.hang_above, self.hang_dir = dim, delay, hang_above, hang_dir
        self.hang_after = hang_after

    def evaluate(self, params, seeds):
        if np.any(params[:, 0] >= self.hang_above) or (self.hang_after and os.path.exists(self.hang_after)):
            if self.hang_dir:
                open(os.path.join(self.hang_dir, f"hung-{os.getpid()}"), "w").close()
            time.sleep(3600)
        time.sleep(self.delay)
        return bb.EvalResult(-np.sum(params**2, axis=1), np.ones(len(params), dtype=np.int64),
                             {"pid": np.full(len(params), os.getpid())})


class ThreadReport(bb.Problem):
    """Reports the thread limits of the process that evaluates (BLAS via threadpoolctl, the
    OpenMP variable, and torch's intra-op threads when ``torch`` is true)."""

    dim = 2

    def __init__(self, torch: bool = False):
        self.torch = torch

    def evaluate(self, params, seeds):
        from threadpoolctl import threadpool_info

        blas = max([p["num_threads"] for p in threadpool_info()] or [0])
        m = len(params)
        info = {"blas": np.full(m, blas), "omp_env": np.full(m, int(os.environ.get("OMP_NUM_THREADS", "0")))}
        if self.torch:
            import torch

            info["torch"] = np.full(m, torch.get_num_threads())
        return bb.EvalResult(np.zeros(m), np.zeros(m, dtype=np.int64), info)


class DenseSearch(bb.Strategy):
    """A (1, lambda) random search with freshly drawn Gaussian rows: a dense population."""

    name = "dense-search"

    def __init__(self, dim: int | None = None, *, popsize: int = 12, sigma: float = 0.3, x0=None, seed=None):
        super().__init__(dim=dim, popsize=popsize, x0=x0, seed=seed)
        self.sigma = sigma

    def _ask(self):
        rows = self._center + self.sigma * self.rng.standard_normal((self.popsize, self.dim))
        return bb.Population.from_dense(rows)

    def _tell(self, population, fitness):
        self._center = population.params[int(np.argmax(np.nan_to_num(fitness, nan=-np.inf)))].copy()
        return None
