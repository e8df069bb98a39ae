"""OpenAI-ES on a simulated three-node Ray cluster, on one machine (the "Run on a cluster" guide).

    python examples/simulated_cluster.py                   # 20 generations
    BLACKBOX_SMOKE=1 python examples/simulated_cluster.py  # 3 generations (CI)

``ray.cluster_utils.Cluster`` starts a head without CPUs (the driver's node, as on a real cluster
where the head only coordinates) and three nodes of one CPU each, as separate raylets on this
machine. The ``ray`` executor puts one aggregator on each node and makes one call per node a
generation. The run is repeated with the serial executor: the final centers are identical bit for
bit, and the dispatch statistics show what travelled. Needs blackbox-ray (``pip install -e
plugins/blackbox-ray``); Ray's files go to a temporary folder, removed at the end.
"""

import os
import shutil
import tempfile

import numpy as np
import ray
from blackbox_ray import RayExecutor
from ray.cluster_utils import Cluster

import blackbox as bb

SMOKE = os.environ.get("BLACKBOX_SMOKE", "") not in ("", "0")
GENERATIONS = 3 if SMOKE else 20


def train(executor):
    problem = bb.make_problem("rastrigin", dim=200)
    x0 = problem.initial_params(np.random.default_rng(0))  # uniform in [-5.12, 5.12], away from the optimum
    strategy = bb.make_strategy("openai-es", dim=200, popsize=400, sigma=0.1, lr=0.1, x0=x0, seed=1)
    return bb.optimize(strategy, problem, executor, generations=GENERATIONS, seed=2)


temp = tempfile.mkdtemp(prefix="bb-cluster-", dir="/tmp")  # Ray's socket paths must stay short
os.environ["RAY_TMPDIR"] = temp
cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
try:
    for _ in range(3):
        cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level="ERROR")
    executor = RayExecutor()  # Ray is initialized here: the executor uses this cluster
    result = train(executor)
    stats = executor.stats
    print(f"{executor.nodes} nodes, {executor.workers} workers; {stats.generations} generations, "
          f"{stats.node_calls} driver calls ({stats.node_calls // stats.generations} a generation), "
          f"{stats.node_reductions} sums reduced on the nodes, {stats.rows_stolen} rows stolen, "
          f"{stats.rows_backed_up} backed up, {stats.broadcast_bytes / stats.generations:,.0f} bytes sent "
          f"and {stats.result_bytes / stats.generations:,.0f} received a generation")
    executor.close()
finally:
    ray.shutdown()
    cluster.shutdown()  # removes only the nodes it started
    shutil.rmtree(temp, ignore_errors=True)
serial = train("serial")
same = np.array_equal(result.center, serial.center)
print(f"best {result.best_fitness:,.1f} (start {serial.records[0].center:,.1f}); same final center on the cluster and serially: {same}")
assert same, "the cluster and serial runs differ"
