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
  :class:`blackbox.problems.torch_params.FlatParams`), run for all slots with ``torch.func.functional_call``
  + ``vmap``, on the CPU or on a CUDA device (``device=``). The built-in convnets for pixel
  observations (``"cnn"``, ``"nature-cnn"``, :mod:`.convnets`) are torch policies.

Virtual batch normalization (``vbn=True``, :mod:`.vbn`): the runtime gets the reference batch with
``set_reference(inputs)``; when a member is loaded into a slot, the reference batch passes through
the network with that member's parameters and the statistics of every VBN layer are kept for the
slot (the numpy MLP folds them into the slot's weights, so a step costs what it costs without
VBN). A member's statistics depend on its own parameters and the reference batch only, so VBN
keeps batched and one-by-one evaluation bit-identical.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np

from ..._validate import check_choice, check_int, require_modules
from ...errors import ConfigError, StateError

if TYPE_CHECKING:
    import torch


__all__ = ["MLPPolicy", "TorchPolicy", "make_policy", "es_paper_weights", "ACTIVATIONS", "POLICIES", "VBN_EPS"]


def es_paper_weights(rng: np.random.Generator, outputs: int, inputs: int, norm: float) -> np.ndarray:
    """A layer's ``(outputs, inputs)`` weights as the ES paper initializes them: normal draws, each unit's
    incoming weights scaled to ``norm`` (1 for hidden layers, 0.01 for the output layer). Shared by this
    MLP and the JAX one (``init="es"``), so the same rng gives both the same start policy."""
    w = rng.standard_normal((outputs, inputs))
    w *= norm / np.sqrt(np.square(w).sum(axis=1, keepdims=True))
    return w

