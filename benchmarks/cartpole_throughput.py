"""CartPole-v1 rollout throughput in environment steps per second, three ways side by side.

    python benchmarks/cartpole_throughput.py [--seconds 2] [--repeats 3] [--seed 0]

(a) raw: ``gymnasium.make("CartPole-v1")`` stepped with random actions (``action_space.sample()``),
    no policy at all: the ceiling of any one-environment loop.
(b) one member at a time: the same environment driven by a torch MLP (4-64-64-2, tanh; the
    default policy) called once per step on one observation, the way a plain ES worker does it.
(c) batched population: the ``gym`` problem's default path (every member of a slice side by side,
    one policy call per step, freed slots handed to the next member) counted over a whole
    OpenAI-ES training run to solve with the settings of ``blackbox run --problem gym:CartPole-v1``:
    steps counted / time spent inside ``problem.evaluate``, so episodes of unequal length count as
    they come (the tail of a generation, when few episodes are left, included).
(d) for reference, the batched path when every episode runs its full 500 steps (256 members of a
    trained policy): the rate with full occupancy, no tail.

The three are measured in turns (a, b, c, d) ``--repeats`` times and the best of each is kept, so
that a loaded machine slows all of them alike. Ratios are what to compare across machines.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import blackbox as bb  # noqa: E402
from blackbox.driver.stop import ConfirmGoal  # noqa: E402
from blackbox.problems.gym.presets import recommended  # noqa: E402
from blackbox.registry.spec import parse_value  # noqa: E402


def raw_random(seconds: float, seed: int) -> float:
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    env.reset(seed=seed)
    env.action_space.seed(seed)
    steps, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        for _ in range(1000):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            steps += 1
            if terminated or truncated:
                env.reset()
    return steps / (time.perf_counter() - started)


def torch_one_member(seconds: float, seed: int) -> float:
    import gymnasium as gym
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(1)  # one member, tiny layers: threads only add overhead (a stronger baseline)
    net = torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.Tanh(),
                              torch.nn.Linear(64, 2))
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=seed)
    steps, started = 0, time.perf_counter()
    with torch.no_grad():
        while time.perf_counter() - started < seconds:
            for _ in range(200):
                action = int(torch.argmax(net(torch.as_tensor(obs))))
                obs, _, terminated, truncated, _ = env.step(action)
                steps += 1
                if terminated or truncated:
                    obs, _ = env.reset()
    return steps / (time.perf_counter() - started)


class TimedProblem:
    """Wraps ``problem.evaluate`` to add up the time spent inside it."""

    def __init__(self, problem):
        self.problem, self.seconds, self.inner = problem, 0.0, problem.evaluate
        problem.evaluate = self

    def __call__(self, params, seeds):
        started = time.perf_counter()
        try:
            return self.inner(params, seeds)
        finally:
            self.seconds += time.perf_counter() - started


def batched_training(seed: int, overrides: dict, problem_overrides: dict) -> tuple[float, dict]:
    preset = recommended("CartPole-v1", "openai-es")
    problem = bb.make_problem("gym", env="CartPole-v1", **{**preset["problem"], **problem_overrides})
    es = bb.make_strategy("openai-es", dim=problem.dim, x0=problem.initial_params(np.random.default_rng(seed)),
                          seed=seed, **{**preset["strategy"], **overrides})
    timer = TimedProblem(problem)
    started = time.perf_counter()
    result = bb.optimize(es, problem, generations=preset["run"]["generations"], seed=seed,
                         stop=[ConfirmGoal(preset["run"]["goal"], preset["run"]["goal_episodes"])])
    wall = time.perf_counter() - started
    return result.steps / timer.seconds, {"steps": result.steps, "generations": result.generations,
                                          "rollout_s": timer.seconds, "wall_s": wall, "center": result.center}


def batched_full(center: np.ndarray, seed: int, problem_overrides: dict) -> float:
    problem = bb.make_problem("gym", env="CartPole-v1", **problem_overrides)
    params = np.repeat(center[None], 256, axis=0)
    seeds = np.arange(256) + seed
    problem.evaluate(params[:2], seeds[:2])  # build the slots
    started = time.perf_counter()
    result = problem.evaluate(params, seeds)
    return result.steps.sum() / (time.perf_counter() - started)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="duration of (a) and (b) per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0, help="training seed of (c)")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="override a strategy option of the preset in (c)")
    parser.add_argument("--problem-set", dest="problem_settings", action="append", default=[], metavar="KEY=VALUE",
                        help="override a problem option in (c) and (d), e.g. slots=64")
    args = parser.parse_args(argv)
    overrides = {k: parse_value(v) for k, v in (s.split("=", 1) for s in args.settings)}
    problem_overrides = {k: parse_value(v) for k, v in (s.split("=", 1) for s in args.problem_settings)}
    best = {"a": 0.0, "b": 0.0, "c": 0.0, "d": 0.0}
    info = {}
    for _ in range(args.repeats):
        best["a"] = max(best["a"], raw_random(args.seconds, args.seed))
        best["b"] = max(best["b"], torch_one_member(args.seconds, args.seed))
        rate, run = batched_training(args.seed, overrides, problem_overrides)
        if rate > best["c"]:
            best["c"], info = rate, run
        best["d"] = max(best["d"], batched_full(run["center"], args.seed, problem_overrides))
    print(f"CartPole-v1 environment steps per second (best of {args.repeats} turns; machine load affects all alike)")
    print(f"{'path':<64} {'steps/s':>12} {'vs (a)':>7} {'vs (b)':>7}")
    rows = [
        ("(a) raw gymnasium env, random actions", best["a"]),
        ("(b) one member at a time, torch MLP 4-64-64-2", best["b"]),
        (f"(c) batched population, training run to solve ({info['generations']} gens, "
         f"{info['steps']:,} steps)", best["c"]),
        ("(d) batched population, 256 members x 500 full steps", best["d"]),
    ]
    for name, rate in rows:
        print(f"{name:<64} {rate:>12,.0f} {rate / best['a']:>6.1f}x {rate / best['b']:>6.1f}x")
    print(f"(c) run: {info['rollout_s']:.2f} s in rollouts of {info['wall_s']:.2f} s wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
