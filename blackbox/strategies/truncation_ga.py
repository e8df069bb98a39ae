"""Truncation-selection genetic algorithm: Such, Madhavan, Conti, Lehman, Stanley & Clune,
"Deep Neuroevolution: Genetic Algorithms Are a Competitive Alternative for Training Deep Neural
Networks for Reinforcement Learning", arXiv:1712.06567, 2017.

The top ``truncation`` fraction of each generation become parents. The next generation holds the
``elitism`` best of them unchanged (re-evaluated, so a lucky noisy score does not stick) and
``popsize - elitism`` offspring, each a uniformly drawn parent plus ``sigma * eps``, with no
crossover. Offspring are encoded compactly as (parent index, noise offset). The center is the
elite. Such et al. pick the elite after 30 extra episodes per top candidate; here the elite is
simply re-evaluated every generation with the rest of the population. The mutation strength
``sigma`` is fixed unless ``sigma_decay`` / ``sigma_min`` set a schedule (:mod:`blackbox.strategies._gaussian`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._validate import check_float, check_int
from ..core.population import Population
from ..core.state import StateView, state_field
from ..errors import ConfigError
from ._gaussian import NoiseTableStrategy
from .param_groups import SigmaScheduleOptions
from .shaping import average_ranks

__all__ = ["TruncationGA"]


class TruncationGA(NoiseTableStrategy):
    """Top-x% truncation selection with Gaussian mutation and elitism (Such et al. 2017)."""

    name = "ga"

    @dataclasses.dataclass(frozen=True)
    class Params(SigmaScheduleOptions):
        """Hyperparameters of the truncation-selection GA."""

        #: Rows per generation (elites and offspring).
        popsize: int = 64
        #: Mutation strength: offspring are ``parent + sigma * eps``.
        sigma: float = 0.02
        #: Share of each generation that become parents, in (0, 1].
        truncation: float = 0.1
        #: Best parents carried over unchanged (and re-evaluated).
        elitism: int = 1

        def __post_init__(self) -> None:
            self._check("sigma", check_float, positive=True)
            self._check("truncation", check_float, positive=True, maximum=1.0)
            self._check("elitism", check_int, minimum=0)
            super().__post_init__()

    min_popsize = 2  # an elite and at least one offspring
    @dataclasses.dataclass
    class State:
        """What evolves besides the elite (the center) and sigma: the parents."""

        #: The initial point alone, then ``num_parents`` rows, best first.
        parents: np.ndarray = state_field(rows=True)

    params: Params
    state: State
    #: The parents of the next population, best first (``state.parents``).
    parents: StateView[np.ndarray] = StateView()

    def _setup(self) -> None:
        p = self.params
        self.sigma = p.sigma
        self.sigma_schedule = p.sigma_schedule()
        self.num_parents = max(1, int(round(p.truncation * self.popsize)))
        if p.elitism > self.num_parents or p.elitism >= self.popsize:
            raise ConfigError(
                f"elitism must be at most the number of parents ({self.num_parents} = truncation "
                f"{p.truncation} x popsize {self.popsize}) and below popsize, got {p.elitism}"
            )

    def _start(self) -> None:
        self.state = self.State(parents=self._center[None, :].copy())  # generation 0: the initial point alone
        super()._start()

    def _ask(self) -> Population:
        n_elite = min(self.params.elitism, len(self.state.parents))
        n_children = self.popsize - n_elite
        parents = np.concatenate([
            np.arange(n_elite, dtype=np.int64),
            self.rng.integers(0, len(self.state.parents), size=n_children, dtype=np.int64),
        ])
        offsets = np.concatenate([
            np.zeros(n_elite, dtype=np.int64), self.table.sample_offsets(self.rng, n_children, self.dim)
        ])
        signs = np.concatenate([np.zeros(n_elite, dtype=np.int8), np.ones(n_children, dtype=np.int8)])
        return Population.compact(self.table, self.state.parents, offsets, signs, self.sigma, parents=parents)

    def _tell(self, population: Population, fitness: np.ndarray) -> None:
        # Best first; ties keep population order, so an elite wins a tie with its offspring.
        order = np.argsort(-average_ranks(fitness), kind="stable")
        # The parents are the next population's bases, which every worker needs as vectors, so they
        # are built once here: row by row on a buffer kept from an earlier generation (no fresh
        # mapping), each noise slice read once. Kept as offsets instead, every child would rebuild its
        # parent (and a lineage would grow one noise term a generation); the bits would not change.
        self.state.parents = population.rows(order[: self.num_parents])
        self._center = self.state.parents[0].copy()
        self.sigma = self.sigma_schedule(self.sigma)
        return None
