"""What the plugin machinery costs: discovery, the conformance kit, and the pycma wrapper.

    python benchmarks/plugins.py            # prints three tables (about a minute)

1. Entry-point discovery on first use, in fresh processes: blackbox's registry (each installed
   distribution read once for all three groups) against ``importlib.metadata.entry_points`` called
   once per group, and the cost of ``import blackbox`` itself (which reads no entry points).
2. Wall time of the whole conformance kit per built-in subject.
3. blackbox-cma (if installed) against raw pycma fed the same normal draws: time per generation
   (ask + tell), and the state_dict / load_state_dict round trip with its size.
Figures are medians of repeats; compare ratios within one run (the machine may be loaded).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
import warnings

import numpy as np


def _median_seconds(code: str, repeats: int = 7) -> float:
    times = []
    for _ in range(repeats):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        times.append(float(done.stdout.strip()))
    return statistics.median(times)


def discovery_table() -> None:
    setup = "import time, importlib.metadata as m; "
    rows = [
        ("import blackbox (reads no entry points)",
         setup + "t = time.perf_counter(); import blackbox; print(time.perf_counter() - t)"),
        ("blackbox registry, all 3 groups",
         setup + "import blackbox.registry.plugins as r; t = time.perf_counter(); "
         "[r.registry_for(k).names() for k in ('strategy', 'problem', 'executor')]; print(time.perf_counter() - t)"),
        ("importlib entry_points, once per group",
         setup + "t = time.perf_counter(); [m.entry_points(group=g) for g in "
         "('blackbox.strategies', 'blackbox.problems', 'blackbox.executors')]; print(time.perf_counter() - t)"),
    ]
    print("\n1. entry-point discovery, fresh process (median of 7)")
    print(f"{'what':42s} {'ms':>8s}")
    for label, code in rows:
        print(f"{label:42s} {_median_seconds(code) * 1e3:8.1f}")


def kit_table() -> None:
    from blackbox.testing import Subject, run_checks

    print("\n2. conformance kit, all checks of one subject")
    print(f"{'subject':30s} {'checks':>6s} {'seconds':>8s}")
    for target in ("openai-es", "nes", "ga", "quadratic", "rastrigin", "serial"):
        started = time.perf_counter()
        report = run_checks(Subject(target))
        print(f"{target:30s} {len(report.results):6d} {time.perf_counter() - started:8.2f}")


def cma_table() -> None:
    try:
        import cma

        import blackbox as bb
        from blackbox.testing import through_files
    except ImportError:
        print("\n3. blackbox-cma is not installed; skipped")
        return
    print("\n3. blackbox-cma vs raw pycma, same draws (median ms per generation over 30)")
    print(f"{'dim':>5s} {'popsize':>7s} {'pycma':>8s} {'plugin':>8s} {'ratio':>6s} "
          f"{'state ms':>9s} {'load ms':>8s} {'state KB':>9s}")
    for dim in (10, 50, 200):
        fitness = lambda x: -np.sum((x - 0.5) ** 2, axis=1)  # noqa: E731
        ours = bb.make_strategy("cma", dim=dim, seed=1, sigma=0.3)
        rng = np.random.default_rng(1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            raw = cma.CMAEvolutionStrategy(np.zeros(dim), 0.3, {"randn": lambda *s, rng=rng: rng.standard_normal(s),
                                                                 "seed": np.nan, "verbose": -9})
        t_raw, t_ours = [], []
        for _ in range(30):
            started = time.perf_counter()
            x = raw.ask()
            raw.tell(x, (-fitness(np.array(x))).tolist())
            t_raw.append(time.perf_counter() - started)
            started = time.perf_counter()
            population = ours.ask()
            ours.tell(fitness(population.params))
            t_ours.append(time.perf_counter() - started)
        started = time.perf_counter()
        state = ours.state_dict()
        t_state = time.perf_counter() - started
        size = len(state["pycma"]) + sum(a.nbytes for a in state["pycma_arrays"].values())
        state = through_files(state)
        fresh = bb.make_strategy("cma", dim=dim, seed=2, sigma=0.3)
        started = time.perf_counter()
        fresh.load_state_dict(state)
        t_load = time.perf_counter() - started
        a, b = statistics.median(t_raw) * 1e3, statistics.median(t_ours) * 1e3
        print(f"{dim:5d} {ours.popsize:7d} {a:8.2f} {b:8.2f} {b / a:6.2f} {t_state * 1e3:9.2f} "
              f"{t_load * 1e3:8.2f} {size / 1024:9.1f}")


if __name__ == "__main__":
    discovery_table()
    kit_table()
    cma_table()
