"""JAX-native tasks (issue 27): time to solve gymnax CartPole-v1 and Pendulum-v1, side by side in one run.

    nice -n 19 python benchmarks/jax_tasks.py [--seeds 3] [--markdown OUT.md] [--only cartpole pendulum]
    nice -n 19 python benchmarks/jax_tasks.py --only --overhead-generations 0 --brax   # the Brax row alone

Contenders, on the same gymnax environment, the same MLP (16 tanh units, the same start vector), the
same population, sigma and learning rate, one process. The start vector is the ES paper's initialization
(``init=es``, the gym problem's), so the gymnasium path starts from the same policy too (``--init fan_in``:
the gymnax problem's default draw instead, for gymnax and evosax):

- blackbox: ``es.ask()`` -> ``evaluate_rows(problem, population, seeds)`` (the executors' routine:
  the compact population expanded on the device, one compiled call) -> ``es.tell``;
- evosax 0.3 (Open_ES with Adam, SNES) on evosax's own ``GymnaxProblem`` (a flax MLP, a fixed-length
  ``lax.scan`` per episode), its ``ask``, ``eval`` and ``tell`` jitted as its examples do;
- blackbox on the project's own gymnasium path (``gym:ENV``: the numpy CartPole replica, Gymnasium's
  Pendulum), same strategy and settings.

"Solved" is the first generation whose population's mean return reaches the goal (475 on CartPole-v1, -200 on
Pendulum-v1 with 3 start states shared by the whole population). Compile time (the first
generation's ask, evaluation and tell, traced and compiled) is reported apart and left out of the
time to solve. A second table is blackbox's per-generation overhead around the compiled rollout at
popsize 1,024: ask, the host side of the expansion (a few small arrays to the device), the read-back
and tell, against the compiled call alone (timed again on the same inputs). Times are wall clock and
process CPU (JAX's CPU backend uses threads, so CPU time can exceed wall time).

``--brax`` adds a third table: env steps per second of whole ``brax:hopper`` generations (spring
backend, one compiled call) against blackbox's gymnasium MuJoCo ``Hopper-v5`` path, same popsize,
MLP, episode length and strategy (:func:`brax_throughput`).

``--evotorch-python PY`` adds a fourth: steps per second of whole ``brax:ant`` generations against EvoTorch's
VecGymNE on Brax's ``ant``, same backend (spring), popsize, episode length, MLP, start vector and strategy
(SNES), EvoTorch run in ``PY`` (its own environment: torch, evotorch, brax) as a subprocess
(:func:`evotorch_brax`, :mod:`evotorch_brax`); the load average is printed per contender.

    nice -n 19 python benchmarks/jax_tasks.py --only --overhead-generations 0 --evotorch-python /tmp/peers/bin/python
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import machine, report, version  # noqa: E402

HIDDEN = 16
#: Brax environments and their gymnasium MuJoCo twins, for the side-by-side Brax table.
GYM_TWINS = {"hopper": "Hopper-v5", "ant": "Ant-v5", "halfcheetah": "HalfCheetah-v5", "humanoid": "Humanoid-v5",
             "walker2d": "Walker2d-v5", "swimmer": "Swimmer-v5", "reacher": "Reacher-v5"}


def jax_device() -> str:
    """The device JAX computes on by default here (its kind, e.g. ``NVIDIA H100 80GB HBM3``, or ``cpu``)."""
    import jax

    device = jax.devices()[0]
    return f"{device.platform} ({getattr(device, 'device_kind', device.platform)})"


@dataclass(frozen=True)
class Task:
    env: str
    goal: float
    popsize: int
    sigma: float
    lr: float
    episodes: int
    shared: bool
    generations: int


TASKS = {
    "cartpole": Task("CartPole-v1", 475.0, 256, 0.1, 0.1, 1, False, 100),
    "pendulum": Task("Pendulum-v1", -200.0, 256, 0.1, 0.05, 3, True, 300),
}


@dataclass
class Outcome:
    contender: str
    task: str
    seed: int
    generations: int | None  # None: not solved within the budget
    wall: float
    cpu: float
    compile_wall: float
    steps: int


def start_vector(dim_problem, seed: int) -> np.ndarray:
    return dim_problem.initial_params(np.random.default_rng(1000 + seed))


def seeds_for(task: Task, generation: int, popsize: int, run_seed: int) -> np.ndarray:
    base = (run_seed * 1_000_003 + generation) * popsize
    return np.full(popsize, base) if task.shared else np.arange(base, base + popsize)


def run_blackbox(task: Task, strategy: str, seed: int, spec: str, label: str, max_wall: float = 1e9) -> Outcome:
    import blackbox as bb
    from blackbox.core.executor import evaluate_rows
    from blackbox.problems.jax.batched import forget_programs

    forget_programs()  # each run compiles its own program, as each evosax run does: its compile is timed apart
    problem = bb.make_problem(spec)
    x0 = start_vector(problem, seed)  # the gymnax and evosax contenders start from the same vector
    options = {"popsize": task.popsize, "sigma": task.sigma}
    if strategy == "openai-es":
        options.update(lr=task.lr, weight_decay=0.0)
    es = bb.make_strategy(strategy, dim=problem.dim, x0=x0, seed=seed, **options)
    compile_wall, steps = 0.0, 0
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for generation in range(task.generations):
        t = time.perf_counter()
        population = es.ask()
        result = evaluate_rows(problem, population, seeds_for(task, generation, len(population), seed))
        es.tell(result.fitness)
        steps += int(result.steps.sum())
        if generation == 0:
            compile_wall = time.perf_counter() - t
            wall0, cpu0 = time.perf_counter(), time.process_time()
        if np.mean(result.fitness) >= task.goal or time.perf_counter() - wall0 > max_wall:
            if not np.mean(result.fitness) >= task.goal:
                break
            return Outcome(label, task.env, seed, generation + 1, time.perf_counter() - wall0,
                           time.process_time() - cpu0, compile_wall, steps)
    return Outcome(label, task.env, seed, None, time.perf_counter() - wall0, time.process_time() - cpu0,
                   compile_wall, steps)


def run_evosax(task: Task, kind: str, seed: int, init: str = "es") -> Outcome:
    import jax
    import jax.numpy as jnp
    import optax
    from evosax import algorithms
    from evosax.problems.networks import MLP
    from evosax.problems.rl.gymnax import GymnaxProblem as EvosaxGymnax
    from jax.flatten_util import ravel_pytree

    import blackbox as bb

    discrete = task.env == "CartPole-v1"
    out = 2 if discrete else 1

    def output(x, key=None):
        return jnp.argmax(x) if discrete else 2.0 * jnp.tanh(x)  # blackbox's actions: argmax, tanh into [-2, 2]

    policy = MLP(layer_sizes=(HIDDEN, out), activation=jnp.tanh, output_fn=output)
    problem = EvosaxGymnax(task.env, policy, num_rollouts=task.episodes, use_normalize_obs=False)
    ours = bb.make_problem(f"gymnax:{task.env},hidden=[{HIDDEN}],init={init}")
    row = start_vector(ours, seed).astype(np.float32)
    # blackbox's row layout (kernel then bias per layer) as flax's parameter tree
    n_in = int(np.prod(problem.observation_shape))
    w0, row = row[: n_in * HIDDEN].reshape(n_in, HIDDEN), row[n_in * HIDDEN:]
    b0, row = row[:HIDDEN], row[HIDDEN:]
    w1, b1 = row[: HIDDEN * out].reshape(HIDDEN, out), row[HIDDEN * out:]
    solution = {"params": {"Dense_0": {"kernel": jnp.asarray(w0), "bias": jnp.asarray(b0)},
                           "Dense_1": {"kernel": jnp.asarray(w1), "bias": jnp.asarray(b1)}}}
    assert ravel_pytree(solution)[0].shape == (ours.dim,)
    if kind == "Open_ES":
        algo = algorithms.Open_ES(population_size=task.popsize, solution=solution, optimizer=optax.adam(task.lr),
                                  std_schedule=optax.constant_schedule(task.sigma))
        params = algo.default_params
    else:
        algo = algorithms.SNES(population_size=task.popsize, solution=solution)
        params = algo.default_params.replace(std_init=task.sigma)
    ask, tell = jax.jit(algo.ask), jax.jit(algo.tell)
    key = jax.random.key(seed)
    key, init_key, problem_key = jax.random.split(key, 3)
    state = algo.init(init_key, solution, params)
    problem_state = problem.init(problem_key)
    compile_wall, steps = 0.0, 0
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for generation in range(task.generations):
        t = time.perf_counter()
        key, k_ask, k_eval, k_tell = jax.random.split(key, 4)
        population, state = ask(k_ask, state, params)
        fitness, problem_state, _ = problem.eval(k_eval, population, problem_state)
        state, _ = tell(k_tell, population, -fitness, state, params)  # evosax minimizes
        mean = float(jnp.mean(fitness))
        steps += task.popsize * task.episodes * problem.episode_length  # fixed-length scans
        if generation == 0:
            compile_wall = time.perf_counter() - t
            wall0, cpu0 = time.perf_counter(), time.process_time()
        if mean >= task.goal:
            return Outcome(f"evosax {kind}", task.env, seed, generation + 1, time.perf_counter() - wall0,
                           time.process_time() - cpu0, compile_wall, steps)
    return Outcome(f"evosax {kind}", task.env, seed, None, time.perf_counter() - wall0, time.process_time() - cpu0,
                   compile_wall, steps)


def overhead(popsize: int = 1024, generations: int = 20) -> dict[str, float]:
    """Per-generation time of blackbox's loop, and of the compiled call alone on the same inputs."""
    import jax

    import blackbox as bb
    from blackbox.core.executor import evaluate_rows
    from blackbox.problems.jax.device_noise import DeviceNoise, compact_arrays

    problem = bb.make_problem(f"gymnax:CartPole-v1,hidden=[{HIDDEN}]")
    es = bb.make_strategy("openai-es", dim=problem.dim, popsize=popsize, sigma=0.1, lr=0.1, weight_decay=0.0,
                          x0=problem.initial_params(np.random.default_rng(0)), seed=0)
    loop_wall = call_wall = loop_cpu = call_cpu = 0.0
    for generation in range(generations + 1):
        w, c = time.perf_counter(), time.process_time()
        population = es.ask()
        seeds = np.arange(popsize) + generation * popsize
        result = evaluate_rows(problem, population, seeds)
        es.tell(result.fitness)
        w, c = time.perf_counter() - w, time.process_time() - c
        runtime = problem._compiled(problem.episodes)
        table = DeviceNoise.table(population, problem.device)
        arrays = jax.device_put(compact_arrays(population), problem.device)
        inputs = problem._inputs(seeds, problem.episodes)
        jax.block_until_ready((arrays, inputs))
        w2, c2 = time.perf_counter(), time.process_time()
        jax.block_until_ready(runtime["compact"](table, arrays, *inputs))
        w2, c2 = time.perf_counter() - w2, time.process_time() - c2
        if generation:  # the first generation compiles
            loop_wall, loop_cpu, call_wall, call_cpu = loop_wall + w, loop_cpu + c, call_wall + w2, call_cpu + c2
    return {"generation_wall": loop_wall / generations, "call_wall": call_wall / generations,
            "generation_cpu": loop_cpu / generations, "call_cpu": call_cpu / generations}


