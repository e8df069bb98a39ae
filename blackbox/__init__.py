"""blackbox: evolution strategies for black-box optimization and reinforcement learning.

    import blackbox as bb
    es = bb.make_strategy("openai-es", dim=3, seed=0)
    for generation in range(300):
        x = es.ask().params                                   # (popsize, 3)
        es.tell(-((x - [0.5, 0.1, -0.3]) ** 2).sum(axis=1))    # higher is better

Fitness is maximized. Strategies, problems and executors are plugins found by name through
entry points; ``bb.optimize`` is the driver that runs them together.

What is here: the protocols (``Strategy``, ``Population``, ``NoiseTable``, ``Problem``,
``EvalResult``, ``Executor``) and the three built-in executors; the factories that build a plugin
by name (``make_strategy``, ``make_problem``, ``make_executor``); the driver (``optimize``, ``Run``,
``Result``, ``Record``, ``Callback``, ``evaluation_seeds``); checkpoints (``Checkpointer``,
``load_checkpoint``); the errors a plugin raises or a user catches (``BlackboxError``,
``ConfigError``, ``StateError``). Submodules with a use of their own: ``bb.errors`` (every error),
``bb.stop`` (stop conditions), ``bb.optim`` (optimizers), ``bb.shaping`` (fitness shaping),
``bb.registry`` (plugin discovery, spec strings) and ``bb.testing`` (the conformance kit).
"""

from __future__ import annotations

from . import _moved, errors
from ._version import __version__
from .core.executor import Executor
from .core.noise import NoiseTable
from .core.population import Population
from .core.problem import EvalResult, Problem
from .core.seeding import evaluation_seeds
from .core.strategy import Strategy
from .driver import stop
from .driver.loop import Callback, Result, Run, optimize
from .driver.record import Record
from .errors import BlackboxError, ConfigError, StateError
from .executors.futures import FuturesExecutor
from .executors.loky import LokyExecutor
from .executors.serial import SerialExecutor
from .registry.plugins import make_executor, make_problem, make_strategy
from .store.checkpoint import Checkpointer, load_checkpoint
from .strategies import optim, shaping

__all__ = [
    # protocols and the built-in executors
    "Strategy", "Population", "NoiseTable", "Problem", "EvalResult", "Executor",
    "SerialExecutor", "LokyExecutor", "FuturesExecutor",
    # plugins by name
    "make_strategy", "make_problem", "make_executor",
    # the driver
    "optimize", "Run", "Result", "Record", "Callback", "evaluation_seeds",
    # checkpoints
    "Checkpointer", "load_checkpoint",
    # errors (every one in bb.errors)
    "BlackboxError", "ConfigError", "StateError",
    # submodules
    "errors", "stop", "optim", "shaping", "registry", "testing",
    "__version__",
]

#: Names that 0.1.0 exported here and 0.2.0 keeps in a submodule: name -> where it lives now.
_MOVED_NAMES = {
    **{name: "blackbox.errors" for name in (
        "CheckpointError", "DatasetError", "EvaluationError", "PluginError", "SpecError", "StorageError",
        "TellError", "UnknownNameError", "WorkerError")},
    **{name: "blackbox.optim" for name in ("Adam", "SGD", "ClipUp", "make_optimizer")},
    **{name: "blackbox.shaping" for name in ("centered_ranks", "nes_utilities", "zscore")},
    **{name: "blackbox.registry" for name in ("Spec", "parse_spec")},
}
#: ``bb.testing`` is imported on first use; the names 0.1.0 exported here come with a DeprecationWarning.
__getattr__ = _moved.forward_names(__name__, _MOVED_NAMES, submodules=("testing",))
# import blackbox.loop & co. (0.1.0 paths) and blackbox.optim & co. are stub modules at those paths (_moved).


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
