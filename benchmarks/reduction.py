"""Cost and accuracy of the partitionable noise-weighted sum beside today's one float32 pass.

    nice -n 19 python benchmarks/reduction.py [--dims 1000 10000 100000 1000000] [--popsize 10000]
                                             [--repeats 3] [--columns 64] [--nodes 1 2 3 40]

For each dim, with an ``openai-es`` population (mirrored pairs from the shared noise table) and
centered-rank weights of random fitness:

- time of today's ``Population.noise_weighted_sum`` (float32, one pass in sorted-offset order) and
  of ``blackbox.core.reduce`` (fixed blocks of 64 slices, float32 in the same order inside each
  block, int64 fixed point between blocks): the plan, all blocks, and the linear + squared sums
  beside today's ``noise_weighted_sums``; the memory floor of streaming the slices once;
- accuracy against an exactly rounded reference (``math.fsum`` of exact products) on ``--columns``
  sampled coordinates: the largest absolute error of each, and their ratio;
- identity: the blocks split over each of ``--nodes`` simulated nodes (random assignment, random
  order, sums combined in random order) give the same bits.

Times are the median of ``--repeats`` wall-clock runs after a warm-up; both sides are measured in
the same run, so the machine's load affects them alike.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from _common import machine, memory_floor, timed, version

import blackbox as bb
from blackbox.core import reduce
from blackbox.strategies.shaping import centered_ranks


def exact_error(pop, weights: np.ndarray, results: dict[str, np.ndarray], columns: np.ndarray) -> dict[str, float]:
    """Largest |result - exact| over ``columns``; exact = fsum of exact products (split weights)."""
    coeff = weights * pop.signs
    head = coeff.astype(np.float32).astype(np.float64)
    tail = coeff - head
    errors = {name: 0.0 for name in results}
    noise = pop.table.data
    for col in columns.tolist():
        eps = noise[pop.offsets + col].astype(np.float64)
        exact = math.fsum(np.concatenate([head * eps, tail * eps]).tolist())
        for name, values in results.items():
            errors[name] = max(errors[name], abs(float(values[col]) - exact))
    return errors


def identical_across_nodes(plan: reduce.ReductionPlan, nodes: list[int], rng: np.random.Generator) -> bool:
    whole = plan.block_sums()
    for count in nodes:
        owner = rng.integers(0, count, size=plan.n_blocks)
        parts = [plan.block_sums(rng.permutation(np.flatnonzero(owner == k))) for k in range(count)]
        total = reduce.combine(*[parts[i] for i in rng.permutation(count)])
        if not np.array_equal(total.linear, whole.linear):
            return False
    return True


def measure(dim: int, popsize: int, repeats: int, columns: int, nodes: list[int]) -> dict:
    strategy = bb.make_strategy("openai-es", dim=dim, popsize=popsize, seed=0)
    pop = strategy.ask()
    weights = centered_ranks(np.random.default_rng(1).standard_normal(popsize))
    squares = np.abs(weights)
    plan = reduce.plan_sums(pop, weights)  # warms the table's max |noise|
    row = {"dim": dim, "popsize": popsize, "blocks": plan.n_blocks}
    row["old_ms"] = timed(lambda: pop.noise_weighted_sum(weights), repeats) * 1e3
    row["plan_ms"] = timed(lambda: reduce.plan_sums(pop, weights), repeats) * 1e3
    row["new_ms"] = timed(lambda: reduce.weighted_sum(pop, weights), repeats) * 1e3
    row["old_both_ms"] = timed(lambda: pop.noise_weighted_sums(weights, squares), repeats) * 1e3
    row["new_both_ms"] = timed(lambda: reduce.weighted_sums(pop, weights, squares), repeats) * 1e3
    values = popsize // 2 * dim  # streamed once: scaled from a buffer of at most 64M floats (256 MB)
    row["floor_ms"] = memory_floor(min(values, 2**26)) * values / min(values, 2**26) * 1e3
    old = pop.noise_weighted_sum(weights)
    new = reduce.weighted_sum(pop, weights)
    rng = np.random.default_rng(2)
    cols = np.sort(rng.choice(dim, size=min(columns, dim), replace=False))
    errors = exact_error(pop, weights, {"old": old, "new": new}, cols)
    row["old_err"], row["new_err"] = errors["old"], errors["new"]
    row["identical"] = identical_across_nodes(plan, nodes, rng)
    return row


def table(rows: list[dict], nodes: list[int]) -> str:
    lines = [
        "| dim | popsize | blocks | float32 pass ms | fixed blocks ms | ratio | plan ms | with squares: float32 ms "
        "| fixed blocks ms | floor ms | max error float32 | max error fixed blocks | more accurate by "
        f"| same bits for {'/'.join(map(str, nodes))} nodes |",
        "|" + "---:|" * 13 + ":---:|",
    ]
    for r in rows:
        better = r["old_err"] / r["new_err"] if r["new_err"] else math.inf
        lines.append(
            f"| {r['dim']:,} | {r['popsize']:,} | {r['blocks']} | {r['old_ms']:.2f} | {r['new_ms']:.2f} | "
            f"{r['new_ms'] / r['old_ms']:.2f} | {r['plan_ms']:.2f} | {r['old_both_ms']:.2f} | {r['new_both_ms']:.2f} | "
            f"{r['floor_ms']:.2f} | {r['old_err']:.2e} | {r['new_err']:.2e} | {better:.1f}x | "
            f"{'yes' if r['identical'] else 'NO'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dims", type=int, nargs="+", default=[1000, 10000, 100000, 1000000])
    parser.add_argument("--popsize", type=int, default=10000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--columns", type=int, default=64, help="coordinates checked against the exact sum")
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 3, 40])
    args = parser.parse_args(argv)
    print(f"# {machine()}; numpy {version('numpy')}")
    rows = []
    for dim in args.dims:
        rows.append(measure(dim, args.popsize, args.repeats, args.columns, args.nodes))
        print(f"  dim {dim:,} done", flush=True)
    print(table(rows, args.nodes))


if __name__ == "__main__":
    main()
