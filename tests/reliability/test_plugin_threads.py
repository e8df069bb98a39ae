"""A plugin that starts a thread which is not a daemon at import cannot keep ``blackbox list`` or
``blackbox check`` alive, and the child that imports plugins does not outlive the command (issue 25).

The commands run as the real script (``python -m blackbox``) in a subprocess: a hang is a timeout."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import subprocess_env
from tests.helpers.fakedist import write_distribution
from tests.reliability.helpers import note, wait_gone

THREADED = '''
import os, threading
from pathlib import Path
from blackbox.strategies.search_gradient import OpenAIES

Path(os.environ["THREAD_PLUGIN_PIDS"], str(os.getpid())).touch()
threading.Thread(target=threading.Event().wait, name="plugin-forever").start()  # never ends, not a daemon


class ThreadES(OpenAIES):
    """A strategy whose module starts a thread that never ends."""
    name = "thread-es"
'''


@pytest.fixture
def threaded_site(tmp_path):
    site, pids = tmp_path / "site", tmp_path / "pids"
    pids.mkdir()
    write_distribution(site, "thread-plugin", "1.0", {"blackbox.strategies": {"thread-es": "threadplug:ThreadES"}},
                       {"threadplug": THREADED})
    env = subprocess_env({"THREAD_PLUGIN_PIDS": str(pids)})
    env["PYTHONPATH"] = f"{site}:{env['PYTHONPATH']}"
    return env, pids


def _blackbox(args, env):
    return subprocess.run([sys.executable, "-m", "blackbox", *args], env=env, capture_output=True, text=True,
                          timeout=240, stdin=subprocess.DEVNULL)


def _importers(pids) -> list[int]:
    return [int(path.name) for path in pids.iterdir()]


def test_list_ends_and_leaves_no_child_behind(threaded_site):
    env, pids = threaded_site
    done = _blackbox(["list", "--json"], env)
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in json.loads(done.stdout)}
    assert rows["thread-es"]["status"] == "ok"
    assert len(_importers(pids)) == 1  # the isolated child imported it
    assert wait_gone(_importers(pids), 60.0) == []
    note("plugin with a thread that never ends (blackbox list)", faults=1, runs=1)


def test_check_ends_though_the_plugin_is_imported_in_the_command(threaded_site):
    env, pids = threaded_site
    done = _blackbox(["check", "thread-es", "--only", "check_pickle"], env)
    assert done.returncode == 0, done.stderr
    assert "1 of 1 checks ok" in done.stdout
    assert len(_importers(pids)) == 2  # the isolated child, then the command itself
    assert wait_gone(_importers(pids), 60.0) == []
    note("plugin with a thread that never ends (blackbox check)", faults=1, runs=1)
