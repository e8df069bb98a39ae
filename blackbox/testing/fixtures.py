"""Problems the executor checks run: importable by any worker process, cheap, and telling.

:class:`ProbeProblem` gives every row a fitness that depends on its parameters, its seed and the
synced state, reports per-row ``info`` and a seed-dependent step count, and can be told to fail on
a marked row, so an executor that loses the order, drops the state, splits ``info`` wrongly or
swallows an error is caught.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.problem import EvalResult, Problem

__all__ = ["ProbeProblem", "FAIL_MARK"]

#: A row whose first parameter equals this value makes ``ProbeProblem(fail_on_mark=True)`` raise.
FAIL_MARK = 1234.5


class ProbeProblem(Problem):
    """Seed-dependent fitness plus ``offset`` (the synced state); raises on rows marked with FAIL_MARK."""

    name = "kit-probe"

    def __init__(self, dim: int = 6, fail_on_mark: bool = False):
        self.dim = int(dim)
        self.fail_on_mark = bool(fail_on_mark)
        self.offset = 0.0

    def evaluate(self, params: np.ndarray, seeds: np.ndarray) -> EvalResult:
        params = np.asarray(params, dtype=np.float64)
        seeds = np.asarray(seeds, dtype=np.int64)
        if self.fail_on_mark:
            marked = np.flatnonzero(params[:, 0] == FAIL_MARK)
            if len(marked):
                raise ValueError(f"the probe refuses rows whose first parameter is {FAIL_MARK}")
        noise = np.array([np.random.default_rng(int(s)).standard_normal() for s in seeds])
        fitness = -np.sum(params * params, axis=1) + 0.01 * noise + self.offset
        steps = (seeds % 7 + 1).astype(np.int64)
        info = {"seed": seeds.copy(), "first": params[:, 0].copy(), "pair": np.stack([noise, params[:, -1]], axis=1)}
        return EvalResult(fitness, steps, info)

    def observe(self, result: EvalResult) -> None:
        self.offset += float(np.mean(result.info["first"])) if len(result) else 0.0

    def state_dict(self) -> dict[str, object]:
        return {"offset": self.offset}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.offset = float(state["offset"])
