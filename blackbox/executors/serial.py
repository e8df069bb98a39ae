"""Evaluate in the calling process, one batch after another: the reference every executor matches."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validate import check_int
from ..core.executor import Executor, evaluate_rows
from ..core.population import Population
from ..core.problem import EvalResult

__all__ = ["SerialExecutor"]


class SerialExecutor(Executor):
    """Runs ``problem.evaluate`` here, ``batch_size`` rows at a time (default: by memory)."""

    name = "serial"

    def __init__(self, batch_size: int | None = None):
        super().__init__()
        self.batch_size = None if batch_size is None else check_int("batch_size", batch_size, minimum=1)

    def evaluate(
        self, population: Population, seeds: np.ndarray, state: dict[str, Any] | None = None
    ) -> EvalResult:
        problem = self._require_started()
        if state:
            problem.load_state_dict(state)
        return evaluate_rows(problem, population, np.asarray(seeds, dtype=np.int64), batch_size=self.batch_size)