def unroll_profile(unrolls: tuple[int, ...] = (1, 2, 4, 8), popsize: int = 256, generations: int = 20,
                   seed: int = 0) -> list[dict[str, float]]:
    """CPU per generation of gymnax CartPole-v1 (MLP 16) at each ``unroll``, on the populations of one
    OpenAI-ES run: every generation's compact population is evaluated by each ``unroll`` in turn (checked
    bit-identical), compile apart; also the loop passes run (the batch's longest episode) per generation."""
    import blackbox as bb

    task = TASKS["cartpole"]
    problems = {k: bb.make_problem(f"gymnax:CartPole-v1,hidden=[{HIDDEN}],unroll={k}") for k in unrolls}
    first = problems[unrolls[0]]
    es = bb.make_strategy("openai-es", dim=first.dim, x0=start_vector(first, seed), seed=seed, popsize=popsize,
                          sigma=task.sigma, lr=task.lr, weight_decay=0.0)
    cpu = {k: 0.0 for k in unrolls}
    longest = counted = 0
    for generation in range(generations + 1):
        population = es.ask()
        seeds = seeds_for(task, generation, popsize, seed)
        results = {}
        for k, problem in problems.items():
            c = time.process_time()
            results[k] = problem.evaluate_population(population, seeds)
            if generation > 0:  # the first is the compile
                cpu[k] += time.process_time() - c
        reference = results[unrolls[0]]
        for k in unrolls:
            if results[k].fitness.tobytes() != reference.fitness.tobytes():
                raise AssertionError(f"unroll={k} changed the returns of generation {generation}")
        if generation > 0:
            longest += int(reference.steps.max())
            counted += int(reference.steps.sum())
        es.tell(reference.fitness)
    return [{"unroll": k, "cpu_ms": cpu[k] / generations * 1e3, "passes": longest / generations / k,
             "counted": counted / generations, "stepped": longest / generations * popsize} for k in unrolls]


