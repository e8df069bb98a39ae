"""Batched vs one-by-one evaluation on each Gymnasium task: environment steps per second.

    python benchmarks/gym_batched.py [--rows 32] [--repeats 2] [--envs CartPole-v1 Hopper-v5 ...]

The same rows (a random perturbation of the initial policy) and seeds are evaluated by the ``gym``
problem's default batched path (one policy call per step for all live episodes) and by its
reference path (``batched=False``: one member, one policy call per step). Both return identical
fitness (asserted here too). Best of ``--repeats`` turns, taken alternately, so that machine load
affects both alike. Tasks whose package is missing are skipped with a note.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from blackbox.problems.gym.problem import GymProblem  # noqa: E402

TASKS = {
    "CartPole-v1": {}, "Acrobot-v1": {}, "MountainCarContinuous-v0": {}, "Pendulum-v1": {},
    "LunarLander-v3": {}, "Hopper-v5": {"max_episode_steps": 300}, "HalfCheetah-v5": {"max_episode_steps": 300},
    "Walker2d-v5": {"max_episode_steps": 300}, "Humanoid-v5": {"max_episode_steps": 200},
}
NEEDS = {"LunarLander-v3": "Box2D", "Hopper-v5": "mujoco", "HalfCheetah-v5": "mujoco", "Walker2d-v5": "mujoco",
         "Humanoid-v5": "mujoco"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--envs", nargs="*", default=list(TASKS))
    args = parser.parse_args(argv)
    print(f"{'task':<26} {'rows':>5} {'steps':>8} {'batched steps/s':>16} {'one-by-one steps/s':>19} {'ratio':>6}")
    for env in args.envs:
        if env in NEEDS and importlib.util.find_spec(NEEDS[env]) is None:
            print(f"{env:<26} skipped: {NEEDS[env]} is not installed")
            continue
        options = TASKS.get(env, {})
        batched, single = GymProblem(env, **options), GymProblem(env, batched=False, **options)
        rng = np.random.default_rng(0)
        params = batched.initial_params(rng) + 0.05 * rng.standard_normal((args.rows, batched.dim))
        seeds = np.arange(args.rows)
        batched.evaluate(params, seeds)  # make the environments once, outside the timing
        single.evaluate(params[:1], seeds[:1])
        best = {"batched": 0.0, "single": 0.0}
        for _ in range(args.repeats):
            fitness = {}
            for name, problem in (("batched", batched), ("single", single)):
                started = time.perf_counter()
                result = problem.evaluate(params, seeds)
                best[name] = max(best[name], result.steps.sum() / (time.perf_counter() - started))
                fitness[name] = result.fitness
            assert np.array_equal(fitness["batched"], fitness["single"]), "batched and one-by-one returns differ"
        print(f"{env:<26} {args.rows:>5} {int(result.steps.sum()):>8,} {best['batched']:>16,.0f} "
              f"{best['single']:>19,.0f} {best['batched'] / best['single']:>5.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
