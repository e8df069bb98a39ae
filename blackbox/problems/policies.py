"""Policies: flat parameter vectors that map a batch of observations to action outputs.

A policy is a small picklable recipe (sizes, activation, or a torch module) with ``dim``
parameters. ``batch(capacity)`` makes the per-process runtime: one parameter slot per episode
running side by side, ``load(slot, params)`` when a member takes a slot, ``move(src, dst)`` to compact, and ``forward(x, live)``
that computes the outputs of slots ``[0, live)`` in ONE call. The output of a slot depends only on
its own parameters and observation, never on the other slots, so batched and one-by-one
evaluation agree bit for bit.

- :class:`MLPPolicy`: the default, a multilayer perceptron (2 hidden layers of 64, tanh, as in
  the ES paper's code) run as float32 batched matrix products in numpy (no torch needed). Its flat
  layout is torch's: ``to_torch()`` gives the same network as a ``torch.nn.Sequential``. Hidden
  sizes ``()`` give the linear policy.
- :class:`TorchPolicy`: any ``torch.nn.Module`` (flattened with torch's own parameter order through
  :class:`blackbox.torch_params.FlatParams`), run for all slots with ``torch.func.functional_call``
  + ``vmap``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..validation import check_choice, check_int

__all__ = ["MLPPolicy", "TorchPolicy", "make_policy", "ACTIVATIONS"]


def _tanh(x):
    np.tanh(x, out=x)


def _relu(x):
    np.maximum(x, 0, out=x)


def _sigmoid(x):
    # 1 / (1 + exp(-x)) written as (1 + tanh(x / 2)) / 2: no overflow for large |x|
    x *= 0.5
    np.tanh(x, out=x)
    x += 1
    x *= 0.5


def _elu(x):
    negative = x < 0
    x[negative] = np.expm1(x[negative])


ACTIVATIONS: dict[str, Callable[[np.ndarray], None]] = {
    "tanh": _tanh, "relu": _relu, "sigmoid": _sigmoid, "elu": _elu,
}
_TORCH_ACTIVATIONS = {"tanh": "Tanh", "relu": "ReLU", "sigmoid": "Sigmoid", "elu": "ELU"}


class MLPPolicy:
    """Fully connected ``in -> hidden... -> out`` with ``activation`` between layers; numpy, float32.

    Parameters are laid out as torch's ``nn.Linear`` layers in order (weight ``(out, in)`` then
    bias), so a vector trained here loads into :meth:`to_torch`'s network unchanged.
    """

    kind = "mlp"

    def __init__(self, in_size: int, out_size: int, hidden: Sequence[int] = (64, 64), activation: str = "tanh"):
        self.in_size = check_int("observation size", in_size, minimum=1)
        self.out_size = check_int("output size", out_size, minimum=1)
        if isinstance(hidden, (int, np.integer)):
            hidden = (hidden,)
        self.hidden = tuple(check_int("hidden layer size", h, minimum=1) for h in hidden)
        self.activation = check_choice("activation", activation, ACTIVATIONS)
        sizes = (self.in_size, *self.hidden, self.out_size)
        self.layers = list(zip(sizes[:-1], sizes[1:]))
        self.dim = int(sum(i * o + o for i, o in self.layers))

    def describe(self) -> str:
        if not self.hidden:
            return f"linear {self.in_size}->{self.out_size}"
        return f"mlp {'-'.join(map(str, (self.in_size, *self.hidden, self.out_size)))} {self.activation}"

    def initial_params(self, rng: np.random.Generator) -> np.ndarray:
        """The ES paper's initialization: each unit's weights scaled to norm 1 (0.01 for the
        output layer), biases zero."""
        parts = []
        for k, (i, o) in enumerate(self.layers):
            std = 0.01 if k == len(self.layers) - 1 else 1.0
            w = rng.standard_normal((o, i))
            w *= std / np.sqrt(np.square(w).sum(axis=1, keepdims=True))
            parts += [w.reshape(-1), np.zeros(o)]
        return np.concatenate(parts)

    def batch(self, capacity: int) -> MLPBatch:
        return MLPBatch(self, capacity)

    def to_torch(self, params: np.ndarray | None = None):
        """This network as a ``torch.nn.Sequential`` (loaded with ``params`` when given)."""
        import torch

        modules: list = []
        for k, (i, o) in enumerate(self.layers):
            modules.append(torch.nn.Linear(i, o))
            if k < len(self.layers) - 1:
                modules.append(getattr(torch.nn, _TORCH_ACTIVATIONS[self.activation])())
        net = torch.nn.Sequential(*modules)
        if params is not None:
            vector = torch.as_tensor(np.asarray(params, dtype=np.float32))
            torch.nn.utils.vector_to_parameters(vector, net.parameters())
        return net


class MLPBatch:
    """Per-slot float32 weights of an :class:`MLPPolicy`; one batched product per layer and step."""

    def __init__(self, policy: MLPPolicy, capacity: int):
        self.policy = policy
        self.capacity = int(capacity)
        # Weights stored as (slot, in, out) and biases as (slot, 1, out): activations stay
        # (slot, 1, width) row vectors from layer to layer, so x @ W + b needs no reshaping.
        self.weights = [np.zeros((self.capacity, i, o), dtype=np.float32) for i, o in policy.layers]
        self.biases = [np.zeros((self.capacity, 1, o), dtype=np.float32) for _, o in policy.layers]
        self.act = ACTIVATIONS[policy.activation]

    def load(self, slot: int, params: np.ndarray) -> None:
        start = 0
        for w, b, (i, o) in zip(self.weights, self.biases, self.policy.layers):
            w[slot] = params[start : start + i * o].reshape(o, i).T
            start += i * o
            b[slot, 0] = params[start : start + o]
            start += o

    def move(self, src: int, dst: int) -> None:
        """Copy slot ``src`` into slot ``dst`` (whose member has finished)."""
        for array in (*self.weights, *self.biases):
            array[dst] = array[src]

    def forward(self, x: np.ndarray, live: int) -> np.ndarray:
        """Outputs ``(live, out)`` of slots ``[0, live)`` for float32 inputs ``x`` ``(live, in)``."""
        h = x[:, None, :]
        act = self.act
        for w, b in zip(self.weights[:-1], self.biases[:-1]):
            h = np.matmul(h, w[:live])
            h += b[:live]
            act(h)
        h = np.matmul(h, self.weights[-1][:live])
        h += self.biases[-1][:live]
        return h[:, 0, :]


class TorchPolicy:
    """Any ``torch.nn.Module``: its parameters are the flat vector (torch's order)."""

    kind = "torch"

    def __init__(self, module: Any, in_size: int, out_size: int):
        from ..torch_params import FlatParams

        self.flat = FlatParams(module)
        self.in_size = int(in_size)
        self.out_size = int(out_size)
        self.dim = self.flat.dim

    def describe(self) -> str:
        return f"torch {type(self.flat.module).__name__} ({self.dim} parameters)"

    def initial_params(self, rng: np.random.Generator) -> np.ndarray:
        """The module's own initialization."""
        return self.flat.initial()

    def output_shape(self) -> tuple[int, ...]:
        """The shape of one observation's output (checked against the action space)."""
        import torch

        out = self.flat.forward(self.flat.initial()[None], torch.zeros(1, self.in_size))
        return tuple(out.shape[1:])

    def batch(self, capacity: int) -> TorchBatch:
        return TorchBatch(self, capacity)

    def to_torch(self, params: np.ndarray | None = None):
        if params is not None:
            self.flat.load(params)
        return self.flat.module


class TorchBatch:
    """Per-slot flat parameters of a :class:`TorchPolicy`; one vmapped functional call per step."""

    def __init__(self, policy: TorchPolicy, capacity: int):
        import torch

        self.torch = torch
        self.policy = policy
        self.params = torch.zeros(int(capacity), policy.dim, dtype=policy.flat.dtype)

    def load(self, slot: int, params: np.ndarray) -> None:
        self.params[slot] = self.torch.from_numpy(np.asarray(params, dtype=np.float32))

    def move(self, src: int, dst: int) -> None:
        self.params[dst] = self.params[src]

    def forward(self, x: np.ndarray, live: int) -> np.ndarray:
        out = self.policy.flat.forward(self.params[:live], self.torch.from_numpy(x))
        return out.reshape(live, -1).numpy()


def _resolve_import(path: str) -> Any:
    module_name, _, attr = path.partition(":")
    try:
        obj = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"policy {path!r} could not be imported: {type(exc).__name__}: {exc}") from None
    return obj