def timed_generations(problem, es, popsize: int, generations: int, brax: bool) -> tuple[float, float, float, int, int]:
    """``generations + 1`` generations of ask -> ``evaluate_rows`` -> tell: the first one's wall time
    (compiling) apart, then the others' wall and CPU time, counted steps, and physics steps run (a Brax
    scan runs every episode to its end, done or not)."""
    from blackbox.core.executor import evaluate_rows
    from blackbox.problems.jax.batched import forget_programs

    forget_programs()  # the first generation compiles this problem's program, not an earlier problem's
    first = wall = cpu = 0.0
    steps = simulated = 0
    for generation in range(generations + 1):
        w, c = time.perf_counter(), time.process_time()
        population = es.ask()
        result = evaluate_rows(problem, population, np.arange(popsize) + generation * popsize)
        es.tell(result.fitness)
        w, c = time.perf_counter() - w, time.process_time() - c
        if generation == 0:
            first = w
            continue
        wall, cpu, steps = wall + w, cpu + c, steps + int(result.steps.sum())
        simulated += (len(population) * problem.episodes * problem.episode_length if brax
                      else int(result.steps.sum()))
    return first, wall, cpu, steps, simulated


def brax_throughput(popsize: int = 64, episode_length: int = 1000, generations: int = 3,
                    gym: bool = True, env: str = "hopper", backend: str = "spring") -> list[dict[str, float | str]]:
    """Env steps per second of whole generations: ``brax:hopper`` (one compiled call) against the gymnasium
    MuJoCo ``Hopper-v5`` path, same popsize, MLP, episode length and strategy; the first Brax generation
    (compiling) is timed apart. Steps are the counted ones (each episode until its first done), as the
    gym problem counts them; the Brax scan also runs the masked steps after a done."""
    import blackbox as bb

    specs = [(f"brax {env} ({backend}, one compiled call)",
              f"brax:{env},backend={backend},hidden=[{HIDDEN}],episode_length={episode_length}")]
    gym_env = GYM_TWINS.get(env)
    if gym and gym_env:
        specs.append((f"gymnasium {gym_env} (serial)",
                      f"gym:{gym_env},hidden=[{HIDDEN}],activation=tanh,max_episode_steps={episode_length}"))
    rows: list[dict[str, float | str]] = []
    for label, spec in specs:
        problem = bb.make_problem(spec)
        es = bb.make_strategy("openai-es", dim=problem.dim, popsize=popsize, sigma=0.05, lr=0.02, seed=0,
                              x0=problem.initial_params(np.random.default_rng(0)))
        first, wall, cpu, steps, simulated = timed_generations(problem, es, popsize, generations,
                                                               brax=spec.startswith("brax:"))
        close = getattr(problem, "close", None)
        if close is not None:
            close()
        rows.append({"contender": label, "first_wall": first, "wall": wall / generations, "cpu": cpu / generations,
                     "steps_per_wall_s": steps / wall, "steps_per_cpu_s": steps / cpu,
                     "simulated_per_wall_s": simulated / wall})
    return rows


