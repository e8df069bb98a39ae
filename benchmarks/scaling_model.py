"""Scaling beyond one machine, modelled from measured costs: efficiency of the built Ray cluster
executor and of the previous one at 144, 576 and 1,440 cores.

    python benchmarks/scaling_model.py [--json] [--inputs FILE] [--popsize 10000] [--cores 144 576 1440]
                                       [--dims 30000 166673 1000000] [--cores-per-node 36] [--trials 8]

One generation of P rows (+ the center row) on N cores, K = ceil(N / c) nodes of c cores. Efficiency is
``T(1) / (N x T(N))``, where T(1) is the serial run: every episode, ask, the reduction and the update in
one process. Episode lengths are ``constant`` or ``humanoid`` (half reach the 1,000-step cap, the rest end
uniformly between 5% and 100% of it); the compute makespan is a Monte Carlo of each design's scheduling.

``previous``: the Ray executor before issue 15: one actor per core, two chunks each (cut between mirrored
pairs), all submitted at once (static assignment); the driver handles every task and calls ``ray.wait``
over every ref in flight per completion (O(T^2)); the driver sums the noise (one float32 pass) and
updates; the center goes to every node from the head.

``built``: one aggregator per node. Per generation the driver makes one call per node; the population
(compact rows, the center) goes down a binary tree of nodes; rows are scheduled one at a time with
stealing across nodes and backups of the last rows; nodes exchange fitness among themselves, each
computes the coefficients and the int64 sums of its blocks (threads over its cores), the sums go up the
tree to node 0 and from there to the driver, which finishes the sum and updates. ``pipelined``: generation
g+1 is sampled around the center one update old, so the cores go from the tail of g straight into g+1 and
the per-generation overhead hides under the compute; it is reported as time to a solution: its throughput
(at most 100%) over ``stale_generations``, the generations it needs for the synchronous mode's one.

The built design's compute is a Monte Carlo of its scheduling policy (``lending_makespan``): guided takes
from the node's own share, then takes from the most loaded node's queue to the last row, then backups of
the take that would end last. ``one node at 0.5 speed`` runs one node's cores at half speed (the best
possible is then (K - 1/2) / K). ``frozen_generation`` prints what a node frozen at a generation's start
costs: the heartbeat, then its share redone on the others.

Every input names the command that measured it (``INPUTS``) or says why it is assumed (``ASSUMED``);
``--inputs FILE`` takes ``benchmarks/scaling_inputs.py --json`` from another machine, and
``--set name=value`` overrides one.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import subprocess
from pathlib import Path

import numpy as np

MEASURED = ("python benchmarks/scaling_inputs.py (2-core AMD EPYC VM shared with other jobs, load average 3 to 6; "
            "fastest of repeats; benchmarks/scaling_inputs.json)")

CLUSTER = ("python benchmarks/scaling_inputs.py, cluster part (simulated cluster: 2 one-CPU nodes on a 2-core VM, "
           "load average 3 to 4; benchmarks/scaling_inputs.json)")

#: name: (value, unit, where it comes from)
INPUTS: dict[str, tuple[float, str, str]] = {
    "reduce_ns": (0.50, "ns per slice x column", MEASURED + ": blackbox.core.reduce, one thread"),
    "float32_sum_ns": (0.47, "ns per slice x column", MEASURED + ": Population.noise_weighted_sum"),
    "fixed_ns": (1.00, "ns per column per block", MEASURED + ": int64 fixed-point step of a block"),
    "combine_ns": (1.87, "ns per column", MEASURED + ": reduce.combine of two partial sums"),
    "adam_ns": (8.9, "ns per parameter", MEASURED + ": Adam step at dim 1e6"),
    "shape_ms": (0.74, "ms at P = 1e4", MEASURED + ": centered ranks"),
    "plan_ms": (1.38, "ms at P = 1e4", MEASURED + ": reduce.plan_sums"),
    "ask_ms": (0.42, "ms at P = 1e4", MEASURED + ": ask + evaluation seeds"),
    "rtt_ms": (0.73, "ms", MEASURED + ": one Ray actor call, round trip"),
    "call_ms": (0.18, "ms of driver CPU", MEASURED + ": one Ray actor call submitted in a batch"),
    "node_call_ms": (1.33, "ms of driver CPU", MEASURED + ": one node call through the built executor's own generation "
                     "loop (40 stand-in nodes that reply at once, P = 10,000): its process's CPU, Ray's threads included"),
    "task_ms": (0.56, "ms of driver CPU", MEASURED + ": one task with 4 in flight (previous executor)"),
    "wait_a_ms": (0.001, "ms", MEASURED + ": ray.wait(T refs, 1) = a + b T"),
    "wait_b_us": (0.195, "us per ref", MEASURED + ": ray.wait(T refs, 1) = a + b T"),
    "scan_b_us": (0.014, "us per ref", "../shared/scale-out/measure_wait.py: the previous executor's scan "
                                       "of in_flight per completion"),
    "aggregator_us": (15.0, "us of CPU per row", CLUSTER + ": the aggregator's own process (scheduling, "
                      "replies, the fitness exchange), sphere rows"),
    "steal_ms": (0.71, "ms", CLUSTER + ": one call from a node's actor to another's (a steal, a lend or a "
                 "backup's question); a LAN adds its latency"),
    "policy_a_ms": (4.9, "ms per 1,000 steps", MEASURED + ": tanh MLP forward (obs 348), fit a + b dim"),
    "policy_b_ns": (0.27, "ns per parameter per step", MEASURED + ": tanh MLP forward, fit a + b dim"),
}
ASSUMED: dict[str, tuple[float, str, str]] = {
    "physics_ms": (93.0, "ms per 1,000 steps", "the paper's ~100 ms Humanoid episode on one core (SCALING.md); "
                   "measured 496 ms here under load 3 to 4, 484 to 735 ms earlier under load 8 to 15 (scaling_inputs.py): a faster core is the harder "
                   "case for scaling, so the model takes the faster figure"),
    "gbit": (10.0, "Gbit/s per node", "a cluster NIC; not measurable on one machine"),
    "alpha_ms": (0.05, "ms per hop", "latency of one node-to-node message on a LAN; not measurable here"),
    "node_par": (6.0, "x", "memory-bound speed-up of a node's block sums over its cores (the study's estimate)"),
    "result_bytes": (16.0, "bytes per row", "fitness + steps; obs-norm rows add their moments only when sampled"),
    "chunk_mb": (0.25, "MiB", "the chunk the tree forwards at a time (a setting of the built executor)"),
    "heartbeat_s": (10.0, "s", "the ray executor's default heartbeat bound: a frozen node is fenced after it"),
    "stale_generations": (4.0, "x", "generations the pipelined mode needs for the synchronous mode's one, to the same "
                          "goal: CartPole 20-40 against 5-6 (benchmarks/PIPELINED.md; 4x is its low end)"),
}
PAPER_MINUTES, PAPER_CORES, PAPER_DIM = 10.0, 1440, 166_673  # Salimans et al. 2017: Humanoid in 10 minutes


def value(name: str) -> float:
    return (INPUTS.get(name) or ASSUMED[name])[0]


def t_episode_s(dim: int) -> float:
    return (value("physics_ms") + value("policy_a_ms") + value("policy_b_ns") * dim / 1e3) / 1e3


def bw_s(nbytes: float) -> float:
    return nbytes * 8 / (value("gbit") * 1e9)


def tree_s(nbytes: float, nodes: int, per_byte_s: float = 0.0) -> float:
    """One vector through a binary tree of ``nodes`` (down, or up with a sum at each node), sent in
    chunks so that the levels overlap: a node sends (or receives) two copies of each chunk, and each
    chunk costs a node the CPU of three actor calls (served for its two children and made to its
    parent, or the reverse), which bounds the chunks' pace when they are small; each level adds the
    latency of one chunk."""
    if nodes <= 1:
        return 0.0
    depth = math.ceil(math.log2(nodes + 1))
    chunk = min(nbytes, value("chunk_mb") * 2**20)
    cpu = 3 * value("call_ms") / 1e3
    return (math.ceil(nbytes / chunk) * max(2 * bw_s(chunk), cpu) + nbytes * per_byte_s
            + depth * (value("alpha_ms") / 1e3 + 2 * bw_s(chunk) + cpu))


# -- compute makespan --------------------------------------------------------------------------------------
#: Episodes measured per task (``scaling_inputs.py --json``'s ``tasks``): a capped episode's time in ms
#: (``cap_ms``: the step cap times the median time a step) and the 101 quantiles of the steps over the
#: cap; read from ``TASKS_FILE`` or ``--inputs``.
TASKS: dict[str, dict] = {}
TASKS_FILE = "benchmarks/scaling_inputs.json"


def lengths(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Episode costs in units of a capped episode: ``constant``, ``humanoid`` (half at the cap, the rest
    uniform in 5-100% of it), or a measured task's name (drawn from its quantiles)."""
    if kind == "constant":
        return np.ones(n)
    if kind == "humanoid":
        return np.where(rng.random(n) < 0.5, 1.0, rng.uniform(0.05, 1.0, n))
    if kind in TASKS:
        quantiles = np.asarray(TASKS[kind]["quantiles"])
        return np.interp(rng.random(n), np.linspace(0, 1, len(quantiles)), quantiles)
    raise ValueError(f"lengths must be constant, humanoid or a measured task ({', '.join(TASKS)}), got {kind!r}")


