"""Time per generation of ask + tell, without evaluating fitness, beside two references.

    python benchmarks/ask_tell.py [--dims 1000 10000 100000 1000000] [--popsize 256] [--repeats 5]
                                  [--dense-dims 100 1000] [--skip-seed-table]

- ours: ``openai-es``, ``nes`` (mirrored) and ``ga`` from blackbox, population from the shared noise
  table, the update a chunked weighted sum over table slices (no dense population);
- fresh-noise reference: a minimal numpy OpenAI-ES that draws ``popsize/2 x dim`` new float32
  normals every generation and takes ``w @ eps`` (what a straightforward implementation does);
- floor: the time to stream ``popsize x dim`` float32 through memory once on this machine,
  measured in the same run (the fastest of a sum, a max and a copy over a buffer that size).

A second table times the other compact (noise-table) strategies, pgpe, snes, sep-cma-es, cem and
ars, beside openai-es and the floor measured in the same run; their updates also read the squares
of the noise (per-dimension sigma), fused into the same pass over each slice. A third table times
the dense strategies (cma-es, xnes: O(popsize n^2 + n^3) per generation) at the ``--dense-dims``.

Ratios are taken inside one run, so the machine's noise affects both sides alike.
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import memory_floor, timed

import blackbox as bb


def ours(name: str, dim: int, popsize: int | None, **options):
    strategy = bb.make_strategy(name, dim=dim, popsize=popsize, seed=0, **options)
    fitness = np.random.default_rng(0).standard_normal(strategy.popsize)

    def generation():
        strategy.ask()
        strategy.tell(fitness)

    return generation


def fresh_noise_reference(dim: int, popsize: int):
    """Minimal numpy OpenAI-ES: fresh mirrored float32 noise, centered ranks, Adam."""
    rng = np.random.default_rng(0)
    theta = np.zeros(dim, dtype=np.float32)
    m = np.zeros(dim, dtype=np.float32)
    v = np.zeros(dim, dtype=np.float32)
    fitness = rng.standard_normal(popsize)
    state = {"t": 0}

    def generation():
        half = popsize // 2
        eps = rng.standard_normal((half, dim), dtype=np.float32)
        _population = (theta, eps, 0.02)  # ask: the rows are theta +/- 0.02 * eps
        ranks = np.empty(popsize)
        ranks[np.argsort(fitness)] = np.arange(popsize)
        w = (ranks / (popsize - 1) - 0.5).astype(np.float32)
        g = (w[0::2] - w[1::2]) @ eps / popsize
        state["t"] += 1
        t = state["t"]
        m[:] = 0.9 * m + 0.1 * g
        v[:] = 0.999 * v + 0.001 * g * g
        theta[:] += 0.01 * np.sqrt(1 - 0.999**t) / (1 - 0.9**t) * m / (np.sqrt(v) + 1e-8)

    return generation


def seed_table(args) -> None:
    header = ("dim", "openai-es", "nes", "ga", "fresh-noise ref", "floor", "ref / openai-es", "openai-es / floor")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for dim in args.dims:
        rows = {
            "openai-es": timed(ours("openai-es", dim, args.popsize), args.repeats),
            "nes": timed(ours("nes", dim, args.popsize, mirrored=True), args.repeats),
            "ga": timed(ours("ga", dim, args.popsize), args.repeats),
            "ref": timed(fresh_noise_reference(dim, args.popsize), max(1, args.repeats // 2)),
            "floor": memory_floor(dim * args.popsize, args.repeats),
        }
        ms = {k: v * 1000 for k, v in rows.items()}
        print(f"| {dim:,} | {ms['openai-es']:.2f} ms | {ms['nes']:.2f} ms | {ms['ga']:.2f} ms | "
              f"{ms['ref']:.2f} ms | {ms['floor']:.2f} ms | {rows['ref'] / rows['openai-es']:.1f}x | "
              f"{rows['openai-es'] / rows['floor']:.2f}x |", flush=True)


COMPACT = ("pgpe", "snes", "sep-cma-es", "cem", "ars")
DENSE = ("cma-es", "xnes")


def table(header: tuple[str, ...]) -> None:
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))


def compact_table(args) -> None:
    print(f"\nOther compact strategies, population {args.popsize} (x floor: time / memory floor)\n")
    table(("dim", "openai-es", *COMPACT, *(f"{name} x floor" for name in COMPACT)))
    for dim in args.dims:
        times = {"openai-es": timed(ours("openai-es", dim, args.popsize), args.repeats)}
        for name in COMPACT:
            times[name] = timed(ours(name, dim, args.popsize), args.repeats)
        floor = memory_floor(dim * args.popsize, args.repeats)
        cells = [f"{times[k] * 1000:.2f} ms" for k in ("openai-es", *COMPACT)]
        cells += [f"{times[k] / floor:.2f}x" for k in COMPACT]
        print(f"| {dim:,} | " + " | ".join(cells) + " |", flush=True)


def dense_table(args) -> None:
    print("\nDense strategies (population from the strategy's own generator), default population "
          "and population 256\n")
    table(("dim", *(f"{name} (default popsize)" for name in DENSE), *(f"{name} (256)" for name in DENSE)))
    for dim in args.dense_dims:
        cells = [f"{timed(ours(name, dim, None), args.repeats) * 1000:.2f} ms" for name in DENSE]
        cells += [f"{timed(ours(name, dim, 256), args.repeats) * 1000:.2f} ms" for name in DENSE]
        print(f"| {dim:,} | " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[1000, 10000, 100000, 1000000])
    parser.add_argument("--popsize", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dense-dims", type=int, nargs="*", default=[100, 1000])
    parser.add_argument("--skip-seed-table", action="store_true", help="only the tables of the newer strategies")
    args = parser.parse_args()
    print(f"ask + tell per generation, population {args.popsize}, median of {args.repeats} "
          f"(blackbox {bb.__version__}, numpy {np.__version__})\n")
    if not args.skip_seed_table:
        seed_table(args)
    compact_table(args)
    if args.dense_dims:
        dense_table(args)


if __name__ == "__main__":
    main()