#: The built-in policies by name (anything else is a torch module, a factory or an import path).
POLICIES = ("mlp", "linear", "cnn", "nature-cnn")
#: Variance epsilon of virtual batch normalization (the ES code's batch norm uses 1e-3).
VBN_EPS = 1e-3


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
    bias), so a vector trained here loads into :meth:`to_torch`'s network unchanged. With
    ``vbn=True`` every hidden layer is ``Linear(bias=False)`` -> :class:`~.vbn.VirtualBatchNorm`
    (scale and shift per unit) -> activation, laid out as torch lays out that ``Sequential``.
    ``bias=False`` drops the bias of every layer that has one (``Linear(bias=False)``): ARS's linear
    policy ``M x`` (Mania et al. 2018; sb3-contrib's ``ARSLinearPolicy``), whose bias-free start
    keeps a zero observation mapped to a zero action.
    """

    kind = "mlp"

    def __init__(self, in_size: int, out_size: int, hidden: Sequence[int] = (64, 64), activation: str = "tanh",
                 vbn: bool = False, bias: bool = True):
        self.in_size = check_int("observation size", in_size, minimum=1)
        self.out_size = check_int("output size", out_size, minimum=1)
        sizes = (hidden,) if isinstance(hidden, (int, np.integer)) else hidden
        self.hidden = tuple(check_int("hidden layer size", h, minimum=1) for h in sizes)
        self.activation = check_choice("activation", activation, ACTIVATIONS)
        self.vbn = bool(vbn)
        self.bias = bool(bias)
        if self.vbn and not self.hidden:
            raise ConfigError("vbn=true normalizes hidden layers, but the linear policy has none; "
                              "use policy='mlp' with hidden=[...]")
        sizes = (self.in_size, *self.hidden, self.out_size)
        self.layers = list(zip(sizes[:-1], sizes[1:]))
        # parameters per layer: weight + bias (if any), or weight + VBN scale + VBN shift for normalized ones
        self.dim = int(sum(i * o + self._extra(k, o) for k, (i, o) in enumerate(self.layers)))

    def _normalized(self, k: int) -> bool:
        return self.vbn and k < len(self.layers) - 1

    def _extra(self, k: int, o: int) -> int:
        """Layer ``k``'s parameters besides its weight: VBN's scale and shift, its bias, or none."""
        return 2 * o if self._normalized(k) else (o if self.bias else 0)

    def describe(self) -> str:
        no_bias = "" if self.bias else " no bias"
        if not self.hidden:
            return f"linear {self.in_size}->{self.out_size}{no_bias}"
        vbn = " vbn" if self.vbn else ""
        return f"mlp {'-'.join(map(str, (self.in_size, *self.hidden, self.out_size)))} {self.activation}{vbn}{no_bias}"

    def initial_params(self, rng: np.random.Generator) -> np.ndarray:
        """The ES paper's initialization: each unit's weights scaled to norm 1 (0.01 for the
        output layer), biases zero."""
        parts = []
        for k, (i, o) in enumerate(self.layers):
            w = es_paper_weights(rng, o, i, 0.01 if k == len(self.layers) - 1 else 1.0)
            if self._normalized(k):
                parts += [w.reshape(-1), np.ones(o), np.zeros(o)]
            else:
                parts += [w.reshape(-1), np.zeros(o)] if self.bias else [w.reshape(-1)]
        return np.concatenate(parts)

    def batch(self, capacity: int) -> MLPBatch:
        return MLPBatch(self, capacity)

    def to_torch(self, params: np.ndarray | None = None, reference: np.ndarray | None = None):
        """This network as a ``torch.nn.Sequential`` (loaded with ``params`` when given). With VBN,
        ``reference`` (policy inputs) stores the reference statistics in the VBN layers
        (:func:`.vbn.freeze`) so the module runs on its own."""
        import torch

        modules: list = []
        for k, (i, o) in enumerate(self.layers):
            if self._normalized(k):
                from .vbn import VirtualBatchNorm

                modules += [torch.nn.Linear(i, o, bias=False), VirtualBatchNorm(o, VBN_EPS)]
            else:
                modules.append(torch.nn.Linear(i, o, bias=self.bias))
            if k < len(self.layers) - 1:
                modules.append(getattr(torch.nn, _TORCH_ACTIVATIONS[self.activation])())
        net = torch.nn.Sequential(*modules)
        if params is not None:
            vector = torch.as_tensor(np.asarray(params, dtype=np.float32))
            torch.nn.utils.vector_to_parameters(vector, net.parameters())
        if self.vbn and reference is not None:
            from .vbn import freeze

            freeze(net, torch.as_tensor(np.asarray(reference, dtype=np.float32)))
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
        # The hidden layers' activations, written in place every step (no allocation per layer
        # and step); the output layer's result is a fresh array, so the caller may keep it.
        self.activations = [np.zeros((self.capacity, 1, o), dtype=np.float32) for _, o in policy.layers[:-1]]
        self.act = ACTIVATIONS[policy.activation]
        self.reference: np.ndarray | None = None

    def set_reference(self, inputs: np.ndarray) -> None:
        """The reference batch (float32 policy inputs ``(N, in)``) that VBN statistics come from."""
        self.reference = np.ascontiguousarray(inputs, dtype=np.float32)

    def load(self, slot: int, params: np.ndarray) -> None:
        if self.policy.vbn:
            return self._load_normalized(slot, params)
        start = 0
        for w, b, (i, o) in zip(self.weights, self.biases, self.policy.layers):
            w[slot] = params[start : start + i * o].reshape(o, i).T
            start += i * o
            if self.policy.bias:  # without, the slot's bias stays zero
                b[slot, 0] = params[start : start + o]
                start += o

    def _load_normalized(self, slot: int, params: np.ndarray) -> None:
        """Pass the reference batch through this member's network and fold each VBN layer's
        ``(z - mean) / sqrt(var + eps) * scale + shift`` into the slot's weights and bias."""
        if self.reference is None:
            raise StateError("a VBN policy needs its reference batch (set_reference) before members are loaded")
        h = self.reference
        start = 0
        last = len(self.policy.layers) - 1
        for k, (w, b, (i, o)) in enumerate(zip(self.weights, self.biases, self.policy.layers)):
            weight = params[start : start + i * o].reshape(o, i).T
            start += i * o
            if k == last:
                w[slot] = weight
                if self.policy.bias:
                    b[slot, 0] = params[start : start + o]
                break
            gamma, beta = params[start : start + o], params[start + o : start + 2 * o]
            start += 2 * o
            z = h @ weight.astype(np.float32)
            mean = z.mean(axis=0, dtype=np.float64)
            var = np.square(z - mean).mean(axis=0)
            scale = gamma / np.sqrt(var + VBN_EPS)
            w[slot] = weight * scale
            b[slot, 0] = beta - mean * scale
            h = h @ w[slot]
            h += b[slot, 0]
            self.act(h)

    def move(self, src: int, dst: int) -> None:
        """Copy slot ``src`` into slot ``dst`` (whose member has finished)."""
        for array in (*self.weights, *self.biases):
            array[dst] = array[src]

    def forward(self, x: np.ndarray, live: int) -> np.ndarray:
        """Outputs ``(live, out)`` of slots ``[0, live)`` for float32 inputs ``x`` ``(live, in)``."""
        h = x[:, None, :]
        act = self.act
        for w, b, buffer in zip(self.weights, self.biases, self.activations):
            # the same batched product as np.matmul(h, w) returns, written into the layer's buffer
            h = np.matmul(h, w[:live], out=buffer[:live])
            h += b[:live]
            act(h)
        h = np.matmul(h, self.weights[-1][:live])
        h += self.biases[-1][:live]
        return h[:, 0, :]


class TorchPolicy:
    """Any ``torch.nn.Module``: its parameters are the flat vector (torch's order).

    ``device`` (``"cuda"``, ``"cuda:1"``, ``"auto"``, ...) is where each process's runtime puts the
    parameters and runs the batched forward; the recipe itself stays on the CPU so it pickles
    anywhere. ``"auto"`` is decided when the policy is made; a process without the device refuses
    to run it (:mod:`blackbox.problems.devices`).
    ``init(module, rng)`` gives the initial parameters (default: the module's own, unchanged).
    ``threads`` is torch's intra-op thread count in each process that runs the policy on the CPU
    (``torch.set_num_threads`` when the runtime is built; None leaves it alone): the population is
    the parallelism, and torch's threads fighting over the cores with environment stepping and
    other workers make small forwards tens of times slower on a busy machine. A fixed count also
    keeps results bit-identical between the driver and workers (a convolution's arithmetic may
    depend on how many threads share it).
    """

    kind = "torch"

    def __init__(self, module: torch.nn.Module, in_size: int, out_size: int, *, device: str | None = None,
                 init: Callable[[torch.nn.Module, np.random.Generator], np.ndarray] | None = None, label: str | None = None,
                 threads: int | None = 1):
        from ..devices import resolve_device
        from ..torch_params import FlatParams
        from .vbn import has_vbn

        self.flat = FlatParams(module)
        self.in_size = int(in_size)
        self.out_size = int(out_size)
        self.dim = self.flat.dim
        self.device = resolve_device(device)
        self.init = init
        self.label = label
        self.vbn = has_vbn(self.flat.module)
        self.threads = None if threads is None else check_int("torch_threads", threads, minimum=1)

    def describe(self) -> str:
        name = self.label or f"torch {type(self.flat.module).__name__}"
        return f"{name} ({self.dim} parameters)"

    def initial_params(self, rng: np.random.Generator) -> np.ndarray:
        """``init(module, rng)`` when given, else the module's own initialization."""
        if self.init is not None:
            return np.asarray(self.init(self.flat.module, rng), dtype=np.float64)
        return self.flat.initial()

    def output_shape(self) -> tuple[int, ...]:
        """The shape of one observation's output (checked against the action space)."""
        import torch

        params = self.flat.as_tensor(self.flat.initial()[None])
        if self.vbn:
            from .vbn import VBNRunner

            runner = VBNRunner(self.flat)
            stats = runner.reference_stats(params, torch.zeros(2, self.in_size))
            out = runner.forward(params, stats, torch.zeros(1, self.in_size))
        else:
            out = self.flat.forward(params, torch.zeros(1, self.in_size))
        return tuple(out.shape[1:])

    def batch(self, capacity: int) -> TorchBatch:
        return TorchBatch(self, capacity)

    def to_torch(self, params: np.ndarray | None = None, reference: np.ndarray | None = None):
        """The module (on the CPU) loaded with ``params`` when given; with VBN layers, ``reference``
        (policy inputs) stores the reference statistics in them (:func:`.vbn.freeze`)."""
        if params is not None:
            self.flat.load(params)
        if self.vbn and reference is not None:
            import torch

            from .vbn import freeze

            freeze(self.flat.module, torch.as_tensor(np.asarray(reference, dtype=np.float32)))
        return self.flat.module


class TorchBatch:
    """Per-slot flat parameters of a :class:`TorchPolicy` on its device; one vmapped call per step.

    With VBN layers, members loaded since the last step get their reference statistics in one
    vmapped reference pass before the step (each member's statistics depend on its own
    parameters only, so the grouping does not change them).
    """

    def __init__(self, policy: TorchPolicy, capacity: int):
        import torch

        from ..devices import resolve_device
        from ..torch_params import FlatParams

        self.torch = torch
        self.policy = policy
        if policy.threads is not None and torch.get_num_threads() != policy.threads:
            torch.set_num_threads(policy.threads)
        self.device = resolve_device(policy.device)  # again: this process may lack the device
        if self.device == "cpu":
            self.flat = policy.flat
        else:
            self.flat = FlatParams(copy.deepcopy(policy.flat.module), device=self.device)
        self.params = torch.zeros(int(capacity), policy.dim, dtype=self.flat.dtype, device=self.device)
        self.runner: Any = None  # a VBNRunner for policies with VBN layers
        if policy.vbn:
            from .vbn import VBNRunner

            self.runner = VBNRunner(self.flat)
        self.reference: Any = None  # the reference batch as a tensor on the device
        self.stats: list[torch.Tensor] | None = None  # per VBN layer: mean, var as (capacity, C) tensors
        self.pending: set[int] = set()

    def set_reference(self, inputs: np.ndarray) -> None:
        """The reference batch (float32 policy inputs ``(N, in)``) that VBN statistics come from."""
        self.reference = self.torch.as_tensor(np.ascontiguousarray(inputs, dtype=np.float32), device=self.device)
        self.pending.clear()
        self.stats = None

    def load(self, slot: int, params: np.ndarray) -> None:
        self.params[slot] = self.torch.from_numpy(np.asarray(params, dtype=np.float32)).to(self.device)
        if self.runner is not None:
            if self.reference is None:
                raise StateError("a VBN policy needs its reference batch (set_reference) before members are loaded")
            self.pending.add(slot)

    def move(self, src: int, dst: int) -> None:
        self.params[dst] = self.params[src]
        if self.runner is not None:
            if src in self.pending:
                self.pending.discard(src)
                self.pending.add(dst)
            else:
                self.pending.discard(dst)
                for stat in self.stats or ():
                    stat[dst] = stat[src]

    def forward(self, x: np.ndarray, live: int) -> np.ndarray:
        inputs = self.torch.from_numpy(x).to(self.device)
        if self.runner is None:
            out = self.flat.forward(self.params[:live], inputs)
        else:
            self._refresh()
            out = self.runner.forward(self.params[:live], [s[:live] for s in self.stats or ()], inputs)
        return out.reshape(live, -1).cpu().numpy()

    def _refresh(self) -> None:
        """Reference statistics of the members loaded since the last step, in one batched pass."""
        if not self.pending:
            return
        index = self.torch.tensor(sorted(self.pending), device=self.device)
        fresh = self.runner.reference_stats(self.params[index], self.reference)
        if self.stats is None:
            self.stats = [self.torch.zeros((len(self.params), *f.shape[1:]), dtype=f.dtype, device=self.device)
                          for f in fresh]
        for stat, new in zip(self.stats, fresh):
            stat[index] = new
        self.pending.clear()


def _import_policy(path: str) -> object:
    from ...registry.imports import import_object

    try:
        return import_object(path)
    except Exception as exc:  # noqa: BLE001 - any failure of the user's module, named with its cause
        raise ConfigError(f"policy {path!r} could not be imported: {type(exc).__name__}: {exc}") from exc


def _mlp_init(mlp: MLPPolicy, module: torch.nn.Module, rng: np.random.Generator) -> np.ndarray:
    return mlp.initial_params(rng)


def make_policy(policy: object, in_size: int, out_size: int, hidden: Sequence[int] = (64, 64),
                activation: str = "tanh", *, obs_shape: Sequence[int] | None = None, obs_scale: float = 1.0,
                vbn: bool = False, device: str | None = None, threads: int | None = 1, bias: bool = True):
    """Build a policy from ``"mlp"``, ``"linear"``, ``"cnn"``, ``"nature-cnn"``, a ``torch.nn.Module``,
    a factory ``(in_size, out_size) -> Module``, or an import path ``"package.module:attribute"`` to
    either. ``obs_shape`` (the observation's shape) and ``obs_scale`` (1/255 for pixels) are what the
    convnets need; ``vbn`` adds (built-ins) or requires (torch modules) virtual batch normalization;
    ``device`` runs the policy in torch on that device (the MLP then becomes the equivalent torch
    network with the same parameter layout and initialization; ``"auto"`` where no CUDA device is
    leaves it the numpy MLP); ``threads`` is torch's thread count for CPU forwards (see
    :class:`TorchPolicy`); ``bias=False`` builds the MLP or linear policy without biases (other
    networks set their own)."""
    from ..devices import resolve_device

    device = None if device is None else resolve_device(device)
    if not bias and not (isinstance(policy, str) and policy in ("mlp", "linear")):
        shown = policy if isinstance(policy, str) else type(policy).__name__
        raise ConfigError(f"bias=false applies to policy='mlp' or 'linear', got policy={shown!r}; "
                          f"a network of your own sets its biases itself (leave bias at true)")
    if isinstance(policy, str):
        if policy in ("mlp", "linear"):
            mlp = MLPPolicy(in_size, out_size, hidden if policy == "mlp" else (), activation, vbn=vbn, bias=bias)
            if device is None or device == "cpu":
                return mlp
            return TorchPolicy(mlp.to_torch(), in_size, out_size, device=device,
                               init=functools.partial(_mlp_init, mlp), label=mlp.describe(), threads=threads)
        if policy in ("cnn", "nature-cnn"):
            require_modules({"torch": "torch"}, f"policy={policy!r}")
            from .convnets import AtariCNN, initial_params

            module = AtariCNN(obs_shape, out_size, layout=policy, vbn=vbn, scale=obs_scale)
            return TorchPolicy(module, in_size, out_size, device=device, init=initial_params,
                               label=module.describe(), threads=threads)
        if ":" not in policy:
            check_choice("policy", policy, list(POLICIES))
        policy = _import_policy(policy)
    if _is_torch_module(policy):
        return _checked_vbn(TorchPolicy(policy, in_size, out_size, device=device, threads=threads), vbn)
    if callable(policy):
        module = policy(in_size, out_size)
        if not _is_torch_module(module):
            raise ConfigError(
                f"policy factory {getattr(policy, '__name__', policy)!r} returned {type(module).__name__}; "
                f"it must return a torch.nn.Module for (in_size={in_size}, out_size={out_size})"
            )
        return _checked_vbn(TorchPolicy(module, in_size, out_size, device=device, threads=threads), vbn)
    raise ConfigError(
        f"policy must be 'mlp', 'linear', 'cnn', 'nature-cnn', a torch.nn.Module, a factory (in_size, out_size) -> Module "
        f"or an import path 'package.module:attribute', got {type(policy).__name__}"
    )


def _checked_vbn(policy: TorchPolicy, vbn: bool) -> TorchPolicy:
    name = type(policy.flat.module).__name__
    if vbn and not policy.vbn:
        raise ConfigError(f"vbn=true, but {name} has no VirtualBatchNorm layer; add "
                          f"blackbox.problems.gym.vbn.VirtualBatchNorm layers to it, or drop vbn")
    if policy.vbn and not vbn:
        raise ConfigError(f"{name} has VirtualBatchNorm layers, which need the reference batch: pass vbn=true")
    return policy


def _is_torch_module(obj: object) -> TypeGuard[torch.nn.Module]:
    torch = __import__("sys").modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)