def traffic(spec: str, popsize: int, generations: int = 3) -> dict[str, float]:
    """Bytes one generation moves host -> device (``jax.device_put`` of host arrays, and host arrays handed
    to the compiled calls) and device -> host (the compiled call's outputs, which the problem reads back
    whole: ``np.asarray`` on the CPU backend, ``jax.device_get`` elsewhere), counted by wrapping
    ``device_put`` and the compiled calls; the first generation (which also uploads the noise table, once
    per run) apart from the later ones. Beside it, what dense float32 rows would be."""
    import jax

    import blackbox as bb
    from blackbox.core.executor import evaluate_rows

    counted = {"up": 0, "down": 0}
    put = jax.device_put

    def host_bytes(tree: object) -> int:
        return sum(leaf.nbytes for leaf in jax.tree_util.tree_leaves(tree) if isinstance(leaf, np.ndarray))

    def counting_put(x, *args, **kwargs):
        counted["up"] += host_bytes(x)
        return put(x, *args, **kwargs)

    from blackbox.problems.jax.device_noise import DeviceNoise

    problem = bb.make_problem(spec)
    es = bb.make_strategy("openai-es", dim=problem.dim, popsize=popsize, sigma=0.1, lr=0.1, seed=0,
                          x0=problem.initial_params(np.random.default_rng(0)))
    DeviceNoise.clear()  # so that the first generation uploads the table, as in a fresh run
    runtime = problem._compiled(problem.episodes)

    def counting_call(compiled):
        def call(*args):  # host arrays handed to the compiled call go up in its dispatch
            counted["up"] += host_bytes(args)
            outputs = compiled(*args)
            counted["down"] += sum(leaf.nbytes for leaf in jax.tree_util.tree_leaves(outputs))  # all read back
            return outputs
        return call

    runtime.update(dense=counting_call(runtime["dense"]), compact=counting_call(runtime["compact"]))
    per_generation = []
    jax.device_put = counting_put
    try:
        for generation in range(generations + 1):
            counted.update(up=0, down=0)
            population = es.ask()
            result = evaluate_rows(problem, population, np.arange(len(population)) + generation * len(population))
            es.tell(result.fitness)
            per_generation.append(dict(counted))
    finally:
        jax.device_put = put
    later = per_generation[1:]
    return {"spec": spec, "popsize": len(population), "dim": problem.dim,
            "first_up": per_generation[0]["up"], "up": float(np.median([g["up"] for g in later])),
            "down": float(np.median([g["down"] for g in later])), "dense_up": 4.0 * len(population) * problem.dim}


