"""blackbox: evolution strategies for black-box optimization and reinforcement learning.

    import blackbox as bb
    es = bb.make_strategy("openai-es", dim=3, seed=0)
    for generation in range(300):
        x = es.ask().params                                   # (popsize, 3)
        es.tell(-((x - [0.5, 0.1, -0.3]) ** 2).sum(axis=1))    # higher is better

Fitness is maximized. Strategies, problems and executors are plugins found by name through
entry points; ``bb.optimize`` is the driver that runs them together.
"""

from __future__ import annotations

from .core.executor import Executor
from .core.noise import NoiseTable
from .core.population import Population
from .core.problem import EvalResult, Problem
from .core.seeding import evaluation_seeds
from .core.strategy import Strategy
from .driver import stop
from .driver.loop import Callback, Record, Result, Run, optimize
from .errors import (
    BlackboxError,
    CheckpointError,
    ConfigError,
    DatasetError,
    EvaluationError,
    PluginError,
    SpecError,
    StateError,
    StorageError,
    TellError,
    UnknownNameError,
    WorkerError,
)
from .executors.futures import FuturesExecutor
from .executors.loky import LokyExecutor
from .registry.plugins import make_executor, make_problem, make_strategy
from .registry.spec import Spec, parse_spec
from .strategies.optim import SGD, Adam, ClipUp, make_optimizer
from .strategies.shaping import centered_ranks, nes_utilities, zscore

__version__ = "0.1.0"

__all__ = [
    "Adam", "BlackboxError", "Callback", "CheckpointError", "ClipUp", "ConfigError", "DatasetError",
    "EvalResult", "EvaluationError", "Executor", "FuturesExecutor", "LokyExecutor", "NoiseTable",
    "PluginError", "Population", "Problem", "Record",
    "Result", "Run", "SGD", "Spec", "SpecError", "StateError", "StorageError", "Strategy", "TellError",
    "UnknownNameError", "WorkerError", "centered_ranks", "evaluation_seeds", "make_executor",
    "make_optimizer", "make_problem", "make_strategy", "nes_utilities", "optimize", "parse_spec", "stop", "zscore",
    "__version__",
]
