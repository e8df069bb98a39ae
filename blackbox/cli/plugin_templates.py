"""The files ``blackbox new`` writes: a working plugin of each kind, its ``pyproject.toml`` and its test.

Each module is complete as written (it installs and passes the conformance kit) and says in comments
what a plugin author fills in. ``{name}`` is the plugin's registered name (``my-es``), ``{module}``
the module (``my_es``), ``{cls}`` the class (``MyEs``); the README's "Write a plugin" section shows
the same classes.
"""

from __future__ import annotations

__all__ = ["GROUPS", "MODULES", "PYPROJECT", "TEST", "README", "MAKERS"]

#: The entry-point group of each kind.
GROUPS = {"strategy": "blackbox.strategies", "problem": "blackbox.problems", "executor": "blackbox.executors"}
#: How the test builds one by name (the entry point, as blackbox finds it once the package is installed).
MAKERS = {"strategy": 'bb.make_strategy("{name}", dim=3)', "problem": 'bb.make_problem("{name}")',
          "executor": 'bb.make_executor("{name}")'}

PYPROJECT = '''\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1.0"
description = "A blackbox {kind}: {name}"
requires-python = ">=3.10"
dependencies = ["blackbox-es>={blackbox_version}"]

[project.optional-dependencies]
test = ["pytest>=8"]

# The entry point is what makes the plugin visible to blackbox: `blackbox list {group_short}`.
[project.entry-points."{group}"]
{name} = "{module}:{cls}"

[tool.setuptools]
py-modules = ["{module}"]
'''

TEST = '''\
"""The conformance kit on {name}: one test per check (`python -m pytest`), ids such as {name}-check_pickle."""

import blackbox as bb
from blackbox.testing import parametrize_with_checks
from {module} import {cls}


def test_the_entry_point_names_the_class():
    # pyproject.toml's entry point, as blackbox reads it from the installed package's metadata
    assert type({maker}) is {cls}


# A check that cannot pass for a good reason is declared, per target:
# @parametrize_with_checks(["{name}"], expected_failures={{"{name}": {{"check_pickle": "holds a socket"}}}})
@parametrize_with_checks(["{name}"])
def test_conformance(check):
    check()
'''

README = '''\
# {name}

A {kind} plugin for [blackbox](https://pypi.org/project/blackbox-es/), written by `blackbox new {kind} {name}`.

```bash
pip install -e "{out}[test]"      # in the environment where blackbox is installed
blackbox list {group_short}        # {name} is listed, from this distribution
python -m pytest {out}             # the conformance kit: one test per check
```

Edit `{module}.py`; the comments say what each part is for.
'''

STRATEGY = '''\
"""{name}: a (mu, lambda)-ES, the mean of the best quarter with a shrinking step size. Replace it with yours."""

import numpy as np

from blackbox import Population, Strategy


class {cls}(Strategy):
    """A (mu, lambda)-ES: the mean of the best quarter, with a shrinking step size."""

    name = "{name}"

    # The keyword parameters are the plugin's options: spec strings ("{name}:sigma=0.1") and config
    # tables fill them, checked by name and against the annotations (`blackbox list strategies --options`).
    def __init__(self, dim: int | None = None, *, popsize: int = 16, sigma: float = 0.3, decay: float = 0.98,
                 x0=None, seed: int | None = None):
        # The base class keeps dim, popsize, the start x0 (as self._center), the seeded generator
        # self.rng, the generation counter, and builds state_dict() from them.
        super().__init__(dim=dim, popsize=popsize, x0=x0, seed=seed)
        self.sigma, self.decay = float(sigma), float(decay)

    def _ask(self) -> Population:
        # All randomness from self.rng, so that the seed fixes the run.
        noise = self.rng.standard_normal((self.popsize, self.dim))
        return Population.from_dense(self._center + self.sigma * noise)

    def _tell(self, population: Population, fitness: np.ndarray) -> None:
        # Fitness is maximized; NaN ranks worst. Assign a new array to self._center, never write into the old one.
        ranked = np.argsort(-np.nan_to_num(fitness, nan=-np.inf), kind="stable")
        self._center = population.params[ranked[: self.popsize // 4]].mean(axis=0)
        self.sigma *= self.decay

    # sigma, the center and the generator are saved by the base class; anything else a strategy keeps
    # goes into _state_dict() / _load_state_dict() as numpy arrays and JSON-able values.
'''

PROBLEM = '''\
"""{name}: a shifted sphere, fitness -sum((x - shift)^2), best (0) at x = shift. Replace it with yours."""

import numpy as np

from blackbox import EvalResult, Problem


class {cls}(Problem):
    """-sum((x - shift)^2) over ``dim`` parameters; the best fitness, 0, is at x = shift."""

    name = "{name}"

    # The keyword parameters are the plugin's options ("{name}:dim=20,shift=2").
    def __init__(self, dim: int = 10, *, shift: float = 1.0):
        self.dim = int(dim)  # required: the length of a parameter vector, read by the driver and strategies
        self.shift = float(shift)

    def evaluate(self, params: np.ndarray, seeds: np.ndarray) -> EvalResult:
        # params: (m, dim) rows to score (do not modify them); seeds: (m,) one per row for anything
        # random (a noisy simulation, an episode's reset): the same row and seed must score the same.
        fitness = -np.sum((params - self.shift) ** 2, axis=1)  # higher is better
        # steps: the environment steps each row took, for max_steps budgets and the records; a
        # problem without an environment takes none. info: optional per-row arrays that observe()
        # folds into the problem's state (observation statistics, say); none here.
        return EvalResult(fitness=fitness, steps=np.zeros(len(params), dtype=np.int64), info={{}})

    def initial_params(self, rng: np.random.Generator) -> np.ndarray:
        # Where a strategy starts when it is given no x0, drawn from rng so that the run's seed fixes
        # it. The base class draws from N(0, 1); never a point that could be the optimum by accident.
        return rng.uniform(-2.0, 2.0, self.dim)
'''

EXECUTOR = '''\
"""{name}: evaluates a population's rows on a pool of threads, in row order. Replace it with yours."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from blackbox import EvalResult, Executor
from blackbox.core.executor import evaluate_rows


class {cls}(Executor):
    """Splits each generation's rows into ``workers`` chunks and scores them on that many threads."""

    name = "{name}"

    def __init__(self, workers: int = 2):
        super().__init__()
        self.n_workers = int(workers)
        self.pool = None

    @property
    def workers(self) -> int:
        return self.n_workers

    def start(self, problem) -> None:
        # Called once per run: take the problem (a process or cluster executor ships it to its workers here).
        super().start(problem)
        self.pool = ThreadPoolExecutor(self.n_workers)

    def evaluate(self, population, seeds, state=None) -> EvalResult:
        # Results must come back in row order and equal the serial executor's bit for bit.
        problem = self._require_started()
        if state:  # the problem's synced state (observation statistics, ...), sent every generation
            problem.load_state_dict(state)
        seeds = np.asarray(seeds, dtype=np.int64)
        chunks = [rows for rows in np.array_split(np.arange(len(population)), self.n_workers) if len(rows)]
        # evaluate_rows scores rows in batches and raises EvaluationError naming a failing row and its seed.
        futures = [self.pool.submit(evaluate_rows, problem, population.take(rows), seeds[rows], index=rows)
                   for rows in chunks]
        return EvalResult.concatenate([future.result() for future in futures])

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None
        super().close()
'''

MODULES = {"strategy": STRATEGY, "problem": PROBLEM, "executor": EXECUTOR}