def traffic_table(t: dict[str, float]) -> list[str]:
    return [f"| host <-> device per generation, {t['spec']}, popsize {t['popsize']}, dim {t['dim']} | bytes |",
            "|---|---|",
            f"| host -> device, first generation (noise table uploaded once per run) | {t['first_up']:,.0f} |",
            f"| host -> device, each later generation | {t['up']:,.0f} |",
            f"| device -> host, each generation (returns, lengths, statistics) | {t['down']:,.0f} |",
            f"| for scale: the population as dense float32 rows | {t['dense_up']:,.0f} |"]


def torch_layout(row: np.ndarray, sizes: tuple[int, ...]) -> np.ndarray:
    """blackbox's MLP row (per layer: an (in, out) kernel row-major, then the bias) in torch's order
    (per ``nn.Linear``: its (out, in) weight, then the bias), so both contenders start from one policy."""
    parts, at = [], 0
    for a, b in zip(sizes[:-1], sizes[1:]):
        parts += [row[at: at + a * b].reshape(a, b).T.reshape(-1), row[at + a * b: at + a * b + b]]
        at += a * b + b
    return np.concatenate(parts)


def evotorch_brax(python: str, env: str = "ant", popsize: int = 64, episode_length: int = 1000,
                  generations: int = 3, sigma: float = 0.05, shim: bool = True,
                  timeout: float = 1800.0) -> list[dict[str, float | str]]:
    """Env steps per second of whole ``brax:<env>`` generations, blackbox against EvoTorch's VecGymNE, side by
    side: same Brax env and backend (spring), episode length, popsize, MLP (16 tanh, tanh actions), start
    vector and strategy (SNES, sigma ``sigma``); EvoTorch runs in ``python`` (its own interpreter, as a
    subprocess: :mod:`evotorch_brax`). Steps are counted as both count them (each episode until its first
    done); the first generation (compiling) is timed apart; the load average is taken before each."""
    import blackbox as bb

    problem = bb.make_problem(f"brax:{env},hidden=[{HIDDEN}],episode_length={episode_length}")
    x0 = problem.initial_params(np.random.default_rng(0))
    rows: list[dict[str, float | str]] = []
    load = os.getloadavg()[0]
    es = bb.make_strategy("snes", dim=problem.dim, popsize=popsize, sigma=sigma, seed=0, x0=x0)
    first, wall, cpu, steps, _ = timed_generations(problem, es, popsize, generations, brax=True)
    rows.append({"contender": f"blackbox brax:{env} (one compiled call)", "first_wall": first,
                 "wall": wall / generations, "cpu": cpu / generations, "steps_per_wall_s": steps / wall,
                 "steps_per_cpu_s": steps / cpu, "load": load})
    sizes = problem.policy.sizes
    options = {"env": env, "backend": problem.backend, "episode_length": episode_length, "popsize": popsize,
               "hidden": HIDDEN, "sigma": sigma, "generations": generations, "shim": shim,
               "x0": torch_layout(x0, sizes).tolist()}
    rows.append(evotorch_row(python, options, timeout))
    return rows


