"""A user's own dense loop (``es.ask()``, ``population.params``, ``es.tell(f)``) beside EvoTorch and evosax.

    python benchmarks/dense_loop.py [--dims 100000 1000000] [--popsize 256] [--generations 5]
                                    [--rounds 1] [--ga-popsize 10000] [--ga-dim 30000] [--skip-ga]
                                    [--contenders NAME ...] [--out FILE]

Each contender runs in a process of its own (``nice -n 19``), one after the other, round after
round, so its peak memory is its own and the ratios come from one run. Per generation: CPU time
(user + system, all threads; the machine is shared, so CPU time is the fair measure), its system
part (page faults), and wall time, medians over the generations after a warm-up one; memory: the
largest private (anonymous) memory the loop reached above what the process held before its first
generation, sampled every 10 ms, and the process's peak resident set (which also counts the pages
of a noise table it read).

The fitness is a cheap function of the rows (the first column): the cost measured is the library's.

- blackbox ``cem`` float64: ``population.params`` (float64 rows built from the noise table);
- blackbox ``cem`` float32: ``dtype="float32"``, ``population.params`` (float32 rows, one buffer);
- blackbox ``openai-es`` float64: ``population.params``;
- EvoTorch ``CEM`` (float32 torch tensors; a vectorized problem returning the first column);
- evosax ``Open_ES`` (jit-compiled ask and tell; compile time excluded).

A second table: ``ga`` against ``openai-es`` at popsize 1e4, dim 3e4, ask + tell (the rows stay
compact, as an executor evaluates them), CPU per generation.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import numpy as np

CONTENDERS = ("blackbox cem float64", "blackbox cem float32", "blackbox openai-es float64", "EvoTorch CEM",
              "evosax Open_ES")
#: Where a CUDA device is (``--contenders`` names them): the rows of blackbox's float32 loop copied to the GPU
#: and the fitness computed there, against EvoTorch's CEM sampling on the GPU.
CUDA_CONTENDERS = ("blackbox cem float32 cuda", "EvoTorch CEM cuda")
GA_CONTENDERS = ("blackbox openai-es ask+tell", "blackbox ga ask+tell")


def _private() -> int:
    from blackbox.executors.bounds import private_memory

    return private_memory() or 0


def _peak_rss() -> int:
    """``VmHWM``: this process's peak resident set (``ru_maxrss`` would carry the parent's over fork and exec)."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _generation(name: str, dim: int, popsize: int) -> Callable[[], object]:
    if name == "blackbox cem float32 cuda":
        import torch

        import blackbox as bb

        es = bb.make_strategy("cem", dim=dim, popsize=popsize, seed=0, dtype="float32", sigma=0.02)
        held: dict[str, object] = {}

        def to_gpu() -> None:
            population = es.ask()
            x = torch.from_numpy(population.params).to("cuda")  # the user's rows, on the GPU
            held["x"] = x
            es.tell(-x[:, 0].double().cpu().numpy())  # the read-back synchronizes

        return to_gpu
    if name == "EvoTorch CEM cuda":
        import torch
        from evotorch import Problem
        from evotorch.algorithms import CEM

        problem = Problem("max", lambda x: x[:, 0].clone(), solution_length=dim, initial_bounds=(-1.0, 1.0),
                          vectorized=True, seed=0, device="cuda")
        searcher = CEM(problem, popsize=popsize, parenthood_ratio=0.2, stdev_init=0.02)

        def step() -> None:
            searcher.step()
            torch.cuda.synchronize()

        return step
    if name.startswith("blackbox"):
        import blackbox as bb

        kind = name.split()[1]
        if name.endswith("ask+tell"):
            es = bb.make_strategy(kind, dim=dim, popsize=popsize, seed=0)
            fitness = np.random.default_rng(0).standard_normal(es.popsize)

            def compact() -> None:
                es.ask()
                es.tell(fitness)

            return compact
        options = {"sigma": 0.02} if kind == "cem" else {}
        es = bb.make_strategy(kind, dim=dim, popsize=popsize, seed=0, dtype=name.split()[-1], **options)
        kept: dict[str, np.ndarray] = {}

        def dense() -> None:
            population = es.ask()
            x = population.params
            kept["x"] = x  # the user holds this generation's rows until the next ones come
            es.tell(-x[:, 0].astype(np.float64))

        return dense
    if name == "EvoTorch CEM":
        import torch
        from evotorch import Problem
        from evotorch.algorithms import CEM

        def first_column(x):
            return x[:, 0].clone()

        problem = Problem("max", first_column, solution_length=dim, initial_bounds=(-1.0, 1.0), vectorized=True,
                          seed=0)
        searcher = CEM(problem, popsize=popsize, parenthood_ratio=0.2, stdev_init=0.02)
        torch.manual_seed(0)
        return searcher.step
    if name == "evosax Open_ES":
        import jax
        import jax.numpy as jnp
        from evosax.algorithms import Open_ES

        solution = jnp.zeros(dim)
        algo = Open_ES(population_size=popsize, solution=solution)
        params = algo.default_params
        holder = {"key": jax.random.key(0)}
        holder["state"] = algo.init(holder["key"], solution, params)
        ask, tell = jax.jit(algo.ask), jax.jit(algo.tell)

        def generation() -> None:
            holder["key"], k_ask, k_tell = jax.random.split(holder["key"], 3)
            population, state = ask(k_ask, holder["state"], params)
            state, _ = tell(k_tell, population, -population[:, 0], state, params)
            holder["state"] = jax.block_until_ready(state)

        for _ in range(3):  # jit compiles until the state's types settle: not timed
            generation()
        return generation
    raise SystemExit(f"unknown contender {name!r}")


