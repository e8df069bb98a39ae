"""Property tests over config files: TOML run configs for ``blackbox run --config`` and experiment
files for ``blackbox compare``, generated with random keys, values, types and nesting around the
real schema. Every file either works or gets a BlackboxError with a message; nothing else escapes
(no IndexError, KeyError, TypeError, AttributeError, ValueError from deep inside)."""

from __future__ import annotations

import datetime as dt
import math
import shutil
import tempfile
from pathlib import Path

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blackbox.cli import main
from blackbox.config.run import build_components, load_toml, read_run_config, resolve_run_config
from blackbox.errors import BlackboxError
from blackbox.lab.experiment import load_experiment
from blackbox.registry.options import options_of
from blackbox.registry.plugins import problems, strategies
from tests.helpers.extras import installed_problems
from tests.reliability.helpers import note

pytestmark = pytest.mark.filterwarnings("ignore:Initial solution argument:UserWarning")  # pycma on 1-d

STRATEGY_NAMES = strategies.names()
CHEAP_PROBLEMS = ["quadratic", "sphere", "rosenbrock", "rastrigin"]


def _options(registry, names):
    found = set()
    for name in names:
        found.update(options_of(registry.load(name)).names)
    return sorted(found)


STRATEGY_OPTIONS = _options(strategies, STRATEGY_NAMES)
PROBLEM_OPTIONS = _options(problems, problems.names())
EXECUTOR_OPTIONS = ["batch_size", "kind", "workers", "chunks_per_worker", "threads", "max_retries", "pool"]

# -- values of every TOML type, near the edges ----------------------------------------------------
small_ints = st.one_of(st.integers(-3, 40), st.sampled_from([0, 1, 2, 64, 300, 2**31, 2**62, -(2**63), 2**63 - 1]))
floats = st.one_of(st.floats(-1e3, 1e3), st.sampled_from([0.0, -0.0, 1e-300, 1e300, math.inf, -math.inf, math.nan]))
texts = st.one_of(st.text(max_size=8), st.sampled_from(["", " ", "nan", "inf", "1e3", "true", "none", "a:b=c", "é"]))
times = st.sampled_from([dt.datetime(2024, 1, 2, 3, 4, 5), dt.date(2024, 1, 2), dt.time(3, 4, 5)])
scalars = st.one_of(small_ints, floats, texts, st.booleans(), times)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(texts, inner, max_size=3)), max_leaves=6)
random_keys = st.one_of(texts.filter(bool), st.sampled_from(["Seed", "strategies", "stop ", "generation"]))


def maybe(value_strategy, other=values):
    """Mostly ``value_strategy``, sometimes anything."""
    return st.one_of(value_strategy, value_strategy, value_strategy, other)


def component(names, option_keys, option_values=values, specs=()):
    """A strategy/problem/executor entry: a spec string or a table with name/spec and options."""
    name = st.one_of(st.sampled_from(names), st.sampled_from(names).map(lambda n: n[:-1] + "x"), values)
    spec_text = st.one_of(st.sampled_from(list(specs) or names), texts,
                          st.builds(lambda n, k, v: f"{n}:{k}={v}", st.sampled_from(names),
                                    st.sampled_from(option_keys), st.one_of(small_ints, floats, texts)))
    options = st.dictionaries(st.one_of(st.sampled_from(option_keys), random_keys), option_values, max_size=4)
    table = st.builds(lambda head, key, opts: {key: head, **opts} if key else opts,
                      name, st.sampled_from(["name", "name", "spec", ""]), options)
    return st.one_of(spec_text, table, table, values)


def budget(keys=("generations", "max_evaluations", "max_steps", "max_time")):
    """Budgets kept small when well formed, so that a valid file runs in a moment."""
    good = {"generations": st.integers(1, 3), "max_evaluations": st.integers(1, 200),
            "max_steps": st.integers(1, 500), "max_time": st.floats(0.01, 0.3)}
    return st.dictionaries(st.one_of(st.sampled_from(list(keys)), random_keys),
                           st.one_of(*[good[k] for k in keys], values), max_size=3)


