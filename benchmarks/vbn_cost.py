"""What virtual batch normalization costs: decisions per second with and without VBN, side by side.

    python benchmarks/vbn_cost.py [--rows 16] [--repeats 2] [--pong-steps 200] [--no-pong]

CartPole-v1 with the numpy MLP (64x64; VBN folded into each member's weights when it takes a slot,
so a step costs what it costs without VBN; the price is one reference pass of 128 observations
per member) and, when ale-py is installed, Pong with the paper's convnet (torch; VBN statistics
from one batched reference pass per group of new members, then one vmapped forward per step).
Each pair is timed alternately (best of ``--repeats``) so that machine load hits both alike; the
ratio column is what to read on a busy machine. torch runs on one thread (``torch_threads=1``,
the gym problem's default). On a busy machine also run it with ``OPENBLAS_NUM_THREADS=1``: the
reference pass is a few small BLAS products per member, and BLAS threads fighting for the cores
make each take milliseconds instead of microseconds (measured: 2.6 ms instead of 0.15 ms per member
on a loaded 2-core machine).

VBN's price is per episode, not per step: it shows on tasks whose episodes are a few cheap steps
(CartPole's early episodes last 10-20 steps) and vanishes where a step is expensive (Pong).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import machine  # noqa: E402
from blackbox.problems.gym.problem import GymProblem  # noqa: E402


def rate(problem: GymProblem, params: np.ndarray, seeds: np.ndarray) -> float:
    start = time.perf_counter()
    result = problem.evaluate(params, seeds)
    return float(result.steps.sum()) / (time.perf_counter() - start)


def compare(label: str, make, rows: int, repeats: int) -> tuple[str, float, float]:
    plain, vbn = make(False), make(True)
    rng = np.random.default_rng(0)
    seeds = rng.integers(0, 2**32, rows)
    best = {False: 0.0, True: 0.0}
    for _ in range(repeats):
        for flag, problem in ((False, plain), (True, vbn)):
            params = problem.initial_params(np.random.default_rng(1)) + 0.05 * rng.standard_normal((rows, problem.dim))
            best[flag] = max(best[flag], rate(problem, params, seeds))
    return label, best[False], best[True]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--pong-steps", type=int, default=200, help="decisions per Pong episode (frames / 4)")
    parser.add_argument("--no-pong", action="store_true")
    args = parser.parse_args(argv)
    print(f"# {machine()}")
    table = [compare("CartPole-v1, mlp 64x64 (numpy)",
                     lambda vbn: GymProblem("CartPole-v1", vbn=vbn), args.rows, args.repeats)]
    if not args.no_pong and all(importlib.util.find_spec(m) for m in ("ale_py", "cv2", "torch")):
        frames = 4 * args.pong_steps
        table.append(compare(f"ALE/Pong-v5, cnn (torch), {args.pong_steps} decisions",
                             lambda vbn: GymProblem("ALE/Pong-v5", policy="cnn", vbn=vbn, max_episode_steps=frames),
                             args.rows, args.repeats))
    elif not args.no_pong:
        print("# Pong skipped: needs pip install \"blackbox-es[atari]\"")
    print(f"| task, policy ({args.rows} members) | decisions/s without VBN | with VBN | with / without |")
    print("|---|---|---|---|")
    for label, plain, vbn in table:
        print(f"| {label} | {plain:,.0f} | {vbn:,.0f} | {vbn / plain:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
