"""Throughput of the ``mnist`` problem's population forward, and of one backprop step beside it.

    python benchmarks/mnist_forward.py [--threads 1] [--repeats 7]

For the MLP and the convnet on 8x8 digits and on 28x28 MNIST-shaped images (random pixels in a
temporary IDX folder: speed does not depend on the pixels), times ``problem.evaluate`` on one
generation (popsize members x one shared minibatch) with ``forward=vmap`` (torch.func
functional_call + vmap over the stacked parameters) and ``forward=loop`` (one member after another
through torch's single-network kernels), and says which one ``forward=auto`` picks. The last
columns give one backprop step (forward + backward + Adam) of the same network for comparison:
per example, ES forwards and backprop steps cost very different amounts, which is why the
contrast's wall-time ratio is far below its pass ratio. Also times the convnet's 2x2 pooling
(``MaxPool2x2``, what the ES side uses) against ``torch.nn.MaxPool2d`` (what the backprop side
uses), forward and in a training step. All figures come from one run, side by side.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

import blackbox as bb
from blackbox.problems.mnist.classifiers import MaxPool2x2
from blackbox.problems.mnist.data import write_idx


def timed(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fake_mnist_folder(root: Path) -> Path:
    rng = np.random.default_rng(0)
    for split, n in (("train", 2000), ("t10k", 500)):
        write_idx(root / f"{split}-images-idx3-ubyte", rng.integers(0, 256, (n, 28, 28), dtype=np.uint8))
        write_idx(root / f"{split}-labels-idx1-ubyte", (np.arange(n) % 10).astype(np.uint8))
    return root


def backprop_step(problem, batch: int, repeats: int, pooling: str = "torch") -> float:
    data = problem.tensors()
    net = problem.network(pooling=pooling)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    x, y = data["x_train"][:batch], data["y_train"][:batch]

    def step():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()

    return timed(step, repeats * 10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--bp-batch", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        folder = fake_mnist_folder(Path(tmp))
        cases = [("mlp", None, 50, 256), ("cnn", None, 50, 256), ("mlp", folder, 50, 256), ("cnn", folder, 20, 100)]
        print(f"torch {torch.__version__}, {args.threads} thread(s); times are medians of {args.repeats} runs")
        header = (f"{'model':5} {'images':6} {'dim':>7} {'pop x batch':>11} {'vmap ms':>9} {'loop ms':>9} "
                  f"{'loop/vmap':>9} {'auto':>5} {'ES us/member-example':>21} {'BP us/example':>14} {'ratio':>6}")
        print(header)
        print("-" * len(header))
        for model, path, popsize, batch in cases:
            spec = {"model": model, "batch_size": batch}
            if path is not None:
                spec["path"] = str(path)
            times = {}
            for forward in ("vmap", "loop"):
                problem = bb.make_problem("mnist", **spec, forward=forward)
                problem.prepare()
                x0 = problem.initial_params(np.random.default_rng(0))
                rows = x0 + 0.05 * np.random.default_rng(1).standard_normal((popsize, problem.dim))
                seeds = np.zeros(popsize, dtype=np.int64)
                times[forward] = timed(lambda p=problem, r=rows, s=seeds: p.evaluate(r, s), args.repeats)
            auto = "vmap" if model == "mlp" else "loop"
            es_per = times[auto] / (popsize * batch) * 1e6
            bp_per = backprop_step(problem, args.bp_batch, args.repeats) / args.bp_batch * 1e6
            images = "8x8" if path is None else "28x28"
            print(f"{model:5} {images:6} {problem.dim:>7,} {f'{popsize}x{batch}':>11} {times['vmap'] * 1e3:>9.2f} "
                  f"{times['loop'] * 1e3:>9.2f} {times['loop'] / times['vmap']:>9.2f} {auto:>5} {es_per:>21.3f} "
                  f"{bp_per:>14.3f} {bp_per / es_per:>6.1f}")
    print("\nratio: backprop's time per example (forward+backward+Adam, batch "
          f"{args.bp_batch}) over ES's time per member-example")
    pool_in = torch.randn(50 * 256, 8, 8, 8)
    ours = timed(lambda: MaxPool2x2()(pool_in), args.repeats)
    theirs = timed(lambda: torch.nn.MaxPool2d(2)(pool_in), args.repeats)
    print(f"\n2x2 max-pool forward of {tuple(pool_in.shape)}: MaxPool2x2 {ours * 1e3:.2f} ms, "
          f"torch.nn.MaxPool2d {theirs * 1e3:.2f} ms ({theirs / ours:.1f}x)")
    cnn = bb.make_problem("mnist:model=cnn")
    steps = {pooling: backprop_step(cnn, args.bp_batch, args.repeats, pooling) for pooling in ("slices", "torch")}
    print(f"backprop step of the 8x8 convnet (batch {args.bp_batch}): pooling=slices {steps['slices'] * 1e3:.2f} ms, "
          f"pooling=torch {steps['torch'] * 1e3:.2f} ms (the baseline uses torch)")


if __name__ == "__main__":
    main()
