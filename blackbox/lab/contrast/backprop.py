"""The backpropagation baseline: the problem's own network trained with torch autograd.

Same architecture, same initial weights, same data tensors, same device and the same test
evaluation as the evolution strategy; only the gradient comes from autograd instead of from
perturbations. Minibatches are drawn epoch by epoch from a seeded permutation. Wall time counts
training steps only (test evaluations are excluded, as on the ES side).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..._validate import check_choice, check_float, check_int
from ...errors import ConfigError
from .curves import Curve, EvalSchedule

__all__ = ["BackpropConfig", "train_backprop", "BACKPROP_OPTIMIZERS"]

BACKPROP_OPTIMIZERS = ("adam", "sgd")


@dataclass(frozen=True)
class BackpropConfig:
    """Optimizer (``adam`` or ``sgd`` with ``momentum``), learning rate, minibatch size."""

    optimizer: str = "adam"
    lr: float = 0.01
    batch_size: int = 64
    momentum: float = 0.9

    def __post_init__(self):
        check_choice("optimizer", self.optimizer, BACKPROP_OPTIMIZERS)
        check_float("lr", self.lr, positive=True)
        check_int("batch_size", self.batch_size, minimum=1)
        check_float("momentum", self.momentum, nonnegative=True, below=1.0)

    @property
    def label(self) -> str:
        extra = f", momentum {self.momentum:g}" if self.optimizer == "sgd" else ""
        return f"backprop ({self.optimizer}, lr {self.lr:g}, batch {self.batch_size}{extra})"


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def train_backprop(
    problem,
    x0: np.ndarray,
    config: BackpropConfig | None = None,
    *,
    max_time: float | None = None,
    max_steps: int | None = None,
    target: float | None = None,
    seed: int = 0,
    schedule: EvalSchedule | None = None,
) -> Curve:
    """Train ``problem.network()`` from the flat parameters ``x0`` until ``target`` test accuracy,
    ``max_time`` seconds of training or ``max_steps`` steps; returns the learning curve."""
    config = config or BackpropConfig()
    schedule = schedule or EvalSchedule()
    import torch
    import torch.nn.functional as F

    if max_time is None and max_steps is None:
        raise ConfigError("train_backprop needs a budget: max_time= or max_steps=")
    data = problem.tensors()
    x_train, y_train = data["x_train"], data["y_train"]
    n = len(y_train)
    net = problem.network()
    torch.nn.utils.vector_to_parameters(torch.as_tensor(np.array(x0), dtype=torch.float32), net.parameters())
    net.to(problem.device).train()
    opt: torch.optim.Optimizer
    if config.optimizer == "adam":
        opt = torch.optim.Adam(net.parameters(), lr=config.lr)
    else:
        opt = torch.optim.SGD(net.parameters(), lr=config.lr, momentum=config.momentum)
    generator = torch.Generator().manual_seed(int(seed))
    batch = min(config.batch_size, n)

    def flat() -> np.ndarray:
        return torch.nn.utils.parameters_to_vector(net.parameters()).detach().cpu().double().numpy()

    curve = Curve(method=config.label, unit="step", pass_kind="forward+backward")
    score = problem.split_score(flat())
    curve.add(0, 0.0, 0, score["accuracy"], score["loss"])
    order = torch.randperm(n, generator=generator)
    cursor = step = last = 0
    elapsed = 0.0
    reason = ""
    while not reason:
        started = time.perf_counter()
        while True:
            if cursor + batch > n:
                order, cursor = torch.randperm(n, generator=generator), 0
            index = order[cursor:cursor + batch].to(x_train.device)
            cursor += batch
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(net(x_train[index]), y_train[index])
            loss.backward()
            opt.step()
            step += 1
            if schedule.due(step, last) or (max_steps is not None and step >= max_steps):
                break
        _sync(problem.device)
        elapsed += time.perf_counter() - started
        last = step
        score = problem.split_score(flat())
        curve.add(step, elapsed, step * batch, score["accuracy"], score["loss"])
        if not math.isfinite(score["loss"]):
            reason = "diverged (non-finite test loss)"
        elif target is not None and score["accuracy"] >= target:
            reason = f"test accuracy {score['accuracy']:.4f} >= target {target:g}"
        elif max_time is not None and elapsed >= max_time:
            reason = f"training time {elapsed:.1f}s >= {max_time:g}s"
        elif max_steps is not None and step >= max_steps:
            reason = f"steps {step} >= {max_steps}"
    curve.stop_reason = reason
    return curve
