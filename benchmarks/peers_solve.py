"""Solving RL tasks against EvoTorch on the same cores: wall time and environment steps to a goal.

    python benchmarks/peers_solve.py cartpole [--seeds 5] [--only blackbox evotorch] [--json OUT.json]
    python benchmarks/peers_solve.py mujoco [--env HalfCheetah-v5] [--max-seconds 300] [--seeds 3]
                                            [--goal RETURN]

Every run is a fresh Python process (so Ray, torch threads and caches never leak from one run into
the next) that prints one JSON line. Wall time runs from building the problem (imports excluded),
so it includes starting workers (loky processes, Ray actors).

CartPole-v1 (``cartpole``): one "solved" criterion for every contender, measured the same way.
After each generation the center of the search distribution plays one episode (counted in the
environment steps and the wall time: part of training); when that episode reaches 475, the same
center plays 20 fresh episodes and the run is solved when their mean reaches 475. Confirmation
episodes are left out of the steps and the wall time on both sides (they measure, they do not
train). A run gets ``--max-seconds`` (300 s).

MuJoCo (``mujoco``, HalfCheetah-v5 by default): every contender trains for the same wall-time budget
(``--max-seconds``, 300 s) and keeps a snapshot of its center (with its observation statistics)
after every generation. After training, outside the timing, up to 30 snapshots spread over the run
(and the last) play 5 fresh episodes each; that gives each run a learning curve of the center's mean
return against wall time and environment steps. The goal is EvoTorch's return: the best median
(over seeds) of the best return a configuration of EvoTorch reached within the budget, unless
``--goal`` fixes it; the table gives each contender's time and steps to the goal (median, worst).

Contenders:

- blackbox: the presets ``blackbox run --problem gym:<env>`` uses. OpenAI-ES (CartPole-v1: popsize
  256, sigma 0.1, lr 0.1; MuJoCo: the paper's sigma 0.02, Adam lr 0.01, L2 0.005, popsize 64,
  observation normalization; the default 2x64 tanh MLP) serial (one core), for CartPole-v1 also on
  two loky workers; for CartPole-v1 also SNES (sigma 0.1, popsize 4 + 3 ln n), serial; for MuJoCo also SNES with
  EvoTorch's recipe (linear policy, initial radius 0.225, popsize 4 + 3 ln n; observation
  normalization from every episode, as EvoTorch does (the paper's 1% would leave a population of 18
  with almost no statistics for many generations); actions
  squashed into the bounds by tanh where EvoTorch clips), serial and on two loky workers. The environments are seeded from the run seed, so a blackbox run repeats exactly.
- evotorch: ``GymNE`` (one gymnasium environment per actor, the policy called once per step) and
  ``VecGymNE`` (a gymnasium vector environment, the population's policies batched), with ``PGPE``
  and ``SNES``, in the main process and on two Ray actors. CartPole-v1 uses the settings of
  EvoTorch's own CartPole example (``examples/notebooks/Functional_API/problem.ipynb``: policy
  ``Linear(obs_length, 16) >> Tanh() >> Linear(16, act_length)``, observation normalization, PGPE
  popsize 100, ClipUp with max speed 0.15, center learning rate 0.1125, radius 2.25, stdev
  learning rate 0.1, max change 0.2); SNES takes EvoTorch's defaults (popsize 4 + 3 ln n, its
  learning rates) with the same initial radius. MuJoCo uses EvoTorch's own locomotion settings
  (``examples/scripts/rl_clipup.py``, its Walker2d configuration: linear policy, observation
  normalization, PGPE popsize 100 growing up to 800 until 75,000 interactions per generation,
  ClipUp max speed 0.015, center learning rate 0.01125, radius 0.225; HalfCheetah has no alive
  bonus to remove); SNES again with EvoTorch's defaults and the same radius. On MuJoCo, PGPE runs
  batched (VecGymNE) only: with at least 75,000 steps a generation, GymNE on two actors gets a handful
  of generations within the budget. EvoTorch does not
  seed its environments, so its runs do not repeat; torch is seeded.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

#: Snapshots evaluated after a MuJoCo run (spread over the run; the last one always).
MAX_SNAPSHOT_EVALS = 30


@dataclass
class Task:
    """What "solved" means, and the budget of one run. ``goal`` None: EvoTorch's return (mujoco)."""

    key: str
    env: str
    goal: float | None
    goal_episodes: int
    max_seconds: float
    max_generations: int

    @property
    def curve(self) -> bool:
        """True for the learning-curve protocol (fixed wall time, snapshots scored afterwards)."""
        return self.key != "cartpole"

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Contender:
    """One library and configuration; ``config`` is passed to the child process as JSON."""

    label: str
    library: str
    config: dict[str, Any] = field(default_factory=dict)


