"""Rollouts against the simulator: a training generation's environment steps per second on 1 worker,
beside a bare gymnasium ``env.step`` loop, and the per-step cost broken down.

    python benchmarks/rollout_cost.py [--env HalfCheetah-v5] [--popsize 64] [--repeats 3]

For each policy (linear, the default 64x64 MLP), with observation normalization on (as the MuJoCo
presets run): one generation = ``problem.evaluate`` of popsize + 1 rows (the center too), one
episode each, in this process (the serial executor's path), against the bare loop: ``gym.make(ENV)``
stepped the same number of steps by ``env.step(action)`` on random actions drawn beforehand, and
nothing else; and the same bare loop over popsize + 1 environments stepped in turn, one step each
per round (what a batched generation asks of the simulator: switching between many simulators'
memory costs ~10% on HalfCheetah, apart from anything of ours). They are
measured interleaved (bare, ours, bare, ours, ...) and the medians compared, so a change in the
machine's load hits both. The breakdown per environment step: the simulator (the bare loop), the
policy (its batched forward over the live slots, timed alone on the same shapes), observation
normalization (the normalizer on the same batch), and bookkeeping (what is left of our step:
slots, actions, rewards, episode ends).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import blackbox as bb  # noqa: E402


def bare_rate(env_id: str, steps: int, seed: int = 0) -> float:
    """Steps per second of ``env.step`` on random actions drawn beforehand, resets included."""
    import gymnasium as gym

    env = gym.make(env_id)
    space = env.action_space
    actions = np.random.default_rng(seed).uniform(space.low, space.high, (steps, *space.shape)).astype(space.dtype)
    env.reset(seed=seed)
    started = time.perf_counter()
    for action in actions:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    elapsed = time.perf_counter() - started
    env.close()
    return steps / elapsed


def bare_lockstep_rate(env_id: str, steps: int, envs: int, seed: int = 0) -> float:
    """Steps per second of ``envs`` environments stepped in turn, one step each per round (what a
    batched generation does to the simulator, with nothing of ours): the cost of switching between
    many simulators' memory, apart from our own work."""
    import gymnasium as gym

    made = [gym.make(env_id) for _ in range(envs)]
    space = made[0].action_space
    rounds = max(1, steps // envs)
    actions = np.random.default_rng(seed).uniform(space.low, space.high,
                                                  (rounds, envs, *space.shape)).astype(space.dtype)
    for i, env in enumerate(made):
        env.reset(seed=seed + i)
    started = time.perf_counter()
    for k in range(rounds):
        for i, env in enumerate(made):
            _, _, terminated, truncated, _ = env.step(actions[k, i])
            if terminated or truncated:
                env.reset()
    elapsed = time.perf_counter() - started
    for env in made:
        env.close()
    return rounds * envs / elapsed


def generation(problem, params: np.ndarray, seeds: np.ndarray) -> tuple[float, int]:
    """Seconds and steps of one evaluation of every row."""
    started = time.perf_counter()
    result = problem.evaluate(params, seeds)
    return time.perf_counter() - started, int(np.sum(result.steps))


def component_costs(problem, live: int, repeats: int = 2000) -> dict[str, float]:
    """Seconds per environment step of the policy's forward and of the normalizer on ``live`` slots."""
    rng = np.random.default_rng(0)
    batch = problem.policy.batch(live)
    center = problem.initial_params(rng)
    for slot in range(live):
        batch.load(slot, center + 0.02 * rng.standard_normal(problem.dim))
    x = rng.standard_normal((live, problem.obs_size)).astype(np.float64)
    inputs = x.astype(np.float32)
    normalizer = problem._normalizer()
    costs = {}
    started = time.perf_counter()
    for _ in range(repeats):
        batch.forward(inputs, live)
    costs["policy"] = (time.perf_counter() - started) / repeats / live
    if normalizer is not None:
        started = time.perf_counter()
        for _ in range(repeats):
            normalizer(x)
        costs["observation normalization"] = (time.perf_counter() - started) / repeats / live
    return costs


def measure(env_id: str, policy: dict, popsize: int, repeats: int) -> dict:
    problem = bb.make_problem("gym", env=env_id, obs_norm=True, obs_norm_prob=1.0, **policy)
    rng = np.random.default_rng(1)
    center = problem.initial_params(rng)
    params = center + 0.02 * rng.standard_normal((popsize + 1, problem.dim))
    params[-1] = center
    ours, bare, lockstep = [], [], []
    generation(problem, params, np.arange(popsize + 1))  # warm-up: environments, slots, caches
    for r in range(repeats):
        seconds, steps = generation(problem, params, np.arange(popsize + 1) + 1000 * (r + 1))
        bare.append(bare_rate(env_id, steps, seed=r))
        ours.append(steps / seconds)
        lockstep.append(bare_lockstep_rate(env_id, steps, popsize + 1, seed=r))
    ours_rate, bare_rate_ = statistics.median(ours), statistics.median(bare)
    lockstep_rate = statistics.median(lockstep)
    per_step = 1.0 / ours_rate
    costs = {"simulator": 1.0 / bare_rate_, **component_costs(problem, min(popsize + 1, 64))}
    costs["bookkeeping"] = max(0.0, per_step - sum(costs.values()))
    problem.close()
    return {"policy": problem.policy.describe(), "ours": ours_rate, "bare": bare_rate_, "ratio": ours_rate / bare_rate_,
            "lockstep": lockstep_rate, "lockstep_ratio": ours_rate / lockstep_rate,
            "per_step": per_step, "costs": costs, "runs": {"ours": ours, "bare": bare}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="HalfCheetah-v5")
    parser.add_argument("--popsize", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    import os

    print(f"{args.env}, popsize {args.popsize} + center, 1 worker, obs_norm on; load {os.getloadavg()[0]:.2f}")
    print("| policy | ours (steps/s) | bare env.step (steps/s) | ours / bare | bare, envs in turn (steps/s) | "
          "ours / envs in turn | per step: simulator | policy | obs norm | bookkeeping |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for policy in ({"policy": "linear"}, {}):
        m = measure(args.env, policy, args.popsize, args.repeats)
        c = m["costs"]
        print(f"| {m['policy']} | {m['ours']:,.0f} | {m['bare']:,.0f} | {m['ratio']:.0%} | "
              f"{m['lockstep']:,.0f} | {m['lockstep_ratio']:.0%} | "
              f"{c['simulator'] * 1e6:.1f} us | {c['policy'] * 1e6:.1f} us | "
              f"{c.get('observation normalization', 0.0) * 1e6:.1f} us | {c['bookkeeping'] * 1e6:.1f} us |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