STOP_EXTRA = {"target": maybe(floats), "goal": maybe(floats), "goal_generations": maybe(small_ints),
              "goal_episodes": maybe(small_ints)}


@st.composite
def stop_tables(draw):
    table = draw(budget())
    for key in draw(st.dictionaries(st.sampled_from(list(STOP_EXTRA)), st.just(None), max_size=2)):
        table[key] = draw(STOP_EXTRA[key])
    return table


def broad_run_documents(problem_names):
    """Run-config documents: mostly the real keys with values of any type, sometimes unknown keys."""
    sections = {
        "seed": maybe(small_ints), "evaluate_center": maybe(st.booleans()), "preset": maybe(st.booleans()),
        "out": maybe(texts),
        "strategy": component(STRATEGY_NAMES, STRATEGY_OPTIONS),
        "problem": component(problem_names, PROBLEM_OPTIONS, specs=[f"{n}:dim=3" for n in problem_names]),
        "executor": component(["serial", "futures"], EXECUTOR_OPTIONS),
        "stop": st.one_of(stop_tables(), stop_tables(), values),
        "checkpoint": maybe(st.dictionaries(st.sampled_from(["every", "keep", "evry"]), maybe(small_ints), max_size=2)),
        "log": maybe(st.dictionaries(st.sampled_from(["plot", "tensorboard", "plots"]), maybe(st.booleans()), max_size=2)),
    }
    known = st.fixed_dictionaries({}, optional=sections)
    extra = st.dictionaries(random_keys, values, max_size=2)
    return st.one_of(known, st.builds(lambda a, b: {**a, **b}, known, extra))


def _own_options(registry, name):
    return [p for p in options_of(registry.load(name)).names if p not in ("dim", "seed")]


OWN_OPTIONS = {(kind, name): _own_options(registry, name)
               for kind, registry in (("strategy", strategies), ("problem", problems))
               for name in registry.names()}
OWN_OPTIONS[("executor", "serial")] = ["batch_size"]
OWN_OPTIONS[("executor", "futures")] = ["kind", "workers", "chunks_per_worker", "threads", "max_retries", "batch_size"]
#: Option values that are often right: small numbers, the usual choices.
option_values = st.one_of(
    st.integers(1, 12), st.floats(0.001, 2.0), st.booleans(),
    st.sampled_from(["adam", "sgd", "momentum", "clipup", "centered_ranks", "zscore", "raw", "nes", "thread",
                     "linear", "mlp", "tanh", "relu", "discrete", "CartPole-v1", "Pendulum-v1", "sphere"]),
    st.lists(st.floats(-2, 2), min_size=1, max_size=4), values)


