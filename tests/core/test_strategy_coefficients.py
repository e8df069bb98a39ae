"""``Strategy.coefficients``: the weights ``tell`` reduces with, found without updating anything
(a cluster's nodes call it on a replica to sum their blocks with the driver's bits)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import blackbox as bb

REDUCING = ["openai-es", "nes", "pgpe", "snes", "ars", "cem", "sep-cma-es"]


@pytest.mark.parametrize("name", REDUCING)
def test_coefficients_are_what_tell_reduces_with_and_change_nothing(name):
    strategy = bb.make_strategy(name, dim=5, popsize=8, seed=3)
    twin = bb.make_strategy(name, dim=5, popsize=8, seed=3)
    population = strategy.ask()
    twin.ask()
    fitness = np.random.default_rng(1).standard_normal(len(population))
    before = pickle.dumps(strategy.state_dict())

    got = strategy.coefficients(population, fitness)

    assert pickle.dumps(strategy.state_dict()) == before  # nothing updated
    seen = []

    def reducer(pop, coefficients, square_coefficients=None):
        seen.append((np.asarray(coefficients, dtype=np.float64),
                     None if square_coefficients is None else np.asarray(square_coefficients, dtype=np.float64)))
        return bb.core.reduce.block_sums(pop, coefficients, square_coefficients)

    twin.reducer = reducer
    twin.tell(fitness)
    strategy.tell(fitness)  # the same update as the twin's, after coefficients()
    assert got is not None and len(seen) == 1
    assert np.array_equal(got[0], seen[0][0])
    assert (got[1] is None) == (seen[0][1] is None) and (got[1] is None or np.array_equal(got[1], seen[0][1]))
    assert np.array_equal(strategy.center, twin.center)


def test_a_strategy_that_reduces_no_noise_has_no_coefficients():
    strategy = bb.make_strategy("cma-es", dim=4, popsize=6, seed=0)
    population = strategy.ask()
    assert strategy.coefficients(population, np.arange(len(population), dtype=float)) is None
    strategy.tell(np.arange(len(population), dtype=float))  # still pending: tell works
