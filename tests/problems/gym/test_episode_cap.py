"""Adaptive episode caps: the two rules, the cap in the problem's synced state, whichever executor."""

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install blackbox-es[gym])")

import blackbox as bb  # noqa: E402
from blackbox.problems.gym.episode_cap import make_episode_cap  # noqa: E402
from blackbox.problems.gym.problem import GymProblem  # noqa: E402


def test_mean_rule_is_twice_the_mean_length_of_the_last_generation():
    cap = make_episode_cap("mean", 500, None, None, None, None)
    assert cap.cap == 500  # the first generation runs uncapped
    cap.observe(np.array([10, 20, 31]), 1, np.zeros(3))
    assert cap.cap == 41  # ceil(2 * 61 / 3)
    cap.observe(np.array([100, 120]), 2, np.zeros(2))  # 4 episodes of 55 on average
    assert cap.cap == 110
    cap.observe(np.array([400, 400]), 1, np.zeros(2))
    assert cap.cap == 500  # never above the task's limit
    assert make_episode_cap("mean", 500, 1.5, None, None, None).factor == 1.5


def test_adaptive_rule_is_openai_es_distributed():
    """es_distributed: if (lengths == tslimit).mean() >= threshold: tslimit = int(ratio * tslimit)."""
    cap = make_episode_cap("adaptive", 1000, None, 100, 0.5, 1.5)
    assert cap.cap == 100
    cap.observe(np.array([100, 50, 100, 20]), 1, np.array([1, 0, 1, 0]))  # half hit the cap
    assert cap.cap == 150
    cap.observe(np.array([150, 50, 150, 20]), 1, np.array([1, 0, 0, 0]))  # a quarter: stays
    assert cap.cap == 150
    for _ in range(10):
        cap.observe(np.array([cap.cap] * 4), 1, np.ones(4))
    assert cap.cap == 1000
    assert make_episode_cap("adaptive", 50, None, None, None, None).describe() == {
        "rule": "adaptive", "start": 100, "threshold": 0.5, "ratio": 2.0, "cap": 50}
    assert make_episode_cap("none", 50, None, None, None, None) is None
    assert make_episode_cap(None, 50, None, None, None, None) is None


def test_fixed_rule_cuts_every_training_episode_at_its_steps():
    cap = make_episode_cap("fixed", 1000, None, None, None, None, 400)
    assert cap.cap == 400 and cap.describe() == {"rule": "fixed", "steps": 400, "cap": 400}
    cap.observe(np.array([400, 400]), 1, np.ones(2))  # every episode hit it: a fixed cap does not move
    assert cap.cap == 400
    cap.load_state_dict({"episode_cap": 800})  # the option decides, not a state of another rule
    assert cap.cap == 400
    assert make_episode_cap("fixed", 300, None, None, None, None, 400).cap == 300  # never above the task's limit


def test_a_fixed_cap_with_a_lift_is_lifted_for_good_once_the_center_reaches_it():
    cap = make_episode_cap("fixed", 1000, None, None, None, None, 400, 4800.0)
    assert cap.describe() == {"rule": "fixed", "steps": 400, "lift": 4800.0, "cap": 400}
    cap.observe(np.array([400, 400]), 1, np.ones(2), center=4799.9)
    cap.observe(np.array([400, 400]), 1, np.ones(2))  # no center row this generation: nothing to judge
    assert cap.cap == 400 and cap.cuts_every_episode
    cap.observe(np.array([400, 400]), 1, np.ones(2), center=4800.0)
    assert cap.cap == 1000 and not cap.cuts_every_episode  # the population plays full episodes from now on
    cap.observe(np.array([1000, 80]), 1, np.array([1, 0]), center=-500.0)
    assert cap.cap == 1000  # for good
    resumed = make_episode_cap("fixed", 1000, None, None, None, None, 400, 4800.0)
    resumed.load_state_dict(cap.state_dict())  # a checkpoint (and every worker's synced state) keeps the lift
    assert resumed.cap == 1000
    never = make_episode_cap("fixed", 1000, None, None, None, None, 400)
    never.observe(np.array([400]), 1, np.ones(1), center=1e9)
    assert never.cap == 400  # no lift given: never lifted