@st.composite
def run_documents(draw, problem_names):
    """A valid run config, then zero to three mutations: an option of a component set to a value of
    any type, a value replaced, a key added at any depth, a key removed, a table turned into a spec."""
    kind_names = {"strategy": STRATEGY_NAMES, "problem": problem_names, "executor": ["serial", "futures"]}
    doc = {kind: {"name": draw(st.sampled_from(names))} for kind, names in kind_names.items()}
    if doc["executor"]["name"] == "futures":
        doc["executor"]["kind"] = "thread"
    if doc["problem"]["name"] in CHEAP_PROBLEMS:
        doc["problem"]["dim"] = draw(st.integers(1, 6))
    doc["stop"] = {"generations": draw(st.integers(1, 3))}
    doc["seed"] = draw(st.integers(0, 2**32))
    for _ in range(draw(st.integers(0, 3))):
        how = draw(st.sampled_from(["option", "option", "option", "replace", "add", "remove", "spec"]))
        if how == "option":
            kind = draw(st.sampled_from(list(kind_names)))
            table = doc.get(kind)
            if isinstance(table, dict) and isinstance(table.get("name"), str):
                own = OWN_OPTIONS.get((kind, table["name"]), []) or ["dim"]
                table[draw(st.one_of(st.sampled_from(own), st.sampled_from(own), random_keys))] = draw(option_values)
        elif how == "replace":
            key = draw(st.sampled_from(sorted(doc) + ["checkpoint", "log", "evaluate_center", "preset"]))
            doc[key] = draw(values)
        elif how == "add":
            target = draw(st.sampled_from(sorted(k for k, v in doc.items() if isinstance(v, dict)) + [None]))
            where = doc if target is None else doc[target]
            where[draw(random_keys)] = draw(values)
        elif how == "remove":
            path = draw(st.sampled_from(["strategy", "problem", "executor", "stop", "strategy.name", "stop.generations"]))
            head, _, tail = path.partition(".")
            if tail and isinstance(doc.get(head), dict):
                doc[head].pop(tail, None)
            else:
                doc.pop(head, None)
        else:
            kind = draw(st.sampled_from(list(kind_names)))
            table = doc.get(kind)
            if isinstance(table, dict) and isinstance(table.get("name"), str):
                options = ",".join(f"{k}={v}" for k, v in table.items() if k != "name" and isinstance(v, (int, float, str)))
                doc[kind] = table["name"] + (":" + options if options else "") + draw(st.sampled_from(["", "", ",", "=", ":x"]))
    return doc


def any_run_documents(problem_names):
    return st.one_of(run_documents(problem_names), run_documents(problem_names), broad_run_documents(problem_names))


def write_toml(data) -> Path | None:
    """The document as a TOML file (None if TOML cannot express it, e.g. a NaN key)."""
    try:
        text = tomli_w.dumps(data)
    except (TypeError, ValueError):
        return None
    folder = Path(tempfile.mkdtemp(prefix="blackbox-prop-"))
    path = folder / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


COUNTS = {"run configs": 0, "run configs refused": 0, "resolved configs": 0, "resolved configs refused": 0,
          "experiment files": 0, "experiment files refused": 0}


def _record(kind: str, refused: bool) -> None:
    COUNTS[kind] += 1
    COUNTS[kind + " refused"] += refused


def teardown_module(module):
    note("bad config files", inputs=COUNTS["run configs"] + COUNTS["resolved configs"] + COUNTS["experiment files"],
         refused=COUNTS["run configs refused"] + COUNTS["resolved configs refused"]
         + COUNTS["experiment files refused"], uncaught=0)


def _check_run_config(path):
    from contextlib import redirect_stderr, redirect_stdout
    from io import StringIO

    err = StringIO()
    with redirect_stderr(err), redirect_stdout(StringIO()):
        code = main(["run", "--config", str(path), "--out", str(path.parent / "run"), "--no-plot", "--quiet"])
    message = err.getvalue()
    assert code in (0, 2)
    if code == 2:
        assert message.startswith("blackbox run: error: ") and len(message) > 25, message
    _record("run configs", code == 2)


def _check_resolved_config(path):
    """Every registered problem whose extra is installed (gym, mnist, bbob too), built but not run."""
    refused = False
    try:
        resolved = resolve_run_config(read_run_config(load_toml(path)))
        components = build_components(resolved)
        components[2].close()
    except BlackboxError as exc:
        assert str(exc)
        refused = True
    _record("resolved configs", refused)