CARTPOLE = Task("cartpole", "CartPole-v1", 475.0, 20, 300.0, 1000)
MUJOCO = Task("mujoco", "HalfCheetah-v5", None, 5, 300.0, 100000)

EVOTORCH_CARTPOLE_NET = "Linear(obs_length, 16) >> Tanh() >> Linear(16, act_length)"
EVOTORCH_CARTPOLE_PGPE = {"popsize": 100, "center_learning_rate": 0.1125, "stdev_learning_rate": 0.1,
                          "stdev_max_change": 0.2, "radius_init": 2.25, "optimizer": "clipup",
                          "optimizer_config": {"max_speed": 0.15}, "ranking_method": "centered"}
EVOTORCH_CARTPOLE_SNES = {"radius_init": 2.25}
EVOTORCH_MUJOCO_NET = "Linear(obs_length, act_length)"
EVOTORCH_MUJOCO_PGPE = {"popsize": 100, "popsize_max": 800, "num_interactions": 75000,
                        "center_learning_rate": 0.01125, "stdev_learning_rate": 0.1, "stdev_max_change": 0.2,
                        "radius_init": 0.225, "optimizer": "clipup",
                        "optimizer_config": {"max_speed": 0.015, "momentum": 0.9}}
EVOTORCH_MUJOCO_SNES = {"radius_init": 0.225}


def contenders(task: Task, workers: int = 2) -> list[Contender]:
    """The configurations compared on ``task``."""
    ours = [Contender("openai-es, serial (1 core)", "blackbox", {"strategy": "openai-es", "executor": "serial"})]
    if task.key == "cartpole":
        ours.append(Contender(f"openai-es, loky x{workers}", "blackbox",
                              {"strategy": "openai-es", "executor": f"loky:workers={workers}"}))
        ours.append(Contender("snes, serial (1 core)", "blackbox", {"strategy": "snes", "executor": "serial"}))
    else:  # EvoTorch's best MuJoCo recipe (SNES, linear policy, radius 0.225) in blackbox
        for executor, where in (("serial", "serial (1 core)"), (f"loky:workers={workers}", f"loky x{workers}")):
            ours.append(Contender(f"snes, linear policy, {where}", "blackbox",
                                  {"strategy": "snes", "executor": executor, "radius": EVOTORCH_MUJOCO_SNES["radius_init"],
                                   "problem": {"policy": "linear", "obs_norm_prob": 1.0}}))
    net = EVOTORCH_CARTPOLE_NET if task.key == "cartpole" else EVOTORCH_MUJOCO_NET
    pgpe = EVOTORCH_CARTPOLE_PGPE if task.key == "cartpole" else EVOTORCH_MUJOCO_PGPE
    snes = EVOTORCH_CARTPOLE_SNES if task.key == "cartpole" else EVOTORCH_MUJOCO_SNES
    theirs = []
    for problem in ("GymNE", "VecGymNE"):
        for algorithm, options in (("PGPE", pgpe), ("SNES", snes)):
            for actors in (None, workers):
                if task.key != "cartpole" and (actors is None) != (problem == "VecGymNE"):
                    continue  # MuJoCo: GymNE on the Ray actors, VecGymNE batched in the main process
                if task.key != "cartpole" and problem == "GymNE" and algorithm == "PGPE":
                    continue  # >= 75,000 steps a generation: a handful of generations within the budget
                where = "main process" if actors is None else f"{actors} Ray actors"
                theirs.append(Contender(f"{problem} + {algorithm}, {where}", "evotorch",
                                        {"problem": problem, "algorithm": algorithm, "options": options,
                                         "network": net, "actors": actors}))
    return ours + theirs


