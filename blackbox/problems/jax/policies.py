"""Policies as pure JAX functions of one flat parameter row: ``apply(row, obs) -> outputs``.

A row holds each layer's weights ``(inputs, outputs)`` row-major, then its biases, layer after
layer. ``linear`` is one layer; ``mlp`` has ``hidden`` layers with ``tanh`` or ``relu`` between.
Outputs map to actions by :class:`Actions`: a discrete space takes the argmax of ``n`` outputs, a
box ``tanh`` squashed into ``[low, high]``. Any object with ``dim``, ``apply``, ``initial_params``
and ``describe`` is a policy too; its output shape is checked against the action space once, when
the problem is built (:func:`check_output_shape`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..._validate import check_int
from ...errors import ConfigError
from ..gym.policies import es_paper_weights

if TYPE_CHECKING:
    import jax

__all__ = ["JaxPolicy", "MLPPolicy", "Actions", "Box", "make_policy", "step_functions", "check_output_shape",
           "ACTIVATIONS", "INITS"]

ACTIVATIONS = ("tanh", "relu")
#: How the built-in policies draw their start rows (:meth:`MLPPolicy.initial_params`).
INITS = ("fan_in", "es")
#: A layer with at most this many weights is a sum of products, not a dot (:func:`layer_product`).
SUMMED_LAYER_WEIGHTS = 64


class JaxPolicy(Protocol):
    """What the JAX-native problems use of a policy: the built-in :class:`MLPPolicy` or an object of yours."""

    @property
    def dim(self) -> int: ...

    def apply(self, row: jax.Array, obs: jax.Array) -> jax.Array:
        """The outputs for one flat observation ``obs`` under parameters ``row``."""
        ...

    def initial_params(self, rng: np.random.Generator) -> np.ndarray: ...

    def describe(self) -> str: ...


@dataclass(frozen=True)
class MLPPolicy:
    """Dense layers of ``sizes`` (inputs, hidden..., outputs) with ``activation`` between them."""

    sizes: tuple[int, ...]
    activation: str = "tanh"
    init: str = "fan_in"

    @property
    def dim(self) -> int:
        return sum(a * b + b for a, b in zip(self.sizes[:-1], self.sizes[1:]))

    def apply(self, row: jax.Array, obs: jax.Array) -> jax.Array:
        """The outputs for one flat observation ``obs`` under parameters ``row`` (JAX arrays)."""
        return self.forward(self.prepare(row), obs)

    def prepare(self, row: jax.Array) -> tuple[tuple[jax.Array, jax.Array], ...]:
        """``row`` cut into each layer's ``(weights (inputs, outputs), bias)``: done once per episode
        batch, outside the step loop, so a step does no slicing (see :func:`.batched.make_generation`)."""
        layers, at = [], 0
        for a, b in zip(self.sizes[:-1], self.sizes[1:]):
            layers.append((row[at : at + a * b].reshape(a, b), row[at + a * b : at + a * b + b]))
            at += a * b + b
        return tuple(layers)

    def forward(self, layers: tuple[tuple[jax.Array, jax.Array], ...], obs: jax.Array) -> jax.Array:
        """The outputs for one flat observation under the layers :meth:`prepare` cut."""
        import jax.numpy as jnp

        x = obs.reshape(-1)
        for i, (weights, bias) in enumerate(layers):
            x = layer_product(x, weights) + bias
            if i < len(layers) - 1:
                x = jnp.tanh(x) if self.activation == "tanh" else jnp.maximum(x, 0.0)
        return x

    def initial_params(self, rng: np.random.Generator) -> np.ndarray:
        """The start row, biases zero. ``init="fan_in"``: weights drawn from N(0, 1/fan_in), outputs of
        order one from the start. ``init="es"``: the ES paper's initialization, the gym problem's
        (:class:`blackbox.problems.gym.policies.MLPPolicy`): each unit's incoming weights scaled to norm 1,
        0.01 for the output layer, so the start policy is nearly indifferent and the first generation's
        perturbations decide its actions; the same ``rng`` gives the same start policy as ``gym:ENV``'s."""
        parts = []
        layers = list(zip(self.sizes[:-1], self.sizes[1:]))
        for k, (a, b) in enumerate(layers):
            if self.init == "es":  # the gym policy's (outputs, inputs) draw, then our (inputs, outputs) layout
                parts += [es_paper_weights(rng, b, a, 0.01 if k == len(layers) - 1 else 1.0).T.reshape(-1), np.zeros(b)]
            else:
                parts += [rng.standard_normal(a * b) / math.sqrt(a), np.zeros(b)]
        return np.concatenate(parts)

    def describe(self) -> str:
        init = ", es init" if self.init == "es" else ""
        if len(self.sizes) == 2:
            return f"linear {self.sizes[0]}->{self.sizes[1]}{init}"
        return f"mlp {'-'.join(map(str, self.sizes))} {self.activation}{init}"


