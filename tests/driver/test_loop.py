"""The driver: records, stop conditions, seeds, errors from evaluations."""

import numpy as np
import pytest

import blackbox as bb
from blackbox.driver.stop import GoalHeld


def test_records_have_every_field_and_cumulative_counters():
    result = bb.optimize("openai-es", bb.make_problem("sphere", dim=5), generations=4, seed=1)
    assert [r.generation for r in result.records] == [1, 2, 3, 4]
    assert [r.evaluations for r in result.records] == [65, 130, 195, 260]  # 64 rows + the center
    for r in result.records:
        assert r.worst <= r.median <= r.best and r.worst <= r.mean <= r.best
        assert 1 <= r.center_rank <= 65 and 0 <= r.above_mean <= 64
        assert r.sigma == 0.02 and r.update_norm > 0 and r.best_ever >= r.best
    assert result.generations == 4 and result.evaluations == 260
    assert result.stop_reason == "generations 4 >= 4"


def test_center_fitness_and_rank_are_measured():
    problem = bb.make_problem("sphere", dim=3)
    es = bb.make_strategy("openai-es", dim=3, x0=[1.0, 2.0, 3.0], seed=0)
    result = bb.optimize(es, problem, generations=1)
    record = result.records[0]
    assert record.center == pytest.approx(-14.0)
    pop_fitness = -np.sum(es._center ** 2)  # after one step the center moved: it was [1, 2, 3]
    assert record.center != pop_fitness


def test_center_rank_counts_better_members():
    class Fixed(bb.Problem):
        dim = 2

        def evaluate(self, params, seeds):
            fitness = np.arange(len(params), dtype=float)
            fitness[-1] = 60.5  # the center row (last) beats rows 0..60
            return bb.EvalResult(fitness, np.zeros(len(params), dtype=np.int64))

    result = bb.optimize("openai-es", Fixed(), generations=1, seed=0)
    assert result.records[0].center_rank == 4  # rows 61, 62, 63 are better
    assert result.records[0].above_mean == 32


@pytest.mark.parametrize("kwargs,generations", [
    (dict(max_evaluations=650), 10),
    (dict(generations=3), 3),
])
def test_budgets(kwargs, generations):
    result = bb.optimize("openai-es", bb.make_problem("sphere", dim=3), seed=0, **kwargs)
    assert result.generations == generations


def test_wall_time_budget():
    result = bb.optimize("openai-es", bb.make_problem("sphere", dim=3), seed=0, max_time=0.2)
    assert result.wall_time >= 0.2 and result.stop_reason.startswith("wall time")
    assert result.wall_time < 5


def test_target_fitness_stops_early():
    result = bb.optimize("nes", bb.make_problem("quadratic"), seed=0, generations=5000, target=-0.01)
    assert result.best_fitness >= -0.01 and result.generations < 5000
    assert result.stop_reason.startswith("best_ever fitness")


def test_goal_held_for_k_generations():
    class Steps(bb.Problem):
        """The center's fitness is the generation number."""

        dim = 2

        def __init__(self):
            self.calls = 0

        def evaluate(self, params, seeds):
            self.calls += 1
            return bb.EvalResult(np.full(len(params), float(self.calls)), np.ones(len(params), dtype=np.int64))

    result = bb.optimize("openai-es", Steps(), generations=100, stop=[GoalHeld(5.0, generations=3)], seed=0)
    assert result.generations == 7  # fitness >= 5 in generations 5, 6, 7
    assert result.steps == 7 * 65


def test_callbacks_can_stop_and_see_records():
    seen = []

    def spy(record):
        seen.append(record.generation)
        return record.generation == 3

    result = bb.optimize("ga", bb.make_problem("sphere", dim=3), generations=50, callbacks=[spy], seed=0)
    assert seen == [1, 2, 3] and result.generations == 3


def test_evaluation_error_names_row_and_seed():
    class Bomb(bb.Problem):
        dim = 3

        def evaluate(self, params, seeds):
            if np.any(params[:, 0] > 0.01):
                raise ValueError("exploded")
            return bb.EvalResult(np.zeros(len(params)), np.zeros(len(params), dtype=np.int64))

    es = bb.make_strategy("openai-es", dim=3, seed=0)
    with pytest.raises(bb.errors.EvaluationError) as info:
        bb.optimize(es, Bomb(), generations=1)
    err = info.value
    pop_rows = es._pending.params
    first_bad = int(np.flatnonzero(pop_rows[:, 0] > 0.01)[0])
    assert err.row == first_bad
    assert str(err).startswith(f"evaluation of row {first_bad} (seed {err.seed}) failed: ValueError: exploded")
    assert isinstance(err.__cause__, ValueError)


def test_problem_returning_wrong_shape():
    class Wrong(bb.Problem):
        dim = 2

        def evaluate(self, params, seeds):
            return bb.EvalResult(np.zeros(3), np.zeros(3, dtype=np.int64))

    with pytest.raises(bb.errors.EvaluationError, match=r"returned fitness of shape \(3,\) and steps of shape \(3,\) for 65 rows"):
        bb.optimize("openai-es", Wrong(), generations=1, seed=0)


def test_seeds_pair_mirrored_rows_and_depend_on_generation():
    seen = []

    class Spy(bb.Problem):
        dim = 2

        def evaluate(self, params, seeds):
            seen.append(np.array(seeds))
            return bb.EvalResult(np.zeros(len(params)), np.zeros(len(params), dtype=np.int64))

    bb.optimize(bb.make_strategy("openai-es", dim=2, popsize=8, seed=0), Spy(), generations=2, seed=42)
    first, second = seen
    assert len(first) == 9
    assert np.array_equal(first[0:8:2], first[1:8:2])  # a mirrored pair shares its seed
    assert len(set(first[0:8:2].tolist())) == 4
    assert first[8] not in first[:8]  # the center has its own
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(first, bb.evaluation_seeds(42, 0, np.r_[np.arange(8) // 2, 4]))


def test_evaluation_seeds_prefix_and_shared():
    a = bb.evaluation_seeds(1, 3, np.arange(10))
    b = bb.evaluation_seeds(1, 3, np.arange(4))
    assert np.array_equal(a[:4], b)
    shared = bb.evaluation_seeds(1, 3, np.arange(10), shared=True)
    assert len(set(shared.tolist())) == 1


def test_a_plain_function_callback_that_stops_the_run_is_named_in_the_stop_reason():
    def enough(record):
        return record.generation >= 2

    result = bb.optimize("openai-es", "quadratic:dim=3", max_generations=10, seed=0, callbacks=[enough])
    assert result.stop_reason == (
        "callback test_a_plain_function_callback_that_stops_the_run_is_named_in_the_stop_reason.<locals>.enough "
        "asked to stop")
    assert [r.generation for r in result.records][-1] == 2 and len(result.records) < 10