# -- the child processes ---------------------------------------------------------------------------
def child_blackbox(task: Task, config: dict, seed: int) -> dict:
    import blackbox as bb
    from blackbox.driver.loop import Callback
    from blackbox.driver.stop import ConfirmGoal
    from blackbox.problems.gym.presets import recommended

    preset = recommended(task.env, config["strategy"])
    started = time.perf_counter()
    problem_options = {**preset["problem"], **config.get("problem", {})}
    problem = bb.make_problem("gym", env=task.env, **problem_options)
    options = {**preset["strategy"], **config.get("options", {})}
    if "radius" in config:  # EvoTorch's radius_init: the norm of the initial stdev vector
        options["sigma"] = config["radius"] / math.sqrt(problem.dim)
    strategy = bb.make_strategy(config["strategy"], dim=problem.dim, seed=seed,
                                x0=problem.initial_params(np.random.default_rng(seed)), **options)
    confirm_seconds = [0.0]
    score = problem.score

    def timed_score(*args, **kwargs):
        t = time.perf_counter()
        try:
            return score(*args, **kwargs)
        finally:
            confirm_seconds[0] += time.perf_counter() - t

    problem.score = timed_score
    snapshots: list[tuple] = []

    class Snapshots(Callback):
        def on_generation(self, run, record):
            snapshots.append((time.perf_counter() - started, int(record.steps), run.strategy.center.copy(),
                              copy.deepcopy(problem.state_dict())))

    stop, callbacks = [], []
    if task.curve:
        callbacks.append(Snapshots())
    else:
        stop.append(ConfirmGoal(task.goal, task.goal_episodes))
    executor = bb.make_executor(config["executor"])
    try:
        result = bb.optimize(strategy, problem, executor, generations=task.max_generations,
                             max_time=task.max_seconds, seed=seed, stop=stop, callbacks=callbacks)
    finally:
        executor.close()
    wall = time.perf_counter() - started - confirm_seconds[0]
    out = {"wall": wall, "steps": int(result.steps), "generations": int(result.generations),
           "policy": problem.describe()["policy"], "dim": problem.dim}
    if not task.curve:
        summary = stop[0].summary()
        return {**out, "solved": summary["solved"], "confirmed": summary["confirmed_mean"],
                "checks": summary["checks"]}
    judge = bb.make_problem("gym", env=task.env, **problem_options)

    def evaluate(snapshot, k):
        judge.load_state_dict(snapshot[3])
        return float(np.mean(judge.score(snapshot[2], task.goal_episodes, seed=2 * 10**9 + 1000 * seed + k)))

    return {**out, "curve": score_snapshots(snapshots, evaluate)}


def score_snapshots(snapshots: list[tuple], evaluate) -> list[list[float]]:
    """``[wall, steps, mean return]`` of up to MAX_SNAPSHOT_EVALS snapshots spread over the run."""
    if not snapshots:
        return []
    picks = np.unique(np.linspace(0, len(snapshots) - 1, min(MAX_SNAPSHOT_EVALS, len(snapshots))).round().astype(int))
    return [[float(snapshots[k][0]), int(snapshots[k][1]), evaluate(snapshots[k], int(k))] for k in picks]


class CenterPolicy:
    """EvoTorch's center as EvoTorch's own rollouts run it: observations normalized with the
    problem's statistics (a snapshot), then the network in float32; discrete actions by argmax.

    ``to_policy``'s wrapper modules are not used: VecGymNE's normalizer keeps float64 statistics for
    float64 observations (MuJoCo) and its wrapped network then fails on the dtype, while its own
    rollouts cast the normalized observations to the network's dtype, as done here.
    """

    def __init__(self, problem: Any, center: Any, vectorized: bool):
        self.vectorized = vectorized
        if vectorized:
            self.net = problem.to_policy(center, with_wrapper_modules=False)
        else:
            self.net = problem.make_net(center)
        self.net.eval()
        stats = problem.get_observation_stats() if problem.observation_normalization else None
        self.stats = copy.deepcopy(stats) if stats is not None and _count(stats) > 0 else None

    def __call__(self, obs: np.ndarray):
        import torch

        x = obs
        if self.stats is not None:
            x = self.stats.normalize(torch.as_tensor(obs) if self.vectorized else np.asarray(obs, dtype=np.float32))
        return self.net(torch.as_tensor(np.asarray(x), dtype=torch.float32))


