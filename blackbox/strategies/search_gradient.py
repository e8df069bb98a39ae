"""``openai-es`` and ``nes``: one strategy, two sets of defaults.

An isotropic Gaussian of fixed shape around the center, sampled from the noise table (mirrored or
not), moved along the search-gradient estimate ``sum_i w_i s_i eps_i / popsize`` by an optimizer
(:mod:`blackbox.strategies.optim`).

``openai-es`` is OpenAI-ES: Salimans, Ho, Chen, Sidor & Sutskever, "Evolution Strategies as a
Scalable Alternative to Reinforcement Learning", arXiv:1703.03864, 2017. Mirrored pairs
``center +/- sigma * eps``, centered ranks, and Adam along ``g = sum_i w_i eps_i / popsize -
weight_decay * center``. As in OpenAI's reference code (``es_distributed/es.py``) the estimate is
not divided by sigma; that constant is absorbed into the learning rate. Defaults are the paper's:
sigma 0.02, lr 0.01, L2 0.005.

``nes`` is the plain NES estimator of the same blog post and of Wierstra et al., "Natural Evolution
Strategies", JMLR 15, 2014: the estimate divided by sigma, z-scored fitness, plain SGD.

Sigma stays fixed unless ``sigma_decay``/``sigma_min`` set a schedule
(:class:`blackbox.strategies._gaussian.SigmaSchedule`).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from .._validate import check_choice, check_float
from ..core.population import Population
from ..core.state import StateView, state_field
from ._gaussian import NoiseTableStrategy, check_mirrored_popsize, sample_rows
from .optim import Optimizer
from .param_groups import OptimizerOptions, SigmaScheduleOptions
from .shaping import SHAPINGS, get_shaping

__all__ = ["IsotropicSearchGradient", "NES", "OpenAIES"]


class IsotropicSearchGradient(NoiseTableStrategy):
    """Fixed-shape Gaussian, search-gradient estimate, optimizer step (``openai-es`` and ``nes``)."""

    @dataclasses.dataclass(frozen=True)
    class Params(OptimizerOptions, SigmaScheduleOptions):
        """Hyperparameters of the isotropic search-gradient strategies (OpenAI-ES's defaults)."""

        #: Rows per generation (even when mirrored).
        popsize: int = 64
        #: Standard deviation of the perturbations.
        sigma: float = 0.02
        #: Fitness shaping: ``centered_ranks``, ``zscore``, ``raw`` or ``nes``.
        shaping: str = "centered_ranks"
        #: Antithetic pairs ``center +/- sigma * eps`` that share one noise slice and one episode seed.
        mirrored: bool = True

        def __post_init__(self) -> None:
            self._check("sigma", check_float, positive=True)
            self._check("shaping", check_choice, SHAPINGS)
            object.__setattr__(self, "mirrored", bool(self.mirrored))
            super().__post_init__()

    #: Divide the estimate by sigma (the textbook NES gradient) or not (OpenAI's code).
    divide_by_sigma: ClassVar[bool] = False
    min_popsize = 2  # a gradient estimate needs two rows (a mirrored pair)
    @dataclasses.dataclass
    class State:
        """What evolves besides the center and sigma: the center's optimizer."""

        optimizer: Optimizer = state_field()

    optimizer_steps_per_generation = 1  # tell() steps the optimizer once: resume checks t == generation
    params: Params
    state: State
    #: The optimizer that steps the center (``state.optimizer``).
    optimizer: StateView[Optimizer] = StateView()

    def _setup(self) -> None:
        check_mirrored_popsize(self.popsize, self.params.mirrored)
        self.sigma = self.params.sigma
        self.sigma_schedule = self.params.sigma_schedule()
        self.state = self.State(optimizer=self.params.make_optimizer(self.dim))

    def _ask(self) -> Population:
        offsets, signs, groups = sample_rows(self.table, self.rng, self.popsize, self.dim, self.params.mirrored)
        return Population.compact(self.table, self._center, offsets, signs, self.sigma, groups=groups)

    def _tell(self, population: Population, fitness: np.ndarray) -> float:
        weights = get_shaping(self.params.shaping)(fitness)
        weighted, _ = self.reduce(population, weights)
        scale = self.popsize * self.sigma if self.divide_by_sigma else self.popsize
        self._center, step_norm = self.state.optimizer.step(self._center, weighted / scale)
        self.sigma = self.sigma_schedule(self.sigma)
        return step_norm


class OpenAIES(IsotropicSearchGradient):
    """OpenAI-ES (Salimans et al. 2017): mirrored sampling, centered ranks, Adam, weight decay."""

    name = "openai-es"
    divide_by_sigma = False
    Params = IsotropicSearchGradient.Params.with_defaults(
        "OpenAIES.Params", "Hyperparameters of OpenAI-ES (the paper's defaults).", weight_decay=0.005)


class NES(IsotropicSearchGradient):
    """Plain NES search gradient with fixed sigma; z-scored fitness and SGD by default."""

    name = "nes"
    divide_by_sigma = True
    Params = IsotropicSearchGradient.Params.with_defaults(
        "NES.Params", "Hyperparameters of the plain NES estimator.", popsize=50, sigma=0.1, lr=0.001,
        optimizer="sgd", shaping="zscore", mirrored=False)