def test_a_lifted_cap_run_plays_full_episodes_after_and_is_the_same_whatever_the_executor():
    from blackbox.executors.loky import LokyExecutor

    def run(executor):
        problem = GymProblem("CartPole-v1", policy="linear", episode_cap="fixed", episode_cap_steps=30,
                             episode_cap_lift=60.0)
        es = bb.make_strategy("snes", dim=problem.dim, seed=5, popsize=7)
        result = bb.optimize(es, problem, executor, generations=12, seed=5)
        return problem.cap.cap, [(r.center, r.steps) for r in result.records]

    cap, records = run("serial")
    lifted = next(g for g, (center, _) in enumerate(records) if center >= 60.0)
    assert cap == 500 and lifted < len(records) - 1, records
    # CartPole's return is the episode's length: a generation's steps less its center's are its 7 members'
    members = [int(s - c) for (c, _), s in zip(records, np.diff([0] + [s for _, s in records]))]
    assert max(members[: lifted + 1]) <= 7 * 30  # cut at 30 up to the generation whose center passed 60
    assert max(members[lifted + 1:]) > 7 * 30, members  # then full episodes
    with LokyExecutor(workers=2) as loky:  # the lifted cap reaches the workers with the center
        assert run(loky) == (cap, records)


def test_a_fixed_cap_trains_on_short_episodes_and_checks_the_goal_on_full_ones():
    problem = GymProblem("CartPole-v1", policy="linear", episode_cap="fixed", episode_cap_steps=30)
    params = good_params(problem, 4)
    result = problem.evaluate(params, np.arange(4))
    assert result.steps.tolist() == [30] * 4 and result.info["episodes_capped"].tolist() == [1] * 4
    problem.observe(result)
    assert problem.evaluate(params, np.arange(4)).steps.max() == 30  # the cap stays
    assert problem.score(params[0], episodes=1, seed=0)[0] > 30  # the goal check and score run full episodes
    # the center row plays full episodes, so the goal screen is the goal itself
    assert problem.training_goal(475.0) == 475.0
    assert GymProblem("CartPole-v1", episode_cap="fixed", episode_cap_steps=30, reward_shift=-1.0,
                      policy="linear").training_goal(475.0) == 475.0 - 500


def test_under_a_fixed_cap_the_center_row_plays_full_episodes():
    """The driver's center row (last, its own seed group) plays to the task's limit; the other rows are cut."""
    from blackbox.core.population import Population
    from blackbox.core.row_source import RowSource

    problem = GymProblem("CartPole-v1", policy="linear", episode_cap="fixed", episode_cap_steps=30, episodes=2)
    params = good_params(problem, 5)
    population = Population.from_dense(params[:4]).with_center(params[4])
    seeds = np.arange(10, 15)
    result = problem.evaluate(RowSource(population, np.arange(5)), seeds)
    full = GymProblem("CartPole-v1", policy="linear", episodes=2)
    assert result.steps[:4].tolist() == [60] * 4
    assert result.steps[4] > 60 and result.steps[4] == full.evaluate(params[4:], seeds[4:]).steps[0]
    assert result.fitness[4] == full.evaluate(params[4:], seeds[4:]).fitness[0]
    assert result.steps[4] == 1000  # both to the task's own limit (500), which they ran into
    assert result.info["episodes_capped"].tolist() == [2, 2, 2, 2, 2]
    # a worker's slice knows its center row too (here in the middle of the rows it is handed)
    middle = problem.evaluate(RowSource(population, np.array([0, 4, 1])), seeds[[0, 4, 1]])
    assert middle.steps.tolist() == [60, result.steps[4], 60]
    assert RowSource(population, np.array([0, 1])).center is None
    assert problem.evaluate(params, seeds).steps.tolist() == [60] * 5  # plain rows: no center, all cut
    one_by_one = GymProblem("CartPole-v1", policy="linear", episode_cap="fixed", episode_cap_steps=30, episodes=2,
                            batched=False)
    again = one_by_one.evaluate(RowSource(population, np.arange(5)), seeds)
    np.testing.assert_array_equal(again.fitness, result.fitness)
    np.testing.assert_array_equal(again.steps, result.steps)