def make_policy(policy: Any, in_size: int, out_size: int, hidden: Sequence[int] = (64, 64),
                activation: str = "tanh"):
    """Build a policy from ``"mlp"``, ``"linear"``, a ``torch.nn.Module``, a factory
    ``(in_size, out_size) -> Module``, or an import path ``"package.module:attribute"`` to either."""
    if isinstance(policy, str):
        if policy == "mlp":
            return MLPPolicy(in_size, out_size, hidden, activation)
        if policy == "linear":
            return MLPPolicy(in_size, out_size, (), activation)
        if ":" not in policy:
            check_choice("policy", policy, ["mlp", "linear"])
        policy = _resolve_import(policy)
    if _is_torch_module(policy):
        return TorchPolicy(policy, in_size, out_size)
    if callable(policy):
        module = policy(in_size, out_size)
        if not _is_torch_module(module):
            raise ConfigError(
                f"policy factory {getattr(policy, '__name__', policy)!r} returned {type(module).__name__}; "
                f"it must return a torch.nn.Module for (in_size={in_size}, out_size={out_size})"
            )
        return TorchPolicy(module, in_size, out_size)
    raise ConfigError(
        f"policy must be 'mlp', 'linear', a torch.nn.Module, a factory (in_size, out_size) -> Module "
        f"or an import path 'package.module:attribute', got {type(policy).__name__}"
    )


def _is_torch_module(obj: Any) -> bool:
    torch = __import__("sys").modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)
