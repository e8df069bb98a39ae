"""The three parts of a run from names or objects: what :func:`blackbox.optimize` is given."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validate import check_seed
from ..core.executor import Executor
from ..core.problem import Problem
from ..core.strategy import Strategy
from ..errors import ConfigError
from .component import Component
from .plugins import make_executor, make_problem, make_strategy
from .spec import Spec

__all__ = ["resolve_run_parts"]

_NAMES = (str, Spec, Component)


def resolve_run_parts(strategy: Any, problem: Any, executor: Any,
                      seed: int | None) -> tuple[Strategy, Problem, Executor, bool]:
    """Strategy, problem and executor, each built from its name (spec or Component) if not an object.

    The problem comes first. One rule places the start, whether the strategy is named or built:
    the ``x0`` it was given, else the problem's ``initial_params`` drawn from
    ``numpy.random.default_rng(run seed)`` (the run seed: ``seed``, else the strategy's own). A
    named strategy is built with that ``x0``; a strategy object whose start is still open
    (:attr:`Strategy.start_chosen`) is moved there with :meth:`Strategy.start_at`, so both give the
    same run. The last value is True when the executor was built here, so the caller owns it and closes it.
    """
    if isinstance(problem, _NAMES):
        problem = make_problem(problem)
    if not isinstance(problem, Problem):
        raise ConfigError(f"problem must be a Problem or a registered name, got {type(problem).__name__}")
    if isinstance(strategy, _NAMES):
        seed = check_seed(seed)  # drawn here when None, so that the start derives from the run seed too
        init_rng = np.random.default_rng(seed)
        strategy = make_strategy(strategy, dim=problem.dim, x0=problem.initial_params(init_rng), seed=seed)
    if not isinstance(strategy, Strategy):
        raise ConfigError(f"strategy must be a Strategy or a registered name, got {type(strategy).__name__}")
    if strategy.dim != problem.dim:
        raise ConfigError(f"strategy has dim={strategy.dim} but problem {problem.name!r} has dim={problem.dim}")
    if not strategy.start_chosen:
        run_seed = strategy.seed if seed is None else seed
        strategy.start_at(problem.initial_params(np.random.default_rng(run_seed)))
    owned = isinstance(executor, _NAMES)
    if owned:
        executor = make_executor(executor)
    if not isinstance(executor, Executor):
        raise ConfigError(f"executor must be an Executor or a registered name, got {type(executor).__name__}")
    return strategy, problem, executor, owned
