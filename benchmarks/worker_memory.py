"""Resident memory of loky workers: the noise table is held once per machine, not once per worker.

    python benchmarks/worker_memory.py [--dim 1000000] [--popsize 256] [--workers 2] [--generations 3]

Trains ``openai-es`` on a problem that reports its process id, then reads ``/proc/PID/smaps``
of the driver and each worker (Linux). RSS counts every page a process touches, shared or not;
PSS divides each shared page among the processes that map it. If the noise table (a
memory-mapped cache file) is shared, its PSS per process is about its RSS divided by the number
of processes mapping those pages, and the PSS summed over processes stays near one table.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

import blackbox as bb
from blackbox.executors.loky import LokyExecutor


class ReportsPid(bb.Problem):
    """Fitness ``sum(x)`` (a mirrored pair scores differently, so the update reads the table);
    info ``pid`` says which process evaluated each row."""

    def __init__(self, dim: int):
        self.dim = dim

    def evaluate(self, params, seeds):
        m = len(params)
        return bb.EvalResult(params.sum(axis=1), np.zeros(m, dtype=np.int64),
                             {"pid": np.full(m, os.getpid())})


def memory(pid: int, table_path: str) -> dict[str, float]:
    """RSS and PSS of a process, in total and for the noise-table mapping, in MiB."""
    totals = {"rss": 0, "pss": 0, "table_rss": 0, "table_pss": 0}
    in_table = False
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split()
        if not line[0].isupper() or ":" not in fields[0]:  # a mapping's header line
            in_table = line.rstrip().endswith(table_path)
            continue
        key = {"Rss:": "rss", "Pss:": "pss"}.get(fields[0])
        if key:
            totals[key] += int(fields[1])
            if in_table:
                totals["table_" + key] += int(fields[1])
    return {k: v / 1024 for k, v in totals.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=1_000_000)
    parser.add_argument("--popsize", type=int, default=256)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--generations", type=int, default=3)
    args = parser.parse_args()
    es = bb.make_strategy("openai-es", dim=args.dim, popsize=args.popsize, seed=0)
    table = es.table
    if not table.mapped:
        raise SystemExit(f"{table} is not memory-mapped; use a larger --dim (tables >= 2^22 are cached)")
    from blackbox.core.noise import _FORMAT_VERSION, cache_dir

    path = str(cache_dir() / f"noise-v{_FORMAT_VERSION}-seed{table.seed}-size{table.size}-float32.npy")
    executor = LokyExecutor(workers=args.workers)
    pids: set[int] = set()

    executor.start(ReportsPid(args.dim))
    for generation in range(args.generations):
        population = es.ask()
        result = executor.evaluate(population, bb.evaluation_seeds(0, generation, population.groups))
        pids.update(int(p) for p in result.info["pid"])
        es.tell(result.fitness)
    table_mib = table.size * 4 / 2**20
    print(f"noise table: {table.size:,} float32 = {table_mib:.0f} MiB ({path})")
    print(f"dim {args.dim:,}, popsize {args.popsize}, {args.workers} loky workers, {args.generations} generations")
    header = f"{'process':<14} {'RSS MiB':>9} {'PSS MiB':>9} {'table RSS':>10} {'table PSS':>10}"
    print(header)
    print("-" * len(header))
    rows = [("driver", os.getpid())] + [(f"worker {pid}", pid) for pid in sorted(pids)]
    total_pss = total_table_pss = 0.0
    for name, pid in rows:
        m = memory(pid, path)
        total_pss += m["pss"]
        total_table_pss += m["table_pss"]
        print(f"{name:<14} {m['rss']:>9.1f} {m['pss']:>9.1f} {m['table_rss']:>10.1f} {m['table_pss']:>10.1f}")
    print(f"{'sum':<14} {'':>9} {total_pss:>9.1f} {'':>10} {total_table_pss:>10.1f}")
    print(f"table PSS summed over {len(rows)} processes: {total_table_pss:.0f} MiB "
          f"(one copy: {table_mib:.0f} MiB; one per process would be {len(rows) * table_mib:.0f} MiB)")
    executor.close()


if __name__ == "__main__":
    main()
