"""A Gymnasium task driven by your own ask/tell loop: seeds, the start point, observation statistics.

    python examples/gym_ask_tell.py                  # CartPole-v1, 30 generations
    BLACKBOX_SMOKE=1 python examples/gym_ask_tell.py # 3 generations (CI)

What ``bb.optimize`` and ``blackbox run`` do for you, by hand:

- the start point: the policy's own initialization (``problem.initial_params``), from a seeded generator;
- the seeds: one per row, from the run seed, the generation and the row's group
  (``bb.evaluation_seeds``; mirrored pairs share their episodes), so a run repeats exactly;
- the observation statistics: ``evaluate`` returns each row's counts, means and squares of the
  observations it saw (``obs_norm=true``), and ``observe`` folds them into the problem, in row
  order, before the next generation: the policies then see normalized inputs. They are part of
  ``problem.state_dict()``: save them with the strategy's state to continue later.
"""

import os

import numpy as np

import blackbox as bb

SMOKE = os.environ.get("BLACKBOX_SMOKE", "") not in ("", "0")
GENERATIONS = 3 if SMOKE else 30
SEED = 0

# obs_norm_prob=1: every row adds its observations (the paper samples 1% of them, the default).
problem = bb.make_problem("gym:CartPole-v1,obs_norm=true,obs_norm_prob=1")
start = problem.initial_params(np.random.default_rng(SEED))
es = bb.make_strategy("openai-es", dim=problem.dim, popsize=32, sigma=0.1, lr=0.1, x0=start, seed=SEED)

for generation in range(GENERATIONS):
    population = es.ask()
    seeds = bb.evaluation_seeds(SEED, generation, population.groups)
    result = problem.evaluate(population.params, seeds)  # fitness: the mean episode return of each row
    problem.observe(result)                               # the observation statistics, folded in
    es.tell(result.fitness)
    print(f"generation {es.generation:3d}  best {result.fitness.max():7.1f}  mean {result.fitness.mean():7.1f}  "
          f"observations {int(problem.state_dict()['obs_count'])}")

state = {"strategy": es.state_dict(), "problem": problem.state_dict()}  # what a checkpoint keeps
print("saved:", sorted(state["problem"]))
