"""Scaling beyond one machine, on paper: modelled wall time per generation for 1 to 1,440 cores.

    python benchmarks/scaling_model.py [--popsize 10000] [--episode-ms 100] [--dim 30000]
                                       [--task-ms 1.0] [--driver-ms 300] [--chunks-per-worker 2]
                                       [--cores-per-node 36] [--gbit 10]

The model (see ``benchmarks/SCALING.md``), one generation on ``N`` cores:

    compute(N)   = ceil(P / N) x t_episode             every core runs its share of episodes
    dispatch(N)  = chunks x N x t_task                 the one driver submits and collects every task
    broadcast(N) = nodes(N) x dim x 8 bytes / bandwidth   the center, once per node, from the head
    T(N)         = t_driver + compute(N) + dispatch(N) + broadcast(N)

``t_task`` and ``t_driver`` (ask + tell + seeds at this dim and popsize) are measured with
``benchmarks/dispatch.py`` and ``benchmarks/ask_tell.py``; ``t_episode`` is the mean episode of
the task (Humanoid, 1,000 steps: about 0.1 s on one core). Linear speed-up is ``T(1) / N``.
"""

from __future__ import annotations

import argparse
import math


def model(n: int, args) -> dict[str, float]:
    compute = math.ceil(args.popsize / n) * args.episode_ms / 1e3
    dispatch = args.chunks_per_worker * n * args.task_ms / 1e3 if n > 1 else 0.0
    nodes = math.ceil(n / args.cores_per_node)
    broadcast = (nodes * args.dim * 8 * 8 / (args.gbit * 1e9)) if n > 1 else 0.0
    total = args.driver_ms / 1e3 + compute + dispatch + broadcast
    return {"compute": compute, "dispatch": dispatch, "broadcast": broadcast, "total": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--popsize", type=int, default=10_000, help="episodes per generation")
    parser.add_argument("--episode-ms", type=float, default=100.0, help="mean episode time on one core")
    parser.add_argument("--dim", type=int, default=30_000, help="policy parameters")
    parser.add_argument("--task-ms", type=float, default=1.0, help="driver time per task (measured)")
    parser.add_argument("--driver-ms", type=float, default=300.0, help="ask + tell per generation (measured)")
    parser.add_argument("--chunks-per-worker", type=float, default=2.0)
    parser.add_argument("--cores-per-node", type=int, default=36)
    parser.add_argument("--gbit", type=float, default=10.0, help="head node bandwidth, Gbit/s")
    parser.add_argument("--cores", type=int, nargs="+",
                        default=[1, 2, 8, 18, 36, 72, 144, 288, 576, 720, 1000, 1440])
    args = parser.parse_args()
    base = model(1, args)["total"]
    knee = math.sqrt(args.popsize * args.episode_ms / (args.chunks_per_worker * args.task_ms))
    print(f"P={args.popsize} episodes of {args.episode_ms:g} ms, dim {args.dim:,}, {args.task_ms:g} ms "
          f"per task x {args.chunks_per_worker:g} tasks per core, driver {args.driver_ms:g} ms")
    header = (f"{'cores':>6} {'compute s':>10} {'dispatch s':>11} {'bcast s':>8} {'T(N) s':>9} "
              f"{'linear s':>9} {'speed-up':>9} {'efficiency':>10}")
    print(header)
    print("-" * len(header))
    for n in args.cores:
        m = model(n, args)
        linear = base / n
        print(f"{n:>6} {m['compute']:>10.3f} {m['dispatch']:>11.3f} {m['broadcast']:>8.4f} {m['total']:>9.3f} "
              f"{linear:>9.3f} {base / m['total']:>8.0f}x {linear / m['total']:>9.0%}")
    print(f"dispatch equals compute near N = sqrt(P t_episode / (chunks t_task)) = {knee:.0f} cores")


if __name__ == "__main__":
    main()
