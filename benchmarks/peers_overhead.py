"""Optimizer overhead against the peers: time per generation of ask + tell with a trivial fitness.

    python benchmarks/peers_overhead.py [--dims 1000 10000 100000 1000000] [--popsize 256]
                                        [--budget 60] [--markdown OUT.md] [--plot OUT.png]

Every library runs its own natural loop with a fitness that costs nothing beyond what the library
itself forces: ours ask() and tell() a random fitness without building the dense population (the
compact encoding makes that possible), and, as a user's own loop that reads the parameters would,
with the dense float32 population built whole (``population.dense(np.float32)``) or 32 rows at a
time (``population.blocks(rows=32, dtype=np.float32)``); EvoTorch's ``searcher.step()`` on a vectorized problem whose
fitness is zeros; evosax's jit-compiled ``ask``/``tell`` (compile time reported apart); pycma and
nevergrad through their ask/tell. EvoTorch runs twice, with torch on one thread and with torch's
default threads (the machine's cores); JAX and OpenBLAS keep their defaults (all cores), numpy's own
loops use one. The floor is the time to stream the population's noise
(popsize x dim float32) through memory once, measured in the same run. A configuration whose
previous (smaller) dimension already took more than ``--budget`` seconds per generation, or whose
memory would not fit, is skipped with the reason printed.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from _common import machine, memory_floor, timed, version

import blackbox as bb

MEMORY_LIMIT_BYTES = 12 * 2**30


@dataclass
class Contender:
    """One library's generation as a closure factory, plus what limits it."""

    name: str
    library: str
    make: Callable[[int, int], Callable[[], object]]
    bytes_per_dim: Callable[[int, int], float] = lambda dim, pop: 8.0 * pop * dim
    setup_seconds: dict | None = None


def ours(name: str, **options) -> Callable[[int, int], Callable[[], object]]:
    def make(dim: int, popsize: int):
        strategy = bb.make_strategy(name, dim=dim, popsize=popsize, seed=0, **options)
        fitness = np.random.default_rng(0).standard_normal(popsize)

        def generation():
            strategy.ask()
            strategy.tell(fitness)

        return generation

    return make


def ours_dense(name: str, rows: int | None = None) -> Callable[[int, int], Callable[[], object]]:
    """ask + the dense float32 population (whole, or ``rows`` at a time through one buffer) + tell:
    a user's own loop that reads the parameters."""
    def make(dim: int, popsize: int):
        strategy = bb.make_strategy(name, dim=dim, popsize=popsize, seed=0)
        fitness = np.random.default_rng(0).standard_normal(popsize)

        def generation():
            population = strategy.ask()
            if rows is None:
                population.dense(np.float32)
            else:
                for _ in population.blocks(rows=rows, dtype=np.float32):
                    pass
            strategy.tell(fitness)

        return generation

    return make


#: torch's own thread count, read before any contender changes it.
_TORCH_DEFAULT_THREADS: list[int] = []


def torch_threads(threads: int | None) -> int:
    """Set torch's intra-op threads (None: torch's default on this machine); returns the count set."""
    import torch

    if not _TORCH_DEFAULT_THREADS:
        _TORCH_DEFAULT_THREADS.append(torch.get_num_threads())
    count = _TORCH_DEFAULT_THREADS[0] if threads is None else threads
    torch.set_num_threads(count)
    return count


def evotorch_searcher(kind: str, threads: int | None = None) -> Callable[[int, int], Callable[[], object]]:
    def make(dim: int, popsize: int):
        import torch
        from evotorch import Problem
        from evotorch.algorithms import CEM, PGPE, SNES, GeneticAlgorithm
        from evotorch.operators import GaussianMutation

        torch_threads(threads)

        def zeros(x):
            return torch.zeros(x.shape[0], dtype=x.dtype)

        problem = Problem("max", zeros, solution_length=dim, initial_bounds=(-1.0, 1.0), vectorized=True, seed=0)
        if kind == "PGPE":
            searcher = PGPE(problem, popsize=popsize, center_learning_rate=0.01, stdev_learning_rate=0.1, stdev_init=0.02)
        elif kind == "SNES":
            searcher = SNES(problem, popsize=popsize, stdev_init=0.02)
        elif kind == "CEM":
            searcher = CEM(problem, popsize=popsize, parenthood_ratio=0.1, stdev_init=0.02)
        else:
            searcher = GeneticAlgorithm(problem, popsize=popsize, operators=[GaussianMutation(problem, stdev=0.02)])
        return searcher.step

    return make


