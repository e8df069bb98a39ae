"""Evaluation seeds derived from (run seed, generation, seed group) with numpy's SeedSequence.

Because the seed of a row depends only on these three numbers, and not on which process or how
many workers evaluate it, results are bit-identical under any executor. Rows in one seed group (a
mirrored pair) share their seed: both meet the same episode (common random numbers).
"""

from __future__ import annotations

import numpy as np

__all__ = ["evaluation_seeds"]


def evaluation_seeds(run_seed: int, generation: int, groups: np.ndarray, shared: bool = False) -> np.ndarray:
    """One seed in [0, 2^32) per row; with ``shared`` every row of the generation gets group 0's."""
    groups = np.asarray(groups, dtype=np.int64)
    if len(groups) == 0:
        return np.zeros(0, dtype=np.int64)
    sequence = np.random.SeedSequence(int(run_seed), spawn_key=(int(generation),))
    if shared:
        return np.full(len(groups), int(sequence.generate_state(1)[0]), dtype=np.int64)
    # generate_state(n)[:k] == generate_state(k): a group's seed does not depend on the popsize.
    table = sequence.generate_state(int(groups.max()) + 1).astype(np.int64)
    seeds: np.ndarray = table[groups]  # numpy leaves indexing an unparametrized ndarray untyped
    return seeds
