"""Two workers against the machine's ceiling: two raw loops side by side vs ``loky:workers=2``.

    python benchmarks/two_workers.py [--env HalfCheetah-v5] [--rounds 6] [--policy linear|mlp] [--steps 15000]

Needs psutil (it comes with the dask extra) to read the workers' CPU time.

- **ceiling**: two processes, each one ``gymnasium.make(ENV)`` stepped ``--steps`` times on uniform
  random actions (``rollout_cost.Raw``), started together; environment steps per second of wall time and per
  CPU-second of the two processes.
- **blackbox**: one generation of a user's loop (``es.ask()``, ``executor.evaluate``, ``es.tell``)
  of ``openai-es`` (popsize 64) on ``gym:ENV`` with observation normalization, through
  ``LokyExecutor(workers=2)``; the pool is kept between rounds (the first generation, which starts
  the workers and builds their engines, is not counted).
  Steps per wall second and per CPU-second of the driver plus both workers (psutil).

Paired rounds as in ``rollout_cost.py``: each round runs both, in a shuffled order; the table
prints the median of the per-round ratios with their interquartile range, and the load average.
On a machine whose 2 cores are shared with other jobs the wall-time ratio says how much of the
cores each side got; the CPU-time ratio is what the two workers, the dispatch and the driver cost.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import multiprocessing as mp  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import blackbox as bb  # noqa: E402

_RAW = None


def _raw_init(env_id: str, seed: int) -> None:
    global _RAW
    from rollout_cost import Raw

    _RAW = Raw(env_id, seed)
    _RAW.run(500)  # warm


def _raw_run(steps: int) -> tuple[int, float]:
    started = time.process_time()
    assert _RAW is not None, "the pool's initializer made the loop"
    _RAW.run(steps)
    return steps, time.process_time() - started


def _cpu(processes) -> float:
    total = 0.0
    for p in processes:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except Exception:  # noqa: BLE001 - a worker that went away counts nothing more
            pass
    return total


def main(argv=None) -> int:
    try:
        import psutil  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        print("two_workers.py needs psutil to read the workers' CPU time: pip install psutil", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="HalfCheetah-v5")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--policy", default="linear", choices=["linear", "mlp"])
    parser.add_argument("--steps", type=int, default=15000, help="steps of each raw loop per round")
    args = parser.parse_args(argv)
    policy = ",policy=linear" if args.policy == "linear" else ""
    problem = bb.make_problem(f"gym:{args.env}{policy},obs_norm=true")
    executor = bb.LokyExecutor(workers=2)
    es = bb.make_strategy("openai-es", x0=problem.initial_params(np.random.default_rng(0)), popsize=64, sigma=0.02,
                          seed=0)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs",
          flush=True)
    executor.start(problem)
    generation = [0]

    def one_generation() -> int:
        """ask, evaluate through the two workers, tell: the environment steps taken."""
        population = es.ask()
        generation[0] += 1
        result = executor.evaluate(population, np.arange(len(population)) + 1000 * generation[0])
        es.tell(result.fitness)
        return int(np.sum(result.steps))

    one_generation()  # starts the pool, builds the engines (group size measured in each worker)
    me = psutil.Process()
    ctx = mp.get_context("spawn")
    before_raw = {p.pid for p in me.children(recursive=True)}
    raw_pool = ctx.Pool(2, initializer=_raw_init, initargs=(args.env, 0))
    raw_pool.map(_raw_run, [100, 100])
    raw_pids = {p.pid for p in me.children(recursive=True)} - before_raw
    wall: dict[str, list[float]] = {"ceiling": [], "blackbox": []}
    cpu: dict[str, list[float]] = {"ceiling": [], "blackbox": []}
    rng = np.random.default_rng(0)
    for r in range(args.rounds):
        for which in rng.permutation(["ceiling", "blackbox"]):
            if which == "ceiling":
                started = time.perf_counter()
                done = raw_pool.map(_raw_run, [args.steps, args.steps], chunksize=1)
                elapsed = time.perf_counter() - started
                steps = sum(s for s, _ in done)
                wall["ceiling"].append(steps / elapsed)
                cpu["ceiling"].append(steps / sum(c for _, c in done))
            else:
                workers = [p for p in me.children(recursive=True) if p.pid not in raw_pids]
                before = _cpu([me, *workers])
                started = time.perf_counter()
                steps = one_generation()
                elapsed = time.perf_counter() - started
                used = _cpu([me, *workers]) - before
                wall["blackbox"].append(steps / elapsed)
                cpu["blackbox"].append(steps / used)
        print(f"round {r}: wall {wall['blackbox'][-1] / wall['ceiling'][-1]:.2f}x, "
              f"CPU {cpu['blackbox'][-1] / cpu['ceiling'][-1]:.2f}x", flush=True)
    raw_pool.close()
    executor.close()
    print("| task, policy | ceiling steps/s (wall) | blackbox steps/s (wall) | wall ratio | "
          "ceiling steps/CPU-s | blackbox steps/CPU-s | CPU ratio |")
    print("|---|---|---|---|---|---|---|")
    w = np.array(wall["blackbox"]) / np.array(wall["ceiling"])
    c = np.array(cpu["blackbox"]) / np.array(cpu["ceiling"])
    wq, cq = np.percentile(w, [25, 50, 75]), np.percentile(c, [25, 50, 75])
    print(f"| {args.env}, {args.policy} | {np.median(wall['ceiling']):,.0f} | {np.median(wall['blackbox']):,.0f} | "
          f"{wq[1]:.2f}x [{wq[0]:.2f}-{wq[2]:.2f}] | {np.median(cpu['ceiling']):,.0f} | "
          f"{np.median(cpu['blackbox']):,.0f} | {cq[1]:.2f}x [{cq[0]:.2f}-{cq[2]:.2f}] |")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
