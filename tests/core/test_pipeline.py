"""The pipelined mode's bookkeeping on its own (:class:`blackbox.core.pipeline.Pipeline`): what it
records at ``ask_ahead``, hands over at ``tell``, saves and restores; the driver-level behaviour is
in tests/driver/test_pipelined.py."""

from __future__ import annotations

import numpy as np
import pytest

import blackbox as bb
from blackbox.core.pipeline import ASKED_AHEAD, Pipeline
from blackbox.core.population_state import population_state


def pending_strategy(name="openai-es"):
    es = bb.make_strategy(name, dim=3, popsize=4, seed=0)
    es.ask()
    return es


def test_a_fresh_pipeline_holds_nothing_and_saves_nothing():
    pipeline = Pipeline()
    assert (pipeline.ahead, pipeline.rng_state, pipeline.kept) == (None, None, False)
    assert pipeline.save(pending_strategy().pending_population, np.random.default_rng(0)) is None
    assert pipeline.advance() is None and not pipeline.kept


def test_ask_samples_with_the_strategys_generator_and_records_its_state_before():
    es, pipeline = pending_strategy(), Pipeline()
    before = es.rng.bit_generator.state
    ahead = pipeline.ask(es)
    assert pipeline.ahead is ahead and pipeline.rng_state == before
    assert es.rng.bit_generator.state != before  # the sample drew from the strategy's generator
    replay = pending_strategy()
    assert np.array_equal(replay._ask().params, ahead.params)  # the same draw the strategy's _ask makes


def test_ask_refuses_a_second_population_ahead_a_strategy_without_the_mode_and_nothing_pending():
    es, pipeline = pending_strategy(), Pipeline()
    pipeline.ask(es)
    with pytest.raises(bb.StateError) as info:
        pipeline.ask(es)
    assert str(info.value) == ("ask_ahead() called twice without tell(); tell() the pending population's "
                               "fitness first")
    with pytest.raises(bb.StateError) as info:
        Pipeline().ask(bb.make_strategy("openai-es", dim=3, popsize=4, seed=0))
    assert str(info.value) == "ask_ahead() needs a pending population; call ask() first, then ask_ahead()"
    with pytest.raises(bb.StateError) as info:
        Pipeline().ask(pending_strategy("xnes"))
    assert str(info.value) == ("xnes cannot sample ahead: its tell() uses what its last ask() kept; run it "
                               "without the pipelined mode")


def test_advance_hands_the_population_ahead_over_and_marks_it_kept():
    es, pipeline = pending_strategy(), Pipeline()
    ahead = pipeline.ask(es)
    assert pipeline.advance() is ahead
    assert (pipeline.ahead, pipeline.rng_state, pipeline.kept) == (None, None, True)
    assert pipeline.advance() is None and not pipeline.kept  # a tell with nothing asked ahead


def test_save_keeps_a_population_asked_ahead_with_the_generator_after_it():
    es, pipeline = pending_strategy(), Pipeline()
    ahead = pipeline.ask(es)
    assert pipeline.save(es.pending_population, es.rng) is None  # the pending one was asked normally
    pipeline.advance()
    data, rng_state = pipeline.save(ahead, es.rng)
    assert rng_state == es.rng.bit_generator.state  # the generator after the population kept
    assert data.keys() == population_state(ahead).keys()
    assert all(np.array_equal(data[key], population_state(ahead)[key]) for key in data)
    before_next = es.rng.bit_generator.state
    pipeline.ask(es)  # the next population ahead is not kept: the state asks it again
    assert pipeline.save(ahead, es.rng)[1] == before_next
    assert pipeline.save(None, es.rng) is None


def test_load_restores_the_population_kept_and_resets_the_rest():
    es, pipeline = pending_strategy(), Pipeline()
    ahead = pipeline.ask(es)
    pipeline.advance()
    data, _ = pipeline.save(ahead, es.rng)
    pipeline.ask(es)
    restored = pipeline.load({ASKED_AHEAD: data}, dim=3)
    assert np.array_equal(restored.params, ahead.params)
    assert (pipeline.ahead, pipeline.rng_state, pipeline.kept) == (None, None, True)
    assert pipeline.load({}, dim=3) is None
    assert (pipeline.ahead, pipeline.rng_state, pipeline.kept) == (None, None, False)
    with pytest.raises(bb.ConfigError, match="^state_dict asked_ahead population does not fit this strategy"):
        pipeline.load({ASKED_AHEAD: data}, dim=4)
