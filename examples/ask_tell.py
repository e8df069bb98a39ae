"""The ask/tell loop by hand: your own fitness function, no driver, exact save and restore.

    python examples/ask_tell.py                  # 2,000 generations on a 5-d Rosenbrock
    BLACKBOX_SMOKE=1 python examples/ask_tell.py # a few generations (CI)
"""

import os

import numpy as np

import blackbox as bb

SMOKE = os.environ.get("BLACKBOX_SMOKE", "") not in ("", "0")
GENERATIONS = 10 if SMOKE else 2000


def rosenbrock(x: np.ndarray) -> np.ndarray:
    """Fitness of each row of x: the negated Rosenbrock loss (maximized; optimum 0 at all ones)."""
    return -np.sum(100.0 * (x[:, 1:] - x[:, :-1] ** 2) ** 2 + (1.0 - x[:, :-1]) ** 2, axis=1)


def make() -> bb.Strategy:
    # Rosenbrock's curved valley needs small steps and no pull toward zero (weight decay off).
    return bb.make_strategy("openai-es", dim=5, popsize=50, sigma=0.01, lr=0.01, weight_decay=0.0, seed=0)


es = make()
for generation in range(GENERATIONS):
    population = es.ask()               # compact: offsets into the shared noise table
    fitness = rosenbrock(population.params)  # dense (50, 5) rows, built on demand
    es.tell(fitness)                    # higher is better
    if generation % 500 == 0 or generation == GENERATIONS - 1:
        print(f"generation {es.generation:5d}  best {fitness.max():.6g}  "
              f"center {rosenbrock(es.center[None])[0]:.6g}")

# A state_dict holds numpy arrays and plain values only (RNG state included): a strategy rebuilt
# from it continues bit-identically.
clone = make()
clone.load_state_dict(es.state_dict())
assert np.array_equal(clone.ask().params, es.ask().params)
print("center:", np.round(es.center, 3), "(the optimum is all ones)")