def test_a_fixed_cap_run_confirms_its_goal_on_full_episodes():
    problem = GymProblem("CartPole-v1", policy="linear", episode_cap="fixed", episode_cap_steps=100)
    result = bb.optimize(bb.make_strategy("snes", dim=problem.dim, seed=3), problem, "serial", generations=60,
                         seed=3, goal=475.0, goal_episodes=5)
    assert result.stop_reason.startswith("center's mean over 5 fresh episodes"), result.stop_reason
    assert result.records[-1].center >= 475.0 > 100  # the center's return is a full episode's
    popsize = result.records[0].evaluations - 1
    steps = np.diff([0] + [r.steps for r in result.records])
    # CartPole's return is the episode's length: the center's full episode is counted with the cut ones
    assert all(0 < s - r.center <= 100 * popsize for s, r in zip(steps, result.records))
    assert steps[-1] >= 475 + popsize
    assert np.mean(problem.score(result.center, episodes=5, seed=99)) >= 400


def test_under_a_fixed_cap_the_best_row_is_a_center_on_full_episodes():
    """Pendulum's cut episodes cost less than whole ones: a member's partial return must not pass for the best."""
    problem = GymProblem("Pendulum-v1", policy="linear", episode_cap="fixed", episode_cap_steps=20)
    es = bb.make_strategy("snes", dim=problem.dim, seed=1, popsize=6)
    result = bb.optimize(es, problem, "serial", generations=3, seed=1)
    centers = [r.center for r in result.records]
    assert max(r.best for r in result.records) > max(centers)  # the members' 20-step returns
    assert result.best_fitness == max(centers)
    evaluation = problem.evaluate(result.best_params[None, :], np.array([0]))
    assert evaluation.info["partial"].tolist() == [True]  # plain rows: no center, every return partial
    assert "partial" not in GymProblem("Pendulum-v1", policy="linear", episode_cap="mean").evaluate(
        result.best_params[None, :], np.array([0])).info


def test_a_fixed_cap_run_is_the_same_whatever_the_executor():
    from blackbox.executors.loky import LokyExecutor

    def run(executor):
        problem = GymProblem("CartPole-v1", policy="linear", episode_cap="fixed", episode_cap_steps=40)
        es = bb.make_strategy("snes", dim=problem.dim, seed=5, popsize=7)
        result = bb.optimize(es, problem, executor, generations=4, seed=5)
        return result.center, [(r.center, r.steps, r.best) for r in result.records]

    serial = run("serial")
    with LokyExecutor(workers=2) as loky:  # the center row lands in one worker's share
        parallel = run(loky)
    np.testing.assert_array_equal(serial[0], parallel[0])
    assert serial[1] == parallel[1]
    assert max(center for center, _, _ in serial[1]) > 40  # the center played past the cap


def test_cap_options_are_checked():
    with pytest.raises(bb.ConfigError, match="episode_cap='fixed' needs episode_cap_steps=N: the decisions each "
                                             "training episode is cut at"):
        GymProblem("CartPole-v1", episode_cap="fixed")
    with pytest.raises(bb.ConfigError, match="episode_cap_steps must be >= 1, got 0"):
        GymProblem("CartPole-v1", episode_cap="fixed", episode_cap_steps=0)
    with pytest.raises(bb.ConfigError, match="episode_cap_steps applies to episode_cap='fixed', but "
                                             "episode_cap='adaptive'"):
        GymProblem("CartPole-v1", episode_cap="adaptive", episode_cap_steps=10)
    with pytest.raises(bb.ConfigError, match="episode_cap_lift applies to episode_cap='fixed', but "
                                             "episode_cap='mean'"):
        GymProblem("CartPole-v1", episode_cap="mean", episode_cap_lift=100.0)
    with pytest.raises(bb.ConfigError, match="episode_cap_lift must be a number, got 'high'"):
        GymProblem("CartPole-v1", episode_cap="fixed", episode_cap_steps=10, episode_cap_lift="high")
    with pytest.raises(bb.ConfigError, match="episode_cap must be one of 'none', 'mean', 'adaptive', 'fixed', "
                                             "got 'mena'"):
        GymProblem("CartPole-v1", episode_cap="mena")
    with pytest.raises(bb.ConfigError, match="episode_cap_factor applies to episode_cap='mean', but "
                                             "episode_cap='adaptive'"):
        GymProblem("CartPole-v1", episode_cap="adaptive", episode_cap_factor=3.0)
    with pytest.raises(bb.ConfigError, match="episode_cap_start applies to episode_cap='adaptive', but "
                                             "episode_cap='none'"):
        GymProblem("CartPole-v1", episode_cap_start=10)
    with pytest.raises(bb.ConfigError, match="episode_cap_ratio must be > 1"):
        GymProblem("CartPole-v1", episode_cap="adaptive", episode_cap_ratio=1.0)
    with pytest.raises(bb.ConfigError, match="episode_cap_threshold must be <= 1.0, got 2.0"):
        GymProblem("CartPole-v1", episode_cap="adaptive", episode_cap_threshold=2.0)


