"""Measure, on this machine, the inputs of ``benchmarks/scaling_model.py``.

    nice -n 19 python benchmarks/scaling_inputs.py [--json] [--skip ray cluster humanoid]

Each input is the fastest of a few repeats (the costs a dedicated node would see; a loaded machine
only adds noise above them):

- ``reduce_ns``: the partitionable noise-weighted sum (``blackbox.core.reduce``), ns per slice x
  column, one thread (P = 2,000, dim 1e5); ``fixed_ns``: its int64 fixed-point step, ns per column
  per block; ``combine_ns``: adding two int64 partial sums, ns per column;
- ``float32_sum_ns``: today's one float32 pass (the previous design's driver sum), same unit;
- ``adam_ns``: an Adam step, ns per parameter (dim 1e6); ``shape_ms``: centered ranks of 10,000
  values; ``plan_ms``: the reduction plan of 10,000 rows; ``ask_ms``: ask + evaluation seeds at
  P = 10,000;
- ``call_ms``: driver CPU per actor call on a local Ray (submitted in a batch, then collected);
  ``task_ms``: the same with 4 in flight, one submitted as each completes (the previous executor);
  ``rtt_ms``: the round trip of one call; ``node_call_ms``: driver CPU per node call of the built
  executor (its own generation loop with 40 stand-in nodes that reply at once, P = 10,000);
  ``wait_a_ms`` + ``wait_b_us`` x T: ``ray.wait`` over T
  refs for one ready (the previous executor called it over every ref in flight per completion);
- ``aggregator_us``: on a simulated cluster (``ray.cluster_utils``: two one-CPU nodes), the CPU of the
  aggregators' own processes per row evaluated (scheduling, replies, the fitness exchange; sphere rows,
  popsize 4,000, five generations after a warm one); ``steal_ms``: the round trip of a call from one
  node's actor to another's, the cost of each steal, lend or backup question;
- ``physics_ms``: Humanoid-v5 physics per 1,000 steps (MuJoCo, random actions); ``policy_a_ms`` +
  ``policy_b_ns`` x dim / 1e3: a tanh MLP's forward per 1,000 steps in ms (obs 348, two hidden layers
  sized to dims 3e4, 1.67e5, 1e6; one BLAS thread), fitted on the three; ``policy_b_ns`` is ns per
  parameter per step;
- ``tasks``: per task (CartPole-v1, Hopper-v5, HalfCheetah-v5, Humanoid-v5), episode times from real
  rollouts: the task's preset (its strategy, policy and options, ``presets.preset_of``) run from seed 0
  for a few generations (``--episodes`` at least, Humanoid-v5: the first rows of its first generation,
  1,441 rows a generation), each row evaluated alone and timed in CPU seconds of this process (load on
  other cores skews it less than wall time); stored as the mean time, the median time per step (an
  episode's cost is its steps times it: the steps do not vary with the machine's load, the CPU time of
  one episode does), a capped episode's time, the 101 quantiles of the steps over the step cap, and the
  share of episodes at the cap. The distribution is the one
  of the first generations of a run, not of a trained policy's (longer, more often capped).

``scaling_model.py --inputs FILE`` reads the ``--json`` output (``--tasks`` adds a row per measured task).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

# One BLAS thread, as in a worker (set before numpy loads its BLAS): the policy forward is per core.
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402

import blackbox as bb  # noqa: E402
from blackbox.core import reduce  # noqa: E402
from blackbox.strategies.optim import make_optimizer  # noqa: E402
from blackbox.strategies.shaping import centered_ranks  # noqa: E402

COMMAND = "python benchmarks/scaling_inputs.py"


def best(fn, repeats: int = 5) -> float:
    """Fastest wall time of ``fn()`` in seconds, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def measure_reduction() -> dict[str, float]:
    popsize, dim = 2000, 100_000
    pop = bb.make_strategy("openai-es", dim=dim, popsize=popsize, seed=0).ask()
    weights = centered_ranks(np.random.default_rng(1).standard_normal(popsize))
    plan = reduce.plan_sums(pop, weights)
    slices = len(plan.offsets)
    out = {"reduce_ns": best(lambda: plan.block_sums(), 3) / (slices * dim) * 1e9,
           "float32_sum_ns": best(lambda: pop.noise_weighted_sum(weights), 3) / (slices * dim) * 1e9}
    acc = np.random.default_rng(2).standard_normal(dim).astype(np.float32)
    total, scratch = np.zeros(dim, dtype=np.int64), np.empty(dim, dtype=np.int64)
    out["fixed_ns"] = best(lambda: reduce._add_fixed(total, acc.copy(), 40, scratch)) / dim * 1e9
    part = plan.block_sums([0])
    other = plan.block_sums([1])
    out["combine_ns"] = best(lambda: reduce.combine(part, other)) / dim * 1e9
    return out


