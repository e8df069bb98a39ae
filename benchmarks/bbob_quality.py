"""Quality at equal budget on the BBOB functions: our strategies against pycma and evosax.

    python benchmarks/bbob_quality.py [--dims 10 40] [--functions 1 2 ... 24] [--seeds 5]
        [--budget-per-dim 1000] [--only blackbox pycma evosax] [--json OUT.json] [--markdown OUT.md]

The 24 noiseless BBOB functions of COCO (``coco-experiment``, through the ``bbob`` problem of
``plugins/blackbox-bbob``), seed ``s`` on instance ``s + 1``, every contender starting from the same
point (drawn as COCO proposes restarts) with the same budget of ``budget-per-dim x dim``
evaluations. Each library runs its own ask/tell loop on the same evaluation function; a
generation that would pass the budget is evaluated but only its first rows count. The score is
the best loss ``f - f_opt`` found within the budget (COCO's convention), median over seeds. A
library that stops on its own (pycma's termination criteria) keeps its best.

Settings: adaptive strategies (cma-es, sep-cma-es, xnes, snes and their pycma/evosax counterparts)
start with sigma 2 (COCO's advice for the [-5, 5] box) and default population sizes
(4 + floor(3 ln d)). Fixed-sigma strategies get settings for this box, identical across libraries
where the algorithm is the same (openai-es and evosax's Open_ES: population 4 + 3 ln d rounded up
to even, sigma 0.5 decaying by 0.995 per generation to 0.01, Adam with lr 0.05, no weight decay;
pgpe and evosax's PGPE: sigma 1, ClipUp lr 0.1, max speed 0.2). evosax runs in float32 (JAX's
default), jit-compiled; its compile time is not counted (no time is: this is about quality).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import blackbox as bb  # noqa: E402

SIGMA0 = 2.0


def _plugin():
    """blackbox-bbob's module (imported from the plugin folder when not installed)."""
    try:
        import blackbox_bbob
    except ImportError:
        sys.path.insert(0, str(HERE.parent / "plugins" / "blackbox-bbob"))
        import blackbox_bbob
    return blackbox_bbob


def bbob_problem(function: int, dim: int, instance: int):
    """The ``bbob`` problem of blackbox-bbob."""
    return _plugin().BBOB(function=function, dim=dim, instance=instance)


def function_name(function: int) -> str:
    """COCO's name of f``function`` (1-based)."""
    return _plugin().FUNCTIONS[function - 1]


def default_popsize(dim: int) -> int:
    return 4 + int(math.floor(3 * math.log(dim)))


def even_popsize(dim: int) -> int:
    p = default_popsize(dim)
    return p + (p % 2)


def ours_settings(name: str, dim: int) -> dict[str, Any]:
    """The options our strategy ``name`` gets on the [-5, 5] box (see the module docstring)."""
    es_like = {"popsize": even_popsize(dim), "sigma": 0.5, "sigma_decay": 0.995, "sigma_min": 0.01, "lr": 0.05}
    return {
        "openai-es": {**es_like, "weight_decay": 0.0},
        "nes": {**es_like, "optimizer": "adam"},
        "pgpe": {"popsize": even_popsize(dim), "sigma": 1.0, "lr": 0.1, "max_speed": 0.2},
        "snes": {"sigma": SIGMA0},
        "xnes": {"sigma": SIGMA0},
        "cma-es": {"sigma": SIGMA0},
        "sep-cma-es": {"sigma": SIGMA0},
        "cem": {"popsize": 4 * default_popsize(dim), "sigma": SIGMA0},
        "ga": {"popsize": 4 * default_popsize(dim), "sigma": 0.5, "sigma_decay": 0.995, "sigma_min": 0.01,
               "truncation": 0.2},
        "ars": {"popsize": even_popsize(dim), "sigma": 0.5, "sigma_decay": 0.995, "sigma_min": 0.01, "lr": 0.05},
    }[name]


OURS = ("openai-es", "nes", "pgpe", "snes", "xnes", "cma-es", "sep-cma-es", "cem", "ga", "ars")
EVOSAX = ("Open_ES", "SNES", "xNES", "CMA_ES", "Sep_CMA_ES", "PGPE")


