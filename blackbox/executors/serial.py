"""Evaluate in the calling process, one batch after another: the reference every executor matches.

``timeout`` bounds each call of ``problem.evaluate`` with an alarm (``SIGALRM``): a call that runs
longer is interrupted by an exception raised inside it; a batch of several rows is then evaluated
again one row per call to find the rows that hang, and a single row that times out stops the run
with an EvaluationError naming it. Its limits, since the evaluation runs in the driver's own
process: it works on the main thread of a POSIX system only; it interrupts Python code and calls
that check for signals (``time.sleep``, most I/O), not a C extension that loops without returning
to the interpreter; and a hung row cannot be skipped (there is no ``on_timeout="worst"``), since
what the interrupted call left half done in the problem cannot be undone. For those, use
``loky`` with ``timeout`` (it kills the worker process).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import numpy as np

from .._validate import check_float, check_int
from ..core.executor import Executor, RowTimeout, evaluate_rows
from ..core.population import Population
from ..core.problem import EvalResult
from ..errors import ConfigError

__all__ = ["SerialExecutor"]


class SerialExecutor(Executor):
    """Runs ``problem.evaluate`` here, ``batch_size`` rows at a time (default: by memory).

    ``timeout``: seconds one call of ``problem.evaluate`` may take (default: no limit); see the
    module's docstring for how and where it works.
    """

    name = "serial"

    def __init__(self, batch_size: int | None = None, *, timeout: float | None = None):
        super().__init__()
        self.batch_size = None if batch_size is None else check_int("batch_size", batch_size, minimum=1)
        self.timeout = None if timeout is None else check_float("timeout", timeout, positive=True)
        if self.timeout is not None and not hasattr(signal, "setitimer"):
            raise ConfigError("serial:timeout needs SIGALRM, which this system lacks; use loky:timeout=... instead")

    def evaluate(
        self, population: Population, seeds: np.ndarray, state: dict[str, Any] | None = None
    ) -> EvalResult:
        problem = self._require_started()
        if state:
            problem.load_state_dict(state)
        guard = self._deadline if self.timeout is not None else None
        if guard is not None and threading.current_thread() is not threading.main_thread():
            raise ConfigError(
                "serial:timeout works on the main thread only (it uses SIGALRM); this evaluation runs on "
                f"thread {threading.current_thread().name!r}: drop the timeout or use loky:timeout=..."
            )
        seeds = np.asarray(seeds, dtype=np.int64)
        if guard is None:
            return evaluate_rows(problem, population, seeds, batch_size=self.batch_size)
        return evaluate_rows(problem, population, seeds, batch_size=self.batch_size, guard=guard)

    @contextmanager
    def _deadline(self) -> Iterator[None]:
        """Raise RowTimeout inside the block once ``timeout`` seconds have passed."""
        seconds = float(self.timeout or 0.0)

        def expired(signum: int, frame: FrameType | None) -> None:
            raise RowTimeout(seconds)

        previous = signal.signal(signal.SIGALRM, expired)
        # The alarm repeats (every second at most) until the block is left: a problem that catches
        # RowTimeout (``except BaseException``) and goes on hanging is interrupted again, not waited for
        signal.setitimer(signal.ITIMER_REAL, seconds, min(seconds, 1.0))
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
