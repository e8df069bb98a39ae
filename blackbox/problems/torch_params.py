"""Flat parameter vectors for any ``torch.nn.Module``, and one batched forward for a population.

A strategy searches over flat float vectors; a network wants named tensors. :class:`FlatParams`
maps between the two with torch's own ordering (``torch.nn.utils.parameters_to_vector``) and runs
``m`` members' parameter vectors on their inputs in ONE call: ``torch.func.functional_call``
vectorized with ``torch.func.vmap`` over the stacked parameters. Buffers (batch-norm statistics,
say) are shared by all members.

torch is an optional dependency: importing this module requires it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch.func import functional_call, vmap

from ..errors import ConfigError

__all__ = ["FlatParams"]


class FlatParams:
    """The flat view of ``module``'s parameters; ``dim`` is their total count."""

    def __init__(self, module: torch.nn.Module, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32):
        if not isinstance(module, torch.nn.Module):
            raise ConfigError(f"expected a torch.nn.Module, got {type(module).__name__}")
        self.device = torch.device(device)
        self.dtype = dtype
        self.module = module.to(device=self.device, dtype=dtype).eval()
        named = [(n, p) for n, p in self.module.named_parameters()]
        if not named:
            raise ConfigError(f"{type(module).__name__} has no parameters to optimize")
        self.names = [n for n, _ in named]
        self.shapes = [tuple(p.shape) for _, p in named]
        self.numels = [p.numel() for _, p in named]
        self.dim = int(sum(self.numels))
        self.buffers = {n: b for n, b in self.module.named_buffers()}
        for p in self.module.parameters():
            p.requires_grad_(False)
        self._batched_cache: dict[tuple[bool], Callable[..., torch.Tensor]] = {}

    def initial(self) -> np.ndarray:
        """The module's current parameters as one float64 vector (torch's parameter order)."""
        vector = torch.nn.utils.parameters_to_vector(self.module.parameters())
        return vector.detach().cpu().double().numpy()

    def load(self, flat: np.ndarray | torch.Tensor) -> torch.nn.Module:
        """Copy one flat vector into the module's parameters and return the module."""
        tensor = self.as_tensor(flat).reshape(-1)
        self._check_dim(tensor.shape[0])
        torch.nn.utils.vector_to_parameters(tensor, self.module.parameters())
        return self.module

    def as_tensor(self, flat: np.ndarray | torch.Tensor) -> torch.Tensor:
        """``flat`` as a tensor of this module's dtype on its device."""
        if isinstance(flat, torch.Tensor):
            return flat.to(device=self.device, dtype=self.dtype)
        array = np.asarray(flat)
        if not array.flags.writeable:  # torch warns on sharing read-only memory (a strategy's center)
            array = np.array(array)
        return torch.as_tensor(array, device=self.device).to(self.dtype)

    def unflatten(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        """Split ``(m, dim)`` into ``{name: (m, *shape)}`` views (no copies)."""
        self._check_dim(flat.shape[-1])
        parts = torch.split(flat, self.numels, dim=-1)
        lead = flat.shape[:-1]
        return {n: part.reshape(*lead, *shape) for n, part, shape in zip(self.names, parts, self.shapes)}

    def forward(self, flat: np.ndarray | torch.Tensor, inputs: torch.Tensor, shared_input: bool = False) -> torch.Tensor:
        """Outputs of ``m`` members in one call.

        ``flat`` is ``(m, dim)``. With ``shared_input=False`` ``inputs`` is ``(m, ...)``, member i
        seeing ``inputs[i]`` (one observation per environment); with ``shared_input=True`` every
        member sees the whole ``inputs`` (one minibatch for all), and the output is ``(m, ...)``
        over it.
        """
        flat = self.as_tensor(flat)
        if flat.ndim != 2:
            raise ConfigError(f"flat parameters must be (members, dim), got shape {tuple(flat.shape)}")
        params = self.unflatten(flat)
        key = (bool(shared_input),)
        fn = self._batched_cache.get(key)
        if fn is None:
            def call(member_params, x):
                return functional_call(self.module, {**member_params, **self.buffers}, (x,))

            fn = vmap(call, in_dims=(0, None if shared_input else 0))
            self._batched_cache[key] = fn
        with torch.no_grad():
            return fn(params, inputs)

    def _check_dim(self, got: int) -> None:
        if got != self.dim:
            raise ConfigError(
                f"parameter vector has length {got}, but {type(self.module).__name__} has {self.dim} parameters"
            )

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_batched_cache"] = {}
        return state