# -- experiment files ------------------------------------------------------------------------------
@st.composite
def broad_experiment_documents(draw):
    labels = st.one_of(st.sampled_from(STRATEGY_NAMES + CHEAP_PROBLEMS), texts.filter(bool))
    problem_entry = st.builds(
        lambda table, extra: {**table, **extra} if isinstance(table, dict) else table,
        component(CHEAP_PROBLEMS, PROBLEM_OPTIONS, specs=[f"{n}:dim=2" for n in CHEAP_PROBLEMS]),
        st.fixed_dictionaries({}, optional={"target": maybe(floats), "goal": maybe(floats),
                                            "goal_generations": maybe(small_ints), "budget": st.one_of(budget(), values),
                                            "optional": maybe(st.booleans())}))
    strategy_entry = st.builds(
        lambda table, optional: ({**table, **optional} if isinstance(table, dict) else table),
        component(STRATEGY_NAMES, STRATEGY_OPTIONS),
        st.fixed_dictionaries({}, optional={"optional": maybe(st.booleans())}))
    sections = {
        "name": maybe(texts), "out": maybe(texts), "seeds": st.one_of(st.integers(1, 2), st.lists(small_ints, max_size=3), values),
        "executor": component(["serial"], EXECUTOR_OPTIONS), "jobs": maybe(st.integers(1, 2)),
        "evaluate_center": maybe(st.booleans()),
        "budget": st.one_of(budget(), budget(), values),
        "checkpoint": maybe(st.dictionaries(st.sampled_from(["every", "keep"]), maybe(small_ints), max_size=2)),
        "log": maybe(st.dictionaries(st.sampled_from(["plot", "tensorboard"]), maybe(st.booleans()), max_size=2)),
        "strategies": st.one_of(st.dictionaries(labels, strategy_entry, min_size=1, max_size=2), values),
        "problems": st.one_of(st.dictionaries(labels, problem_entry, min_size=1, max_size=2), values),
        "report": maybe(st.fixed_dictionaries({}, optional={
            "reference": maybe(labels), "progress": maybe(st.lists(floats, max_size=3)), "confidence": maybe(floats),
            "resamples": maybe(small_ints), "plots": maybe(st.booleans()), "refrence": values})),
        "smoke": maybe(st.fixed_dictionaries({}, optional={"seeds": maybe(small_ints), "budget": budget(),
                                                           "jobs": maybe(small_ints)})),
    }
    data = draw(st.fixed_dictionaries({}, optional=sections))
    if draw(st.booleans()) and draw(st.booleans()):
        data.update(draw(st.dictionaries(random_keys, values, max_size=2)))
    return data


@st.composite
def mutated_experiment_documents(draw):
    """A valid experiment file, then zero to three mutations anywhere in it."""
    strategy = draw(st.sampled_from(STRATEGY_NAMES))
    problem = draw(st.sampled_from(CHEAP_PROBLEMS))
    doc = {
        "seeds": draw(st.sampled_from([1, 2, [0], [3, 1]])), "budget": {"generations": draw(st.integers(1, 3))},
        "strategies": {strategy: {}} if draw(st.booleans()) else {"label": {"name": strategy}},
        "problems": {problem: {"dim": 2}} if draw(st.booleans()) else {"p": {"spec": f"{problem}:dim=2"}},
        "log": {"plot": False},
    }
    doc["report"] = {"resamples": 100, "plots": False}
    if draw(st.booleans()):
        doc["report"]["reference"] = next(iter(doc["strategies"]))
    def first_entry(kind):
        table = doc.get(kind)
        return next(iter(table.values()), None) if isinstance(table, dict) else None

    tables = {"strategies": lambda: first_entry("strategies"), "problems": lambda: first_entry("problems")}
    for _ in range(draw(st.integers(0, 3))):
        how = draw(st.sampled_from(["option", "option", "problem-key", "replace", "add", "remove", "label"]))
        if how == "option":
            kind = draw(st.sampled_from(["strategies", "problems"]))
            table = tables[kind]()
            if isinstance(table, dict):
                name = strategy if kind == "strategies" else problem
                own = OWN_OPTIONS.get(("strategy" if kind == "strategies" else "problem", name), []) or ["dim"]
                table[draw(st.one_of(st.sampled_from(own), random_keys))] = draw(option_values)
        elif how == "problem-key":
            table = tables["problems"]()
            if isinstance(table, dict):
                key = draw(st.sampled_from(["target", "goal", "goal_generations", "budget", "optional", "name"]))
                table[key] = draw(st.one_of(option_values, budget()))
        elif how == "replace":
            key = draw(st.sampled_from(sorted(doc) + ["name", "out", "executor", "jobs", "evaluate_center",
                                                     "checkpoint", "smoke", "report"]))
            doc[key] = draw(st.one_of(values, budget(), st.dictionaries(random_keys, values, max_size=2)))
        elif how == "add":
            target = draw(st.sampled_from(sorted(k for k, v in doc.items() if isinstance(v, dict)) + [None]))
            where = doc if target is None else doc[target]
            where[draw(random_keys)] = draw(values)
        elif how == "remove":
            doc.pop(draw(st.sampled_from(sorted(doc))), None)
        else:
            kind = draw(st.sampled_from(["strategies", "problems"]))
            if isinstance(doc.get(kind), dict) and doc[kind]:
                label, entry = next(iter(doc[kind].items()))
                doc[kind] = {draw(texts): entry}
    return doc