def _count(stats: Any) -> int:
    count = getattr(stats, "count", None)
    if count is None:
        count = getattr(stats, "_count", 0)
    return int(count)


class CenterEpisodes:
    """Plays a policy (a callable from an observation to the network's output) one episode at a time."""

    def __init__(self, env_id: str):
        import gymnasium as gym

        self.env = gym.make(env_id)
        self.discrete = isinstance(self.env.action_space, gym.spaces.Discrete)

    def play(self, policy, seed: int) -> tuple[float, int]:
        import torch

        obs, _ = self.env.reset(seed=int(seed))
        total, steps = 0.0, 0
        with torch.no_grad():
            while True:
                out = policy(obs)
                if self.discrete:
                    action = int(torch.argmax(out))
                else:
                    space = self.env.action_space
                    action = np.clip(out.numpy().reshape(space.shape), space.low, space.high)
                obs, reward, terminated, truncated, _ = self.env.step(action)
                total += float(reward)
                steps += 1
                if terminated or truncated:
                    return total, steps


def child_evotorch(task: Task, config: dict, seed: int) -> dict:
    import torch
    from evotorch.algorithms import PGPE, SNES
    from evotorch.neuroevolution import GymNE, VecGymNE

    torch.manual_seed(seed)
    np.random.seed(seed)
    actors = config["actors"]
    if actors:
        import ray

        ray.init(num_cpus=actors, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    started = time.perf_counter()
    problem_cls = GymNE if config["problem"] == "GymNE" else VecGymNE
    problem = problem_cls(task.env, config["network"], observation_normalization=True, num_actors=actors)
    algorithm = PGPE if config["algorithm"] == "PGPE" else SNES
    searcher = algorithm(problem, **config["options"])
    episodes = CenterEpisodes(task.env)
    center_steps, confirm_seconds, checks = 0, 0.0, 0
    solved, confirmed, generation = False, None, 0
    snapshots: list[tuple] = []

    def steps_so_far() -> int:
        return int(searcher.status.get("total_interaction_count", 0)) + center_steps

    while generation < task.max_generations and time.perf_counter() - started - confirm_seconds < task.max_seconds:
        searcher.step()
        generation += 1
        t = time.perf_counter()
        policy = CenterPolicy(problem, searcher.status["center"], config["problem"] == "VecGymNE")
        if task.curve:  # a snapshot (its statistics copied: they change in place as training goes on)
            confirm_seconds += time.perf_counter() - t
            snapshots.append((time.perf_counter() - started - confirm_seconds, steps_so_far(), policy))
            continue
        ret, length = episodes.play(policy, seed=10**6 * (seed + 1) + generation)
        center_steps += length
        if ret >= task.goal:
            t = time.perf_counter()
            returns = [episodes.play(policy, seed=2 * 10**9 + 1000 * generation + k)[0]
                       for k in range(task.goal_episodes)]
            confirm_seconds += time.perf_counter() - t
            checks += 1
            confirmed = float(np.mean(returns))
            if confirmed >= task.goal:
                solved = True
                break
    wall = time.perf_counter() - started - confirm_seconds
    out = {"wall": wall, "steps": steps_so_far(), "generations": generation,
           "popsize": int(searcher.status.get("popsize", 0) or 0), "dim": int(problem.solution_length)}
    if actors:
        problem.kill_actors()
    if not task.curve:
        return {**out, "solved": solved, "confirmed": confirmed, "checks": checks}

    def evaluate(snapshot, k):
        return float(np.mean([episodes.play(snapshot[2], seed=2 * 10**9 + 1000 * seed + 100 * k + e)[0]
                              for e in range(task.goal_episodes)]))

    return {**out, "curve": score_snapshots(snapshots, evaluate)}


def child_main(payload: str) -> None:
    spec = json.loads(payload)
    task = Task(**spec["task"])
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    run = child_blackbox if spec["library"] == "blackbox" else child_evotorch
    out = run(task, spec["config"], int(spec["seed"]))
    print("RESULT " + json.dumps(out), flush=True)


# -- the parent --------------------------------------------------------------------------------------
def run_one(task: Task, contender: Contender, seed: int) -> dict:
    """Run one contender on one seed in a fresh process; a failure comes back as ``error``."""
    payload = json.dumps({"task": task.as_dict(), "library": contender.library, "config": contender.config,
                          "seed": seed})
    limit = task.max_seconds * 2 + 300  # training, then (MuJoCo) scoring the snapshots
    try:
        done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", payload],
                              capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return {"error": f"no result within {limit:.0f} s"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    tail = [line for line in (done.stderr or done.stdout).strip().splitlines() if "WARNING" not in line][-3:]
    return {"error": f"exit {done.returncode}: " + " | ".join(tail)[-300:]}


def library_available(library: str) -> str | None:
    """None when the library imports, else the reason it does not."""
    module = {"blackbox": "blackbox", "evotorch": "evotorch"}[library]
    try:
        __import__(module)
    except Exception as exc:  # noqa: BLE001 - any import failure means: skip, with the reason
        return f"{module} does not import ({type(exc).__name__}: {exc})"
    return None


def measure(task: Task, seeds: int, libraries: list[str] | None = None, labels: list[str] | None = None,
            workers: int = 2, log=print) -> dict:
    """Every contender on seeds 0..seeds-1; returns the runs and a summary per contender."""
    rows = []
    for contender in contenders(task, workers):
        if libraries and contender.library not in libraries:
            continue
        if labels and not any(text in contender.label for text in labels):
            continue
        missing = library_available(contender.library)
        entry = {"label": contender.label, "library": contender.library, "config": contender.config, "runs": []}
        rows.append(entry)
        if missing:
            entry["skipped"] = missing
            log(f"  {contender.library} {contender.label}: skipped, {missing}")
            continue
        for seed in range(seeds):
            out = run_one(task, contender, seed)
            out["seed"] = seed
            entry["runs"].append(out)
            if "error" in out:
                log(f"  {contender.library} {contender.label} seed {seed}: {out['error']}")
            elif task.curve:
                best = max((c[2] for c in out["curve"]), default=math.nan)
                log(f"  {contender.library} {contender.label} seed {seed}: best return {best:.1f} in "
                    f"{out['wall']:.0f} s, {out['steps']:,} steps, {out['generations']} generations")
            else:
                log(f"  {contender.library} {contender.label} seed {seed}: solved={out['solved']} "
                    f"{out['wall']:.1f} s, {out['steps']:,} steps, {out['generations']} generations")
    goal = task.goal
    if task.curve:
        goal = task.goal if task.goal is not None else evotorch_return(rows)
        for entry in rows:
            for run in entry["runs"]:
                if "curve" in run:
                    reach(run, goal)
    for entry in rows:
        if "skipped" not in entry:
            entry.update(summarize(entry["runs"], task.curve))
    return {"task": task.as_dict(), "goal": goal, "seeds": seeds, "workers": workers, "contenders": rows}


def evotorch_return(rows: list[dict]) -> float | None:
    """The best median (over seeds) of the best return an EvoTorch configuration reached."""
    medians = []
    for entry in rows:
        bests = [max(c[2] for c in r["curve"]) for r in entry["runs"] if r.get("curve")]
        if entry["library"] == "evotorch" and bests:
            medians.append(statistics.median(bests))
    return max(medians) if medians else None


def reach(run: dict, goal: float | None) -> None:
    """Mark a curve run solved at the first scored snapshot whose mean return reaches ``goal``."""
    run["best_return"] = max(c[2] for c in run["curve"]) if run["curve"] else math.nan
    run["final_return"] = run["curve"][-1][2] if run["curve"] else math.nan
    hit = next((c for c in run["curve"] if goal is not None and c[2] >= goal), None)
    run["solved"] = hit is not None
    run["train_wall"], run["train_steps"] = run["wall"], run["steps"]
    if hit is not None:
        run["wall"], run["steps"] = hit[0], hit[1]


def summarize(runs: list[dict], curve: bool = False) -> dict:
    """Median and worst wall time and steps; an unsolved run counts as infinitely slow."""
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {"solved": 0, "runs_ok": 0}
    walls = [r["wall"] if r["solved"] else math.inf for r in ok]
    steps = [r["steps"] if r["solved"] else math.inf for r in ok]
    out = {"solved": sum(r["solved"] for r in ok), "runs_ok": len(ok),
           "wall_median": statistics.median(walls), "wall_worst": max(walls),
           "steps_median": statistics.median(steps), "steps_worst": max(steps)}
    if curve:
        out["best_return_median"] = statistics.median(r["best_return"] for r in ok)
        out["final_return_median"] = statistics.median(r["final_return"] for r in ok)
    return out


def _fmt(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    if math.isinf(value):
        return "not reached"
    return f"{value:,.1f}{unit}" if unit == " s" else f"{value:,.0f}"


def markdown(result: dict) -> str:
    """A table of the contenders and the ratio of EvoTorch's best median wall time to ours."""
    task, goal = result["task"], result["goal"]
    curve = task["key"] != "cartpole"
    extra = " | best return (median) | return at the end (median)" if curve else ""
    lines = []
    if curve:
        lines += [f"{task['env']}: {task['max_seconds']:.0f} s of training per run; goal "
                  f"{_fmt(goal)} = " + ("the --goal given" if task["goal"] is not None else
                                         "EvoTorch's return (best median of an EvoTorch configuration's best "
                                         "return within the budget)") + f"; returns are means of "
                  f"{task['goal_episodes']} fresh episodes of the center, scored after training.", ""]
    else:
        lines += [f"{task['env']}: solved when the center's mean return over {task['goal_episodes']} fresh "
                  f"episodes reaches {goal:g}; at most {task['max_seconds']:.0f} s per run.", ""]
    reached = "reached" if curve else "solved"
    lines += [f"| library | configuration | {reached} | wall median | wall worst | steps median | steps worst{extra} |",
              "|---|---|---|---|---|---|---|" + ("---|---|" if curve else "")]
    for row in result["contenders"]:
        if "skipped" in row:
            lines.append(f"| {row['library']} | {row['label']} | skipped: {row['skipped']} | | | | |"
                         + (" | |" if curve else ""))
            continue
        errors = [r["error"] for r in row["runs"] if "error" in r]
        solved = f"{row.get('solved', 0)}/{len(row['runs'])}" + (f" ({len(errors)} failed: {errors[0][:80]})"
                                                                  if errors else "")
        cells = (f"| {row['library']} | {row['label']} | {solved} | {_fmt(row.get('wall_median'), ' s')} | "
                 f"{_fmt(row.get('wall_worst'), ' s')} | {_fmt(row.get('steps_median'))} | "
                 f"{_fmt(row.get('steps_worst'))} |")
        if curve:
            cells += f" {_fmt(row.get('best_return_median'))} | {_fmt(row.get('final_return_median'))} |"
        lines.append(cells)
    best = best_of(result)
    if best["blackbox"] and best["evotorch"]:
        ours, theirs = best["blackbox"], best["evotorch"]
        ratio = ratio_of(result)
        verdict = (f"**{ratio:.1f}x** (EvoTorch's best / ours)" if ratio > 0 else
                   "ours did not reach the goal within the budget")
        lines += ["", f"Best median wall time to the goal: blackbox {ours['label']} {_fmt(ours['wall_median'], ' s')}, "
                      f"EvoTorch {theirs['label']} {_fmt(theirs['wall_median'], ' s')}: {verdict}."]
    return "\n".join(lines)


def ratio_of(result: dict) -> float:
    """EvoTorch's best median wall time over ours (an unreached median counts as the budget: a lower bound)."""
    best = best_of(result)
    if not (best["blackbox"] and best["evotorch"]):
        return math.nan
    budget = result["task"]["max_seconds"]
    theirs = best["evotorch"]["wall_median"]
    ours = best["blackbox"]["wall_median"]
    theirs = budget if math.isinf(theirs) else theirs
    return theirs / ours if ours > 0 else math.nan


def best_of(result: dict) -> dict[str, dict | None]:
    """Per library, the contender with the lowest median wall time (unsolved medians are infinite;
    among those, the highest median best return)."""
    def key(row: dict) -> tuple[float, float]:
        best_return = row.get("best_return_median")
        return row["wall_median"], -(best_return if best_return is not None else -math.inf)

    best: dict[str, dict | None] = {"blackbox": None, "evotorch": None}
    for row in result["contenders"]:
        if "wall_median" not in row:
            continue
        current = best.get(row["library"])
        if current is None or key(row) < key(current):
            best[row["library"]] = row
    return best


def plot(result: dict, path: str, title: str) -> None:
    """CartPole: wall time to solve per run. MuJoCo: the learning curves against wall time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in result["contenders"] if r.get("runs")]
    if result["task"]["key"] != "cartpole":
        fig, ax = plt.subplots(figsize=(8, 4.5))
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for k, row in enumerate(rows):
            for j, run in enumerate(r for r in row["runs"] if r.get("curve")):
                c = np.array(run["curve"])
                ax.plot(c[:, 0], c[:, 2], "-" if row["library"] == "blackbox" else "--", color=colors[k % len(colors)],
                        lw=1.2, label=f"{row['library']}: {row['label']}" if j == 0 else None)
        if result["goal"] is not None:
            ax.axhline(result["goal"], color="k", lw=0.8, ls=":", label=f"goal {result['goal']:.0f}")
        ax.set_xlabel("wall time (s)")
        ax.set_ylabel(f"center's mean return ({result['task']['goal_episodes']} fresh episodes)")
        ax.legend(fontsize=7)
    else:
        fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.5))
        for k, row in enumerate(rows):
            walls = [r["wall"] for r in row["runs"] if "error" not in r]
            solved = [r["solved"] for r in row["runs"] if "error" not in r]
            color = "tab:blue" if row["library"] == "blackbox" else "tab:orange"
            ax.scatter(walls, [k] * len(walls), c=[color if s else "lightgray" for s in solved], s=25, zorder=3)
            if "wall_median" in row and math.isfinite(row["wall_median"]):
                ax.plot([row["wall_median"]] * 2, [k - 0.3, k + 0.3], color=color, lw=2)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([f"{r['library']}: {r['label']}" for r in rows], fontsize=8)
        ax.set_xscale("log")
        ax.set_xlabel("wall time to solve (s, log scale; bar: median; gray: not solved)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", choices=["cartpole", "mujoco"])
    parser.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 (default: 5 cartpole, 3 mujoco)")
    parser.add_argument("--only", nargs="*", choices=["blackbox", "evotorch"], help="libraries to run")
    parser.add_argument("--labels", nargs="*", help="only contenders whose label contains one of these")
    parser.add_argument("--env", help="MuJoCo task (default HalfCheetah-v5)")
    parser.add_argument("--goal", type=float, help="return to reach (default: 475 cartpole, EvoTorch's return mujoco)")
    parser.add_argument("--max-seconds", type=float, help="wall-time cap of one run")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", help="write the runs to this JSON file")
    parser.add_argument("--plot", help="write a PNG of the wall times")
    args = parser.parse_args(argv)
    task = CARTPOLE if args.task == "cartpole" else MUJOCO
    task = Task(**{**task.as_dict(), **{k: v for k, v in (("env", args.env), ("goal", args.goal),
                                                           ("max_seconds", args.max_seconds)) if v is not None}})
    seeds = args.seeds or (5 if task.key == "cartpole" else 3)
    result = measure(task, seeds, args.only, args.labels, args.workers)
    print(markdown(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    if args.plot:
        plot(result, args.plot, task.env)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child_main(sys.argv[2])
    else:
        sys.exit(main())
