"""A slow node on a simulated Ray cluster: how close a generation comes to the ideal.

    nice -n 19 python benchmarks/ray_slow_node.py [--nodes 4] [--cpus 1] [--popsize 400] [--delay 0.01]

``ray.cluster_utils.Cluster`` starts a head without CPUs and ``--nodes`` nodes of ``--cpus`` CPUs on
this machine. Each row sleeps ``--delay`` seconds, 5x longer on the processes of one node (a node 5x
slower), so the figure measures scheduling, not the machine's load. The ideal generation is the total
work over the total speed: ``P x delay / (cpus x (nodes - 1 + 1/5))``. Prints the median generation
time (generations 2 to the last), its ratio to the ideal, and the rows moved between nodes.

``--freeze``: instead, every node at the same speed; one node's processes are stopped (SIGSTOP) after
generation 2 and woken after generation 4; prints each generation's time with the executor's default
heartbeat (10 s), the fencing counts, and whether the run equals a serial run bit for bit.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import time

import cloudpickle
import numpy as np

import blackbox as bb

cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _descends_from(pid: int) -> bool:
    current = os.getpid()
    while current > 1:
        if current == pid:
            return True
        try:
            with open(f"/proc/{current}/stat") as stat:
                current = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


class SleepRows(bb.Problem):
    """``-|x|^2`` after sleeping ``delay`` a row, ``factor`` times longer under process ``slow_pid``."""

    def __init__(self, dim: int, delay: float, slow_pid: int, factor: float):
        self.dim, self.delay, self.slow_pid, self.factor = dim, delay, slow_pid, factor
        self._slow: bool | None = None

    def evaluate(self, params, seeds):
        if self._slow is None:
            self._slow = _descends_from(self.slow_pid)
        time.sleep(self.delay * len(params) * (self.factor if self._slow else 1.0))
        return bb.EvalResult(-np.sum(params**2, axis=1), np.ones(len(params), dtype=np.int64))


def signal_all(processes: list, sig: int) -> None:
    for proc in processes:
        try:
            proc.send_signal(sig)
        except Exception:  # noqa: BLE001 - gone already
            pass


def freeze(record, node, frozen: list) -> None:
    """After generation 2, stop every process of ``node`` (its raylet and all under it); wake them after 4."""
    import psutil

    if record.generation == 2:
        for _, process in node.live_processes():
            root = psutil.Process(process.pid)
            frozen.extend([root, *root.children(recursive=True)])
        signal_all(frozen, signal.SIGSTOP)
    elif record.generation == 4:
        signal_all(frozen, signal.SIGCONT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--cpus", type=int, default=1)
    parser.add_argument("--popsize", type=int, default=400)
    parser.add_argument("--delay", type=float, default=0.01)
    parser.add_argument("--factor", type=float, default=5.0)
    parser.add_argument("--generations", type=int, default=6)
    parser.add_argument("--freeze", action="store_true", help="stop one node's processes in generation 3")
    args = parser.parse_args()
    if args.freeze:
        args.factor = 1.0

    import ray
    from blackbox_ray import RayExecutor
    from ray.cluster_utils import Cluster

    os.environ["RAY_TMPDIR"] = tempfile.mkdtemp(prefix="bb-ray-bench-", dir="/tmp")
    store = 80 * 2**20
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "object_store_memory": store,
                                                              "include_dashboard": False})
    nodes = [cluster.add_node(num_cpus=args.cpus, object_store_memory=store) for _ in range(args.nodes)]
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level="ERROR")
    try:
        slow = next(p.pid for kind, p in nodes[0].live_processes() if kind == "raylet")
        problem = SleepRows(8, args.delay, slow, args.factor)
        executor = RayExecutor()
        frozen: list = []
        callbacks = [lambda record: freeze(record, nodes[1], frozen)] if args.freeze else []
        strategy = bb.make_strategy("openai-es", dim=8, popsize=args.popsize, seed=1)
        try:
            result = bb.optimize(strategy, problem, executor, generations=args.generations, seed=2,
                                 callbacks=callbacks)
            deadline = time.monotonic() + 60
            while args.freeze and executor.stats.late_replies < 1 and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            signal_all(frozen, signal.SIGCONT)
        stats = executor.stats
        executor.close()
    finally:
        ray.shutdown()
        cluster.shutdown()
    if args.freeze:
        serial = bb.optimize(bb.make_strategy("openai-es", dim=8, popsize=args.popsize, seed=1),
                             SleepRows(8, 0.0, -1, 1.0), "serial", generations=args.generations, seed=2)
        def plain(records):
            return [{k: v for k, v in r.as_dict().items() if k not in ("time", "generation_time")} for r in records]

        same = np.array_equal(serial.center, result.center) and plain(serial.records) == plain(result.records)
        times = ", ".join(f"{r.generation_time:.2f}" for r in result.records)
        print(f"{args.nodes} nodes x {args.cpus} CPU; {args.popsize + 1} rows of {args.delay * 1e3:g} ms; one node "
              f"stopped after generation 2, woken after generation 4; heartbeat {executor.heartbeat:g} s")
        print(f"generation times (s): {times}")
        print(f"nodes fenced {stats.nodes_fenced}, rounds {stats.rounds} for {stats.generations} generations, late "
              f"replies dropped {stats.late_replies} ({stats.late_rows_dropped} rows); bit-identical to serial: {same}")
        return
    rows = args.popsize + 1
    ideal = rows * args.delay / (args.cpus * (args.nodes - 1 + 1 / args.factor))
    times = [r.generation_time for r in result.records[1:]]
    median = statistics.median(times)
    print(f"{args.nodes} nodes x {args.cpus} CPU, one {args.factor:g}x slower; {rows} rows of {args.delay * 1e3:g} ms "
          f"({args.delay * args.factor * 1e3:g} ms on the slow node)")
    print(f"generation: median {median:.3f} s over generations 2-{args.generations} "
          f"(min {min(times):.3f}, max {max(times):.3f}); ideal {ideal:.3f} s; ratio {median / ideal:.2f}x")
    moved = {k: getattr(stats, k) for k in ("rows_stolen", "rows_lent", "rows_backed_up", "rows_delivered")
             if hasattr(stats, k)}
    print("per generation: " + ", ".join(f"{k} {v / args.generations:.1f}" for k, v in moved.items()))


if __name__ == "__main__":
    main()
