"""Speed-up of parallel executors over ``serial`` on a CPU-bound problem, same seed, same run.

    python benchmarks/speedup.py [--problem SPEC] [--strategy SPEC] [--generations 10]
                                 [--executors serial loky:workers=2] [--seed 0]

``--problem`` takes any problem spec (``gym:CartPole-v1``, ``gym:HalfCheetah-v5``, ...). The default,
``rollout``, is a CPU-bound stand-in defined here: each row steps a small linear policy on a
chaotic toy system for ``steps`` steps in plain numpy, one row at a time, like an environment loop.
Each executor trains from the same seed; the table gives seconds per generation (the first
generation, which starts workers, left out), the CPU seconds per generation spent evaluating
(in the driver for ``serial``, in the workers otherwise: on a loaded machine the wall-clock
speed-up says little, while equal CPU per generation says the parallel run wastes nothing), the speed-up
over the first executor listed, and whether the final center is bit-identical to the first's.

``--ceiling`` also measures what this machine allows: the same serial run alone, then as many copies
at once as the parallel executors have workers, each in its own process. Their throughput ratio is the
best speed-up any executor could reach here (virtual cores that share a physical one, or a busy
host, give less than the core count).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np

import blackbox as bb
from blackbox.registry.plugins import problems


def _ship_by_value() -> None:
    """Let workers that cannot import this script (Ray's) unpickle its problem class by value."""
    if __name__ != "__main__":
        import sys

        import cloudpickle

        cloudpickle.register_pickle_by_value(sys.modules[__name__])


class Rollout(bb.Problem):
    """A CPU-bound toy episode: a linear policy drives a 4-d nonlinear system for ``steps`` steps."""

    name = "rollout"

    def __init__(self, steps: int = 2000):
        self.steps = int(steps)
        self.dim = 4 * 4 + 4

    def evaluate(self, params, seeds):
        fitness = np.empty(len(params))
        for i, (theta, seed) in enumerate(zip(params, seeds)):
            rng = np.random.default_rng(int(seed))
            w, b = theta[:16].reshape(4, 4), theta[16:]
            state, total = rng.uniform(-0.1, 0.1, 4), 0.0
            for _ in range(self.steps):
                action = np.tanh(w @ state + b)
                state = 0.99 * state + 0.05 * np.sin(3.0 * state[::-1]) + 0.05 * action
                total -= float(state @ state)
            fitness[i] = total
        return bb.EvalResult(fitness, np.full(len(params), self.steps, dtype=np.int64))


def measure(problem_spec: str = "rollout:steps=2000", strategy_spec: str = "openai-es:popsize=64",
            generations: int = 10, executors: list[str] | None = None, seed: int = 0, log=print) -> list[dict]:
    """Train from the same seed under each executor; seconds and CPU per generation, final center."""
    _ship_by_value()
    if "rollout" not in problems.names():
        problems.register("rollout", Rollout)
    rows = []
    for spec in executors or ["serial", "loky:workers=2"]:
        problem = bb.make_problem(problem_spec)
        parsed = bb.registry.parse_spec(strategy_spec)
        strategy = bb.make_strategy(parsed.name, dim=problem.dim, seed=seed,
                                    x0=problem.initial_params(np.random.default_rng(seed)), **parsed.kwargs)
        executor = bb.make_executor(spec)
        cpu_started = time.process_time()
        try:
            result = bb.optimize(strategy, problem, executor, generations=generations, seed=seed)
        finally:
            executor.close()
        stats = getattr(executor, "stats", None)
        cpu = (stats.worker_cpu_seconds if stats is not None else time.process_time() - cpu_started)
        cpu /= generations
        # The first generation spawns workers and builds environments: leave it out.
        seconds = float(np.mean([r.generation_time for r in result.records[1:]]))
        rows.append({"executor": spec, "seconds": seconds, "center": result.center, "steps": result.steps,
                     "cpu": cpu, "generations": generations})
        log(f"  {spec}: {seconds:.3f} s/generation")
    base = rows[0]
    for row in rows:
        row["speedup"] = base["seconds"] / row["seconds"]
        row["same_center"] = bool(np.array_equal(row["center"], base["center"]))
    return rows


def ceiling(problem_spec: str = "rollout:steps=2000", strategy_spec: str = "openai-es:popsize=64",
            generations: int = 10, copies: int = 2, seed: int = 0) -> dict:
    """Seconds per generation of a serial run alone and of ``copies`` serial runs at once (fresh processes).

    ``speedup`` = copies x alone / together: the parallel throughput this machine gives CPU-bound work.
    """
    command = [sys.executable, __file__, "--serial-seconds", "--problem", problem_spec, "--strategy", strategy_spec,
               "--generations", str(generations), "--seed", str(seed)]

    def run(count: int) -> list[float]:
        children = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for _ in range(count)]
        outputs = [child.communicate()[0] for child in children]
        if any(child.returncode for child in children):
            raise RuntimeError(f"a serial run failed: {outputs}")
        return [json.loads(out.strip().splitlines()[-1])["seconds"] for out in outputs]

    alone = run(1)[0]
    together = run(copies)
    mean_together = float(np.mean(together))
    return {"copies": copies, "alone": alone, "together": mean_together, "speedup": copies * alone / mean_together}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default="rollout:steps=2000")
    parser.add_argument("--strategy", default="openai-es:popsize=64")
    parser.add_argument("--generations", type=int, default=10)
    parser.add_argument("--executors", nargs="+", default=["serial", "loky:workers=2"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ceiling", action="store_true",
                        help="also time independent serial runs side by side: the best speed-up this machine allows")
    parser.add_argument("--copies", type=int, default=2, help="serial runs at once for --ceiling (the worker count)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="rounds of every measurement, interleaved; each figure is its best round (on a "
                             "machine shared with other jobs, the rounds least disturbed by them)")
    parser.add_argument("--serial-seconds", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serial_seconds:  # a child of ceiling(): one serial run, its seconds per generation as JSON
        row = measure(args.problem, args.strategy, args.generations, ["serial"], args.seed, log=lambda *a: None)[0]
        print(json.dumps({"seconds": row["seconds"]}))
        return
    rounds, tops = [], []
    for _ in range(max(1, args.repeats)):
        rounds.append(measure(args.problem, args.strategy, args.generations, args.executors, args.seed))
        if args.ceiling:
            tops.append(ceiling(args.problem, args.strategy, args.generations, args.copies, args.seed))
    rows = [min((r[i] for r in rounds), key=lambda row: row["seconds"]) for i in range(len(args.executors))]
    for row in rows:
        row["speedup"] = rows[0]["seconds"] / row["seconds"]
    print(f"\n{args.strategy} on {args.problem}, {args.generations} generations, seed {args.seed}"
          + (f", best of {len(rounds)} interleaved rounds" if len(rounds) > 1 else ""))
    width = max(24, *(len(r["executor"]) for r in rows))
    header = (f"{'executor':<{width}} {'s/gen':>8} {'steps/s':>12} {'speed-up':>9} {'eval CPU s/gen':>15} "
              f"{'same center':>12}")
    print(header)
    print("-" * len(header))
    for row in rows:
        steps_per_s = row["steps"] / args.generations / row["seconds"]
        print(f"{row['executor']:<{width}} {row['seconds']:>8.3f} {steps_per_s:>12,.0f} {row['speedup']:>8.2f}x "
              f"{row['cpu']:>15.3f} {'yes' if row['same_center'] else 'NO':>12}")
    if args.ceiling:
        alone, together = min(t["alone"] for t in tops), min(t["together"] for t in tops)
        best = args.copies * alone / together
        print(f"\nMachine ceiling: one serial run alone {alone:.3f} s/gen, {args.copies} at once "
              f"{together:.3f} s/gen each: at most {best:.2f}x from {args.copies} workers here")
        for row in rows[1:]:
            print(f"{row['executor']}: {row['speedup']:.2f}x = {row['speedup'] / best:.0%} of the ceiling")


if __name__ == "__main__":
    main()