class Budget:
    """Counts evaluations and keeps the best loss among the first ``limit`` of them."""

    def __init__(self, problem, limit: int):
        self.problem, self.limit = problem, int(limit)
        self.used = 0
        self.best = math.inf
        self.f_opt = problem.f_opt

    @property
    def left(self) -> bool:
        return self.used < self.limit

    def losses(self, x: np.ndarray) -> np.ndarray:
        """Loss ``f - f_opt`` of every row (all rows are evaluated; rows past the budget do not count)."""
        x = np.asarray(x, dtype=np.float64)
        loss = np.asarray(self.problem.coco(np.array(x, order="C", copy=True)), dtype=np.float64).reshape(len(x))
        loss = loss - self.f_opt
        counted = loss[: max(0, self.limit - self.used)]
        if len(counted):
            self.best = min(self.best, float(np.nanmin(counted)) if not np.all(np.isnan(counted)) else math.inf)
        self.used += len(x)
        return loss


def run_ours(name: str, problem, x0: np.ndarray, seed: int, budget: Budget) -> None:
    strategy = bb.make_strategy(name, dim=problem.dim, x0=x0, seed=seed, **ours_settings(name, problem.dim))
    while budget.left:
        population = strategy.ask()
        loss = budget.losses(population.params)
        strategy.tell(-loss)
        if strategy.stop_reason():
            break


def run_pycma(problem, x0: np.ndarray, seed: int, budget: Budget) -> None:
    import cma

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        es = cma.CMAEvolutionStrategy(x0, SIGMA0, {"seed": seed + 1, "verbose": -9, "maxfevals": budget.limit})
        while budget.left and not es.stop():
            solutions = es.ask()
            loss = budget.losses(np.array(solutions))
            es.tell(solutions, loss.tolist())


class EvosaxRunner:
    """One jit-compiled ask and tell per (algorithm, dim), reused across functions and seeds."""

    def __init__(self):
        self._compiled: dict[tuple[str, int], tuple] = {}
        self.compile_seconds: dict[str, float] = {}

    def _algorithm(self, kind: str, dim: int):
        import jax
        import jax.numpy as jnp
        import optax
        from evosax import algorithms

        solution = jnp.zeros(dim)
        if kind == "Open_ES":
            algo = algorithms.Open_ES(
                population_size=even_popsize(dim), solution=solution, optimizer=optax.adam(0.05),
                std_schedule=optax.exponential_decay(0.5, transition_steps=1, decay_rate=0.995, end_value=0.01))
            params = algo.default_params
        elif kind == "PGPE":
            from evosax.algorithms.distribution_based.pgpe import clipup

            algo = algorithms.PGPE(population_size=even_popsize(dim), solution=solution,
                                   optimizer=clipup(learning_rate=0.1, max_velocity=0.2))
            params = algo.default_params.replace(std_init=1.0)
        else:
            algo = getattr(algorithms, kind)(population_size=default_popsize(dim), solution=solution)
            params = algo.default_params.replace(std_init=SIGMA0)
        return algo, params, jax.jit(algo.ask), jax.jit(algo.tell)

    def compiled(self, kind: str, dim: int):
        key = (kind, dim)
        if key not in self._compiled:
            import jax

            started = time.perf_counter()
            algo, params, ask, tell = self._algorithm(kind, dim)
            # Trace once on a throwaway problem so that compile time stays out of every run.
            state = algo.init(jax.random.key(0), np.zeros(dim, dtype=np.float32), params)
            for _ in range(2):
                population, state = ask(jax.random.key(1), state, params)
                state, _ = tell(jax.random.key(2), population, np.zeros(len(population), dtype=np.float32),
                                state, params)
            jax.block_until_ready(state)
            self.compile_seconds[f"{kind} d={dim}"] = time.perf_counter() - started
            self._compiled[key] = (algo, params, ask, tell)
        return self._compiled[key]

    def run(self, kind: str, problem, x0: np.ndarray, seed: int, budget: Budget) -> None:
        import jax

        algo, params, ask, tell = self.compiled(kind, problem.dim)
        key = jax.random.key(seed)
        key, init_key = jax.random.split(key)
        state = algo.init(init_key, np.asarray(x0, dtype=np.float32), params)
        while budget.left:
            key, k_ask, k_tell = jax.random.split(key, 3)
            population, state = ask(k_ask, state, params)
            loss = budget.losses(np.asarray(population))
            state, _ = tell(k_tell, population, np.asarray(loss, dtype=np.float32), state, params)


