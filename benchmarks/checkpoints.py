"""Cost of checkpoints and run logging, beside the cost of the generations they record.

    python benchmarks/checkpoints.py [--dims 1000 100000 1000000] [--generations 200] [--repeats 3]

Table 1, per dimension (openai-es, Adam, popsize 256): size of one checkpoint, time to write it
(temp folder, fsync, rename, pruning) and to load and verify it (size, sha256, no pickle), beside the
time of one ask + tell generation at that dimension (the work a checkpoint every N generations is
spread over).

Table 2, per-generation overhead of what ``blackbox run`` attaches to the driver (CSV and JSONL
records, checkpoints every 10 generations, the progress display) on a cheap problem (sphere, dim
10, popsize 64), as a ratio to the bare driver measured in the same run. The machine's load affects
both sides alike; absolute times are only indicative.
"""

from __future__ import annotations

import argparse
import io
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from rich.console import Console

import blackbox as bb
from blackbox.driver.logs import CSVRecords, JSONLRecords
from blackbox.driver.loop import Run
from blackbox.driver.progress import ProgressDisplay
from blackbox.store.checkpoint import Checkpointer, load_checkpoint, save_checkpoint


def median_time(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def checkpoint_costs(dim: int, repeats: int, folder: Path) -> dict[str, float]:
    problem = bb.make_problem("sphere", dim=dim)
    strategy = bb.make_strategy("openai-es", dim=dim, popsize=256, seed=0)
    run = Run(strategy, problem, bb.make_executor("serial"), 0)
    bb.optimize(strategy, problem, run.executor, generations=3, run=run)
    fitness = np.random.default_rng(0).standard_normal(256)

    def generation():
        strategy.ask()
        strategy.tell(fitness)

    target = folder / f"dim{dim}"
    write = median_time(lambda: save_checkpoint(target, run), repeats)
    path = save_checkpoint(target, run)
    read = median_time(lambda: load_checkpoint(path), repeats)
    size = sum(p.stat().st_size for p in path.iterdir())
    return {"size": size, "write": write, "read": read, "generation": median_time(generation, repeats)}


def logging_overhead(generations: int, repeats: int, folder: Path) -> dict[str, float]:
    problem = bb.make_problem("sphere", dim=10)

    def bare():
        bb.optimize("openai-es", problem, generations=generations, seed=0)

    def logged():
        out = Path(tempfile.mkdtemp(dir=folder))
        console = Console(file=io.StringIO(), force_terminal=True, width=160)
        callbacks = [CSVRecords(out / "records.csv"), JSONLRecords(out / "records.jsonl"),
                     Checkpointer(out / "checkpoints", every=10, keep=3),
                     ProgressDisplay({"generations": generations}, console=console)]
        bb.optimize("openai-es", problem, generations=generations, seed=0, callbacks=callbacks)

    per_bare = median_time(bare, repeats) / generations
    per_logged = median_time(logged, repeats) / generations
    return {"bare": per_bare, "logged": per_logged}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[1000, 100_000, 1_000_000])
    parser.add_argument("--generations", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        print("Table 1: one checkpoint of openai-es (popsize 256) beside one ask + tell generation")
        print(f"{'dim':>10} {'size MB':>9} {'write ms':>9} {'load ms':>9} {'gen ms':>9} {'write/gen':>10}")
        for dim in args.dims:
            c = checkpoint_costs(dim, args.repeats, folder)
            print(f"{dim:>10} {c['size'] / 1e6:>9.2f} {c['write'] * 1e3:>9.1f} {c['read'] * 1e3:>9.1f} "
                  f"{c['generation'] * 1e3:>9.2f} {c['write'] / c['generation']:>10.1f}")
        o = logging_overhead(args.generations, args.repeats, folder)
        print(f"\nTable 2: per generation on sphere dim 10, popsize 64, {args.generations} generations")
        print(f"{'bare driver ms':>15} {'with run logging ms':>20} {'ratio':>6}")
        print(f"{o['bare'] * 1e3:>15.3f} {o['logged'] * 1e3:>20.3f} {o['logged'] / o['bare']:>6.2f}")


if __name__ == "__main__":
    main()
