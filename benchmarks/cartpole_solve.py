"""Time to solve CartPole-v1 with OpenAI-ES: generations, environment steps and wall time per seed.

    python benchmarks/cartpole_solve.py [--seeds 5] [--set popsize=64 --set sigma=0.1 ...]

"Solved" is the usual criterion: the center's mean return over 20 fresh evaluation episodes is at
least 475. Each run trains with the settings ``blackbox run --problem gym:CartPole-v1`` uses (the
problem's preset, printed below; ``--set`` overrides strategy options), checks the center on 20 fresh
episodes whenever its training return reaches 475 (``blackbox.driver.stop.ConfirmGoal``), and stops once
that check passes. Wall time covers building the problem and strategy, training and the checks,
in this process (imports excluded); ``rollout`` is the part spent inside environment rollouts.
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
from blackbox.driver.stop import ConfirmGoal  # noqa: E402
from blackbox.problems.gym.presets import recommended  # noqa: E402
from blackbox.registry.spec import parse_value  # noqa: E402


def solve(seed: int, env: str, strategy: str, options: dict, problem_options: dict, generations: int,
          goal: float, episodes: int) -> dict:
    started = time.perf_counter()
    problem = bb.make_problem("gym", env=env, **problem_options)
    x0 = problem.initial_params(np.random.default_rng(seed))
    es = bb.make_strategy(strategy, dim=problem.dim, x0=x0, seed=seed, **options)
    confirm = ConfirmGoal(goal, episodes)
    rollout = [0.0]
    evaluate = problem.evaluate

    def timed_evaluate(params, seeds):
        t = time.perf_counter()
        try:
            return evaluate(params, seeds)
        finally:
            rollout[0] += time.perf_counter() - t

    problem.evaluate = timed_evaluate
    result = bb.optimize(es, problem, generations=generations, seed=seed, stop=[confirm])
    wall = time.perf_counter() - started
    return {"seed": seed, "solved": confirm.summary()["solved"], "generations": result.generations,
            "steps": result.steps, "evaluations": result.evaluations, "wall": wall, "rollout": rollout[0],
            "confirmed": confirm.confirmed, "checks": len(confirm.checks)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--strategy", default="openai-es")
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 (default 5)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="override a strategy option of the preset")
    parser.add_argument("--problem-set", dest="problem_settings", action="append", default=[], metavar="KEY=VALUE",
                        help="override a problem option of the preset")
    parser.add_argument("--generations", type=int, help="generation budget (default: the preset's)")
    args = parser.parse_args(argv)

    preset = recommended(args.env, args.strategy)
    options = {**preset["strategy"], **{k: parse_value(v) for k, v in (s.split("=", 1) for s in args.settings)}}
    problem_options = {**preset["problem"],
                       **{k: parse_value(v) for k, v in (s.split("=", 1) for s in args.problem_settings)}}
    run = preset["run"]
    generations = args.generations or run.get("generations", 200)
    goal, episodes = run.get("goal", 475.0), run.get("goal_episodes", 20)
    print(f"{args.strategy} on {args.env}: strategy {options}, problem {problem_options}, "
          f"budget {generations} generations, solved = center mean over {episodes} fresh episodes >= {goal}")
    rows = [solve(seed, args.env, args.strategy, options, problem_options, generations, goal, episodes)
            for seed in range(args.first_seed, args.first_seed + args.seeds)]
    print(f"{'seed':>4} {'solved':>6} {'gens':>5} {'env steps':>10} {'wall s':>7} {'rollout s':>9} "
          f"{'steps/s (rollout)':>17} {'confirm':>8}")
    for r in rows:
        print(f"{r['seed']:>4} {str(r['solved']):>6} {r['generations']:>5} {r['steps']:>10,} {r['wall']:>7.2f} "
              f"{r['rollout']:>9.2f} {r['steps'] / r['rollout']:>17,.0f} {r['confirmed'] or float('nan'):>8.1f}")
    walls = [r["wall"] for r in rows]
    solved = sum(r["solved"] for r in rows)
    print(f"solved {solved}/{len(rows)}; generations median {statistics.median(r['generations'] for r in rows):g} "
          f"worst {max(r['generations'] for r in rows)}; env steps median "
          f"{statistics.median(r['steps'] for r in rows):,.0f} worst {max(r['steps'] for r in rows):,}; "
          f"wall time median {statistics.median(walls):.2f} s worst {max(walls):.2f} s")
    return 0 if solved == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