def measure_driver() -> dict[str, float]:
    dim = 1_000_000
    adam = make_optimizer("adam", dim, 0.01)
    theta, grad = np.zeros(dim), np.random.default_rng(0).standard_normal(dim)
    out = {"adam_ns": best(lambda: adam.step(theta, grad)) / dim * 1e9}
    fitness = np.random.default_rng(1).standard_normal(10_000)
    out["shape_ms"] = best(lambda: centered_ranks(fitness), 20) * 1e3
    es = bb.make_strategy("openai-es", dim=30_000, popsize=10_000, seed=0)
    pop = es.ask()
    out["plan_ms"] = best(lambda: reduce.plan_sums(pop, centered_ranks(fitness)), 10) * 1e3

    def ask():
        es._pending = None
        es.ask()
        np.random.SeedSequence(0).generate_state(5_002)

    out["ask_ms"] = best(ask, 10) * 1e3
    return out


#: Nodes of the model's largest cluster (1,440 cores, 36 a node) and rows a generation, for ``node_call_ms``.
NODES, ROWS = 40, 10_001


def node_calls(ray):
    """Ten rounds of the built executor's driver (``blackbox_ray``'s generation loop, as it runs) calling
    ``NODES`` stand-in aggregators that reply at once as a node does (their rows' index, fitness and
    steps, no info, their stats): the driver's CPU of making the calls and taking the replies."""
    import cloudpickle
    from blackbox_ray.executor import RayExecutor, _Submitted

    @ray.remote(num_cpus=0, max_concurrency=1000)
    class Node:
        async def generation(self, call):
            g, bundle, share, peers, rank, known, capture = call
            await peers  # as a node does: the driver serves it
            n = len(share)
            return {"index": np.asarray(share, dtype=np.int64), "fitness": np.zeros(n), "steps": np.zeros(n, np.int64),
                    "info": {}, "incomplete": None, "stats": dict.fromkeys(("rows", "stolen", "stolen_from", "lent",
                    "borrowed", "backups", "delivered", "problem_loads", "broadcast_reads", "worker_seconds",
                    "worker_cpu_seconds", "blocks"), 0)}

        def ping(self):
            return True

    node = Node.remote()
    executor = RayExecutor(address="auto")  # never started: its nodes are the stand-ins
    executor._nodes = {f"node{k}": cloudpickle.loads(cloudpickle.dumps(node)) for k in range(NODES)}  # K handles
    bundle = [ray.put(b"x" * 1024)]

    def rounds():
        for g in range(10):
            _Submitted(executor, ray, g + 1, ROWS, bundle, True).result()

    return rounds


def measure_ray() -> dict[str, float]:
    import ray

    temp = os.environ.get("RAY_TMPDIR", "/tmp/ray")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", _temp_dir=temp)
    try:
        @ray.remote(num_cpus=1)
        class Echo:
            def f(self, x=None):
                return x

            def block(self, seconds):
                time.sleep(seconds)

        actor = Echo.remote()
        ray.get(actor.f.remote())
        rtt = best(lambda: ray.get(actor.f.remote()), 50)
        calls = 400

        def batch():
            ray.get([actor.f.remote(i) for i in range(calls)])

        def four_in_flight():  # the previous executor: a task submitted as each completes
            in_flight = [actor.f.remote(i) for i in range(4)]
            for i in range(calls):
                done, in_flight = ray.wait(in_flight, num_returns=1)
                ray.get(done)
                in_flight.append(actor.f.remote(i))
            ray.get(in_flight)

        out = {"rtt_ms": rtt * 1e3}
        for name, fn in (("call_ms", batch), ("task_ms", four_in_flight), ("node_call_ms", node_calls(ray))):
            fn()
            cpu = []
            for _ in range(3):
                start = time.process_time()
                fn()
                cpu.append(time.process_time() - start)
            out[name] = min(cpu) / (NODES * 10 if name == "node_call_ms" else calls) * 1e3
        # ray.wait(list(refs), num_returns=1) with T refs pending and one ready: a + b T
        blocker = Echo.remote()
        ray.get(blocker.f.remote())
        blocker.block.remote(120.0)  # calls queued behind it stay pending: refs that are not ready
        ready = [actor.f.remote()]
        ray.get(ready)
        waits = {}
        for count in (64, 2880):
            pending = [blocker.f.remote() for _ in range(count)]
            waits[count] = best(lambda refs=ready + pending: ray.wait(refs, num_returns=1), 20)
        ray.kill(blocker)
        out["wait_b_us"] = (waits[2880] - waits[64]) / (2880 - 64) * 1e6
        out["wait_a_ms"] = max(waits[64] * 1e3 - out["wait_b_us"] * 64 / 1e3, 0.0)
        return out
    finally:
        ray.shutdown()


