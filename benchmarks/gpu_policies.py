"""Batched torch policies on a GPU (issue 23): Humanoid-v5 generations with the policy's forward on
``device=cuda`` beside the same run on the CPU (numpy, and torch on the CPU).

    python benchmarks/gpu_policies.py [--env Humanoid-v5] [--hidden 256 256] [--popsizes 64 256]
                                      [--generations 3] [--max-episode-steps 200] [--markdown OUT.md]

One process, one after the other, the same strategy (OpenAI-ES, seed 0), the same rows and seeds:
each generation is ``es.ask()`` -> ``evaluate_rows`` (the serial executor's routine: every member's
episode stepped in lockstep, the policy's forward batched over the live members) -> ``es.tell``.
The first generation (torch's and CUDA's start-up) is timed apart. Reported: environment steps per
second of wall time and of process CPU time, and the largest gap between the first generation's
returns on the CPU and on the GPU (a GPU's float arithmetic differs in the last bits, so returns are
reproducible on that GPU but not equal to the CPU's; see ``blackbox.problems.devices``).
Without a CUDA device the CUDA row is left out with a note.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import machine, report, version  # noqa: E402


def measure(spec: str, popsize: int, generations: int) -> dict[str, object]:
    import blackbox as bb
    from blackbox.core.executor import evaluate_rows

    problem = bb.make_problem(spec)
    es = bb.make_strategy("openai-es", dim=problem.dim, popsize=popsize, sigma=0.02, lr=0.01, seed=0,
                          x0=problem.initial_params(np.random.default_rng(0)))
    wall = cpu = 0.0
    steps, first, first_fitness = 0, 0.0, None
    for generation in range(generations + 1):
        w, c = time.perf_counter(), time.process_time()
        population = es.ask()
        result = evaluate_rows(problem, population, np.arange(len(population)) + generation * len(population))
        es.tell(result.fitness)
        w, c = time.perf_counter() - w, time.process_time() - c
        if generation == 0:
            first, first_fitness = w, np.asarray(result.fitness, dtype=np.float64)
        else:
            wall, cpu, steps = wall + w, cpu + c, steps + int(result.steps.sum())
    close = getattr(problem, "close", None)
    if close is not None:
        close()
    return {"first": first, "wall": wall / generations, "steps_per_wall_s": steps / wall,
            "steps_per_cpu_s": steps / cpu, "fitness": first_fitness, "dim": problem.dim}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="Humanoid-v5")
    parser.add_argument("--hidden", type=int, nargs="+", default=[256, 256])
    parser.add_argument("--popsizes", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--generations", type=int, default=3)
    parser.add_argument("--max-episode-steps", type=int, default=200)
    parser.add_argument("--markdown", default=None)
    args = parser.parse_args(argv)
    import torch

    cuda = torch.cuda.is_available()
    hidden = ",".join(str(h) for h in args.hidden)
    base = f"gym:{args.env},hidden=[{hidden}],activation=tanh,max_episode_steps={args.max_episode_steps}"
    contenders = [("numpy (CPU)", base), ("torch, device=cpu", base + ",device=cpu")]
    if cuda:
        contenders.append(("torch, device=cuda", base + ",device=cuda"))
    lines = [f"Machine: {machine()}; GPU: {torch.cuda.get_device_name(0) if cuda else 'none'}; "
             f"torch {version('torch')}, gymnasium {version('gymnasium')}, mujoco {version('mujoco')}; "
             f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}.", "",
             f"| {args.env}, MLP {hidden} tanh, episodes of at most {args.max_episode_steps} steps | popsize "
             "| first generation, wall s | generation, wall s | steps/s (wall) | steps/s (CPU) | vs numpy (wall) "
             "| returns vs numpy, largest gap |", "|---|---|---|---|---|---|---|---|"]
    for popsize in args.popsizes:
        measured = {}
        for label, spec in contenders:
            measured[label] = m = measure(spec, popsize, args.generations)
            print(f"{label} popsize {popsize}: {m['steps_per_wall_s']:,.0f} steps/s", flush=True)
        ref = measured["numpy (CPU)"]
        for label, m in measured.items():
            gap = float(np.max(np.abs(m["fitness"] - ref["fitness"])))
            lines.append(f"| {label} | {popsize} | {m['first']:.2f} | {m['wall']:.3f} | {m['steps_per_wall_s']:,.0f} | "
                         f"{m['steps_per_cpu_s']:,.0f} | {m['steps_per_wall_s'] / ref['steps_per_wall_s']:.2f}x | "
                         f"{gap:.3g} |")
    if not cuda:
        lines += ["", "No CUDA device here: the device=cuda row is left out."]
    report(lines, args.markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
