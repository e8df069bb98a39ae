"""The reduction is part of a strategy's state: new runs use the partitionable fixed-block sums,
a state written by 0.1.0 (no "reduction" key) continues with 0.1.0's float32 pass, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import blackbox as bb
from blackbox.core.reduce import REDUCTION, block_sums
from blackbox.core.strategy import LEGACY_REDUCTION, population_sums
from blackbox.errors import TellError


def fitness(x):
    return -np.sum((x - 1) ** 2, axis=1)


@pytest.mark.parametrize("name, squares", [("openai-es", False), ("pgpe", True), ("snes", True)])
def test_new_strategies_reduce_with_the_fixed_blocks_and_record_it(name, squares):
    es = bb.make_strategy(name, dim=5, seed=2, popsize=300)
    assert es.reduction == REDUCTION == "fixed-blocks-v1" and es.state_dict()["reduction"] == REDUCTION
    pop = es.ask()
    w = np.linspace(-1, 1, len(pop))
    got = es.reduce(pop, w, w if squares else None)
    want = block_sums(pop, w, w if squares else None)
    assert got[0].dtype == np.float64 and got[0].tobytes() == want[0].tobytes()
    assert (got[1] is None) == (not squares) and (got[1] is None or got[1].tobytes() == want[1].tobytes())
    assert got[0].tobytes() != population_sums(pop, w)[0].astype(np.float64).tobytes()  # 3 blocks: not 0.1.0's bits


def test_a_state_without_the_key_continues_with_the_float32_pass_and_no_executor_reducer():
    reference = bb.make_strategy("openai-es", dim=4, seed=3)
    reference.reduction = LEGACY_REDUCTION
    reference.tell(fitness(reference.ask().params))
    state = reference.state_dict()
    del state["reduction"]  # as 0.1.0 wrote it

    def refuse(*args):
        raise AssertionError("a run of 0.1.0 must not be reduced by an executor's reducer")

    restored = bb.make_strategy("openai-es", dim=4, seed=9)
    restored.reducer = refuse
    restored.load_state_dict(state)
    assert restored.reduction == LEGACY_REDUCTION and restored.state_dict()["reduction"] == "float32"
    for _ in range(3):
        x = reference.ask().params
        np.testing.assert_array_equal(restored.ask().params, x)
        reference.tell(fitness(x))
        restored.tell(fitness(x))
    assert restored.center.tobytes() == reference.center.tobytes()


def test_the_reduction_round_trips_and_an_unknown_one_is_refused():
    es = bb.make_strategy("pgpe", dim=3, seed=1)
    es.tell(fitness(es.ask().params))
    other = bb.make_strategy("pgpe", dim=3, seed=5)
    other.reduction = LEGACY_REDUCTION
    other.load_state_dict(es.state_dict())
    assert other.reduction == REDUCTION
    state = es.state_dict()
    state["reduction"] = "float16-tree"
    with pytest.raises(bb.ConfigError) as info:
        other.load_state_dict(state)
    assert str(info.value) == (
        "state_dict reduction 'float16-tree' is not known to this version of blackbox (it knows "
        "'fixed-blocks-v1', 'float32'); resume the run with the version that wrote it"
    )


def test_a_sum_beyond_float32_is_a_diverged_update_not_infinity():
    es = bb.make_strategy("openai-es", dim=3, seed=1, shaping="raw", popsize=8)
    pop = es.ask()
    f = np.zeros(len(pop))
    f[0] = 1e39
    with pytest.raises(TellError, match=r"diverged \(the noise-weighted sum's coefficient of noise offset \d+ "
                                           r"\(block 0\) is 1e\+39, beyond float32's range"):
        es.tell(f)