def layer_product(x: jax.Array, weights: jax.Array) -> jax.Array:
    """``x @ weights`` for one observation; a layer of at most :data:`SUMMED_LAYER_WEIGHTS` weights as the
    sum ``x[0] * weights[0] + x[1] * weights[1] + ...`` in input order instead of a dot.

    Why: vmapped over a population, a dot becomes a batched product of one tiny matrix per member, which
    XLA's CPU backend runs member by member; the sum is elementwise arithmetic that fuses into one loop
    over the whole population. A popsize-256 CartPole-v1 generation (MLP 16: layers of 64 and 32 weights)
    took 19% less CPU, 14% at popsize 1,024 (BENCHMARKS.md, section 11). Wider layers (Brax's, MinAtar's
    400 inputs) keep the dot, which is faster there. The two forms round differently (a dot adds in an
    order XLA picks), so the rule is fixed by the layer's shape alone: the same policy always computes
    the same way, and the same seeds give the same returns on a given device and backend."""
    inputs, outputs = weights.shape
    if inputs * outputs > SUMMED_LAYER_WEIGHTS:
        return x @ weights
    total = x[0] * weights[0]
    for i in range(1, inputs):
        total = total + x[i] * weights[i]
    return total


def step_functions(policy: JaxPolicy) -> tuple[Callable[[Any], Any], Callable[[Any, Any], Any]]:
    """``(prepare, forward)`` with ``forward(prepare(row), obs) == policy.apply(row, obs)``: ``prepare`` runs
    once per row before an episode's step loop, ``forward`` at each step. The built-in :class:`MLPPolicy`
    cuts its row into layers once (a CartPole generation spent about a third of its time re-slicing the row
    each step); any other policy, or a subclass with its own ``apply``, is run as ``apply`` on the row."""
    if isinstance(policy, MLPPolicy) and type(policy).apply is MLPPolicy.apply:
        return policy.prepare, policy.forward
    return _unchanged, policy.apply


def _unchanged(row: Any) -> Any:
    return row


