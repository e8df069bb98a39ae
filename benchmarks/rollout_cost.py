"""Rollouts against the simulator's ceiling: environment steps per CPU-second, one worker.

    python benchmarks/rollout_cost.py [--envs HalfCheetah-v5 Hopper-v5 Humanoid-v5] [--rounds 3]
                                      [--steps 30000] [--popsize 64] [--profile]

For each task, four loops, measured in interleaved rounds (raw, lockstep, linear, MLP, raw, ...)
in this one process, each in CPU seconds of the process (so other processes' load skews the rates
less than it would wall time; it still costs cache, which is why the rounds are interleaved):

- **raw**: ``gymnasium.make(ENV)`` stepped ``--steps`` times by ``env.step(action)`` on uniform
  random actions drawn beforehand, reset when an episode ends; nothing else. The ceiling.
- **lockstep**: popsize + 1 such environments stepped in turn, one step each per round, the same
  number of steps: what stepping a whole generation side by side asks of the simulator and the
  caches, with nothing of ours.
- **blackbox linear / MLP 64-64**: ``problem.evaluate`` of popsize + 1 rows (one episode each,
  observation normalization on with every row collecting statistics, the worst case), repeated
  with fresh seeds until ``--steps`` steps were taken; the serial executor's path, with the group
  size the engine measured (printed).

Printed per task: min and median steps per CPU-second of each loop over the rounds, blackbox's
median over raw's median, and the load average. ``--profile`` adds a cProfile of the MLP loop on
the first task, grouped (simulator, gymnasium, policy, observation statistics, normalizer, rest).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one worker is one core: no BLAS threads

import argparse  # noqa: E402
import cProfile  # noqa: E402
import pstats  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import blackbox as bb  # noqa: E402
from blackbox.problems.gym.environment import make_gym_env  # noqa: E402


def _actions(env, count: int, seed: int) -> np.ndarray:
    space = env.action_space
    return np.random.default_rng(seed).uniform(space.low, space.high, (count, *space.shape)).astype(space.dtype)


def raw_rate(env_id: str, steps: int, seed: int) -> float:
    """Steps per CPU-second of one ``gymnasium.make`` environment's ``env.step``."""
    env = make_gym_env(env_id)  # gymnasium.make, its default wrappers, MuJoCo's model warning silenced
    actions = _actions(env, steps, seed)
    env.reset(seed=seed)
    started = time.process_time()
    for action in actions:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    elapsed = time.process_time() - started
    env.close()
    return steps / elapsed