def evotorch_row(python: str, options: dict, timeout: float = 1800.0) -> dict[str, float | str]:
    """Run :mod:`evotorch_brax` in ``python`` with ``options``; its row of the table, or the row with the last line
    of its error when it does not run (a missing EvoTorch, a JAX it does not know)."""
    import json
    import subprocess

    peer = os.path.join(os.path.dirname(os.path.abspath(__file__)), "evotorch_brax.py")
    load = os.getloadavg()[0]
    label = f"EvoTorch VecGymNE brax::{options['env']}"
    try:  # the child's CPU time is read in the child itself (JAX's and torch's threads in one process)
        done = subprocess.run([python, peer, json.dumps(options)], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"contender": label, "error": f"{type(exc).__name__}: {exc}", "load": load}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"contender": label, "error": (done.stderr.strip().splitlines() or ["no output"])[-1], "load": load}
    peer_result = json.loads(lines[-1])
    restored = peer_result["restored"]
    versions = peer_result["versions"]
    generations = options["generations"]
    return {"contender": f"EvoTorch {versions['evotorch']} VecGymNE brax::{options['env']} (torch {versions['torch']}"
                         + (f"; JAX names restored: {', '.join(restored)}" if restored else "") + ")",
            "first_wall": peer_result["first_wall"], "wall": peer_result["wall"], "cpu": peer_result["cpu"],
            "steps_per_wall_s": peer_result["steps"] / (peer_result["wall"] * generations),
            "steps_per_cpu_s": peer_result["steps"] / (peer_result["cpu"] * generations), "load": load}


def evotorch_table(measured: list[dict[str, float | str]], popsize: int, episode_length: int) -> list[str]:
    """The Markdown table of :func:`evotorch_brax`'s rows; a contender that did not run shows its error."""
    lines = [f"| brax ant (spring), popsize {popsize}, {episode_length}-step episodes, MLP {HIDDEN}, SNES "
             "| first generation, wall s | generation, wall s | generation, CPU s | steps/s (wall) | steps/s (CPU) "
             "| load before |", "|---|---|---|---|---|---|---|"]
    for m in measured:
        if "error" in m:
            lines.append(f"| {m['contender']} | does not run: `{m['error']}` | | | | | {m['load']:.1f} |")
        else:
            lines.append(f"| {m['contender']} | {m['first_wall']:.1f} | {m['wall']:.2f} | {m['cpu']:.2f} | "
                         f"{m['steps_per_wall_s']:,.0f} | {m['steps_per_cpu_s']:,.0f} | {m['load']:.1f} |")
    return lines