def make_policy(policy: Any, obs_size: int, out_size: int, hidden: object = (32,), activation: str = "tanh",
                init: str = "fan_in") -> JaxPolicy:
    """``"linear"``, ``"mlp"`` (``hidden`` units, ``activation``, start rows by ``init``: one of
    :data:`INITS`) or a policy object, as it is."""
    if not isinstance(policy, str):
        for needed in ("dim", "apply", "initial_params"):
            if not hasattr(policy, needed):
                raise ConfigError(f"policy must be 'linear', 'mlp' or an object with dim, apply(row, obs) and "
                                  f"initial_params(rng), got {policy!r} (it has no {needed})")
        if init != "fan_in":
            raise ConfigError(f"init={init!r} sets the start rows of the built-in 'linear' and 'mlp' policies; a "
                              f"policy object starts from its own initial_params(rng): leave init unset")
        return policy
    if activation not in ACTIVATIONS:
        raise ConfigError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {activation!r}")
    if init not in INITS:
        raise ConfigError(f"init must be one of {', '.join(INITS)} (N(0, 1/fan_in) weights, or the ES paper's "
                          f"unit-norm weights with a 0.01 output layer), got {init!r}")
    if policy == "linear":
        return MLPPolicy((obs_size, out_size), activation, init)
    if policy == "mlp":
        if isinstance(hidden, int) and not isinstance(hidden, bool):
            units = [hidden]
        elif isinstance(hidden, (list, tuple)):
            units = list(hidden)
        else:
            raise ConfigError(f"hidden must be a layer size or a list of them (such as [32, 32]), got {hidden!r}")
        if not units:
            raise ConfigError("hidden must name at least one layer size for policy='mlp' (or use policy='linear')")
        sizes = tuple(check_int("hidden", h, minimum=1) for h in units)
        return MLPPolicy((obs_size, *sizes, out_size), activation, init)
    raise ConfigError(f"policy must be 'linear', 'mlp' or a policy object, got {policy!r}")


@dataclass(frozen=True)
class Box:
    """A continuous action space by its bounds, for simulators without gymnax spaces (Brax: [-1, 1]^n)."""

    low: float
    high: float
    shape: tuple[int, ...]

    def __repr__(self) -> str:
        return f"Box({self.low:g}, {self.high:g}, {self.shape})"


class Actions:
    """How ``out_size`` policy outputs become an action of a gymnax space (discrete or box)."""

    def __init__(self, space: Any, where: str):
        self.space = space
        n = getattr(space, "n", None)
        if n is not None and type(space).__name__ == "Discrete":
            self.discrete, self.out_size, self.shape = True, int(n), ()
            self.low = self.high = np.zeros((), dtype=np.float32)  # unused: a discrete action is an index
        elif type(space).__name__ == "Box":
            self.discrete, self.shape = False, tuple(space.shape)
            self.out_size = int(np.prod(self.shape)) if self.shape else 1
            self.low = np.broadcast_to(np.asarray(space.low, dtype=np.float32), self.shape)
            self.high = np.broadcast_to(np.asarray(space.high, dtype=np.float32), self.shape)
        else:
            raise ConfigError(f"{where} has an action space of type {type(space).__name__}; the gymnax problem "
                              f"takes Discrete and Box spaces")

    def __call__(self, out: Any) -> Any:
        import jax.numpy as jnp

        if self.discrete:
            return jnp.argmax(out).astype(jnp.int32)
        squashed = (jnp.tanh(out.reshape(self.shape)) + 1.0) * 0.5
        return self.low + squashed * (self.high - self.low)

    def describe(self) -> str:
        if self.discrete:
            return f"argmax of {self.out_size}"
        return f"tanh into [{self.low.min():g}, {self.high.max():g}]^{self.out_size}"


def check_output_shape(policy: JaxPolicy, obs_shape: tuple[int, ...], actions: Actions, where: str) -> None:
    """A ConfigError naming both shapes when the policy's output for one observation does not fit
    the action space (checked with ``jax.eval_shape``: nothing is computed)."""
    import jax
    import jax.numpy as jnp

    row = jax.ShapeDtypeStruct((int(policy.dim),), jnp.float32)
    obs = jax.ShapeDtypeStruct(tuple(obs_shape), jnp.float32)
    try:
        out = jax.eval_shape(policy.apply, row, obs)
    except Exception as exc:  # noqa: BLE001 - a user's policy may fail in any way on a probe
        raise ConfigError(f"the policy fails on one observation of {where} (shape {tuple(obs_shape)}): "
                          f"{type(exc).__name__}: {exc}") from None
    shape = tuple(getattr(out, "shape", ()))
    if shape != (actions.out_size,):
        raise ConfigError(f"the policy's output for one observation has shape {shape}, but the action space "
                          f"{actions.space} of {where} needs shape ({actions.out_size},) "
                          f"({actions.describe()})")
