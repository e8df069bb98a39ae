"""One contrast run: the same network trained by an evolution strategy and by backpropagation.

Both start from the same initial weights (drawn from the run seed), read the same data tensors
on the same device with the same number of torch threads, and are scored the same way (test
accuracy of the current solution). Data loading and a warm-up call of each side happen before
any clock starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..._validate import check_float, check_int
from ...errors import ConfigError
from .backprop import BackpropConfig, train_backprop
from .curves import Comparison, Curve, EvalSchedule, compare
from .es import train_es

__all__ = ["BLOG_SLOWDOWN", "BLOG_QUOTE", "ContrastReport", "run_contrast", "check_supervised"]

#: OpenAI's blog post on ES (2017): on MNIST, ES "can be as much as 1,000 times slower than using
#: backpropagation".
BLOG_SLOWDOWN = 1000.0
BLOG_QUOTE = ('OpenAI blog (2017): on MNIST, estimating the gradient with ES "can be as much as 1,000 '
              'times slower than using backpropagation"')
_SUPERVISED = ("network", "tensors", "split_score", "prepare", "initial_params", "data")


@dataclass
class ContrastReport:
    """Everything the command prints, plots and writes as JSON."""

    problem: dict[str, object]
    data_statement: str
    data_label: str
    es: Curve
    backprop: Curve
    es_config: dict[str, object]
    backprop_config: dict[str, object]
    comparison: Comparison
    settings: dict[str, object] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {
            "problem": self.problem, "data": self.data_statement, "settings": self.settings,
            "es": {"config": self.es_config, "curve": self.es.as_dict(), "final": self.es.final},
            "backprop": {"config": self.backprop_config, "curve": self.backprop.as_dict(),
                         "final": self.backprop.final},
            "comparison": self.comparison.as_dict(),
            "blog": {"slowdown": BLOG_SLOWDOWN, "quote": BLOG_QUOTE},
        }


def check_supervised(problem) -> None:
    """Refuse a problem that has no network and data for a backpropagation baseline."""
    missing = [m for m in _SUPERVISED if not hasattr(problem, m)]
    if missing:
        name = getattr(problem, "name", type(problem).__name__)
        raise ConfigError(
            f"contrast needs a supervised problem with a torch network and data (such as 'mnist'); "
            f"problem {name!r} lacks {', '.join(missing)}"
        )


def _warm_up(problem, x0: np.ndarray, bp: BackpropConfig) -> None:
    import torch.nn.functional as F

    problem.prepare()
    problem.evaluate(np.stack([x0, x0]), np.zeros(2, dtype=np.int64))
    problem.split_score(x0)
    data = problem.tensors()
    net = problem.network()
    F.cross_entropy(net(data["x_train"][: bp.batch_size]), data["y_train"][: bp.batch_size]).backward()


def run_contrast(
    problem,
    *,
    strategy: str = "openai-es",
    settings: Mapping[str, object] | None = None,
    executor="serial",
    backprop: BackpropConfig | None = None,
    max_time: float = 60.0,
    target: float | None = 0.95,
    seed: int = 0,
    threads: int | None = 1,
    schedule: EvalSchedule | None = None,
) -> ContrastReport:
    """Train both methods until ``target`` test accuracy or ``max_time`` seconds of training each."""
    import torch

    backprop = backprop or BackpropConfig()
    schedule = schedule or EvalSchedule()
    check_supervised(problem)
    max_time = check_float("max_time", max_time, positive=True)
    if target is not None:
        target = check_float("target", target, positive=True, maximum=1.0)
    previous_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(check_int("threads", threads, minimum=1))
    try:
        x0 = problem.initial_params(np.random.default_rng(seed))
        _warm_up(problem, x0, backprop)
        bp_curve = train_backprop(problem, x0, backprop, max_time=max_time, target=target, seed=seed,
                                  schedule=schedule)
        es_curve, _, es_config = train_es(problem, x0, strategy, settings, executor=executor,
                                          max_time=max_time, target=target, seed=seed, schedule=schedule)
    finally:
        torch.set_num_threads(previous_threads)
    return ContrastReport(
        problem=problem.describe(), data_statement=problem.data.statement, data_label=problem.data.label,
        es=es_curve, backprop=bp_curve, es_config=es_config,
        backprop_config={"optimizer": backprop.optimizer, "lr": backprop.lr, "batch_size": backprop.batch_size,
                         **({"momentum": backprop.momentum} if backprop.optimizer == "sgd" else {})},
        comparison=compare(es_curve, bp_curve, target),
        settings={"max_time": max_time, "target": target, "seed": seed,
                  "threads": threads if threads is not None else previous_threads,
                  "executor": str(executor) if isinstance(executor, str) else type(executor).__name__,
                  "eval_schedule": {"dense": schedule.dense, "growth": schedule.growth}},
    )