def child(name: str, dim: int, popsize: int, generations: int) -> dict:
    generation = _generation(name, dim, popsize)
    base = _private()
    peak = [base]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.01):
            peak[0] = max(peak[0], _private())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    cpu, system, wall = [], [], []
    for _ in range(generations + 1):  # the first is a warm-up
        usage, start_cpu, start = resource.getrusage(resource.RUSAGE_SELF), time.process_time(), time.perf_counter()
        generation()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        system.append(resource.getrusage(resource.RUSAGE_SELF).ru_stime - usage.ru_stime)
    done.set()
    sampler.join()
    peak[0] = max(peak[0], _private())
    measured = {"cpu": statistics.median(cpu[1:]), "sys": statistics.median(system[1:]),
                "wall": statistics.median(wall[1:]), "loop_private": peak[0] - base, "peak_rss": _peak_rss()}
    if name.endswith("cuda"):
        import torch

        measured["gpu_peak"] = torch.cuda.max_memory_allocated()
    return measured


def run_child(name: str, dim: int, popsize: int, generations: int, timeout: float) -> dict | None:
    command = ["nice", "-n", "19", sys.executable, __file__, "--child", name, "--dim", str(dim),
               "--popsize", str(popsize), "--generations", str(generations)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"  {name} at dim {dim}: timed out after {timeout:.0f} s", flush=True)
        return None
    if done.returncode:
        print(f"  {name} at dim {dim}: failed: {done.stderr.strip().splitlines()[-1:]}", flush=True)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(title: str, dims: list[int], names: tuple[str, ...], results: dict, reference: str, popsize: dict) -> str:
    gpu = any(name.endswith("cuda") for name in names)
    lines = [f"### {title}", "",
             "| dim | popsize | contender | CPU s/gen | of which sys | wall s/gen | CPU / " + reference
             + (" | wall / " + reference if gpu else "")
             + " | loop private MB | peak RSS MB |" + (" GPU peak MB |" if gpu else ""),
             "|---|---|---|---|---|---|---|---|---|" + ("---|---|" if gpu else "")]
    for dim in dims:
        ref = results.get((reference, dim))
        for name in names:
            r = results.get((name, dim))
            if r is None:
                lines.append(f"| {dim:.0e} | {popsize[dim]} | {name} | failed | | | | | |")
                continue
            ratio = f"{r['cpu'] / ref['cpu']:.2f}x" if ref else "-"
            wall_ratio = (f"{r['wall'] / ref['wall']:.2f}x | " if ref else "- | ") if gpu else ""
            lines.append(f"| {dim:.0e} | {popsize[dim]} | {name} | {r['cpu']:.3f} | {r['sys']:.3f} | {r['wall']:.3f} | "
                         f"{ratio} | {wall_ratio}{r['loop_private'] / 1e6:.0f} | {r['peak_rss'] / 1e6:.0f} |"
                         + (f" {r.get('gpu_peak', 0) / 1e6:.0f} |" if gpu else ""))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--popsize", type=int, default=256)
    parser.add_argument("--generations", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--ga-popsize", type=int, default=10_000)
    parser.add_argument("--ga-dim", type=int, default=30_000)
    parser.add_argument("--skip-ga", action="store_true")
    parser.add_argument("--contenders", nargs="+", default=list(CONTENDERS), choices=CONTENDERS + CUDA_CONTENDERS,
                        help="which of the dense-loop contenders to run (default: all on the CPU)")
    parser.add_argument("--reference", default="EvoTorch CEM", choices=CONTENDERS + CUDA_CONTENDERS,
                        help="the contender the ratios are taken against")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--out", default=None)
    parser.add_argument("--child", default=None)
    parser.add_argument("--dim", type=int, default=0)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.dim, args.popsize, args.generations)))
        return
    sys.path.insert(0, os.path.dirname(__file__))
    from _common import machine, version

    header = [f"machine: {machine()}", f"numpy {version('numpy')}, torch {version('torch')}, evotorch "
              f"{version('evotorch')}, jax {version('jax')}, evosax {version('evosax')}",
              f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}"]
    if any(name.endswith("cuda") for name in args.contenders):
        import torch

        header.append(f"GPU: {torch.cuda.get_device_name(0)}, CUDA {torch.version.cuda}")
    print("\n".join(header), flush=True)
    results: dict = {}
    for round_ in range(args.rounds):  # interleaved: every contender once per round; the best round is kept
        for dim in args.dims:
            for name in args.contenders:
                r = run_child(name, dim, args.popsize, args.generations, args.timeout)
                print(f"  round {round_ + 1} dim {dim} {name}: {r}", flush=True)
                if r and ((name, dim) not in results or r["cpu"] < results[(name, dim)]["cpu"]):
                    results[(name, dim)] = r
        if not args.skip_ga:
            for name in GA_CONTENDERS:
                r = run_child(name, args.ga_dim, args.ga_popsize, args.generations, args.timeout)
                print(f"  round {round_ + 1} ga case {name}: {r}", flush=True)
                if r and ((name, args.ga_dim) not in results or r["cpu"] < results[(name, args.ga_dim)]["cpu"]):
                    results[(name, args.ga_dim)] = r
    out = header + [f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", "",
                        table("User's dense loop: ask + rows + tell", args.dims, tuple(args.contenders), results, args.reference,
                              {d: args.popsize for d in args.dims})]
    if not args.skip_ga:
        out += ["", table("ga against openai-es: ask + tell", [args.ga_dim], GA_CONTENDERS, results,
                          "blackbox openai-es ask+tell", {args.ga_dim: args.ga_popsize})]
    text = "\n".join(out)
    print(text)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text + "\n")


if __name__ == "__main__":
    main()