def measure_cluster() -> dict[str, float]:
    """On a simulated cluster (a head without CPUs, two one-CPU nodes): the aggregator's CPU per row
    evaluated (its own process: scheduling, replies, the fitness exchange), and the round trip of a
    call from one node's actor to another's (what a steal, a lend or a backup's question costs)."""
    import tempfile

    import psutil
    import ray
    from blackbox_ray import RayExecutor
    from ray.cluster_utils import Cluster

    os.environ.setdefault("RAY_TMPDIR", tempfile.mkdtemp(prefix="bb-inputs-", dir="/tmp"))
    store = 80 * 2**20
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "object_store_memory": store,
                                                              "include_dashboard": False})
    for _ in range(2):
        cluster.add_node(num_cpus=1, object_store_memory=store)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level="ERROR")
    try:
        executor = RayExecutor()
        strategy = bb.make_strategy("openai-es", dim=8, popsize=4000, seed=0)
        seen: dict = {}

        def after_the_first(record) -> None:  # the first generation warms up: count from its end
            if record.generation == 1:
                seen["processes"] = [psutil.Process(pid) for pid in executor.actor_pids()]
                seen["before"] = sum(sum(p.cpu_times()[:2]) for p in seen["processes"])

        generations = 6
        bb.optimize(strategy, bb.make_problem("sphere", dim=8), executor, generations=generations, seed=1,
                    callbacks=[after_the_first])
        cpu = sum(sum(p.cpu_times()[:2]) for p in seen["processes"]) - seen["before"]
        generations -= 1
        executor.close()

        @ray.remote(num_cpus=0)
        class Peer:
            def f(self):
                return None

            async def ask(self, other, repeats: int) -> float:
                await other.f.remote()
                times = []
                for _ in range(repeats):
                    start = time.perf_counter()
                    await other.f.remote()
                    times.append(time.perf_counter() - start)
                return min(times)

        nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU")]
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        a, b = (Peer.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=False)).remote()
                for n in nodes[:2])
        peer_ms = ray.get(a.ask.remote(b, 50)) * 1e3
        return {"aggregator_us": cpu / (generations * 4001) * 1e6, "steal_ms": peer_ms}
    finally:
        ray.shutdown()
        cluster.shutdown()


def mlp_forward_ms(hidden: int, obs: int = 348, act: int = 17) -> tuple[int, float]:
    rng = np.random.default_rng(0)
    w1, w2, w3 = rng.standard_normal((hidden, obs)), rng.standard_normal((hidden, hidden)), rng.standard_normal((act, hidden))
    b1, b2, b3 = np.zeros(hidden), np.zeros(hidden), np.zeros(act)
    x = rng.standard_normal(obs)
    dim = w1.size + w2.size + w3.size + 2 * hidden + act

    def thousand_steps():
        for _ in range(1000):
            np.tanh(w3 @ np.tanh(w2 @ np.tanh(w1 @ x + b1) + b2) + b3)

    return dim, best(thousand_steps, 3) * 1e3


def measure_episode() -> dict[str, float]:
    points = [mlp_forward_ms(h) for h in (64, 256, 850)]
    dims = np.array([d for d, _ in points], dtype=float)
    ms = np.array([t for _, t in points])
    slope, intercept = np.polyfit(dims, ms, 1)
    # ms per 1,000 steps = a + b x dim, with b in ns per parameter per step (ms/param per 1,000 steps x 1e3)
    out = {"policy_a_ms": float(max(intercept, 0.0)), "policy_b_ns": float(slope * 1e3)}
    try:
        import gymnasium as gym

        env = gym.make("Humanoid-v5")
        env.reset(seed=0)
        actions = np.random.default_rng(0).uniform(-0.4, 0.4, (1000, env.action_space.shape[0]))

        def steps():
            for action in actions:
                _, _, terminated, truncated, _ = env.step(action)
                if terminated or truncated:
                    env.reset()

        out["physics_ms"] = best(steps, 3) * 1e3
        env.close()
    except Exception as exc:  # noqa: BLE001 - MuJoCo missing: the model keeps its default
        print(f"# Humanoid-v5 not measured: {type(exc).__name__}: {exc}", file=sys.stderr)
    return out