@dataclass
class Contender:
    library: str
    name: str
    run: Callable[[Any, np.ndarray, int, Budget], None]
    missing: str | None = None


def contenders(libraries: list[str] | None, ours: tuple[str, ...] = OURS,
               evosax: tuple[str, ...] = EVOSAX) -> tuple[list[Contender], EvosaxRunner | None]:
    found = []
    want = set(libraries or ("blackbox", "pycma", "evosax"))
    if "blackbox" in want:
        for name in ours:
            found.append(Contender("blackbox", name, lambda p, x, s, b, n=name: run_ours(n, p, x, s, b)))
    if "pycma" in want:
        missing = _missing("cma")
        found.append(Contender("pycma", "CMA-ES", run_pycma, missing))
    runner = None
    if "evosax" in want:
        missing = _missing("evosax") or _missing("jax")
        runner = None if missing else EvosaxRunner()
        for kind in evosax:
            found.append(Contender("evosax", kind, (lambda p, x, s, b, k=kind: runner.run(k, p, x, s, b)), missing))
    return found, runner


def _missing(module: str) -> str | None:
    try:
        __import__(module)
    except Exception as exc:  # noqa: BLE001
        return f"{module} does not import ({type(exc).__name__})"
    return None


@dataclass
class Results:
    dims: list[int]
    functions: list[int]
    seeds: int
    budget_per_dim: int
    losses: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # "lib name" -> "d:f" -> per seed
    skipped: dict[str, str] = field(default_factory=dict)
    compile_seconds: dict[str, float] = field(default_factory=dict)

    def median(self, who: str, dim: int, function: int) -> float:
        values = self.losses.get(who, {}).get(f"{dim}:{function}")
        return statistics.median(values) if values else math.nan


def measure(dims: list[int], functions: list[int], seeds: int, budget_per_dim: int,
            libraries: list[str] | None = None, ours: tuple[str, ...] = OURS,
            evosax: tuple[str, ...] = EVOSAX, log=print) -> Results:
    results = Results(dims, functions, seeds, budget_per_dim)
    found, runner = contenders(libraries, ours, evosax)
    for contender in found:
        if contender.missing:
            results.skipped[f"{contender.library} {contender.name}"] = contender.missing
            log(f"  {contender.library} {contender.name}: skipped, {contender.missing}")
    for dim in dims:
        for function in functions:
            started = time.perf_counter()
            for seed in range(seeds):
                problem = bbob_problem(function, dim, seed + 1)
                x0 = problem.initial_params(np.random.default_rng(seed))
                for contender in found:
                    if contender.missing:
                        continue
                    budget = Budget(problem, budget_per_dim * dim)
                    contender.run(problem, x0.copy(), seed, budget)
                    who = f"{contender.library} {contender.name}"
                    results.losses.setdefault(who, {}).setdefault(f"{dim}:{function}", []).append(budget.best)
            log(f"  d={dim} f{function} {function_name(function)}: {time.perf_counter() - started:.1f} s")
    if runner is not None:
        results.compile_seconds = dict(runner.compile_seconds)
    return results


#: Losses below this are "solved" in COCO's sense (its final target) and shown as such.
PRECISION = 1e-8


def _cell(value: float, best: bool) -> str:
    if math.isnan(value):
        return "-"
    text = f"{value:.1e}" if value >= PRECISION else "<1e-8"
    return f"**{text}**" if best else text


