"""Bad input gets a clear error: what was expected, what came, how to fix it."""

import numpy as np
import pytest

import blackbox as bb


def make(name="openai-es", **kw):
    kw.setdefault("dim", 4)
    return bb.make_strategy(name, seed=0, **kw)


def test_tell_before_ask():
    with pytest.raises(bb.StateError, match=r"tell\(\) called before ask\(\)"):
        make().tell(np.zeros(64))


def test_tell_twice():
    es = make()
    es.tell(np.zeros(len(es.ask())))
    with pytest.raises(bb.StateError, match=r"tell\(\) called twice for one ask\(\)"):
        es.tell(np.zeros(64))


def test_ask_twice():
    es = make()
    es.ask()
    with pytest.raises(bb.StateError, match=r"ask\(\) called twice without tell\(\)"):
        es.ask()


def test_wrong_length():
    es = make()
    es.ask()
    with pytest.raises(bb.errors.TellError) as info:
        es.tell(np.zeros(63))
    assert str(info.value) == (
        "tell() got 63 fitness values for a population of 64; "
        "pass one value per row of the population from ask()"
    )
    es.tell(np.zeros(64))  # the population is still pending after a refused tell


def test_wrong_shape_and_type():
    es = make()
    es.ask()
    with pytest.raises(bb.errors.TellError, match=r"fitness of shape \(64, 1\); expected shape \(64,\)"):
        es.tell(np.zeros((64, 1)))
    with pytest.raises(bb.errors.TellError, match="tell\\(\\) needs real numbers"):
        es.tell(["a"] * 64)


def test_odd_population_with_mirrored_sampling():
    with pytest.raises(bb.ConfigError, match="popsize must be even for mirrored sampling, got 63; use 64"):
        make(popsize=63)
    make("nes", popsize=63)  # plain sampling takes any size


@pytest.mark.parametrize("name", ["openai-es", "nes", "ga"])
@pytest.mark.parametrize("sigma", [0.0, -0.1])
def test_sigma_must_be_positive(name, sigma):
    with pytest.raises(bb.ConfigError, match=f"sigma must be > 0, got {sigma!r}"):
        make(name, sigma=sigma)


def test_non_finite_initial_point():
    with pytest.raises(bb.ConfigError, match="x0 must be finite; entry 2 is nan"):
        bb.make_strategy("openai-es", x0=[0.0, 1.0, np.nan])
    with pytest.raises(bb.ConfigError, match="x0 has length 3 but dim=4"):
        bb.make_strategy("openai-es", dim=4, x0=[0.0, 1.0, 2.0])


def test_unknown_strategy_name():
    with pytest.raises(bb.errors.UnknownNameError) as info:
        bb.make_strategy("openai_es", dim=3)
    message = str(info.value)
    assert message.startswith("unknown strategy 'openai_es'. Did you mean 'openai-es'?")
    assert message.endswith("Installed strategies: ga, nes, openai-es") or "ga, nes, openai-es" in message


def test_unknown_config_key():
    with pytest.raises(bb.ConfigError) as info:
        bb.make_strategy("openai-es", dim=3, sigmaa=0.1)
    assert str(info.value).startswith("strategy 'openai-es' has no option 'sigmaa'. Did you mean 'sigma'?")


def test_nan_fitness_ranks_worst_and_never_becomes_best():
    problem = bb.make_problem("sphere", dim=3)

    class NaNSometimes(bb.Problem):
        dim = 3

        def evaluate(self, params, seeds):
            result = problem.evaluate(params, seeds)
            result.fitness[::3] = np.nan
            return result

    result = bb.optimize("openai-es", NaNSometimes(), generations=5, seed=0)
    assert np.isfinite(result.best_fitness)
    assert all(np.isfinite(r.best) for r in result.records)


def test_a_budget_is_required():
    with pytest.raises(bb.ConfigError, match="could never stop"):
        bb.optimize("openai-es", "sphere", target=0.0)


def test_dimension_mismatch():
    with pytest.raises(bb.ConfigError, match="strategy has dim=4 but problem 'sphere' has dim=10"):
        bb.optimize(make(), "sphere", generations=1)
