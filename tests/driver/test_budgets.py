"""Budgets spelled alike (``max_generations`` beside ``max_evaluations``, ``max_steps``, ``max_time``;
``generations`` still works) and one builder of stop conditions for ``optimize`` and run directories."""

from __future__ import annotations

import pytest

import blackbox as bb
from blackbox.config.resolved import Stop
from blackbox.driver.stop import (
    ConfirmGoal,
    EnvSteps,
    Evaluations,
    Generations,
    GoalHeld,
    TargetFitness,
    WallTime,
    stop_conditions,
)


def run(**budget):
    return bb.optimize("nes:popsize=8", "sphere:dim=3", seed=2, **budget)


def test_max_generations_and_its_old_name_give_the_same_run():
    new, old = run(max_generations=5), run(generations=5)
    assert new.generations == old.generations == 5
    assert new.stop_reason == old.stop_reason == "generations 5 >= 5"
    assert new.center.tobytes() == old.center.tobytes()
    assert [r.best for r in new.records] == [r.best for r in old.records]


def test_giving_both_names_is_refused():
    with pytest.raises(bb.ConfigError) as info:
        run(max_generations=5, generations=5)
    assert str(info.value) == ("give max_generations or generations (its old name), not both; "
                               "got max_generations=5 and generations=5")


def test_no_budget_names_the_budgets():
    with pytest.raises(bb.ConfigError) as info:
        run(target=0.0)
    assert str(info.value) == ("the run has no budget and could never stop: pass max_generations=, "
                               "max_evaluations=, max_steps= or max_time= (a target alone may never be reached)")


def test_one_builder_in_a_fixed_order():
    extra = GoalHeld(3.0, 2)
    conditions = stop_conditions(max_time=9.0, target=1.0, max_generations=4, max_evaluations=50, max_steps=70,
                                 goal=2.0, goal_generations=3, extra=[extra])
    assert [type(c) for c in conditions] == [Generations, Evaluations, EnvSteps, WallTime, TargetFitness,
                                             GoalHeld, GoalHeld]
    assert conditions[-1] is extra and conditions[5].generations == 3
    confirm = stop_conditions(max_generations=4, goal=2.0, goal_episodes=7)[-1]
    assert isinstance(confirm, ConfirmGoal) and (confirm.goal, confirm.episodes) == (2.0, 7)
    with pytest.raises(bb.ConfigError, match="stop conditions must be callables \\(record\\) -> reason, got 3"):
        stop_conditions(max_generations=1, extra=[3])
    assert stop_conditions(target=1.0, require_budget=False) != []


def test_a_run_directory_uses_the_same_builder():
    stop = Stop(generations=4, max_time=9.0, target=1.0, goal=2.0, goal_episodes=7)
    built = stop.conditions()
    same = stop_conditions(max_generations=4, max_time=9.0, target=1.0, goal=2.0, goal_episodes=7)
    assert [repr(c) for c in built] == [repr(c) for c in same]
    assert [repr(c) for c in Stop(generations=2, goal=1.0).conditions()] == [
        "Generations(n=2)", "GoalHeld(value=1.0, generations=1, which='center')"]


def test_optimize_takes_a_component():
    from blackbox.registry.component import Component

    result = bb.optimize(Component.parse("strategy", "nes:popsize=8"), Component("problem", "sphere", (3,)),
                         Component.parse("executor", "serial"), max_generations=2, seed=2)
    assert result.generations == 2 and result.center.shape == (3,)
    with pytest.raises(bb.ConfigError, match="problem must be a Problem or a registered name, got int"):
        bb.optimize("nes", 3, max_generations=1)


GOAL_RUN = {"strategy": "openai-es:popsize=20,sigma=0.5,lr=0.3", "problem": "sphere:dim=3", "seed": 2,
            "max_generations": 300}


def test_optimize_takes_the_goal_as_the_command_line_does():
    held = bb.optimize(**GOAL_RUN, goal=-0.05, goal_generations=3)
    same = bb.optimize(**GOAL_RUN, stop=[GoalHeld(-0.05, 3)])
    assert held.stop_reason == same.stop_reason == "center fitness >= -0.05 for 3 generations"
    assert held.generations == same.generations == 34
    assert held.center.tobytes() == same.center.tobytes()
    once = bb.optimize(**GOAL_RUN, goal=-0.05)  # goal_generations defaults to 1
    assert (once.stop_reason, once.generations) == ("center fitness >= -0.05 for 1 generations", 32)


def test_goal_episodes_needs_a_problem_that_scores():
    with pytest.raises(bb.ConfigError) as info:
        bb.optimize(**GOAL_RUN, goal=-0.05, goal_episodes=3)
    assert str(info.value) == ("confirming a goal on fresh episodes needs a problem with score(params, episodes, "
                               "seed); Sphere has none (drop goal_episodes)")


@pytest.mark.parametrize("name", ["goal_generations", "goal_episodes"])
def test_a_goal_setting_without_a_goal_is_refused(name):
    with pytest.raises(bb.ConfigError) as info:
        bb.optimize(**GOAL_RUN, **{name: 3})
    assert str(info.value) == f"{name}=3 needs a goal: pass goal= (the fitness to reach) or drop {name}"


def test_goal_generations_and_goal_episodes_together_are_refused():
    with pytest.raises(bb.ConfigError) as info:
        bb.optimize(**GOAL_RUN, goal=1.0, goal_generations=3, goal_episodes=20)
    assert str(info.value) == ("give goal_generations (the center holds the goal k generations) or goal_episodes "
                               "(confirmed on fresh episodes), not both; got goal_generations=3 and goal_episodes=20")