def markdown(results: Results) -> str:
    """One table per dimension (median best loss per function), then the comparisons the targets name."""
    who = list(results.losses)
    short = {w: w.replace("blackbox ", "").replace("evosax ", "evosax ").replace("pycma CMA-ES", "pycma") for w in who}
    lines = []
    for dim in results.dims:
        lines += [f"#### Dimension {dim}: median best loss f - f_opt after {results.budget_per_dim * dim:,} "
                  f"evaluations ({results.seeds} seeds; bold: best of the row; <1e-8: COCO's final target reached)", "",
                  "| f | " + " | ".join(short[w] for w in who) + " |", "|---|" + "---|" * len(who)]
        for function in results.functions:
            values = [results.median(w, dim, function) for w in who]
            finite = [v for v in values if not math.isnan(v)]
            low = max(min(finite), PRECISION) if finite else math.nan
            cells = [_cell(v, v <= low) for v in values]
            lines.append(f"| f{function} {function_name(function)} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += comparisons(results)
    if results.skipped:
        lines += ["", "Skipped: " + "; ".join(f"{k} ({v})" for k, v in results.skipped.items()) + "."]
    if results.compile_seconds:
        lines += ["", "evosax jit compile time (not counted): " + ", ".join(
            f"{k} {v:.1f} s" for k, v in results.compile_seconds.items()) + "."]
    return "\n".join(lines)


PAIRS = (("openai-es", "Open_ES"), ("snes", "SNES"), ("xnes", "xNES"), ("cma-es", "CMA_ES"),
         ("sep-cma-es", "Sep_CMA_ES"), ("pgpe", "PGPE"))


def comparisons(results: Results) -> list[str]:
    """Ours against evosax's counterpart and pycma, function by function (medians)."""
    lines = ["#### Head to head", "",
             "Per (function, dimension): worse when the median loss is more than 1.5x the other's (and not both "
             "below 1e-8) and an exact one-sided rank-sum test over the seeds gives p <= 0.05; a median that is "
             "worse but not significantly so is listed as within noise and counted as even.", ""]
    for ours, theirs in PAIRS:
        a, b = f"blackbox {ours}", f"evosax {theirs}"
        if a not in results.losses or b not in results.losses:
            continue
        lines.append(_verdict_line(f"{ours} vs evosax {theirs}", head_to_head(results, a, b)))
    if "pycma CMA-ES" in results.losses:
        ours_all = [w for w in results.losses if w.startswith("blackbox ")]
        if "blackbox cma-es" in results.losses:
            lines.append(_verdict_line("cma-es vs pycma", head_to_head(results, "blackbox cma-es", "pycma CMA-ES")))
        pycma_wins = []
        for dim in results.dims:
            for function in results.functions:
                best_ours = min((results.median(w, dim, function) for w in ours_all), default=math.nan)
                theirs = results.median("pycma CMA-ES", dim, function)
                if _worse(best_ours, theirs):
                    pycma_wins.append(f"f{function} d={dim}")
        lines.append(f"- pycma beats every strategy of ours on {len(pycma_wins)} of "
                     f"{len(results.dims) * len(results.functions)} (function, dimension) pairs"
                     + (": " + ", ".join(pycma_wins) if pycma_wins else "") + ".")
        per_strategy = []
        for who in ours_all:
            if who == "blackbox cma-es":
                continue
            verdict = head_to_head(results, "pycma CMA-ES", who)
            per_strategy.append(f"{who.removeprefix('blackbox ')} on {verdict['better']}")
        if per_strategy:
            lines.append("- Where pycma is better, plainly: it is significantly better than "
                         + ", ".join(per_strategy) + f" of the {len(results.dims) * len(results.functions)} "
                         "pairs (same test; the tables show which).")
    pairs = len(results.dims) * len(results.functions)
    lines.append(f"- Multiple comparisons: each line makes {pairs} tests at p <= 0.05, so about "
                 f"{0.05 * pairs:.1f} \"significant\" differences per line are expected by chance alone.")
    return lines


def _verdict_line(title: str, verdict: dict[str, Any]) -> str:
    line = f"- {title}: better on {verdict['better']}, even on {verdict['even']}, worse on {len(verdict['worse'])}"
    if verdict["worse"]:
        line += ": " + ", ".join(verdict["worse"])
    if verdict["noise"]:
        line += "; worse median within noise on " + ", ".join(verdict["noise"])
    return line + "."


def _worse(ours: float, theirs: float) -> bool:
    """True when ``ours`` is clearly worse: more than 1.5x the loss, and not both below 1e-8."""
    if math.isnan(ours) or math.isnan(theirs):
        return False
    if ours <= 1e-8 and theirs <= 1e-8:
        return False
    return ours > 1.5 * theirs and ours - theirs > 1e-8


def rank_sum_p(worse: list[float], better: list[float]) -> float:
    """Exact one-sided Mann-Whitney p-value that ``worse`` has larger losses than ``better`` by chance.

    All splits of the pooled (average-tied) ranks are enumerated, so it is exact for the few seeds
    used here (5 against 5: 252 splits; the smallest possible p is 1/252).
    """
    from itertools import combinations

    pooled = np.asarray(list(worse) + list(better), dtype=np.float64)
    if len(worse) == 0 or len(better) == 0:
        return 1.0
    order = np.argsort(pooled, kind="stable")
    ranks = np.empty(len(pooled))
    sorted_values = pooled[order]
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and sorted_values[j + 1] == sorted_values[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0
        i = j + 1
    observed = ranks[: len(worse)].sum()
    sums = [ranks[list(c)].sum() for c in combinations(range(len(pooled)), len(worse))]
    return float(np.mean([total >= observed - 1e-9 for total in sums]))


def head_to_head(results: Results, a: str, b: str, alpha: float = 0.05) -> dict[str, Any]:
    """Per (function, dim): ``a`` worse (its median > 1.5x ``b``'s and the rank-sum test gives p <= ``alpha``),
    better (the same the other way), or even; worse-by-median-only goes to ``noise``. With 3 seeds the
    smallest p is 0.05 (complete separation), with 5 seeds 1/252."""
    better, even, worse, noise = 0, 0, [], []
    for dim in results.dims:
        for function in results.functions:
            x, y = results.median(a, dim, function), results.median(b, dim, function)
            xs = results.losses.get(a, {}).get(f"{dim}:{function}", [])
            ys = results.losses.get(b, {}).get(f"{dim}:{function}", [])
            if _worse(x, y):
                p = rank_sum_p(xs, ys)
                text = f"f{function} d={dim} ({x:.1e} vs {y:.1e}, p={p:.3f})"
                (worse if p <= alpha else noise).append(text)
                even += p > alpha
            elif _worse(y, x) and rank_sum_p(ys, xs) <= alpha:
                better += 1
            else:
                even += 1
    return {"better": better, "even": even, "worse": worse, "noise": noise}


def plot(results: Results, path: str) -> None:
    """Per dimension, the median loss of each contender per function (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(results.dims), 1, figsize=(11, 3.6 * len(results.dims)), squeeze=False)
    who = list(results.losses)
    for ax, dim in zip(axes[:, 0], results.dims):
        for k, w in enumerate(who):
            ys = [max(results.median(w, dim, f), 1e-10) for f in results.functions]
            style = "o" if w.startswith("blackbox") else ("s" if w.startswith("pycma") else "^")
            ax.plot(np.arange(len(results.functions)) + (k - len(who) / 2) * 0.03, ys, style, ms=4, label=w,
                    alpha=0.8)
        ax.set_yscale("log")
        ax.set_xticks(range(len(results.functions)))
        ax.set_xticklabels([f"f{f}" for f in results.functions], fontsize=7)
        ax.set_ylabel(f"median loss, d={dim}")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0, 0].legend(fontsize=6, ncol=4)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def to_json(results: Results) -> dict:
    return {"dims": results.dims, "functions": results.functions, "seeds": results.seeds,
            "budget_per_dim": results.budget_per_dim, "losses": results.losses, "skipped": results.skipped,
            "compile_seconds": results.compile_seconds}


def from_json(data: dict) -> Results:
    return Results(data["dims"], data["functions"], data["seeds"], data["budget_per_dim"], data["losses"],
                   data.get("skipped", {}), data.get("compile_seconds", {}))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dims", type=int, nargs="+", default=[10, 40])
    parser.add_argument("--functions", type=int, nargs="+", default=list(range(1, 25)))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budget-per-dim", type=int, default=1000)
    parser.add_argument("--only", nargs="*", choices=["blackbox", "pycma", "evosax"])
    parser.add_argument("--strategies", nargs="*", default=list(OURS), help="our strategies to include")
    parser.add_argument("--evosax", nargs="*", default=list(EVOSAX), help="evosax algorithms to include")
    parser.add_argument("--json", help="write the losses to this JSON file")
    parser.add_argument("--markdown", help="write the tables to this Markdown file")
    parser.add_argument("--plot", help="write a PNG of the medians")
    args = parser.parse_args(argv)
    results = measure(args.dims, args.functions, args.seeds, args.budget_per_dim, args.only,
                      tuple(args.strategies), tuple(args.evosax))
    text = markdown(results)
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps(to_json(results), indent=1))
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")
    if args.plot:
        plot(results, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
