"""``mnist``: train a small torch classifier's weights by black-box search on minibatches.

Fitness of a parameter vector is the negated mean cross-entropy (or the accuracy) of the network
on a minibatch of training images. Every row of a generation sees the same minibatch (common
random numbers: ``shared_seed = True`` makes the driver hand every row one seed), and the
minibatch changes with the generation's seed, so a row's fitness depends only on its parameters
and its seed, never on which worker evaluates it or with which other rows.

The data is the real MNIST from IDX files (``mnist:path=/data/mnist`` or ``$BLACKBOX_MNIST_DIR``)
or, with no folder, scikit-learn's bundled 8x8 digits, stated as such in ``describe()``. The
problem object is a small recipe: data, network and tensors are made on first use in each process.

Rows are scored in one batched call: ``forward="vmap"`` runs all members through
``torch.func.functional_call`` + ``vmap`` (:class:`~blackbox.problems.torch_params.FlatParams`);
``forward="loop"`` runs them one after another through torch's own single-network kernels, which
is faster for convolutions on CPU (``benchmarks/mnist_forward.py``); ``auto`` picks vmap for the
MLP and loop for the convnet.

``device`` puts data and networks on a torch device under the rule of
:mod:`blackbox.problems.devices` (``"auto"``: CUDA where available, else the CPU; a device that is
not available is refused, naming the ones that are).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict, overload

import numpy as np

from ..._validate import check_choice, check_int, require_modules
from ...core.problem import EvalResult, Problem
from ...errors import ConfigError
from ..devices import resolve_device
from .data.source import DataSource, resolve_data

if TYPE_CHECKING:
    import torch

__all__ = ["MNIST", "FITNESS", "FORWARDS"]

FITNESS = ("cross_entropy", "accuracy")
FORWARDS = ("auto", "vmap", "loop")
# Examples scored at once when evaluating a whole split (bounds the activations' memory).
_SPLIT_CHUNK = 2048


class NetworkConfig(TypedDict):
    """The keywords :func:`~blackbox.problems.mnist.classifiers.build_classifier` takes from the problem."""

    model: str
    image_shape: tuple[int, int]
    n_classes: int
    hidden: Sequence[int] | int
    channels: Sequence[int] | int
    activation: str


def _minibatch_seeds(seed: int, count: int) -> np.ndarray:
    """``count`` minibatch seeds: ``seed`` itself, then seeds derived from it (independent streams)."""
    out = np.empty(count, dtype=np.int64)
    out[0] = seed
    for i in range(1, count):
        out[i] = np.random.SeedSequence(seed, spawn_key=(i,)).generate_state(1)[0]
    return out


class MNIST(Problem):
    """Image classification with a small torch MLP or convnet (MNIST IDX files, or offline 8x8 digits)."""

    name = "mnist"
    shared_seed = True
    needs = {"torch": "mnist"}

    def __init__(
        self,
        path: str | os.PathLike | None = None,
        *,
        dataset: str = "auto",
        model: str = "mlp",
        hidden: Sequence[int] | int = (64,),
        channels: Sequence[int] | int = (8, 16),
        activation: str = "relu",
        fitness: str = "cross_entropy",
        batch_size: int | None = 256,
        forward: str = "auto",
        device: str = "cpu",
    ):
        require_modules(self.needs, "the mnist problem")
        from .classifiers import build_classifier

        self.data: DataSource = resolve_data(dataset, path)
        self.fitness = check_choice("fitness", fitness, FITNESS)
        self.batch_size = None if batch_size is None else check_int("batch_size", batch_size, minimum=1)
        self.forward = check_choice("forward", forward, FORWARDS)
        self.device_requested = device
        self.device = resolve_device(device)  # "auto": CUDA where available, else the CPU
        self.network_config: NetworkConfig = {
            "model": model, "image_shape": self.data.image_shape, "n_classes": self.data.n_classes,
            "hidden": list(hidden) if isinstance(hidden, (list, tuple)) else hidden,
            "channels": list(channels) if isinstance(channels, (list, tuple)) else channels,
            "activation": activation,
        }
        network = build_classifier(**self.network_config)
        self.model = model
        self.dim = int(sum(p.numel() for p in network.parameters()))
        self._cache: dict[str, Any] = {}

    # -- the recipe's heavy parts, made on first use in each process ------------------------
    def network(self, seed: int = 0, pooling: str = "torch"):
        """A fresh ``torch.nn.Sequential`` of this problem's architecture on its device,
        initialized by torch's defaults from ``seed``. ``pooling`` picks how the convnet's
        max-pool is computed (same values): ``torch`` trains faster with autograd, ``slices``
        evaluates a population faster (what the ES side uses)."""
        from .classifiers import seeded_classifier

        return seeded_classifier(seed, **self.network_config, pooling=pooling).to(self.device)

    def tensors(self) -> dict[str, torch.Tensor]:
        """The dataset as torch tensors on the problem's device (``x_train``, ``y_train``, ...)."""
        if "tensors" not in self._cache:
            import torch

            resolve_device(self.device)  # refused in a process without the device
            data = self.data.load()
            self._cache["tensors"] = {
                key: torch.as_tensor(getattr(data, key)).to(self.device)
                for key in ("x_train", "y_train", "x_test", "y_test")
            }
        return self._cache["tensors"]

    def _flat(self):
        if "flat" not in self._cache:
            from ..torch_params import FlatParams

            resolve_device(self.device)  # refused in a process without the device
            self._cache["flat"] = FlatParams(self.network(pooling="slices"), device=self.device)
        return self._cache["flat"]

    def prepare(self) -> None:
        """Load the data and build the network now (so that timing a run excludes them)."""
        self.tensors()
        self._flat()

    # -- scoring ----------------------------------------------------------------------------
    def minibatch(self, seed: int) -> np.ndarray:
        """Indices of the training examples that ``seed`` selects (all of them when batch_size is None)."""
        n = len(self.data.load().y_train)
        if self.batch_size is None or self.batch_size >= n:
            return np.arange(n)
        return np.sort(np.random.default_rng(int(seed)).choice(n, self.batch_size, replace=False))

    def logits(self, params: np.ndarray, x):
        """Class scores ``(m, n, classes)`` of ``m`` parameter rows on the images ``x`` (n, 1, rows, cols)."""
        import torch
        from torch.func import functional_call

        flat = self._flat()
        theta = flat.as_tensor(np.asarray(params, dtype=np.float32))
        if theta.ndim != 2:
            raise ConfigError(f"params must be (members, dim), got shape {tuple(theta.shape)}")
        method = self.forward if self.forward != "auto" else ("vmap" if self.model == "mlp" else "loop")
        if method == "vmap":
            return flat.forward(theta, x, shared_input=True)
        named = flat.unflatten(theta)
        with torch.no_grad():
            outputs = [functional_call(flat.module, {**{k: v[i] for k, v in named.items()}, **flat.buffers}, (x,))
                       for i in range(len(theta))]
        return torch.stack(outputs)

    @overload
    def _scores(self, params: np.ndarray, x: torch.Tensor, y: torch.Tensor,
                accuracy: Literal[True] = True) -> tuple[np.ndarray, np.ndarray]: ...

    @overload
    def _scores(self, params: np.ndarray, x: torch.Tensor, y: torch.Tensor, accuracy: bool) -> tuple[np.ndarray, np.ndarray | None]: ...

    def _scores(self, params: np.ndarray, x: torch.Tensor, y: torch.Tensor, accuracy: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """Mean cross-entropy of each row on ``(x, y)`` and, if asked, its accuracy (float64).

        The loss is ``logsumexp(logits) - logit[label]`` (torch's CPU log_softmax is several times
        slower over ten classes), averaged in float64.
        """
        import torch

        out = self.logits(params, x)
        target = y.view(1, -1, 1).expand(len(out), -1, 1)
        per_example = torch.logsumexp(out, dim=-1) - out.gather(-1, target).squeeze(-1)
        loss = per_example.double().mean(dim=1).cpu().numpy()
        if not accuracy:
            return loss, None
        return loss, (out.argmax(dim=-1) == y).double().mean(dim=1).cpu().numpy()

    def evaluate(self, params: np.ndarray, seeds: np.ndarray) -> EvalResult:
        import torch

        params = np.asarray(params)
        seeds = np.asarray(seeds, dtype=np.int64)
        data = self.tensors()
        fitness = np.empty(len(params))
        steps = np.zeros(len(params), dtype=np.int64)
        for seed in np.unique(seeds):  # one group under shared_seed; a user's own seeds also work
            rows = np.flatnonzero(seeds == seed)
            index = self.minibatch(int(seed))
            chosen = torch.as_tensor(index, device=self.device)
            loss, accuracy = self._scores(params[rows], data["x_train"][chosen], data["y_train"][chosen],
                                          accuracy=self.fitness == "accuracy")
            fitness[rows] = -loss if accuracy is None else accuracy  # accuracy is computed only when it is the fitness
            steps[rows] = len(index)
        return EvalResult(fitness=fitness, steps=steps)

    def score(self, params: np.ndarray, episodes: int = 20, seed: int = 0) -> np.ndarray:
        """The fitness of one parameter vector on ``episodes`` fresh minibatches whose seeds derive
        from ``seed`` (the :class:`~blackbox.core.problem.Scorable` capability: goal confirmation).
        Minibatch 0 is the one ``seed`` selects; with ``batch_size=None`` every one is the whole
        training set. The loss and accuracy on a whole split are :meth:`split_score`."""
        if isinstance(episodes, str):
            raise ConfigError(
                f"MNIST.score(params, episodes, seed) scores fresh minibatches, got episodes={episodes!r}; "
                f"the loss and accuracy on a split are split_score(params, {episodes!r})"
            )
        episodes = check_int("episodes", episodes, minimum=1)
        seeds = _minibatch_seeds(check_int("seed", seed, minimum=0), episodes)
        row = np.asarray(params, dtype=np.float64).reshape(1, -1)
        if self.batch_size is None or self.batch_size >= len(self.data.load().y_train):
            # every minibatch is the whole training set: evaluated once
            return np.repeat(self.evaluate(row, seeds[:1]).fitness, episodes)
        return self.evaluate(np.repeat(row, episodes, axis=0), seeds).fitness

    def split_score(self, params: np.ndarray, split: str = "test") -> dict[str, float]:
        """Mean cross-entropy and accuracy of one parameter vector on a whole split ("train" or "test")."""
        check_choice("split", split, ("train", "test"))
        data = self.tensors()
        x, y = data[f"x_{split}"], data[f"y_{split}"]
        row = np.asarray(params, dtype=np.float64).reshape(1, -1)
        total_loss = total_correct = 0.0
        for start in range(0, len(y), _SPLIT_CHUNK):
            loss, accuracy = self._scores(row, x[start:start + _SPLIT_CHUNK], y[start:start + _SPLIT_CHUNK])
            n = len(y[start:start + _SPLIT_CHUNK])
            total_loss += float(loss[0]) * n
            total_correct += float(accuracy[0]) * n
        return {"loss": total_loss / len(y), "accuracy": total_correct / len(y)}

    def initial_params(self, rng: np.random.Generator) -> np.ndarray:
        """torch's default initialization of the network, drawn from a seed taken from ``rng``."""
        from ..torch_params import FlatParams

        return FlatParams(self.network(int(rng.integers(2**31)))).initial()

    def describe(self) -> dict[str, object]:
        unused = {"image_shape", "channels" if self.model == "mlp" else "hidden"}
        config = {k: v for k, v in self.network_config.items() if k not in unused}
        summary = {
            "name": self.name, "dim": self.dim, "data": self.data.describe(), **config,
            "image_shape": list(self.data.image_shape), "fitness": self.fitness,
            "batch_size": self.batch_size, "forward": self.forward, "device": str(self.device),
        }
        if self.device_requested != self.device:
            summary["device_requested"] = self.device_requested  # "auto"
        return summary

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["_cache"] = {}
        return state

