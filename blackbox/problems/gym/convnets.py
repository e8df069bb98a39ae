"""Convolutional policies for pixel observations (Atari): the ES paper's network and DQN's.

- ``"cnn"``: the network of Salimans et al. 2017, who use "the same preprocessing and feedforward
  CNN architecture" as Mnih et al. 2016 (A3C), i.e. the network of Mnih et al. 2013: 16 filters
  8x8 stride 4, 32 filters 4x4 stride 2, a fully connected layer of 256, ReLU after each (about
  0.68M parameters on 4x84x84 inputs with 6 actions).
- ``"nature-cnn"``: the Nature DQN network (Mnih et al. 2015): 32 8x8/4, 64 4x4/2, 64 3x3/1, 512
  (about 1.7M parameters); heavier, for users who want DQN's trunk.

With ``vbn=True`` every hidden layer (each convolution and the fully connected one) is followed by
:class:`~.vbn.VirtualBatchNorm` before its ReLU and has no bias of its own (the shift of the
normalization replaces it), as in the ES code's Atari policy. Inputs are flat vectors of the
observation (``(..., C*H*W)``), reshaped to images here; ``(H, W, C)`` observations are
transposed to channels first; uint8 pixels are scaled by ``scale`` (1/255).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ...errors import ConfigError
from .vbn import VirtualBatchNorm

__all__ = ["AtariCNN", "LAYOUTS", "initial_params"]

#: name -> ((filters, kernel, stride) per convolution, fully connected width)
LAYOUTS: dict[str, tuple[tuple[tuple[int, int, int], ...], int]] = {
    "cnn": (((16, 8, 4), (32, 4, 2)), 256),
    "nature-cnn": (((32, 8, 4), (64, 4, 2), (64, 3, 1)), 512),
}


def image_shape(shape: Sequence[int] | None) -> tuple[tuple[int, int, int], bool]:
    """``((C, H, W), channels_last)`` of an observation shape, or a ConfigError."""
    shape = tuple(int(s) for s in shape) if shape is not None else ()
    if len(shape) == 2:
        return (1, *shape), False
    if len(shape) == 3:
        if shape[-1] <= 4 < shape[0]:  # (H, W, C) such as ALE's raw (210, 160, 3)
            return (shape[2], shape[0], shape[1]), True
        return shape, False
    raise ConfigError(f"the convnet policies need image observations (C, H, W), (H, W, C) or (H, W), got shape {shape}; "
                      f"use policy='mlp' for vectors")


class AtariCNN(torch.nn.Module):
    """Convolutions, one fully connected hidden layer, a linear output of ``out_size`` logits."""

    def __init__(self, obs_shape: Sequence[int] | None, out_size: int, layout: str = "cnn", vbn: bool = False,
                 scale: float = 1.0):
        super().__init__()
        if layout not in LAYOUTS:
            raise ConfigError(f"unknown convnet layout {layout!r}; choose one of {sorted(LAYOUTS)}")
        (c, h, w), self.channels_last = image_shape(obs_shape)
        self.layout = layout
        self.input_shape = (h, w, c) if self.channels_last else (c, h, w)
        self.vbn = bool(vbn)
        self.scale = float(scale)
        convs, width = LAYOUTS[layout]
        layers: list[torch.nn.Module] = []
        channels = c
        for filters, kernel, stride in convs:
            layers.append(torch.nn.Conv2d(channels, filters, kernel, stride, bias=not self.vbn))
            if self.vbn:
                layers.append(VirtualBatchNorm(filters))
            layers.append(torch.nn.ReLU())
            h, w = (h - kernel) // stride + 1, (w - kernel) // stride + 1
            if h < 1 or w < 1:
                raise ConfigError(f"observations of shape {tuple(obs_shape or ())} are too small for the {layout!r} "
                                  f"convnet (it expects 84x84 frames)")
            channels = filters
        self.features = torch.nn.Sequential(*layers)
        hidden: list[torch.nn.Module] = [torch.nn.Linear(channels * h * w, width, bias=not self.vbn)]
        if self.vbn:
            hidden.append(VirtualBatchNorm(width))
        hidden.append(torch.nn.ReLU())
        self.hidden = torch.nn.Sequential(*hidden)
        self.out = torch.nn.Linear(width, int(out_size))

    def describe(self) -> str:
        c, h, w = (self.input_shape[2], *self.input_shape[:2]) if self.channels_last else self.input_shape
        return f"{self.layout} {c}x{h}x{w}->{self.out.out_features}{' vbn' if self.vbn else ''}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        images = x.reshape(-1, *self.input_shape)
        if self.channels_last:
            images = images.permute(0, 3, 1, 2)
        if self.scale != 1.0:
            images = images * self.scale
        features = self.features(images).flatten(1)
        return self.out(self.hidden(features)).reshape(*lead, -1)


def initial_params(module: torch.nn.Module, rng: np.random.Generator) -> np.ndarray:
    """Initial flat parameters (torch's order) drawn from ``rng``, as the ES code initializes:
    every unit's incoming weights scaled to norm 1 (0.01 for the output layer), biases 0, VBN
    scale 1 and shift 0."""
    parts = []
    for name, param in module.named_parameters():
        owner_name, _, leaf = name.rpartition(".")
        owner = module.get_submodule(owner_name)
        if isinstance(owner, VirtualBatchNorm):
            parts.append(np.ones(param.numel()) if leaf == "weight" else np.zeros(param.numel()))
        elif leaf == "bias":
            parts.append(np.zeros(param.numel()))
        else:
            units = param.shape[0]
            w = rng.standard_normal((units, param[0].numel()))
            norm = 0.01 if owner is getattr(module, "out", None) else 1.0
            w *= norm / np.sqrt(np.square(w).sum(axis=1, keepdims=True))
            parts.append(w.reshape(-1))
    return np.concatenate(parts)