def good_params(problem, n):
    """Rows that balance the pole for a while (so that the cap binds)."""
    w = np.zeros(problem.dim)
    w[[2, 3, 6, 7]] = [-1.0, -1.0, 1.0, 1.0]  # linear 4->2: push toward the side the pole falls
    return w + 0.01 * np.random.default_rng(0).standard_normal((n, problem.dim))


def test_gym_problem_caps_training_episodes_and_syncs_the_cap():
    problem = GymProblem("CartPole-v1", policy="linear", episode_cap="adaptive", episode_cap_start=20)
    params, seeds = good_params(problem, 6), np.arange(6)
    result = problem.evaluate(params, seeds)
    assert result.steps.max() == 20 and np.array_equal(result.info["episodes_capped"], result.steps == 20)
    problem.observe(result)
    assert problem.state_dict() == {"episode_cap": 40}
    again = problem.evaluate(params, seeds)
    assert again.steps.max() == 40
    worker = GymProblem("CartPole-v1", policy="linear", episode_cap="adaptive", episode_cap_start=20)
    worker.load_state_dict(problem.state_dict())
    np.testing.assert_array_equal(worker.evaluate(params, seeds).fitness, again.fitness)
    # scoring and playing run full episodes
    assert problem.score(params[0], episodes=1, seed=0)[0] > 40
    one_by_one = GymProblem("CartPole-v1", policy="linear", episode_cap="adaptive", episode_cap_start=20,
                            batched=False)
    one_by_one.load_state_dict(problem.state_dict())
    np.testing.assert_array_equal(one_by_one.evaluate(params, seeds).fitness, again.fitness)


def test_mean_cap_through_a_run_is_the_same_with_loky():
    from blackbox.executors.loky import LokyExecutor

    def run(executor):
        problem = GymProblem("CartPole-v1", hidden=[8], episode_cap="mean", episodes=2)
        es = bb.make_strategy("openai-es", dim=problem.dim, x0=problem.initial_params(np.random.default_rng(0)),
                              popsize=8, sigma=0.1, lr=0.05, seed=0)
        result = bb.optimize(es, problem, executor, generations=3, seed=0)
        return result.center, problem.state_dict()["episode_cap"], result.records

    serial = run("serial")
    with LokyExecutor(workers=2) as loky:
        parallel = run(loky)
    np.testing.assert_array_equal(serial[0], parallel[0])
    assert serial[1] == parallel[1]
    # the cap that generation g+1 ran with is twice generation g's mean episode length
    steps = np.diff([0] + [r.steps for r in serial[2]])
    assert serial[1] == int(np.ceil(2 * steps[-1] / (9 * 2)))


def test_cap_is_in_describe_and_checkpoints_keep_it(tmp_path):
    from blackbox.cli import main

    problem = GymProblem("CartPole-v1", episode_cap="mean")
    assert problem.describe()["episode_cap"] == {"rule": "mean", "factor": 2.0, "cap": 500}
    out = tmp_path / "run"
    assert main(["run", "--problem", "gym:CartPole-v1,hidden=[4],episode_cap=mean", "--generations", "3",
                 "--set", "popsize=6", "--quiet", "--out", str(out), "--no-plot", "--no-preset"]) == 0
    from blackbox.files import load_npz

    solution = load_npz(out / "solution.npz")
    assert any(key.endswith("episode_cap") for key in solution)
