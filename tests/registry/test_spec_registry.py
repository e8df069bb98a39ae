import pytest

import blackbox as bb
from blackbox.registry.plugins import executors, problems, strategies
from blackbox.registry.spec import format_spec, parse_spec


@pytest.mark.parametrize("text,name,args,kwargs", [
    ("quadratic", "quadratic", [], {}),
    ("gym:CartPole-v1", "gym", ["CartPole-v1"], {}),
    ("quadratic:dim=100", "quadratic", [], {"dim": 100}),
    ("ray:address=auto", "ray", [], {"address": "auto"}),
    ("x:a=1,b=2.5,c=true,d=none,e=[1,2],f='7'", "x", [], {"a": 1, "b": 2.5, "c": True, "d": None, "e": [1, 2], "f": "7"}),
    ("gym:ALE/Pong-v5,frameskip=4", "gym", ["ALE/Pong-v5"], {"frameskip": 4}),
    ("openai-es:sigma=1e-3", "openai-es", [], {"sigma": 1e-3}),
])
def test_parse_spec(text, name, args, kwargs):
    spec = parse_spec(text)
    assert (spec.name, spec.args, spec.kwargs) == (name, args, kwargs)
    assert parse_spec(format_spec(spec.name, *spec.args, **spec.kwargs)) == spec


@pytest.mark.parametrize("text,message,caret", [
    ("quadratic:", "nothing after ':'", 10),
    ("quadratic:dim=", "option 'dim' has no value", 13),
    ("quadratic:dim=1,,x=2", "empty option", 16),
    ("quadratic:dim=1,2", "positional value after key=value", 16),
    (":dim=3", "expected a name", 0),
    ("quad ratic", "unexpected ' ' after the name", 4),
    ("q:a=[1,2", "unclosed '['", 8),
    ("q:a=1,a=2", "option 'a' given twice", 6),
])
def test_bad_specs_show_where(text, message, caret):
    with pytest.raises(bb.errors.SpecError) as info:
        parse_spec(text)
    lines = str(info.value).splitlines()
    assert message in lines[0]
    assert lines[1] == "  " + text
    assert lines[2] == " " * (caret + 2) + "^"


def test_builtins_come_from_this_distribution():
    for registry, names in ((strategies, {"openai-es", "nes", "ga"}),
                            (problems, {"quadratic", "sphere", "rosenbrock", "rastrigin"}),
                            (executors, {"serial"})):
        entries = {e.name: e for e in registry.entries()}
        assert names <= set(entries)
        for name in names:
            assert entries[name].distribution == "blackbox-es"
            assert entries[name].version == bb.__version__


def test_make_by_spec():
    problem = bb.make_problem("quadratic:dim=7")
    assert problem.dim == 7
    assert bb.make_executor("serial:batch_size=3").batch_size == 3
    with pytest.raises(bb.ConfigError, match="takes at most 1 positional"):
        bb.make_problem("sphere:3,4")


def test_entry_points_are_not_read_at_import():
    import subprocess
    import sys

    code = ("import importlib.metadata as m; calls=[]; orig=m.distributions\n"
            "m.distributions=lambda *a, **k: calls.append(1) or orig(*a, **k)\n"
            "import blackbox; assert calls == [], calls; blackbox.make_problem('sphere'); assert calls\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_table_value_in_a_spec_string():
    from blackbox.registry.spec import format_spec, parse_spec

    spec = parse_spec('gym:Pendulum-v1,env_kwargs={g=9.0,"odd key"=[1,2],inner={a=none}},seed=3')
    assert spec.args == ["Pendulum-v1"]
    assert spec.kwargs == {"env_kwargs": {"g": 9.0, "odd key": [1, 2], "inner": {"a": None}}, "seed": 3}
    assert parse_spec(format_spec(spec.name, *spec.args, **spec.kwargs)) == spec


@pytest.mark.parametrize("spec, message", [
    ("gym:x,env_kwargs={g=9.0", "bad spec 'gym:x,env_kwargs={g=9.0': unclosed '[' or '{'"),
    ("gym:x,env_kwargs=g}", "bad spec 'gym:x,env_kwargs=g}': unbalanced '}'"),
    ("gym:x,env_kwargs={1a=2}", "bad table '{1a=2}': key '1a' is not an identifier; write {key=value, ...}"),
    ("gym:x,env_kwargs={g}", "bad table '{g}': 'g' has no value; write {key=value, ...}"),
    ("gym:x,env_kwargs={g=1,g=2}", "bad table '{g=1,g=2}': key 'g' given twice"),
])
def test_a_bad_table_in_a_spec_string_is_one_clear_error(spec, message):
    from blackbox.errors import SpecError
    from blackbox.registry.spec import parse_spec

    with pytest.raises(SpecError) as info:
        parse_spec(spec)
    assert str(info.value).splitlines()[0] == message
