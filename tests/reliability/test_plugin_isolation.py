"""A plugin that hangs or ends the process at import cannot hang or kill ``blackbox list`` or
``blackbox check`` (issue 16): plugins are imported in a child process with a time limit."""

from __future__ import annotations

import json
import time

import pytest

from blackbox import registry
from blackbox.cli import main
from blackbox.registry.isolated import probe
from tests.helpers.fakedist import on_sys_path, write_distribution
from tests.reliability.helpers import note

GOOD = '''
from blackbox.strategies.search_gradient import OpenAIES

class GoodES(OpenAIES):
    """A third-party strategy that works."""
    name = "good-es"
'''
NEEDS = '''
import numpy as np
import blackbox as bb

class NeedsExtra(bb.Problem):
    """A problem whose extra is missing here."""
    needs = {"blackbox_module_that_is_not_installed": "fancy"}
    dim = 2
    def evaluate(self, params, seeds):
        return bb.EvalResult(np.zeros(len(params)), np.zeros(len(params), dtype=np.int64))
'''


@pytest.fixture
def site(tmp_path, monkeypatch):
    monkeypatch.setenv("BLACKBOX_PLUGIN_TIMEOUT", "3")
    write_distribution(tmp_path, "good-plugin", "1.2", {"blackbox.strategies": {"good-es": "goodplug:GoodES"}},
                       {"goodplug": GOOD})
    write_distribution(tmp_path, "hangs", "1.0", {"blackbox.strategies": {"hang-es": "hangplug:ES"}},
                       {"hangplug": "import time\ntime.sleep(3600)\n"})
    write_distribution(tmp_path, "exits", "1.0", {"blackbox.problems": {"exit-problem": "exitplug:Problem"}},
                       {"exitplug": "import os\nos._exit(3)\n"})
    write_distribution(tmp_path, "crashes", "1.0", {"blackbox.executors": {"crash-executor": "crashplug:Executor"}},
                       {"crashplug": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"})
    write_distribution(tmp_path, "needs-extra", "1.0", {"blackbox.problems": {"needs-extra": "needsplug:NeedsExtra"}},
                       {"needsplug": NEEDS})
    with on_sys_path(tmp_path, ("goodplug", "hangplug", "exitplug", "crashplug", "needsplug")):
        yield tmp_path


@pytest.mark.slow  # over 8 s: the default run stays under 10 minutes; CI runs -m slow
def test_list_survives_plugins_that_hang_or_end_the_process_at_import(site, capsys):
    started = time.monotonic()
    assert main(["list", "--json"]) == 0
    assert time.monotonic() - started < 40
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["hang-es"]["status"] == ("error: importing it did not finish within 3 s (BLACKBOX_PLUGIN_TIMEOUT); "
                                         "it was stopped")
    assert rows["exit-problem"]["status"] == "error: importing it ended the process (exit status 3)"
    assert rows["crash-executor"]["status"] == "error: importing it ended the process (killed by signal 9)"
    assert rows["good-es"]["status"] == "ok" and rows["good-es"]["description"] == "A third-party strategy that works."
    assert rows["openai-es"]["status"] == rows["serial"]["status"] == rows["quadratic"]["status"] == "ok"
    assert rows["needs-extra"]["status"] == ("error: needs blackbox_module_that_is_not_installed, which is not "
                                             "installed: pip install 'blackbox-es[fancy]'")
    assert main(["list"]) == 0  # the table too
    assert "hang-es" in capsys.readouterr().out
    note("plugins that hang, exit or are killed at import (blackbox list)", faults=3, runs=1)


@pytest.mark.parametrize("name, why", [
    ("hang-es", "importing it did not finish within 3 s (BLACKBOX_PLUGIN_TIMEOUT); it was stopped"),
    ("exit-problem", "importing it ended the process (exit status 3)"),
    ("crash-executor", "importing it ended the process (killed by signal 9)"),
])
def test_check_of_a_plugin_that_hangs_or_ends_the_process_is_an_error_line(site, name, why, capsys):
    assert main(["check", name]) == 2
    err = capsys.readouterr().err
    assert err.startswith("blackbox check: error: ") and err.rstrip().endswith(f"cannot be checked: {why}"), err
    assert len(err.splitlines()) == 1
    note("plugins that hang, exit or are killed at import (blackbox check)", faults=1, runs=1)


def test_check_of_a_good_plugin_still_runs(site, capsys):
    assert main(["check", "good-es", "--only", "check_pickle"]) == 0
    assert "1 of 1 checks ok" in capsys.readouterr().out


def test_probe_goes_on_after_a_plugin_that_ends_the_child(site):
    rows = probe([("problem", "exit-problem"), ("strategy", "good-es"), ("executor", "crash-executor"),
                  ("strategy", "openai-es")], "blackbox.registry.isolated:import_only")
    assert [row["status"] for row in rows] == [
        "error: importing it ended the process (exit status 3)", "ok",
        "error: importing it ended the process (killed by signal 9)", "ok"]
    assert "good-es" in registry.strategies.names()