def evosax_algorithm(kind: str, compile_times: dict) -> Callable[[int, int], Callable[[], object]]:
    def make(dim: int, popsize: int):
        import jax
        import jax.numpy as jnp
        from evosax.algorithms import Open_ES, SimpleGA

        algo_cls = Open_ES if kind == "Open_ES" else SimpleGA
        solution = jnp.zeros(dim)
        algo = algo_cls(population_size=popsize, solution=solution)
        params = algo.default_params
        key = jax.random.key(0)
        fitness = jnp.asarray(np.random.default_rng(0).standard_normal(popsize), dtype=jnp.float32)
        if kind == "Open_ES":
            state = algo.init(key, solution, params)
        else:
            population = jax.random.normal(key, (popsize, dim)) * 0.02
            state = algo.init(key, population, fitness, params)
        ask = jax.jit(algo.ask)
        tell = jax.jit(algo.tell)
        holder = {"state": state, "key": key}

        def generation():
            holder["key"], k_ask, k_tell = jax.random.split(holder["key"], 3)
            population, st = ask(k_ask, holder["state"], params)
            st, _ = tell(k_tell, population, fitness, st, params)
            holder["state"] = jax.block_until_ready(st)

        # jit traces again when the state's types settle (init -> ask -> tell): warm up until they
        # have, and report that time as compile time.
        started = time.perf_counter()
        for _ in range(3):
            generation()
        compile_times[(kind, dim)] = time.perf_counter() - started
        return generation

    return make


def pycma_generation(dim: int, popsize: int):
    import cma

    es = cma.CMAEvolutionStrategy(np.zeros(dim), 0.02, {"popsize": popsize, "CMA_diagonal": True, "verbose": -9, "seed": 1})
    fitness = list(np.random.default_rng(0).standard_normal(popsize))

    def generation():
        solutions = es.ask()
        es.tell(solutions, fitness)

    return generation


def nevergrad_generation(dim: int, popsize: int):
    import nevergrad as ng

    optimizer = ng.optimizers.DiagonalCMA(parametrization=dim, budget=10**9, num_workers=popsize)
    fitness = np.random.default_rng(0).standard_normal(popsize)

    def generation():
        candidates = [optimizer.ask() for _ in range(popsize)]
        for candidate, value in zip(candidates, fitness):
            optimizer.tell(candidate, float(value))

    return generation