#: Tasks whose episode times are measured, and the generations to run at most.
TASKS = ("CartPole-v1", "Hopper-v5", "HalfCheetah-v5", "Humanoid-v5")


def measure_tasks(episodes: int = 300, budget_s: float = 120.0) -> dict[str, dict]:
    """Episode times of each task's preset in a short run from seed 0 (see the module docstring)."""
    from blackbox.core.problem import EvalResult
    from blackbox.core.seeding import evaluation_seeds
    from blackbox.problems.gym.presets import preset_of

    out: dict[str, dict] = {}
    for env in TASKS:
        preset = preset_of(env)
        if preset is None:
            continue
        name = preset.strategy
        options = {**preset.problem, **preset.problem_for.get(name, {})}
        try:
            problem = bb.make_problem("gym", env=env, **options)
        except Exception as exc:  # noqa: BLE001 - the extra (MuJoCo) missing: that task is not measured
            print(f"# {env} not measured: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        strategy = bb.make_strategy(name, dim=problem.dim, seed=0, **preset.strategies[name])
        seconds: list[float] = []
        steps: list[int] = []
        capped = 0
        spent, generations = 0.0, 0
        while len(seconds) < episodes and spent < budget_s:
            population = strategy.ask()
            seeds = evaluation_seeds(0, strategy.generation, population.groups, problem.shared_seed)
            if not generations:  # the environment is made on the first call: not an episode's time
                problem.evaluate(population.rows([0]), seeds[:1])
            parts = []
            for i in range(len(population)):
                if len(seconds) >= episodes and generations == 0:
                    break  # Humanoid-v5: 1,440 rows a generation; its first rows are enough
                start = time.process_time()
                part = problem.evaluate(population.rows([i]), seeds[i:i + 1])
                took = time.process_time() - start
                seconds.append(took)
                spent += took
                steps.append(int(part.steps[0]))
                capped += int(np.asarray(part.info.get("episodes_capped", [0]))[0] > 0)
                parts.append(part)
            generations += 1
            if len(parts) < len(population):
                break
            joined = EvalResult.concatenate(parts)
            problem.observe(joined)
            strategy.tell(joined.fitness)
        times, counts = np.asarray(seconds), np.asarray(steps, dtype=float)
        cap = int(getattr(problem, "max_episode_steps", 0) or counts.max())
        per_step = float(np.median(times / counts))  # CPU time varies with the load; steps do not
        out[env] = {"strategy": name, "dim": int(problem.dim), "episodes": len(times), "generations": generations,
                    "mean_ms": float(times.mean() * 1e3), "ms_per_step": per_step * 1e3,
                    "cap_ms": per_step * cap * 1e3,
                    "quantiles": np.quantile(counts / cap, np.linspace(0, 1, 101)).round(4).tolist(),
                    "mean_steps": float(counts.mean()), "max_steps": int(counts.max()), "step_cap": cap,
                    "at_cap": float(np.mean(counts >= cap))}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the inputs as JSON for scaling_model.py --inputs")
    parser.add_argument("--skip", nargs="*", default=[],
                        choices=["reduction", "driver", "ray", "cluster", "humanoid", "tasks"])
    parser.add_argument("--episodes", type=int, default=300, help="episodes a task at least (tasks)")
    args = parser.parse_args(argv)
    inputs: dict[str, float] = {}
    tasks = {} if "tasks" in args.skip else measure_tasks(args.episodes)
    for name, fn in (("reduction", measure_reduction), ("driver", measure_driver), ("ray", measure_ray),
                     ("cluster", measure_cluster), ("humanoid", measure_episode)):
        if name not in args.skip:
            inputs.update(fn())
    load = os.getloadavg()[0]
    if args.json:
        print(json.dumps({"command": COMMAND, "load": load, "inputs": inputs, "tasks": tasks}, indent=1))
        return
    print(f"# {COMMAND} (load average {load:.2f})")
    for key, value in inputs.items():
        print(f"{key:>16} {value:.4g}")
    for env, task in tasks.items():
        q = task["quantiles"]
        print(f"{env:>16} {task['episodes']} episodes ({task['generations']} generations of {task['strategy']}, dim "
              f"{task['dim']:,}): mean {task['mean_ms']:.1f} ms, {task['ms_per_step']:.3f} ms a step, steps mean "
              f"{task['mean_steps']:.0f} of {task['step_cap']}, {task['at_cap']:.0%} at the cap; steps / cap at "
              f"quantiles 10/50/90: {q[10]:.2f} {q[50]:.2f} {q[90]:.2f}")


if __name__ == "__main__":
    main()