def lockstep_rate(env_id: str, steps: int, envs: int, seed: int) -> float:
    """Steps per CPU-second of ``envs`` environments stepped in turn, one step each per round."""
    made = [make_gym_env(env_id) for _ in range(envs)]
    rounds = max(1, steps // envs)
    actions = _actions(made[0], rounds * envs, seed).reshape(rounds, envs, -1)
    for i, env in enumerate(made):
        env.reset(seed=seed + i)
    started = time.process_time()
    for k in range(rounds):
        for i, env in enumerate(made):
            _, _, terminated, truncated, _ = env.step(actions[k, i])
            if terminated or truncated:
                env.reset()
    elapsed = time.process_time() - started
    for env in made:
        env.close()
    return rounds * envs / elapsed


class Ours:
    """A gym problem and a population around its initial parameters (sigma 0.02)."""

    def __init__(self, env_id: str, policy: dict, popsize: int):
        self.problem = bb.make_problem("gym", env=env_id, obs_norm=True, obs_norm_prob=1.0, **policy)
        rng = np.random.default_rng(1)
        center = self.problem.initial_params(rng)
        self.params = center + 0.02 * rng.standard_normal((popsize + 1, self.problem.dim))
        self.params[-1] = center
        self.calls = 0
        self.run(1)  # warm-up: the engine (its group size measured), environments, caches

    def run(self, steps: int) -> float:
        """Generations with fresh seeds until ``steps`` steps; steps per CPU-second."""
        done, elapsed = 0, 0.0
        while done < steps:
            self.calls += 1
            seeds = np.arange(len(self.params)) + 1000 * self.calls
            started = time.process_time()
            result = self.problem.evaluate(self.params, seeds)
            elapsed += time.process_time() - started
            done += int(np.sum(result.steps))
        return done / elapsed


def measure(env_id: str, popsize: int, rounds: int, steps: int) -> dict:
    linear, mlp = Ours(env_id, {"policy": "linear"}, popsize), Ours(env_id, {}, popsize)
    rates: dict[str, list[float]] = {"raw": [], "lockstep": [], "linear": [], "mlp": []}
    for r in range(rounds):
        rates["raw"].append(raw_rate(env_id, steps, seed=r))
        rates["lockstep"].append(lockstep_rate(env_id, steps, popsize + 1, seed=r))
        rates["linear"].append(linear.run(steps))
        rates["mlp"].append(mlp.run(steps))
    groups = {"linear": linear.problem.group_size, "mlp": mlp.problem.group_size}
    linear.problem.close()
    mlp.problem.close()
    return {"rates": rates, "groups": groups}


def profile(env_id: str, popsize: int, steps: int) -> None:
    """Where the MLP loop's time goes, by function groups (cProfile's own time)."""
    ours = Ours(env_id, {}, popsize)
    profiler = cProfile.Profile()
    profiler.enable()
    ours.run(steps)
    profiler.disable()
    stats = pstats.Stats(profiler)
    groups = {"mj_step (MuJoCo)": 0.0, "MuJoCo env (gymnasium's Python)": 0.0, "gymnasium wrappers": 0.0,
              "policy forward": 0.0, "observation statistics": 0.0, "normalizer": 0.0, "actions": 0.0,
              "rollout loop and slots": 0.0, "other": 0.0}
    def group_of(path: str, name: str) -> str:
        if "mj_step" in name:
            return "mj_step (MuJoCo)"
        if "envs/mujoco" in path:
            return "MuJoCo env (gymnasium's Python)"
        if "gymnasium" in path:
            return "gymnasium wrappers"
        if "policies.py" in path:
            return "policy forward"
        if "obs_norm.py" in path:
            return "normalizer" if name == "__call__" else "observation statistics"
        if "actions.py" in path:
            return "actions"
        if "rollout.py" in path or "slots.py" in path:
            return "rollout loop and slots"
        return "other"

    total = 0.0
    for (path, _, name), (_, _, tottime, _, callers) in stats.stats.items():  # type: ignore[attr-defined]
        total += tottime
        if path == "~" and "mj_step" not in name and callers:  # a builtin (numpy...): charged to its callers
            for (cpath, _, cname), caller in callers.items():
                groups[group_of(cpath, cname)] += caller[2]
        else:
            groups[group_of(path, name)] += tottime
    print(f"\nprofile of the MLP loop on {env_id} (cProfile own time, {total:.2f} s under the profiler; "
          f"builtins such as numpy's are charged to the Python function that called them):")
    for key, seconds in sorted(groups.items(), key=lambda kv: -kv[1]):
        print(f"  {key:34s} {seconds / total:6.1%}")
    print("  top 12 functions by own time:")
    stats.sort_stats("tottime").print_stats(12)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=["HalfCheetah-v5", "Hopper-v5", "Humanoid-v5"])
    parser.add_argument("--popsize", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30000)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    print(f"popsize {args.popsize} + center, 1 process, obs_norm on (every row collects), {args.steps} steps per "
          f"loop, {args.rounds} interleaved rounds; steps per CPU-second (process time)")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    print("| task | raw env.step min / median | lockstep (popsize+1 envs) min / median | blackbox linear min / median "
          "| blackbox MLP 64-64 min / median | linear / raw | MLP / raw | lockstep / raw | group (linear, MLP) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for env_id in args.envs:
        m = measure(env_id, args.popsize, args.rounds, args.steps)
        r = {k: (min(v), statistics.median(v)) for k, v in m["rates"].items()}
        raw = r["raw"][1]
        cells = " | ".join(f"{r[k][0]:,.0f} / {r[k][1]:,.0f}" for k in ("raw", "lockstep", "linear", "mlp"))
        print(f"| {env_id} | {cells} | {r['linear'][1] / raw:.2f}x | {r['mlp'][1] / raw:.2f}x | "
              f"{r['lockstep'][1] / raw:.2f}x | {m['groups']['linear']}, {m['groups']['mlp']} |", flush=True)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.profile:
        profile(args.envs[0], args.popsize, args.steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
