"""The small image classifiers of the ``mnist`` problem: an MLP and a convnet, built by name.

Both take images ``(n, 1, rows, cols)`` and return class logits ``(n, classes)``. The same
builder serves the evolution strategy (through flat parameter vectors) and the backpropagation
baseline, so the two train exactly the same network from exactly the same initial weights.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from ..._validate import check_choice, check_int
from ...errors import ConfigError

__all__ = ["MODELS", "ACTIVATIONS", "POOLINGS", "MaxPool2x2", "build_classifier", "seeded_classifier"]

MODELS = ("mlp", "cnn")
ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "tanh": nn.Tanh}


class MaxPool2x2(nn.Module):
    """2x2 max-pooling with stride 2 (odd edges dropped), as the maximum of four strided slices.

    Gives exactly the values of ``nn.MaxPool2d(2)``, several times faster on CPU for small
    images in torch's default (NCHW) layout, whose pooling kernel is slow there
    (``benchmarks/mnist_forward.py``); it also works under ``torch.func.vmap``.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape[-2] // 2 * 2, x.shape[-1] // 2 * 2
        x = x[..., :rows, :cols]
        top = torch.maximum(x[..., 0::2, 0::2], x[..., 0::2, 1::2])
        bottom = torch.maximum(x[..., 1::2, 0::2], x[..., 1::2, 1::2])
        return torch.maximum(top, bottom)


POOLINGS: dict[str, Callable[[], nn.Module]] = {"torch": lambda: nn.MaxPool2d(2), "slices": MaxPool2x2}


def _widths(name: str, values: Sequence[int] | int, allow_empty: bool) -> tuple[int, ...]:
    if isinstance(values, (int,)) and not isinstance(values, bool):
        values = [values]
    if not isinstance(values, (list, tuple)):
        raise ConfigError(f"{name} must be a list of layer widths such as [64] or [128, 64], got {values!r}")
    if not values and not allow_empty:
        raise ConfigError(f"{name} must list at least one width, got {list(values)!r}")
    return tuple(check_int(f"{name}[{i}]", v, minimum=1) for i, v in enumerate(values))


def build_classifier(
    model: str,
    image_shape: tuple[int, int],
    n_classes: int,
    *,
    hidden: Sequence[int] | int = (64,),
    channels: Sequence[int] | int = (8, 16),
    activation: str = "relu",
    pooling: str = "torch",
) -> nn.Sequential:
    """``mlp``: flatten, then ``hidden`` fully connected layers (``[]``: a linear classifier).
    ``cnn``: per entry of ``channels`` a 3x3 convolution (padding 1), the activation and a 2x2
    max-pool, then one linear layer to the classes.

    ``pooling`` picks the implementation of the max-pool, not its result: ``torch``
    (``nn.MaxPool2d``, the faster one to train through with autograd) or ``slices``
    (:class:`MaxPool2x2`, the faster forward for evaluating a population). Both give the same
    values and have no parameters, so one flat parameter vector serves both.
    """
    check_choice("model", model, MODELS)
    check_choice("activation", activation, ACTIVATIONS)
    check_choice("pooling", pooling, POOLINGS)
    act = ACTIVATIONS[activation]
    rows, cols = image_shape
    layers: list[nn.Module] = [nn.Flatten()] if model == "mlp" else []
    if model == "mlp":
        width = rows * cols
        for h in _widths("hidden", hidden, allow_empty=True):
            layers += [nn.Linear(width, h), act()]
            width = h
    else:
        widths = _widths("channels", channels, allow_empty=False)
        if rows >> len(widths) < 1 or cols >> len(widths) < 1:
            raise ConfigError(
                f"channels={list(widths)} asks for {len(widths)} 2x2 poolings, but {rows}x{cols} images "
                f"allow at most {min(rows, cols).bit_length() - 1}"
            )
        previous = 1
        for c in widths:
            layers += [nn.Conv2d(previous, c, 3, padding=1), act(), POOLINGS[pooling]()]
            previous, rows, cols = c, rows // 2, cols // 2
        layers.append(nn.Flatten())
        width = previous * rows * cols
    layers.append(nn.Linear(width, n_classes))
    return nn.Sequential(*layers)


def seeded_classifier(seed: int, *args, **kwargs) -> nn.Sequential:
    """:func:`build_classifier` with torch's default initialization drawn from ``seed``
    (the global torch RNG is left as it was)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        return build_classifier(*args, **kwargs)