def table(outcomes: list[Outcome]) -> list[str]:
    lines = ["| task | contender | solved | generations (median) | time to solve, wall s (median) | CPU s (median) "
             "| compile s | env steps (median) |", "|---|---|---|---|---|---|---|---|"]
    keys = list(dict.fromkeys((o.task, o.contender) for o in outcomes))
    for task, contender in keys:
        runs = [o for o in outcomes if (o.task, o.contender) == (task, contender)]
        solved = [o for o in runs if o.generations is not None]
        def med(f, solved=solved):
            return f"{np.median([f(o) for o in solved]):.3g}" if solved else "-"

        lines.append(f"| {task} | {contender} | {len(solved)}/{len(runs)} | {med(lambda o: o.generations)} | "
                     f"{med(lambda o: o.wall)} | {med(lambda o: o.cpu)} | "
                     f"{np.median([o.compile_wall for o in runs]):.2f} | {med(lambda o: o.steps)} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--strategies", nargs="+", default=["openai-es", "snes"], choices=["openai-es", "snes"],
                        help="blackbox's strategies (each against its evosax twin: Open_ES, SNES)")
    parser.add_argument("--gym", action=argparse.BooleanOptionalAction, default=True,
                        help="also time the project's gymnasium path")
    parser.add_argument("--gym-max-seconds", type=float, default=120.0,
                        help="stop a gymnasium run unsolved after this long")
    parser.add_argument("--init", choices=["es", "fan_in"], default="es",
                        help="the gymnax policy's start rows: es (the ES paper's, the gym problem's: both paths then "
                             "start from the same policy) or fan_in (the gymnax problem's default)")
    parser.add_argument("--overhead-generations", type=int, default=20)
    parser.add_argument("--markdown", default=None)
    parser.add_argument("--brax", action=argparse.BooleanOptionalAction, default=False,
                        help="also time brax:hopper generations against gymnasium's Hopper-v5")
    parser.add_argument("--brax-popsize", type=int, default=64)
    parser.add_argument("--brax-episode-length", type=int, default=1000)
    parser.add_argument("--brax-generations", type=int, default=3)
    parser.add_argument("--brax-env", nargs="+", default=["hopper"], help="the Brax environments of the Brax table")
    parser.add_argument("--brax-backend", default="spring", help="its Brax pipeline (spring, positional, "
                        "generalized, mjx)")
    parser.add_argument("--traffic", action=argparse.BooleanOptionalAction, default=True,
                        help="measure the bytes a generation moves between host and device")
    parser.add_argument("--evotorch-python", default=None,
                        help="an interpreter with evotorch, torch and brax: time brax:ant generations against "
                             "EvoTorch's VecGymNE run in it (popsize, episode length, generations: --brax-*)")
    parser.add_argument("--evotorch-shim", action=argparse.BooleanOptionalAction, default=True,
                        help="restore the JAX names EvoTorch 0.6.1 calls and JAX >= 0.7 removed "
                             "(--no-evotorch-shim: EvoTorch as shipped, which stops at the first)")
    parser.add_argument("--unroll-profile", type=int, default=0, metavar="GENERATIONS",
                        help="time gymnax CartPole-v1 generations at unroll 1, 2, 4, 8 on one run's populations")
    args = parser.parse_args(argv)
    outcomes: list[Outcome] = []
    failures: list[str] = []
    for name in args.only:
        task = TASKS[name]
        gymnax_spec = f"gymnax:{task.env},hidden=[{HIDDEN}],episodes={task.episodes},init={args.init}"
        gym_spec = (f"gym:{task.env},hidden=[{HIDDEN}],activation=tanh,episodes={task.episodes}"
                    + (",shared_seed=true" if task.shared else ""))
        for seed in range(args.seeds):
            for strategy, peer in (("openai-es", "Open_ES"), ("snes", "SNES")):
                if strategy not in args.strategies:
                    continue
                outcomes.append(run_blackbox(task, strategy, seed, gymnax_spec, f"blackbox {strategy} (gymnax)"))
                try:
                    outcomes.append(run_evosax(task, peer, seed, args.init))
                except Exception as error:  # a peer that does not run here is reported, not fatal
                    failures.append(f"evosax {peer} on {task.env}: {type(error).__name__}: "
                                    f"{str(error).splitlines()[0] if str(error) else ''}")
                    outcomes.append(Outcome(f"evosax {peer}", task.env, seed, None, 0.0, 0.0, 0.0, 0))
                if args.gym:
                    outcomes.append(run_blackbox(task, strategy, seed, gym_spec, f"blackbox {strategy} (gymnasium)",
                                                 args.gym_max_seconds))
                print(*[f"{o.contender} {o.task} seed {o.seed}: {o.generations} gens, {o.wall:.2f} s"
                        for o in outcomes[-(3 if args.gym else 2):]], sep="\n", flush=True)
    if failures:
        print(*sorted(set(failures)), sep="\n", flush=True)
    lines = [f"Machine: {machine()}; JAX device: {jax_device()}; jax {version('jax')}, gymnax {version('gymnax')}, evosax {version('evosax')}, "
             f"numpy {version('numpy')}" + (f", brax {version('brax')}." if args.brax or args.evotorch_python else "."), "",
             *(table(outcomes) + [""] if outcomes else []),
             *([f"Did not run: {line}" for line in sorted(set(failures))] + [""] if failures else [])]
    if args.unroll_profile > 0:
        rows = unroll_profile(generations=args.unroll_profile)
        lines += [f"| popsize 256, CartPole-v1, MLP {HIDDEN}, {args.unroll_profile} generations | CPU per generation, "
                  "ms | vs unroll 1 | loop passes per generation | steps stepped / counted |", "|---|---|---|---|---|"]
        lines += [f"| unroll {r['unroll']} | {r['cpu_ms']:.2f} | {r['cpu_ms'] / rows[0]['cpu_ms']:.2f}x | "
                  f"{r['passes']:.0f} | {r['stepped']:,.0f} / {r['counted']:,.0f} |" for r in rows] + [""]
    if args.overhead_generations > 0:  # 0: no overhead table
        ov = overhead(generations=args.overhead_generations)
        share_wall = 1 - ov["call_wall"] / ov["generation_wall"]
        share_cpu = 1 - ov["call_cpu"] / ov["generation_cpu"]
        lines += ["| popsize 1,024, CartPole-v1, MLP 16 | generation (ask, expand, rollout, tell) | compiled rollout alone "
                  "| blackbox's share |", "|---|---|---|---|",
                  f"| wall, ms | {ov['generation_wall'] * 1e3:.2f} | {ov['call_wall'] * 1e3:.2f} | {share_wall:.1%} |",
                  f"| CPU, ms | {ov['generation_cpu'] * 1e3:.2f} | {ov['call_cpu'] * 1e3:.2f} | {share_cpu:.1%} |"]
    if args.brax:
        measured = [row for env in args.brax_env
                    for row in brax_throughput(args.brax_popsize, args.brax_episode_length, args.brax_generations,
                                               args.gym, env, args.brax_backend)]
        lines += ["", f"| popsize {args.brax_popsize}, {args.brax_episode_length}-step episodes, MLP {HIDDEN} "
                  "| first generation, wall s | generation, wall s | generation, CPU s | steps/s (wall) "
                  "| steps/s (CPU) | physics steps run/s (wall) |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {m['contender']} | {m['first_wall']:.1f} | {m['wall']:.2f} | {m['cpu']:.2f} | "
                  f"{m['steps_per_wall_s']:,.0f} | {m['steps_per_cpu_s']:,.0f} | {m['simulated_per_wall_s']:,.0f} |"
                  for m in measured]
        lines += ["", "Steps are the counted ones (each episode until its first done); a Brax generation also "
                  "runs the masked steps after a done, counted in the last column."]
    if args.traffic:
        lines += ["", *traffic_table(traffic(f"gymnax:CartPole-v1,hidden=[{HIDDEN}]", 1024))]
    if args.evotorch_python:
        measured = evotorch_brax(args.evotorch_python, "ant", args.brax_popsize, args.brax_episode_length,
                                 args.brax_generations, shim=args.evotorch_shim)
        lines += ["", *evotorch_table(measured, args.brax_popsize, args.brax_episode_length)]
    report(lines, args.markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
