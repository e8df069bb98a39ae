"""Classic test functions as problems. Fitness is the negated loss, so the optimum has fitness 0.

``quadratic`` is the OpenAI blog's example, ``-sum((x - solution)^2)`` with the solution
[0.5, 0.1, -0.3] (repeated cyclically when ``dim`` > 3, or any vector you pass). ``sphere``,
``rosenbrock`` and ``rastrigin`` are the usual benchmarks with their usual optima. All evaluate a
whole batch of rows at once with numpy and ignore the seeds (they are deterministic).
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np
import numpy.typing as npt

from .._validate import MAX_DIM, check_float, check_int, check_vector
from ..core.problem import EvalResult, Problem

__all__ = ["Quadratic", "Sphere", "Rosenbrock", "Rastrigin", "BLOG_SOLUTION"]

BLOG_SOLUTION = (0.5, 0.1, -0.3)


class _TestFunction(Problem):
    """Shared plumbing: dimension, initial point, batched evaluation of ``loss``."""

    #: Half-width of the box the initial point is drawn from (uniform), or None for N(0, 1).
    init_range: float | None = None

    def __init__(self, dim: int, init_scale: float | None = None):
        self.dim = check_int("dim", dim, minimum=1, maximum=MAX_DIM)
        if init_scale is not None:
            self.init_range = check_float("init_scale", init_scale, positive=True)

    @abstractmethod
    def loss(self, x: np.ndarray) -> np.ndarray:
        """Loss of each row of ``x`` (shape ``(m, dim)``); 0 at the optimum."""

    @property
    def x_opt(self) -> np.ndarray:
        """The known optimum."""
        return np.zeros(self.dim)

    def evaluate(self, params: np.ndarray, seeds: np.ndarray) -> EvalResult:
        x = np.asarray(params, dtype=np.float64)
        return EvalResult(fitness=-self.loss(x), steps=np.zeros(len(x), dtype=np.int64))

    def initial_params(self, rng: np.random.Generator) -> np.ndarray:
        if self.init_range is None:
            return rng.standard_normal(self.dim)
        return rng.uniform(-self.init_range, self.init_range, self.dim)

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "dim": self.dim}


class Quadratic(_TestFunction):
    """``-sum((x - solution)^2)``: the OpenAI blog's example, from a standard-normal start."""

    name = "quadratic"

    def __init__(self, dim: int | None = None, *, solution: npt.ArrayLike | None = None, init_scale: float | None = None):
        if solution is None:
            dim = len(BLOG_SOLUTION) if dim is None else check_int("dim", dim, minimum=1, maximum=MAX_DIM)
            solution = np.resize(np.array(BLOG_SOLUTION), dim)
        elif np.isscalar(solution):
            if dim is None:
                dim = 1
            solution = np.full(check_int("dim", dim, minimum=1, maximum=MAX_DIM), check_float("solution", solution))
        self.solution = check_vector("solution", solution, dim)
        super().__init__(len(self.solution), init_scale)

    @property
    def x_opt(self) -> np.ndarray:
        return self.solution.copy()

    def loss(self, x: np.ndarray) -> np.ndarray:
        return np.sum((x - self.solution) ** 2, axis=1)

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "dim": self.dim, "solution": self.solution.tolist()}


class Sphere(_TestFunction):
    """``-sum(x^2)``, optimum at 0; start uniform in [-5, 5]."""

    name = "sphere"
    init_range = 5.0

    def __init__(self, dim: int = 10, *, init_scale: float | None = None):
        super().__init__(dim, init_scale)

    def loss(self, x: np.ndarray) -> np.ndarray:
        return np.sum(x * x, axis=1)


class Rosenbrock(_TestFunction):
    """``-sum(100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2)``, optimum at 1; start uniform in [-2, 2]."""

    name = "rosenbrock"
    init_range = 2.0

    def __init__(self, dim: int = 10, *, init_scale: float | None = None):
        super().__init__(check_int("dim", dim, minimum=2, maximum=MAX_DIM), init_scale)

    @property
    def x_opt(self) -> np.ndarray:
        return np.ones(self.dim)

    def loss(self, x: np.ndarray) -> np.ndarray:
        return np.sum(100.0 * (x[:, 1:] - x[:, :-1] ** 2) ** 2 + (1.0 - x[:, :-1]) ** 2, axis=1)


class Rastrigin(_TestFunction):
    """``-(10 d + sum(x^2 - 10 cos(2 pi x)))``, optimum at 0; start uniform in [-5.12, 5.12]."""

    name = "rastrigin"
    init_range = 5.12

    def __init__(self, dim: int = 10, *, init_scale: float | None = None):
        super().__init__(dim, init_scale)

    def loss(self, x: np.ndarray) -> np.ndarray:
        return 10.0 * self.dim + np.sum(x * x - 10.0 * np.cos(2.0 * np.pi * x), axis=1)