def contenders(compile_times: dict) -> list[Contender]:
    found = [
        Contender("openai-es", "blackbox", ours("openai-es"), lambda d, p: 16.0 * d),
        Contender("nes (mirrored)", "blackbox", ours("nes", mirrored=True), lambda d, p: 16.0 * d),
        Contender("ga", "blackbox", ours("ga"), lambda d, p: 8.0 * 0.2 * p * d),
        Contender("openai-es + dense float32 params", "blackbox", ours_dense("openai-es"),
                  lambda d, p: 4.0 * p * d + 16.0 * d),
        Contender("openai-es + blocks(rows=32) float32", "blackbox", ours_dense("openai-es", rows=32),
                  lambda d, p: 4.0 * 32 * d + 16.0 * d),
    ]
    for extra in ("pgpe", "snes", "cem", "sep-cma-es"):
        if extra in bb.registry.strategies.names():
            found.append(Contender(extra, "blackbox", ours(extra), lambda d, p: 32.0 * d))
    # EvoTorch twice: torch on one thread (like numpy's own loops) and with torch's default threads
    # (all cores): on a busy machine the threads fight for cores, on an idle one they may help.
    for threads, tag in ((1, "1 thread"), (None, "torch default threads")):
        found += [
            Contender(f"PGPE ({tag})", "evotorch", evotorch_searcher("PGPE", threads), lambda d, p: 12.0 * p * d),
            Contender(f"SNES ({tag})", "evotorch", evotorch_searcher("SNES", threads), lambda d, p: 12.0 * p * d),
            Contender(f"CEM ({tag})", "evotorch", evotorch_searcher("CEM", threads), lambda d, p: 12.0 * p * d),
            Contender(f"GeneticAlgorithm ({tag})", "evotorch", evotorch_searcher("GA", threads),
                      lambda d, p: 16.0 * p * d),
        ]
    found += [
        Contender("Open_ES", "evosax", evosax_algorithm("Open_ES", compile_times), lambda d, p: 12.0 * p * d),
        Contender("SimpleGA", "evosax", evosax_algorithm("SimpleGA", compile_times), lambda d, p: 12.0 * p * d),
        Contender("CMA (diagonal)", "pycma", pycma_generation, lambda d, p: 24.0 * p * d),
        # nevergrad keeps every candidate as its own parameter object with copies of its arrays: at
        # dim 1e6 and population 256 it ran this 24 GiB machine out of memory.
        Contender("DiagonalCMA", "nevergrad", nevergrad_generation, lambda d, p: 64.0 * p * d),
    ]
    return found


LIBRARY_MODULES = {"blackbox": "blackbox", "evotorch": "evotorch", "evosax": "evosax", "pycma": "cma",
                   "nevergrad": "nevergrad"}


def measure(dims: list[int], popsize: int = 256, repeats: int = 3, budget: float = 60.0,
            libraries: list[str] | None = None, log=None) -> dict:
    """Seconds per generation of every contender at every dim (or the reason it was skipped)."""
    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    compile_times: dict = {}
    results: dict[tuple[str, str], dict[int, float | str]] = {}
    floors = {dim: memory_floor(dim * popsize) for dim in dims}
    for contender in contenders(compile_times):
        if libraries and contender.library not in libraries:
            continue
        key = (contender.library, contender.name)
        results[key] = {}
        if version(LIBRARY_MODULES[contender.library]) == "not installed":
            for dim in dims:
                results[key][dim] = f"skipped: {contender.library} is not installed"
            log(f"{contender.library:9s} {contender.name:18s} skipped: not installed")
            continue
        slow = False
        for dim in dims:
            if slow:
                results[key][dim] = f"skipped: a smaller dim already took > {budget:g} s/gen"
                continue
            need = contender.bytes_per_dim(dim, popsize)
            if need > MEMORY_LIMIT_BYTES:
                results[key][dim] = f"skipped: needs about {need / 2**30:.0f} GiB"
                continue
            try:
                generation = contender.make(dim, popsize)
                # Untimed generations first: TorchScript (EvoTorch) optimizes a function on its third
                # call (which matters at small dims), tables and caches settle.
                seconds = timed(generation, repeats if dim < 10**6 else max(1, repeats - 1),
                                warmup=3 if dim < 10**5 else 1)
            except Exception as exc:  # noqa: BLE001 - a peer failing is reported, not fatal
                results[key][dim] = f"failed: {type(exc).__name__}: {str(exc)[:80]}"
                continue
            finally:
                gc.collect()
            results[key][dim] = seconds
            log(f"{contender.library:9s} {contender.name:18s} dim {dim:>9,}: {seconds * 1000:10.2f} ms")
            slow = seconds > budget
    return {"dims": dims, "popsize": popsize, "repeats": repeats, "floors": floors,
            "results": results, "compile_times": compile_times}


