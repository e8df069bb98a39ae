"""loky's automatic chunking: one chunk per worker while rows are equal work (every row took as many
steps last generation: balanced without smaller chunks, nobody waits at the end), four otherwise."""

from __future__ import annotations

import numpy as np

import blackbox as bb
from blackbox.executors.loky import LokyExecutor


class Steps(bb.Problem):
    """Rows take ``steps`` steps each, or a different number per row when ``vary``; a few ms a row."""

    def __init__(self, vary: bool):
        self.dim, self.vary = 3, vary

    def evaluate(self, params, seeds):
        import time

        time.sleep(0.004 * len(params))  # busy enough that "quick" does not decide (50 ms a worker)
        steps = (100 + np.asarray(seeds) % 50) if self.vary else np.full(len(params), 1000)
        return bb.EvalResult(-np.sum(params**2, axis=1), steps.astype(np.int64))


def tasks_per_generation(vary: bool) -> list[int]:
    counts = []
    with LokyExecutor(workers=2) as executor:
        es = bb.make_strategy("openai-es", dim=3, popsize=40, seed=0)
        previous = 0

        def count(record):
            nonlocal previous
            counts.append(executor.stats.tasks - previous)
            previous = executor.stats.tasks

        bb.optimize(es, Steps(vary), executor, generations=3, seed=0, callbacks=[count])
    return counts


def test_equal_steps_give_one_chunk_per_worker_and_varied_steps_four():
    assert tasks_per_generation(vary=False) == [8, 2, 2]  # the first generation knows nothing yet
    assert tasks_per_generation(vary=True) == [8, 8, 8]
