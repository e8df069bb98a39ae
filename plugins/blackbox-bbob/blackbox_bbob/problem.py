"""The 24 noiseless functions of the BBOB suite (Hansen, Finck, Ros & Auger 2009, "Real-parameter
black-box optimization benchmarking 2009: noiseless functions definitions", INRIA RR-6829) as a
blackbox problem, computed by COCO's ``coco-experiment`` package (``cocoex.BareProblem``).

Fitness is ``-(f(x) - f_opt)``: higher is better and 0 at the optimum, as for blackbox's own test
functions. Every instance shifts, rotates and offsets its function differently; the domain of
interest is ``[-5, 5]^dim``. Arguments are checked here before COCO sees them, because COCO ends
the whole process (a C-level fatal error) on a function, dimension or instance it does not know.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from blackbox import ConfigError, EvalResult, Problem
from blackbox.errors import did_you_mean
from blackbox.validate import check_int

__all__ = ["BBOB", "FUNCTIONS", "MAX_DIM"]

#: Names of the 24 functions, in COCO's order (f1 ... f24).
FUNCTIONS = (
    "sphere", "ellipsoid", "rastrigin", "buche-rastrigin", "linear-slope", "attractive-sector",
    "step-ellipsoid", "rosenbrock", "rosenbrock-rotated", "ellipsoid-rotated", "discus", "bent-cigar",
    "sharp-ridge", "different-powers", "rastrigin-rotated", "weierstrass", "schaffers", "schaffers-ill",
    "griewank-rosenbrock", "schwefel", "gallagher-101", "gallagher-21", "katsuura", "lunacek",
)
#: BBOB defines its functions for 2 to 40 variables (COCO's SUITE_BBOB2009_MAX_DIM); beyond that
#: the rotated ones overflow a fixed buffer in coco-experiment 2.8 and crash the process.
MAX_DIM = 40
MAX_INSTANCE = 2**31 - 1


def check_function(function: Any) -> int:
    """A function number 1..24, from the number or its name."""
    if isinstance(function, str):
        name = function.strip().lower()
        if name in FUNCTIONS:
            return FUNCTIONS.index(name) + 1
        if name.lstrip("f").isdigit():
            function = int(name.lstrip("f"))
        else:
            raise ConfigError(f"bbob has no function {function!r}.{did_you_mean(name, FUNCTIONS)} "
                              f"Use 1..24 or a name: {', '.join(FUNCTIONS)}")
    number = check_int("bbob function", function)
    if not 1 <= number <= len(FUNCTIONS):
        raise ConfigError(f"bbob function must be 1..24 (or a name such as 'rastrigin'), got {number}")
    return number


class BBOB(Problem):
    """A BBOB noiseless function through COCO: fitness -(f(x) - f_opt), 0 at the optimum."""

    name = "bbob"

    def __init__(self, function: int | str = 1, dim: int = 10, instance: int = 1):
        self.function = check_function(function)
        self.dim = check_int("bbob dim", dim)
        if not 2 <= self.dim <= MAX_DIM:
            raise ConfigError(f"bbob dim must be in [2, {MAX_DIM}], the dimensions BBOB is defined for "
                              f"(larger rotated instances crash coco-experiment), got {self.dim}")
        self.instance = check_int("bbob instance", instance)
        if not 1 <= self.instance <= MAX_INSTANCE:
            raise ConfigError(f"bbob instance must be in [1, {MAX_INSTANCE}], got {self.instance}")
        self._coco = None

    @property
    def coco(self):
        """The ``cocoex.BareProblem``, built on first use in each process (it does not pickle)."""
        if self._coco is None:
            import cocoex

            self._coco = cocoex.BareProblem("bbob", self.function, self.dim, self.instance)
        return self._coco

    @property
    def function_name(self) -> str:
        return FUNCTIONS[self.function - 1]

    @property
    def f_opt(self) -> float:
        """The optimal value f(x_opt) of this instance."""
        return float(self.coco.best_value())

    @property
    def x_opt(self) -> np.ndarray:
        """The optimum of this instance."""
        return np.array(self.coco.best_parameter(), dtype=np.float64)

    def evaluate(self, params: np.ndarray, seeds: np.ndarray) -> EvalResult:
        x = np.array(params, dtype=np.float64, order="C", copy=True)  # COCO wants a writable C array
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ConfigError(f"bbob {self.function_name} takes rows of {self.dim} values, got shape {x.shape}")
        f = np.asarray(self.coco(x), dtype=np.float64).reshape(len(x))
        return EvalResult(fitness=-(f - self.f_opt), steps=np.zeros(len(x), dtype=np.int64))

    def initial_params(self, rng: np.random.Generator) -> np.ndarray:
        """A start drawn as COCO proposes restarts: the sum of two uniforms, density 0.2 (1 - |x|/5) on [-5, 5]."""
        return rng.uniform(-2.5, 2.5, self.dim) + rng.uniform(-2.5, 2.5, self.dim)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "function": self.function, "function_name": self.function_name,
                "dim": self.dim, "instance": self.instance, "f_opt": self.f_opt}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_coco"] = None
        return state

    def __repr__(self) -> str:
        return f"BBOB(function={self.function} ({self.function_name}), dim={self.dim}, instance={self.instance})"