def experiment_documents():
    return st.one_of(mutated_experiment_documents(), mutated_experiment_documents(), broad_experiment_documents())


def _check_experiment_file(path):
    out = path.parent / "experiment"
    refused = False
    try:
        experiment = load_experiment(path, out=out, jobs=1)
        for cell in experiment.cells[:4]:
            build_components(cell.resolved)[2].close()
    except BlackboxError as exc:
        assert str(exc)
        refused = True
    if not refused and len(experiment.cells) <= 2:
        from contextlib import redirect_stderr, redirect_stdout
        from io import StringIO

        err = StringIO()
        with redirect_stderr(err), redirect_stdout(StringIO()):
            code = main(["compare", str(path), "--out", str(out), "--jobs", "1", "--quiet"])
        assert code in (0, 1, 2), err.getvalue()
        if code == 2:
            assert err.getvalue().startswith("blackbox compare: error: "), err.getvalue()
    _record("experiment files", refused)


def checked_file(check):
    """``check(path)`` on the document written as TOML, in a temporary folder removed afterwards."""

    def run(data):
        path = write_toml(data)
        if path is None:
            return
        try:
            check(path)
        finally:
            shutil.rmtree(path.parent, ignore_errors=True)

    run.__doc__ = check.__doc__
    return run


check_run_config = checked_file(_check_run_config)
check_resolved_config = checked_file(_check_resolved_config)
check_experiment_file = checked_file(_check_experiment_file)


def property_test(strategy, check, examples: int, long: bool = False):
    """``check`` over ``examples`` documents drawn from ``strategy`` (a fresh test function each time)."""

    def test(data):
        check(data)

    test.__doc__ = check.__doc__
    # The default run's examples are derandomized (CI stays stable); the long run explores anew.
    wrapped = settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck),
                       derandomize=not long)(given(strategy)(test))
    return pytest.mark.reliability_long(wrapped) if long else wrapped


FAST, LONG = 60, 1500
test_blackbox_run_with_any_config_file_runs_or_says_what_is_wrong = property_test(
    any_run_documents(CHEAP_PROBLEMS), check_run_config, FAST)
test_blackbox_run_with_any_config_file_long = property_test(
    any_run_documents(CHEAP_PROBLEMS), check_run_config, LONG, long=True)
test_any_config_resolves_and_builds_or_raises_blackbox_error = property_test(
    any_run_documents(installed_problems(problems.names())), check_resolved_config, FAST)
test_any_config_resolves_and_builds_long = property_test(
    any_run_documents(installed_problems(problems.names())), check_resolved_config, LONG, long=True)
test_any_experiment_file_loads_runs_and_reports_or_raises_blackbox_error = property_test(
    experiment_documents(), check_experiment_file, FAST)
test_any_experiment_file_long = property_test(experiment_documents(), check_experiment_file, LONG, long=True)
