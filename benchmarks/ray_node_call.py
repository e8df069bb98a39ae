"""The driver's CPU per node call of the ``ray`` executor's own generation loop, this checkout against
another version of ``blackbox_ray`` side by side in one process (the same stand-in nodes, alternated).

    git archive ec144d7 plugins/blackbox-ray | tar -x -C /tmp/before
    nice -n 10 python benchmarks/ray_node_call.py --before /tmp/before/plugins/blackbox-ray/blackbox_ray

Each round is ``_Submitted`` (the executor's pool loop) calling ``NODES`` stand-in aggregators that reply
at once as a node does; the figure is the fastest of ``--repeats`` alternated runs of ten generations,
in CPU time of this process (Ray's threads included), per call. ``scaling_inputs.py``'s ``node_call_ms``
is the same measurement of this checkout alone.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

NODES, ROWS = 40, 10_001
STATS = ("rows", "stolen", "stolen_from", "lent", "borrowed", "backups", "delivered", "problem_loads",
         "broadcast_reads", "worker_seconds", "worker_cpu_seconds", "blocks")


def load(name: str, package: Path):
    """``package``'s ``executor`` module, imported under the package name ``name``."""
    spec = importlib.util.spec_from_file_location(name, package / "__init__.py", submodule_search_locations=[str(package)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return importlib.import_module(name + ".executor")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="a blackbox_ray package directory to compare")
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parent.parent / "plugins" / "blackbox-ray" / "blackbox_ray"
    versions = {"before": load("blackbox_ray_before", args.before), "this checkout": load("blackbox_ray_now", here)}

    import cloudpickle
    import ray

    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")

    @ray.remote(num_cpus=0, max_concurrency=1000)
    class Node:
        async def generation(self, *args):  # one argument (this checkout) or seven (before)
            g, bundle, share, peers, rank, known, capture = args[0] if len(args) == 1 else args
            if isinstance(peers, ray.ObjectRef):
                await peers  # as a node does: the driver serves it
            n = len(share)
            return {"index": np.asarray(share, dtype=np.int64), "fitness": np.zeros(n), "steps": np.zeros(n, np.int64),
                    "info": {}, "incomplete": None, "stats": dict.fromkeys(STATS, 0)}

        def ping(self):
            return True

    node = Node.remote()
    bundle = [ray.put(b"x" * 1024)]

    def rounds(module):
        executor = module.RayExecutor(address="auto")  # never started: its nodes are the stand-ins
        executor._nodes = {f"node{k}": cloudpickle.loads(cloudpickle.dumps(node)) for k in range(NODES)}

        def run():
            for g in range(10):
                module._Submitted(executor, ray, g + 1, ROWS, bundle, True).result()
        return run

    runs = {name: rounds(module) for name, module in versions.items()}
    for run in runs.values():
        run()
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(args.repeats):
        for name, run in runs.items():
            start = time.process_time()
            run()
            best[name] = min(best[name], (time.process_time() - start) / (10 * NODES) * 1e3)
    ray.shutdown()
    print(f"driver CPU per node call ({NODES} nodes, P = {ROWS - 1:,}; fastest of {args.repeats} alternated runs, "
          f"load {os.getloadavg()[0]:.1f}): " + ", ".join(f"{name} {ms:.3f} ms" for name, ms in best.items()))


if __name__ == "__main__":
    main()