def dynamic_makespan(jobs: np.ndarray, cores: int) -> float:
    """Rows in order, each to the core that frees first (row-level dynamic scheduling with stealing)."""
    heap = [0.0] * cores
    for job in jobs.tolist():
        heapq.heappush(heap, heapq.heappop(heap) + job)
    return max(heap)


def lending_makespan(jobs: np.ndarray, cores: int, per_node: int, speeds: np.ndarray,
                     chunks: int = 2) -> float:
    """The built executor's policy, event by event: each node's cores take guided takes (what is left
    of the node's share over chunks x the cluster's cores) from its own queue; a core with nothing
    left takes a take from the most loaded node's queue (stealing and lending, to the last row); with
    every queue empty, it backs up the running take that would end last, if it can end it sooner.
    ``speeds``: each node's speed (1 = nominal). Returns when the last row has a result."""
    n_nodes = len(speeds)
    # Each node's queue is a run of consecutive rows, [first, end): takes come off its front.
    queues = [[int(share[0]) if len(share) else 0, int(share[-1]) + 1 if len(share) else 0]
              for share in np.array_split(np.arange(len(jobs)), n_nodes)]
    speed = np.repeat(speeds, per_node)[:cores]
    node_of = np.repeat(np.arange(n_nodes), per_node)[:cores]
    free = [(0.0, core) for core in range(cores)]
    heapq.heapify(free)
    finish: list[float] = []  # per take: when its first result comes
    work: list[float] = []
    running: dict[int, int] = {}  # core -> the take it runs
    backed: set[int] = set()
    # The takes running and not backed up, latest first ((-finish, -take): max(late)'s order); an
    # entry whose take has ended or been backed up is dropped when it comes to the top.
    latest: list[tuple[float, int]] = []
    queued = len(jobs)
    while free:
        now, core = heapq.heappop(free)
        running.pop(core, None)
        node = int(node_of[core])
        if queued:
            source = node if queues[node][0] < queues[node][1] else \
                max(range(n_nodes), key=lambda k: queues[k][1] - queues[k][0])
            first, end = queues[source]
            take = max(1, (end - first) // (chunks * cores))
            queues[source][0] = first + take
            queued -= take
            work.append(float(jobs[first:first + take].sum()))
            finish.append(now + work[-1] / speed[core])
            running[core] = len(finish) - 1
            heapq.heappush(latest, (-finish[-1], -running[core]))
            heapq.heappush(free, (finish[-1], core))
            continue
        while latest and (-latest[0][1] in backed or -latest[0][0] <= now):
            heapq.heappop(latest)  # backed up, or ended (a take ends when its finish comes, never later)
        if latest:  # no queued row anywhere: back up the take that would end last, if this core ends it sooner
            end, t = -latest[0][0], -latest[0][1]
            mine = now + work[t] / speed[core]
            if mine < end:
                finish[t] = mine
                backed.add(t)
                running[core] = t
                heapq.heappush(free, (mine, core))
    return max(finish)


def static_pairs_makespan(jobs: np.ndarray, cores: int) -> float:
    """The previous executor: 2 x cores chunks of whole mirrored pairs, dealt round robin, never moved."""
    n = len(jobs)
    cuts = [0]
    for c in range(1, 2 * cores):
        cut = int(round(c * n / (2 * cores)))
        cut += cut % 2  # never between the two rows of a pair
        if cuts[-1] < cut < n:
            cuts.append(cut)
    cuts.append(n)
    load = np.zeros(cores)
    for j, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        load[j % cores] += jobs[a:b].sum()
    return float(load.max())


def compute(design: str, kind: str, p: int, n: int, t_ep: float, trials: int, seed: int = 0, c: int = 36,
            slow: float = 1.0) -> tuple[float, float]:
    """(makespan, total work) in seconds, averaged over ``trials`` draws of the episode lengths.
    ``slow``: the speed of one node of the built design (1: all nodes alike)."""
    rng = np.random.default_rng(seed)
    spans, works = [], []
    speeds = np.ones(math.ceil(n / c))
    speeds[0] = slow
    for _ in range(trials if kind != "constant" else 1):
        jobs = lengths(kind, p + 1, rng)
        spans.append(static_pairs_makespan(jobs, n) if design == "previous" else lending_makespan(jobs, n, c, speeds))
        works.append(jobs.sum())
    return float(np.mean(spans)) * t_ep, float(np.mean(works)) * t_ep


def pipelined(kind: str, p: int, n: int, t_ep: float, overhead: float, generations: int = 8,
              seed: int = 0) -> tuple[float, float]:
    """Steady state when generation g+1 starts once g-1 is finished and updated: (seconds, episode work)
    a generation, both over the generations after the first two."""
    rng = np.random.default_rng(seed)
    heap = [0.0] * n
    finish, works = [], []
    for g in range(generations):
        release = 0.0 if g < 2 else finish[g - 2] + overhead
        end = 0.0
        jobs = lengths(kind, p + 1, rng) * t_ep
        works.append(float(jobs.sum()))
        for job in jobs.tolist():
            t = max(heapq.heappop(heap), release) + job
            end = max(end, t)
            heapq.heappush(heap, t)
        finish.append(end)
    return (finish[-1] - finish[1]) / (generations - 2), float(np.mean(works[2:]))


# -- per-generation overheads --------------------------------------------------------------------------
def serial_overhead(p: int, dim: int) -> float:
    """What T(1) adds to the episodes: ask, the reduction over every slice, shaping, plan, update."""
    scale = p / 1e4
    return ((value("ask_ms") + value("shape_ms") + value("plan_ms")) * scale / 1e3
            + (value("reduce_ns") * (p / 2) + value("fixed_ns") * math.ceil(p / 128) + value("adam_ns")) * dim / 1e9)


def overheads(design: str, p: int, dim: int, n: int, c: int) -> dict[str, float]:
    """Seconds of overhead a generation, by part, not overlapped with the compute."""
    k = math.ceil(n / c)
    scale = p / 1e4
    if design == "previous":
        tasks = 2 * n
        dispatch = tasks * (value("task_ms") + value("wait_a_ms")) + (value("wait_b_us") + value("scan_b_us")) / 1e3 * tasks * tasks / 2
        return {
            "dispatch": dispatch / 1e3,  # overlaps the compute: see generation()
            "lag": n * value("call_ms") / 1e3,
            "ask": value("ask_ms") * scale / 1e3,
            "broadcast": bw_s(k * 8 * dim),
            "results": bw_s(p * value("result_bytes")),
            "tell": (value("float32_sum_ns") * (p / 2) + value("adam_ns")) * dim / 1e9 + value("shape_ms") * scale / 1e3,
        }
    hop = value("alpha_ms") / 1e3
    blocks = math.ceil(p / 2 / 64)
    blocks_per_node = math.ceil(blocks / k)
    return {
        "ask": value("ask_ms") * scale / 1e3,
        "control": (k * value("node_call_ms") + value("rtt_ms")) / 1e3,  # the K calls, submitted and collected
        "broadcast": tree_s(33 * p + 8 * dim, k) + (bw_s(33 * p + 8 * dim) if k == 1 else 0.0),
        "steal": (value("steal_ms") + value("alpha_ms")) / 1e3 if k > 1 else 0.0,
        "aggregator": math.ceil((p + 1) / k) * value("aggregator_us") / 1e6 / c,  # its CPU, taken from its cores
        "exchange": (hop + bw_s(p * value("result_bytes") * (k - 1) / k)) if k > 1 else 0.0,
        "coefficients": (value("shape_ms") + value("plan_ms")) * scale / 1e3,
        "block_sums": (value("reduce_ns") * 64 + value("fixed_ns")) * blocks_per_node * dim / value("node_par") / 1e9,
        "tree": tree_s(8 * dim, k, value("combine_ns") / 8 / 1e9),
        "to_driver": bw_s(8 * dim + p * value("result_bytes")),  # the replies' driver CPU is in control
        "update": (value("plan_ms") * scale / 1e3 + (value("combine_ns") + value("adam_ns")) * dim / 1e9),
    }


def generation(design: str, p: int, dim: int, n: int, c: int, kind: str, trials: int,
               pipeline: bool = False, slow: float = 1.0) -> dict:
    t_ep = TASKS[kind]["cap_ms"] / 1e3 if kind in TASKS else t_episode_s(dim)
    span, work = compute(design, kind, p, n, t_ep, trials, c=c, slow=slow)
    parts = overheads(design, p, dim, n, c)
    if design == "previous":  # the driver handles completions while the actors run: whichever is longer
        busy = max(span + parts["lag"], parts["dispatch"])
        seconds = busy + sum(v for key, v in parts.items() if key not in ("dispatch", "lag"))
    elif pipeline:
        seconds, work = pipelined(kind, p, n, t_ep, sum(parts.values()))
    else:
        seconds = span + sum(parts.values())
    serial = work + serial_overhead(p, dim)
    efficiency = min(1.0, serial / (n * seconds))  # pipelined hides T(1)'s serial part: throughput, capped
    if pipeline:  # time to a solution: each generation's work counts 1 / stale_generations
        efficiency /= value("stale_generations")
    return {"seconds": seconds, "serial": serial, "compute": span, "parts": parts, "efficiency": efficiency}


def frozen_generation(p: int, dim: int, n: int, c: int) -> dict:
    """A generation in which one node freezes at its start: the others run their shares; the frozen
    node's queued rows cannot be lent; after ``heartbeat_s`` it is fenced and its share is redone on
    the other nodes in a second round (constant episodes)."""
    t_ep = t_episode_s(dim)
    k = math.ceil(n / c)
    normal = generation("built", p, dim, n, c, "constant", 1)
    own = lending_makespan(np.ones(p + 1 - (p + 1) // k), n - c, c, np.ones(k - 1)) * t_ep
    redo = lending_makespan(np.ones((p + 1) // k), n - c, c, np.ones(k - 1)) * t_ep
    rounds = sum(overheads("built", p, dim, n - c, c).values())
    seconds = max(own, value("heartbeat_s")) + redo + normal["seconds"] - normal["compute"] + rounds
    return {"seconds": seconds, "normal": normal["seconds"]}


#: (design, pipelined, the speed of one node): the rows of the table
DESIGNS = (("previous", False, 1.0), ("built", False, 1.0), ("built", False, 0.5), ("built", True, 1.0))


def label(design: str, pipeline: bool, slow: float) -> str:
    return design + (", pipelined (time to a solution)" if pipeline else "") + (
        f", one node at {slow:g} speed" if slow != 1.0 else "")


def rows(p: int, cores: list[int], dims: list[int], c: int, trials: int) -> list[dict]:
    out = []
    for kind in ("constant", "humanoid"):
        for dim in dims:
            for n in cores:
                for design, pipeline, slow in DESIGNS:
                    g = generation(design, p, dim, n, c, kind, trials, pipeline, slow)
                    out.append({"design": design, "cores": n, "dim": dim, "lengths": kind, "pipelined": pipeline,
                                "slow": slow, "efficiency": round(g["efficiency"], 4),
                                "seconds": round(g["seconds"], 4)})
    return out


def tail(kind: str, p: int, n: int, c: int, trials: int, seed: int = 0) -> dict[str, float]:
    """Why variable lengths cost a synchronous generation: compute-only efficiency (work / (n x makespan),
    no overheads) of the built policy, of the ideal greedy list scheduler (each row, in order, to the
    first free core: the best any policy does that does not know a row's length before running it),
    and of longest-first with every length known in advance (an oracle: rows are perturbations of one
    center, nothing predicts which will run long); ``last_start``: when, on average over the draws,
    the last row starts under the policy, over its makespan (the tail is the one episode after it)."""
    rng = np.random.default_rng(seed)
    out: dict[str, list[float]] = {"policy": [], "greedy": [], "longest_first_oracle": [], "last_start": []}
    speeds = np.ones(math.ceil(n / c))
    for _ in range(trials):
        jobs = lengths(kind, p + 1, rng)
        ideal = jobs.sum() / n
        span = lending_makespan(jobs, n, c, speeds)
        out["policy"].append(ideal / span)
        out["greedy"].append(ideal / dynamic_makespan(jobs, n))
        out["longest_first_oracle"].append(ideal / dynamic_makespan(np.sort(jobs)[::-1], n))
        heap = [0.0] * n
        starts = []
        for job in jobs.tolist():
            start = heapq.heappop(heap)
            starts.append(start)
            heapq.heappush(heap, start + job)
        out["last_start"].append(max(starts) / span)
    return {key: float(np.mean(v)) for key, v in out.items()}


def ceiling(kind: str, p: int, dim: int, n: int, c: int, trials: int, seed: int = 0) -> dict[str, float]:
    """The best efficiency any synchronous executor gets (bit-identical to serial, so each generation's
    rows are evaluated around the updated center, and an episode's length is learnt only by running
    it): the rows by greedy list scheduling (each to the first free core: with lengths independent and
    alike, which unstarted row a free core takes changes nothing, idling never helps, and a backup of a
    row ends no sooner than the row itself on an equal core, so no such policy has a shorter expected
    makespan); ``free``: nothing else costs time; ``wire``: the data that must move each generation, the
    center down and the sums up at the network's speed once each, and the update."""
    rng = np.random.default_rng(seed)
    t_ep = TASKS[kind]["cap_ms"] / 1e3 if kind in TASKS else t_episode_s(dim)
    spans, works = [], []
    for _ in range(trials if kind != "constant" else 1):
        jobs = lengths(kind, p + 1, rng)
        spans.append(dynamic_makespan(jobs, n))
        works.append(jobs.sum())
    span, work = float(np.mean(spans)) * t_ep, float(np.mean(works)) * t_ep
    serial = work + serial_overhead(p, dim)
    wire = 2 * bw_s(8 * dim) + overheads("built", p, dim, n, c)["update"]
    return {"free": min(1.0, serial / (n * span)), "wire": min(1.0, serial / (n * (span + wire)))}


def popsize_for(kind: str, target: float, dim: int, n: int, c: int, trials: int) -> int | None:
    """The smallest population (of 10,000 x 1, 1.5, 2, 3, 4, 6, 8) at which the built synchronous design
    reaches ``target`` on ``n`` cores, or None."""
    for factor in (1, 1.5, 2, 3, 4, 6, 8):
        p = int(10_000 * factor)
        if generation("built", p, dim, n, c, kind, trials)["efficiency"] >= target:
            return p
    return None


def task_rows(p: int, cores: list[int], c: int, trials: int) -> list[dict]:
    """The built design on each measured task (its preset's policy dim, its measured episode times)."""
    out = []
    for task, facts in TASKS.items():
        for n in cores:
            for design, pipeline, slow in DESIGNS:
                if design != "built":
                    continue
                g = generation(design, p, facts["dim"], n, c, task, trials, pipeline, slow)
                out.append({"task": task, "cores": n, "dim": facts["dim"], "pipelined": pipeline, "slow": slow,
                            "efficiency": round(g["efficiency"], 4), "seconds": round(g["seconds"], 4),
                            "mean_ms": facts["mean_ms"], "cap_ms": facts["cap_ms"]})
    return out


def task_markdown(table: list[dict], cores: list[int]) -> str:
    lines = ["| task (preset, dim) | episode: mean / capped | steps: mean / cap | design | " + " | ".join(f"{n:,} cores" for n in cores)
             + " |", "|---|---:|---:|---|" + "---:|" * len(cores)]
    keyed = {(r["task"], r["pipelined"], r["slow"], r["cores"]): r for r in table}
    for task, facts in TASKS.items():
        for design, pipeline, slow in DESIGNS:
            if design != "built":
                continue
            cells = [f"{keyed[(task, pipeline, slow, n)]['efficiency']:.0%}" for n in cores]
            lines.append(f"| {task} ({facts['strategy']}, {facts['dim']:,}) | {facts['mean_ms']:.1f} / "
                         f"{facts['cap_ms']:.0f} ms | {facts['mean_steps']:.0f} / {facts['step_cap']:,} | "
                         f"{label(design, pipeline, slow)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def paper_run(p: int, c: int, trials: int) -> dict:
    """The paper's Humanoid run: the work 1,440 perfectly used cores do in 10 minutes, on each design."""
    ideal = generation("built", p, PAPER_DIM, PAPER_CORES, c, "humanoid", trials)
    generations = PAPER_MINUTES * 60 / (ideal["serial"] / PAPER_CORES)
    out = {"generations": generations}
    for design, pipeline in (("previous", False), ("built", False)):
        g = generation(design, p, PAPER_DIM, PAPER_CORES, c, "humanoid", trials, pipeline)
        out[design] = generations * g["seconds"] / 60
    return out


def markdown(table: list[dict], cores: list[int]) -> str:
    lines = ["| lengths | dim | design | " + " | ".join(f"{n:,} cores" for n in cores) + " |",
             "|---|---:|---|" + "---:|" * len(cores)]
    keyed = {(r["lengths"], r["dim"], r["design"], r["pipelined"], r["slow"], r["cores"]): r for r in table}
    for kind in ("constant", "humanoid"):
        for dim in sorted({r["dim"] for r in table}):
            for design, pipeline, slow in DESIGNS:
                cells = [f"{keyed[(kind, dim, design, pipeline, slow, n)]['efficiency']:.0%}" for n in cores]
                lines.append(f"| {kind} | {dim:,} | {label(design, pipeline, slow)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help='print {"rows": [...]} as JSON')
    parser.add_argument("--inputs", help="JSON from benchmarks/scaling_inputs.py --json")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override one input")
    parser.add_argument("--popsize", type=int, default=10_000)
    parser.add_argument("--cores", type=int, nargs="+", default=[144, 576, 1440])
    parser.add_argument("--dims", type=int, nargs="+", default=[30_000, 166_673, 1_000_000])
    parser.add_argument("--cores-per-node", type=int, default=36)
    parser.add_argument("--trials", type=int, default=8, help="Monte Carlo draws of variable episode lengths")
    parser.add_argument("--breakdown", type=int, default=1440, help="print the built design's overheads at this core count")
    parser.add_argument("--write", metavar="MD", help="also replace the generated part of this file (between "
                        f"{MARK_BEGIN!r} and {MARK_END!r}) with the tables and the commit")
    args = parser.parse_args(argv)
    overrides = {}
    TASKS.clear()
    default_tasks = Path(__file__).resolve().parent.parent / TASKS_FILE
    if default_tasks.exists():
        TASKS.update(json.loads(default_tasks.read_text()).get("tasks", {}))
    if args.inputs:
        with open(args.inputs) as handle:
            measured = json.load(handle)
        overrides.update(measured["inputs"])
        if measured.get("tasks"):
            TASKS.clear()
            TASKS.update(measured["tasks"])
    for item in args.set:
        name, _, text = item.partition("=")
        overrides[name] = float(text)
    for name, number in overrides.items():
        table = INPUTS if name in INPUTS else ASSUMED if name in ASSUMED else None
        if table is None:
            parser.error(f"unknown input {name!r}; known: {', '.join(sorted(INPUTS) + sorted(ASSUMED))}")
        table[name] = (float(number), table[name][1], f"overridden ({args.inputs or '--set'})")
    table = rows(args.popsize, args.cores, args.dims, args.cores_per_node, args.trials)
    tasks = task_rows(args.popsize, args.cores, args.cores_per_node, args.trials)
    why = {kind: tail(kind, args.popsize, args.breakdown, args.cores_per_node, args.trials)
           for kind in ("constant", "humanoid", *TASKS)}
    if args.json:
        print(json.dumps({"rows": table, "tasks": tasks, "tail": why}))
        return
    text = generated(args, table, tasks, why)
    print(text)
    if args.write:
        write_between(Path(args.write), text)


def generated(args: argparse.Namespace, table: list[dict], tasks: list[dict], why: dict[str, dict]) -> str:
    """The tables and lines the model prints (and ``--write`` puts in SCALING.md)."""
    out = [f"Generated by `{' '.join(['python benchmarks/scaling_model.py', *_argv_shown(args)])}` at commit "
           f"{_commit()}.\n",
           f"P = {args.popsize:,}, {args.cores_per_node} cores per node; efficiency T(1) / (N T(N))\n",
           markdown(table, args.cores)]
    if tasks:
        out += ["\nMeasured tasks (episode times from `scaling_inputs.py`'s rollouts of each preset, "
                f"P = {args.popsize:,}):\n", task_markdown(tasks, args.cores)]
    out.append(f"\nThe tail at {args.breakdown:,} cores (compute only, no overheads: work / (N x makespan)):\n")
    out.append("| lengths | built policy | greedy, lengths unknown (best possible) | longest first, lengths known "
               "(oracle) | last row starts at |")
    out.append("|---|---:|---:|---:|---:|")
    for kind, t in why.items():
        out.append(f"| {kind} | {t['policy']:.1%} | {t['greedy']:.1%} | {t['longest_first_oracle']:.1%} | "
                   f"{t['last_start']:.0%} of the makespan |")
    need = popsize_for("humanoid", 0.90, PAPER_DIM, args.breakdown, args.cores_per_node, args.trials)
    out.append(f"\nHumanoid-like lengths reach 90% at {args.breakdown:,} cores (dim {PAPER_DIM:,}) from a population of "
               + (f"{need:,}" if need else "more than 80,000") + ".")
    out.append(f"\nThe ceiling of any synchronous executor at P = {args.popsize:,} on {args.breakdown:,} cores, "
               "Humanoid-like lengths (greedy list scheduling, the best without knowing lengths; `ceiling()`):")
    for dim in args.dims:
        top = ceiling("humanoid", args.popsize, dim, args.breakdown, args.cores_per_node, args.trials)
        built = generation("built", args.popsize, dim, args.breakdown, args.cores_per_node, "humanoid", args.trials)
        out.append(f"- dim {dim:,}: {top['free']:.1%} with no overhead at all, {top['wire']:.1%} with the center down, "
                   f"the sums up and the update; built {built['efficiency']:.1%}")
    for dim in args.dims:
        g = generation("built", args.popsize, dim, args.breakdown, args.cores_per_node, "constant", args.trials)
        parts = ", ".join(f"{key} {v * 1e3:.1f}" for key, v in g["parts"].items())
        out.append(f"\nbuilt at {args.breakdown:,} cores, dim {dim:,} (episode {t_episode_s(dim) * 1e3:.0f} ms): "
               f"T {g['seconds'] * 1e3:.0f} ms = compute {g['compute'] * 1e3:.0f} + ms: {parts}")
    paper = paper_run(args.popsize, args.cores_per_node, args.trials)
    out.append(f"\nThe paper's Humanoid run (the work of {PAPER_CORES:,} cores for {PAPER_MINUTES:g} minutes: "
          f"{paper['generations']:.0f} generations of {args.popsize:,} at dim {PAPER_DIM:,}, Humanoid-like lengths): "
          + ", ".join(f"{name} {minutes:.1f} min" for name, minutes in paper.items() if name != "generations"))
    for dim in args.dims[:1]:
        for n in args.cores:
            if n > args.cores_per_node:
                f = frozen_generation(args.popsize, dim, n, args.cores_per_node)
                out.append(f"\na node frozen at the start of a generation, {n:,} cores, dim {dim:,}: the generation takes "
                      f"{f['seconds']:.1f} s against {f['normal']:.2f} s (heartbeat {value('heartbeat_s'):g} s, then "
                      f"its share redone on the other nodes); later generations run on the others")
    out.append("\nInputs:\n")
    for name, (number, unit, source) in {**INPUTS, **ASSUMED}.items():
        out.append(f"- `{name}` = {number:g} {unit}: {source}")
    for task, facts in TASKS.items():
        out.append(f"- `{task}`: {facts['episodes']} episodes of {facts['generations']} generations ({facts['strategy']}, "
               f"dim {facts['dim']:,}): mean {facts['mean_ms']:.1f} ms, {facts['ms_per_step']:.3f} ms a step, "
               f"{facts['mean_steps']:.0f} steps on average of {facts['step_cap']:,}, {facts['at_cap']:.0%} at the cap")
    return "\n".join(out)


MARK_BEGIN, MARK_END = "<!-- scaling_model.py: begin -->", "<!-- scaling_model.py: end -->"


def write_between(path: Path, text: str) -> None:
    """Replace what lies between the two markers of ``path`` with ``text``."""
    doc = path.read_text()
    head, found, rest = doc.partition(MARK_BEGIN)
    _, found_end, tail_ = rest.partition(MARK_END)
    if not (found and found_end):
        raise SystemExit(f"{path}: the markers {MARK_BEGIN!r} and {MARK_END!r} are missing; add them where the "
                         "tables go")
    path.write_text(f"{head}{MARK_BEGIN}\n{text}\n{MARK_END}{tail_}")


def _argv_shown(args: argparse.Namespace) -> list[str]:
    return [f"--inputs {args.inputs}"] if args.inputs else []


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).resolve().parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    main()
