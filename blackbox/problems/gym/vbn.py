"""Virtual batch normalization for torch policies (Salimans et al. 2016, used by Salimans et al. 2017).

Batch normalization makes a policy's output depend on the other inputs of its batch; in ES a
"batch" is whatever episodes happen to run side by side, so plain batch norm would make an
evaluation depend on the batching. Virtual batch normalization fixes the statistics instead: a
*reference batch* of observations is collected once at the start of a run, and each member's
normalization statistics are those of the reference batch passed through the network with that
member's own parameters (as in the ES code: one reference pass per member, then every step of its
episodes is normalized with those statistics). The paper calls it essential on Atari: without it
small parameter changes barely change the policy's behaviour.

:class:`VirtualBatchNorm` is the layer (a learnable scale ``weight`` and shift ``bias`` per feature,
as ``torch.nn.BatchNorm`` with ``affine=True``). It does not hold the statistics itself: they flow
through a context, so one vmapped call computes them for many members at once
(:meth:`VBNRunner.reference_stats`), and one vmapped call applies each member's own statistics
(:meth:`VBNRunner.forward`). Put the layer anywhere in your own ``torch.nn.Module`` and pass
``vbn=True`` to the gym problem; the built-in MLP (``vbn=true``) and convnets use it after every
hidden layer, before the activation.

Salimans et al. 2016 also mix the normalized example itself into the statistics (weight
``1/(N+1)``); the ES code (and this module) uses the reference batch alone, so a member's
normalization is fixed for its whole episode. A module called outside a context uses the
statistics stored by :func:`freeze` (for exporting a trained policy), and says how to get them
otherwise.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import torch
from torch.func import functional_call, vmap

from ...errors import ConfigError, StateError

__all__ = ["VirtualBatchNorm", "VBNRunner", "has_vbn", "freeze", "reference_pass", "with_statistics"]

#: Added to the variance before the square root, as in the ES code's batch norm (1e-3).
DEFAULT_EPS = 1e-3

_local = threading.local()


class _Context:
    """Where the VBN layers of one forward call take (``apply``) or put (``reference``) statistics."""

    def __init__(self, mode: str, stats: Sequence[torch.Tensor] = ()):
        self.mode = mode
        self.stats = list(stats)
        self.index = 0

    def __enter__(self) -> _Context:
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _local.stack.pop()


def _current() -> _Context | None:
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


def reference_pass() -> _Context:
    """``with reference_pass() as ctx: module(reference)``: every VBN layer normalizes with the
    statistics of its own input and appends ``mean, var`` to ``ctx.stats``."""
    return _Context("reference")


def with_statistics(stats: Sequence[torch.Tensor]) -> _Context:
    """``with with_statistics(stats): module(x)``: VBN layers take ``mean, var`` from ``stats`` in order."""
    return _Context("apply", stats)


class VirtualBatchNorm(torch.nn.Module):
    """Normalizes features with the statistics of the reference batch (see the module docstring).

    Features are the last axis of a ``(C,)`` input and axis 1 of a ``(N, C, ...)`` input; the
    statistics of a reference input ``(N, C, ...)`` are taken over every axis but axis 1 (per
    channel for convolutions, as ``BatchNorm2d``).
    """

    frozen_mean: torch.Tensor | None
    frozen_var: torch.Tensor | None

    def __init__(self, num_features: int, eps: float = DEFAULT_EPS):
        super().__init__()
        self.num_features = int(num_features)
        self.eps = float(eps)
        self.weight = torch.nn.Parameter(torch.ones(self.num_features))
        self.bias = torch.nn.Parameter(torch.zeros(self.num_features))
        self.register_buffer("frozen_mean", None)
        self.register_buffer("frozen_var", None)

    def extra_repr(self) -> str:
        return f"{self.num_features}, eps={self.eps}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        axis = 1 if x.ndim >= 2 else 0
        if x.shape[axis] != self.num_features:
            raise ConfigError(f"VirtualBatchNorm({self.num_features}) got an input of shape {tuple(x.shape)}; "
                              f"its features must be on axis {axis}")
        ctx = _current()
        if ctx is not None and ctx.mode == "reference":
            if x.ndim < 2:
                raise ConfigError("a reference pass needs a batch: inputs of shape (N, features, ...)")
            dims = [d for d in range(x.ndim) if d != 1]
            mean = x.mean(dim=dims)
            var = (x - _expand(mean, x, 1)).square().mean(dim=dims)
            ctx.stats += [mean, var]
        elif ctx is not None:
            if ctx.index + 2 > len(ctx.stats):
                raise StateError("the network has more VirtualBatchNorm calls than the reference pass recorded; "
                                 "the forward must call its VBN layers in the same order every time")
            mean, var = ctx.stats[ctx.index], ctx.stats[ctx.index + 1]
            ctx.index += 2
        elif self.frozen_mean is not None and self.frozen_var is not None:
            mean, var = self.frozen_mean, self.frozen_var
        else:
            raise StateError(
                "VirtualBatchNorm has no reference statistics: run the policy through the gym problem with "
                "vbn=true, or call blackbox.problems.gym.vbn.freeze(module, reference_batch) first"
            )
        scale = self.weight * torch.rsqrt(var + self.eps)
        return (x - _expand(mean, x, axis)) * _expand(scale, x, axis) + _expand(self.bias, x, axis)


def _expand(v: torch.Tensor, x: torch.Tensor, axis: int) -> torch.Tensor:
    """``v`` (C,) shaped to broadcast along ``axis`` of ``x``."""
    return v.reshape((-1,) + (1,) * (x.ndim - axis - 1))


def has_vbn(module: torch.nn.Module) -> bool:
    """True when ``module`` contains a :class:`VirtualBatchNorm` layer."""
    return any(isinstance(m, VirtualBatchNorm) for m in module.modules())


def freeze(module: torch.nn.Module, reference: torch.Tensor) -> torch.nn.Module:
    """Store the statistics of ``reference`` (passed through ``module`` as it is) in its VBN layers,
    so that the module runs on its own, outside any context; returns the module."""
    layers = [m for m in module.modules() if isinstance(m, VirtualBatchNorm)]
    with torch.no_grad(), reference_pass() as ctx:
        module(reference)
    if len(ctx.stats) != 2 * len(layers):
        raise StateError(f"the reference pass recorded {len(ctx.stats) // 2} VBN calls for {len(layers)} layers; "
                         f"freeze() needs each VirtualBatchNorm layer called exactly once per forward")
    for layer, k in zip(layers, range(0, len(ctx.stats), 2)):
        layer.frozen_mean, layer.frozen_var = ctx.stats[k].clone(), ctx.stats[k + 1].clone()
    return module


class VBNRunner:
    """Batched reference passes and forwards of a module with VBN layers, for many members at once.

    ``flat`` is a :class:`blackbox.problems.torch_params.FlatParams` of the module (on its device).
    """

    def __init__(self, flat):
        self.flat = flat
        self._reference = None
        self._apply = None

    def reference_stats(self, params: torch.Tensor, reference: torch.Tensor) -> list[torch.Tensor]:
        """``[mean_0, var_0, mean_1, ...]``, each ``(k, C_l)``, of ``reference`` (N, ...) passed through
        the network with each of the ``k`` rows of ``params`` (k, dim)."""
        if self._reference is None:
            module, buffers = self.flat.module, self.flat.buffers

            def call(member, ref):
                with reference_pass() as ctx:
                    functional_call(module, {**member, **buffers}, (ref,))
                if not ctx.stats:
                    raise ConfigError(f"vbn=true, but {type(module).__name__} has no VirtualBatchNorm layer "
                                      f"that its forward calls")
                return tuple(ctx.stats)

            self._reference = vmap(call, in_dims=(0, None))
        with torch.no_grad():
            return list(self._reference(self.flat.unflatten(params), reference))

    def forward(self, params: torch.Tensor, stats: Sequence[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        """Outputs of ``k`` members, row i with ``params[i]``, its statistics ``stats[*][i]`` and input ``x[i]``."""
        if self._apply is None:
            module, buffers = self.flat.module, self.flat.buffers

            def call(member, member_stats, xi):
                with with_statistics(member_stats):
                    return functional_call(module, {**member, **buffers}, (xi,))

            self._apply = vmap(call, in_dims=(0, 0, 0))
        with torch.no_grad():
            return self._apply(self.flat.unflatten(params), tuple(stats), x)

    def __getstate__(self):
        return {"flat": self.flat, "_reference": None, "_apply": None}
