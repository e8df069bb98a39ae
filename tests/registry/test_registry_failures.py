"""The registry's failure modes, met through real installed (fake) distributions.

Each test writes ``*.dist-info`` folders and plugin modules into a temporary directory put on
``sys.path``: a plugin that fails to import, two distributions claiming one name, a class that
misses a protocol method, an abstract class, unreadable metadata, and unknown names.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import blackbox as bb
from blackbox import registry
from blackbox.cli import main
from tests.helpers.fakedist import on_sys_path, write_distribution

GOOD = '''
from blackbox.strategies.search_gradient import OpenAIES

class GoodES(OpenAIES):
    """A third-party strategy that works."""
    name = "good-es"
'''
BROKEN = '''
import numpy
raise ImportError("libfoo 2.1 is required by broken-es")
'''
NO_TELL = '''
class NoTell:
    """Asks but never listens."""
    center = None
    def ask(self): ...
    def state_dict(self): ...
    def load_state_dict(self, state): ...
'''
ABSTRACT = '''
from blackbox import Strategy

class Half(Strategy):
    """Forgot _tell."""
    def _ask(self): ...
'''
CLASH = '''
from blackbox.problems.functions import Sphere

class Clash(Sphere):
    """One of two problems called 'clash'."""
'''
FACTORY = '''
def make_not_a_strategy(dim=None, seed=None, x0=None):
    """A factory returning the wrong kind of object."""
    return object()
'''


@pytest.fixture
def plugins(tmp_path):
    """A site with good, broken, clashing, incomplete and abstract plugins installed."""
    write_distribution(tmp_path, "good-plugin", "1.2", {"blackbox.strategies": {"good-es": "goodplug:GoodES"}},
                       {"goodplug": GOOD})
    write_distribution(tmp_path, "broken-plugin", "0.3", {"blackbox.strategies": {"broken-es": "brokenplug:ES"}},
                       {"brokenplug": BROKEN})
    write_distribution(tmp_path, "clash-a", "1.0", {"blackbox.problems": {"clash": "clasha:Clash"}},
                       {"clasha": CLASH})
    write_distribution(tmp_path, "clash-b", "2.0", {"blackbox.problems": {"clash": "clashb:Clash"}},
                       {"clashb": CLASH})
    write_distribution(tmp_path, "incomplete", "0.1", {"blackbox.strategies": {
        "no-tell": "incompleteplug:NoTell", "half": "abstractplug:Half", "not-a-class": "incompleteplug:VALUE",
        "wrong-object": "factoryplug:make_not_a_strategy", "missing-attr": "incompleteplug:Nothing"}},
        {"incompleteplug": NO_TELL + "\nVALUE = 3\n", "abstractplug": ABSTRACT, "factoryplug": FACTORY})
    prefixes = ("goodplug", "brokenplug", "clasha", "clashb", "incompleteplug", "abstractplug", "factoryplug")
    with on_sys_path(tmp_path, prefixes):
        yield tmp_path


def test_a_broken_plugin_names_its_distribution_and_keeps_the_cause(plugins):
    with pytest.raises(bb.errors.PluginError) as info:
        bb.make_strategy("broken-es", dim=3)
    message = str(info.value)
    assert "strategy 'broken-es' from distribution broken-plugin 0.3 failed to load (brokenplug:ES)" in message
    assert "ImportError: libfoo 2.1 is required by broken-es" in message
    assert isinstance(info.value.__cause__, ImportError)
    # asking again gives the same error without importing again
    with pytest.raises(bb.errors.PluginError, match="broken-plugin 0.3"):
        bb.make_strategy("broken-es", dim=3)


def test_every_other_plugin_keeps_working_next_to_a_broken_one(plugins):
    with pytest.raises(bb.errors.PluginError):
        bb.make_strategy("broken-es", dim=3)
    es = bb.make_strategy("good-es", dim=3, seed=0)
    assert type(es).__module__ == "goodplug"
    assert bb.make_strategy("openai-es", dim=3).dim == 3
    assert bb.make_problem("sphere:dim=2").dim == 2
    entry = registry.strategies.entry("good-es")
    assert (entry.distribution, entry.version, entry.value) == ("good-plugin", "1.2", "goodplug:GoodES")
    result = bb.optimize("good-es", "sphere:dim=2", generations=2, seed=1)
    assert result.generations == 2


def test_two_distributions_claiming_one_name_is_an_error_naming_both(plugins):
    with pytest.raises(bb.errors.PluginError) as info:
        bb.make_problem("clash")
    message = str(info.value)
    assert "problem name 'clash' is claimed by more than one distribution" in message
    assert "clash-a 1.0 (clasha:Clash)" in message and "clash-b 2.0 (clashb:Clash)" in message
    # and the others still work:
    assert bb.make_problem("sphere").dim == 10
    assert set(registry.problems.conflicts()) == {"clash"}
    assert "clash" not in {e.name for e in registry.problems.entries()}


def test_runtime_registration_cannot_override_an_installed_name(plugins):
    with pytest.raises(bb.errors.PluginError, match="'good-es' is already provided by good-plugin 1.2"):
        registry.strategies.register("good-es", object)


@pytest.mark.parametrize("name,message", [
    ("no-tell", "strategy 'no-tell' from incomplete 0.1 does not satisfy the strategy protocol: missing tell"),
    ("half", "strategy 'half' from incomplete 0.1 is an abstract class: it does not implement _tell"),
    ("not-a-class", "strategy 'not-a-class' from incomplete 0.1 points to int, not a class or factory function"),
    ("wrong-object", "strategy 'wrong-object' from incomplete 0.1 does not satisfy the strategy protocol: "
                     "missing ask, tell, state_dict, load_state_dict, center"),
    ("missing-attr", "strategy 'missing-attr' from distribution incomplete 0.1 failed to load "
                     "(incompleteplug:Nothing): AttributeError"),
])
def test_protocol_is_checked_at_load_naming_the_missing_method(plugins, name, message):
    with pytest.raises(bb.errors.PluginError) as info:
        bb.make_strategy(name, dim=3)
    assert message in str(info.value)


def test_unknown_name_suggests_and_lists_what_is_installed(plugins):
    with pytest.raises(bb.errors.UnknownNameError) as info:
        bb.make_strategy("good_es", dim=3)
    message = str(info.value)
    assert message.startswith("unknown strategy 'good_es'. Did you mean 'good-es'? Installed strategies: ")
    for name in ("broken-es", "ga", "good-es", "nes", "no-tell", "openai-es"):
        assert name in message
    with pytest.raises(bb.errors.UnknownNameError, match="unknown executor 'seriall'. Did you mean 'serial'?"):
        bb.make_executor("seriall")


def test_list_shows_broken_and_clashing_plugins_without_failing(plugins, capsys):
    assert main(["list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    by_name = {}
    for row in rows:
        by_name.setdefault(row["name"], []).append(row)
    good, = by_name["good-es"]
    assert good["status"] == "ok" and good["distribution"] == "good-plugin" and good["version"] == "1.2"
    assert good["description"] == "A third-party strategy that works."
    broken, = by_name["broken-es"]
    assert broken["status"].startswith("error: strategy 'broken-es' from distribution broken-plugin 0.3")
    assert "libfoo 2.1" in broken["status"]
    clash = sorted(by_name["clash"], key=lambda r: r["distribution"])
    assert [r["distribution"] for r in clash] == ["clash-a", "clash-b"]
    assert clash[0]["status"] == "error: name 'clash' is also claimed by clash-b 2.0"
    assert by_name["openai-es"][0]["status"] == "ok"
    assert main(["list"]) == 0  # the table as well
    table = capsys.readouterr().out
    assert "good-es" in table and "broken-plugin" in table


def test_unreadable_entry_points_of_one_distribution_hide_no_other(tmp_path, capsys):
    write_distribution(tmp_path, "garbled", "0.0.1", "[blackbox.strategies]\nthis line has no equals sign\n")
    write_distribution(tmp_path, "unrelated", "3.0", "[console_scripts]\nno equals sign either\n")
    write_distribution(tmp_path, "good-plugin", "1.2", {"blackbox.strategies": {"good-es": "goodplug:GoodES"}},
                       {"goodplug": GOOD})
    with on_sys_path(tmp_path, ("goodplug",)):
        assert "good-es" in registry.strategies.names()
        broken = registry.broken_distributions()
        assert [b.distribution for b in broken] == ["garbled"]  # "unrelated" is not ours to report
        assert "TypeError" in broken[0].error
        assert bb.make_strategy("good-es", dim=2).dim == 2
        assert main(["list", "--json"]) == 0
        rows = json.loads(capsys.readouterr().out)
        garbled, = [r for r in rows if r["distribution"] == "garbled"]
        assert garbled["status"].startswith("error: the entry points of distribution garbled cannot be read")
        assert not [r for r in rows if r["distribution"] == "unrelated"]


def test_refresh_finds_new_plugins_and_keeps_runtime_ones(tmp_path):
    class Mine(bb.Strategy):
        """In-process only."""

        def _ask(self):
            return bb.Population.from_dense(self.rng.standard_normal((self.popsize, self.dim)))

        def _tell(self, population, fitness):
            return None

    registry.strategies.register("mine", Mine)
    try:
        assert "good-es" not in registry.strategies.names()
        write_distribution(tmp_path, "good-plugin", "1.2", {"blackbox.strategies": {"good-es": "goodplug:GoodES"}},
                           {"goodplug": GOOD})
        with on_sys_path(tmp_path, ("goodplug",)):
            assert {"good-es", "mine"} <= set(registry.strategies.names())
            assert registry.strategies.entry("mine").distribution == "<runtime>"
    finally:
        registry.strategies.unregister("mine")
    assert "mine" not in registry.strategies.names()


def _subprocess_env(path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(path), env.get("PYTHONPATH", "")])
    return env


def test_cli_list_survives_a_broken_plugin_as_a_command(plugins):
    done = subprocess.run([sys.executable, "-m", "blackbox", "list", "strategies", "--json"],
                          capture_output=True, text=True, env=_subprocess_env(plugins))
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in json.loads(done.stdout)}
    assert rows["good-es"]["status"] == "ok"
    assert "broken-plugin 0.3" in rows["broken-es"]["status"]


def test_entry_points_are_read_on_first_use_only_and_plugins_imported_lazily(plugins):
    code = (
        "import sys, importlib.metadata as m\n"
        "calls = []\n"
        "orig = m.distributions\n"
        "m.distributions = lambda *a, **k: calls.append(1) or orig(*a, **k)\n"
        "import blackbox\n"
        "assert calls == [], 'entry points read at import'\n"
        "blackbox.make_problem('sphere'); blackbox.make_strategy('nes', dim=2); blackbox.make_executor('serial')\n"
        "assert len(calls) == 1, calls\n"
        "assert 'goodplug' not in sys.modules and 'brokenplug' not in sys.modules\n"
        "blackbox.make_strategy('good-es', dim=2)\n"
        "assert 'goodplug' in sys.modules and 'brokenplug' not in sys.modules\n"
        "assert len(calls) == 1, calls\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=_subprocess_env(plugins))
    assert done.returncode == 0, done.stderr
