"""Dispatch overhead and bytes sent per generation, for each executor, on a trivial problem.

    python benchmarks/dispatch.py [--dims 1000 1000000] [--popsize 256] [--workers 2] [--generations 5]
                                  [--executors serial loky futures ray]

The problem returns zeros: what is left is the executor's own cost plus rebuilding each row from
the noise table in the workers (the same work ``serial`` does in the driver). Columns:

- ``wall``: median milliseconds of ``executor.evaluate`` per generation (popsize rows + the center);
- ``work``: milliseconds the workers spent evaluating (rebuilding rows), divided by the workers;
- ``overhead``: ``wall - work``: dispatch, broadcast, result transfer and any imbalance;
- ``bytes/gen``: what the executor sent to its workers per generation (task messages plus each
  broadcast counted once per worker that read it), beside ``popsize x dim x 4`` (a dense float32
  population) and the target ``2 x workers x dim x 4 + 64 x popsize``.

Run on an idle machine for final figures; on a loaded one compare rows of the same run only.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import blackbox as bb
from blackbox.executors.futures import FuturesExecutor
from blackbox.executors.loky import LokyExecutor


def _ship_by_value() -> None:
    """Let workers that cannot import this script (Ray's) unpickle its problem class by value."""
    if __name__ != "__main__":
        import sys

        import cloudpickle

        cloudpickle.register_pickle_by_value(sys.modules[__name__])


class Trivial(bb.Problem):
    """Fitness 0 for every row, no environment steps."""

    def __init__(self, dim: int):
        self.dim = dim

    def evaluate(self, params, seeds):
        return bb.EvalResult(np.zeros(len(params)), np.zeros(len(params), dtype=np.int64))


def make_executor(name: str, workers: int):
    if name == "serial":
        return bb.make_executor("serial")
    if name == "loky":
        return LokyExecutor(workers=workers)
    if name == "futures":
        return FuturesExecutor(kind="process", workers=workers)
    if name == "ray":
        from blackbox_ray import RayExecutor

        return RayExecutor(num_cpus=workers)
    raise SystemExit(f"unknown executor {name!r}")


def measure(name: str, dim: int, popsize: int, workers: int, generations: int) -> dict:
    _ship_by_value()
    problem = Trivial(dim)
    es = bb.make_strategy("openai-es", dim=dim, popsize=popsize, seed=0)
    executor = make_executor(name, workers)
    started = time.perf_counter()
    executor.start(problem)
    walls, works, sent = [], [], []
    try:
        for generation in range(generations + 2):  # two warm-up generations (spawn, imports, mapping)
            population = es.ask()
            batch = population.with_center(es.center)
            seeds = bb.evaluation_seeds(0, generation, batch.groups)
            stats = getattr(executor, "stats", None)
            before = stats.copy() if stats is not None else None
            t0 = time.perf_counter()
            result = executor.evaluate(batch, seeds)
            wall = time.perf_counter() - t0
            es.tell(result.fitness[:popsize])
            if generation == 0:
                startup = time.perf_counter() - started
            if generation < 2:
                continue
            walls.append(wall)
            if stats is None:
                works.append(wall)
                sent.append(0)
            else:
                works.append((stats.worker_seconds - before.worker_seconds) / executor.workers)
                sent.append(stats.bytes_to_workers - before.bytes_to_workers)
    finally:
        executor.close()
    wall, work = statistics.median(walls), statistics.median(works)
    n_workers = 1 if name == "serial" else executor.workers
    return {
        "executor": name, "dim": dim, "workers": n_workers, "startup_s": startup,
        "wall_ms": wall * 1e3, "work_ms": work * 1e3, "overhead_ms": (wall - work) * 1e3,
        "bytes": int(statistics.median(sent)), "dense_bytes": popsize * dim * 4,
        "target_bytes": 2 * n_workers * dim * 4 + 64 * popsize,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[1000, 1_000_000])
    parser.add_argument("--popsize", type=int, default=256)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--generations", type=int, default=5)
    parser.add_argument("--executors", nargs="+", default=["serial", "loky", "futures", "ray"])
    args = parser.parse_args()
    names = list(args.executors)
    if "ray" in names:
        try:
            import blackbox_ray  # noqa: F401
        except ImportError:
            print("(ray skipped: pip install -e plugins/blackbox-ray)")
            names.remove("ray")
    header = (f"{'executor':<8} {'dim':>8} {'workers':>7} {'startup s':>9} {'wall ms':>9} {'work ms':>9} "
              f"{'overhead ms':>11} {'bytes/gen':>11} {'pop x dim x 4':>13} {'target':>11} {'ok':>3}")
    print(f"popsize {args.popsize} (+ the center), {args.generations} generations after 2 warm-up")
    print(header)
    print("-" * len(header))
    for dim in args.dims:
        for name in names:
            row = measure(name, dim, args.popsize, args.workers, args.generations)
            ok = "" if name == "serial" else ("yes" if row["bytes"] <= row["target_bytes"] else "NO")
            print(f"{row['executor']:<8} {row['dim']:>8} {row['workers']:>7} {row['startup_s']:>9.2f} "
                  f"{row['wall_ms']:>9.2f} {row['work_ms']:>9.2f} {row['overhead_ms']:>11.2f} "
                  f"{row['bytes']:>11,} {row['dense_bytes']:>13,} {row['target_bytes']:>11,} {ok:>3}", flush=True)


if __name__ == "__main__":
    main()