def markdown(measured: dict) -> str:
    """The table (ms per generation and multiple of the floor), the peers' ratios to our best, versions."""
    dims, floors, results = measured["dims"], measured["floors"], measured["results"]
    lines = [
        f"Time per generation of ask + tell, population {measured['popsize']}, trivial fitness; median of "
        f"{measured['repeats']} after untimed ones (3 below dim 1e5, 1 above; one timed fewer at dim 1e6). "
        f"Machine: {machine()}.",
        "",
        "| library | algorithm | " + " | ".join(f"dim {d:,}" for d in dims) + " |",
        "|---|---|" + "---|" * len(dims),
    ]
    lines.append("| floor | stream popsize x dim float32 | " + " | ".join(f"{floors[d] * 1000:.2f} ms" for d in dims) + " |")
    for (library, name), by_dim in results.items():
        cells = []
        for dim in dims:
            value = by_dim[dim]
            if isinstance(value, float):
                cells.append(f"{value * 1000:.2f} ms ({value / floors[dim]:.1f}x floor)")
            else:
                cells.append(value)
        lines.append(f"| {library} | {name} | " + " | ".join(cells) + " |")
    lines += ["", *ratio_lines(measured)]
    if measured["compile_times"]:
        lines += ["", "evosax jit compile time (first ask + tell, excluded above): " + ", ".join(
            f"{kind} dim {dim:,}: {sec:.2f} s" for (kind, dim), sec in sorted(measured["compile_times"].items()))]
    versions = ", ".join(f"{lib} {version(mod)}" for lib, mod in LIBRARY_MODULES.items())
    lines += ["", f"Versions: {versions}, numpy {np.__version__}."]
    return "\n".join(lines)


def ratio_lines(measured: dict) -> list[str]:
    """Per dim: the fastest peer against our slowest compact strategy; our best against the floor."""
    dims, floors, results = measured["dims"], measured["floors"], measured["results"]
    lines = ["| dim | fastest peer | our slowest (openai-es, nes, ga, pgpe, snes, cem, sep-cma-es, and openai-es "
             "with dense float32 parameters) | "
             "peer / ours | our fastest / floor |", "|---|---|---|---|---|"]
    for dim in dims:
        ours = {name: v[dim] for (lib, name), v in results.items() if lib == "blackbox" and isinstance(v[dim], float)}
        peers = {f"{lib} {name}": v[dim] for (lib, name), v in results.items()
                 if lib != "blackbox" and isinstance(v[dim], float)}
        if not ours:
            continue
        slow_name, slow = max(ours.items(), key=lambda kv: kv[1])
        fast = min(ours.values())
        if peers:
            peer_name, peer = min(peers.items(), key=lambda kv: kv[1])
            lines.append(f"| {dim:,} | {peer_name} {peer * 1000:.2f} ms | {slow_name} {slow * 1000:.2f} ms | "
                         f"**{peer / slow:.1f}x** | {fast / floors[dim]:.2f}x |")
        else:
            lines.append(f"| {dim:,} | (no peer measured) | {slow_name} {slow * 1000:.2f} ms | - | "
                         f"{fast / floors[dim]:.2f}x |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[1000, 10000, 100000, 1000000])
    parser.add_argument("--popsize", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--budget", type=float, default=60.0, help="skip larger dims once a generation took longer")
    parser.add_argument("--only", nargs="*", help="library names to include (default: all)")
    parser.add_argument("--markdown", help="also write the table to this Markdown file")
    parser.add_argument("--plot", help="write a PNG plot of seconds per generation against dim")
    args = parser.parse_args()
    measured = measure(args.dims, args.popsize, args.repeats, args.budget, args.only)
    text = markdown(measured)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as handle:
            handle.write(text + "\n")
    if args.plot:
        plot(measured["results"], measured["floors"], args.dims, args.plot)


def plot(results, floors, dims, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 5))
    markers = {"blackbox": "o", "evotorch": "s", "evosax": "^", "pycma": "D", "nevergrad": "v"}
    for k, ((library, name), by_dim) in enumerate(results.items()):
        xs = [d for d in dims if isinstance(by_dim[d], float)]
        if xs:
            style = "-" if library == "blackbox" else "--"
            ax.plot(xs, [by_dim[d] for d in xs], style, marker=markers.get(library, "o"), ms=4,
                    color=plt.cm.tab20(k % 20), label=f"{library} {name}")
    ax.plot(dims, [floors[d] for d in dims], "k:", lw=2, label="memory floor")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("dimension")
    ax.set_ylabel("seconds per generation (ask + tell)")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
