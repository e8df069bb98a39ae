"""The golden test: short runs of every built-in strategy, the gym problem, the CLI and loky give
the records and centers committed in ``data/`` bit for bit, and runs checkpointed by 0.1.0 resume to
the uninterrupted run's results. A refactor that changes one bit fails here."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

from .cases import CASES, DATA, NEEDS, RESUME_RUNS, encode, read_run


def _needs(name: str) -> None:
    module = NEEDS.get(name)
    if module and importlib.util.find_spec(module) is None:
        pytest.skip(f"needs {module} (pip install -e '.[gym]')")


def _differences(got: dict, want: dict) -> list[str]:
    out = []
    for key in sorted(set(got) | set(want)):
        if got.get(key) != want.get(key):
            if key == "records" and isinstance(got.get(key), list) and isinstance(want.get(key), list):
                for i, (a, b) in enumerate(zip(got[key], want[key])):
                    if a != b:
                        fields = [f for f in sorted(set(a) | set(b)) if a.get(f) != b.get(f)]
                        out.append(f"record {i}: {', '.join(f'{f}: {a.get(f)} != {b.get(f)}' for f in fields)}")
                        break
                if len(got[key]) != len(want[key]):
                    out.append(f"{len(got[key])} records != {len(want[key])}")
            else:
                out.append(f"{key} differs")
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_run(name, tmp_path):
    _needs(name)
    want = json.loads((DATA / f"{name}.json").read_text())
    got = json.loads(json.dumps(encode(CASES[name](tmp_path)), sort_keys=True))
    assert not _differences(got, want), _differences(got, want)


@pytest.mark.parametrize("name", sorted(RESUME_RUNS))
def test_v010_checkpoint_resumes_bit_identically(name, tmp_path):
    if "cartpole" in name or "pendulum" in name:
        _needs("cli-cartpole")
    run = tmp_path / "run"
    shutil.copytree(DATA / "v0.1.0-runs" / name, run)
    done = subprocess.run([sys.executable, "-m", "blackbox", "resume", str(run), "--quiet", "--no-plot"],
                          capture_output=True, text=True, env={**os.environ, "COLUMNS": "120"})
    assert done.returncode == 0, done.stderr
    want = json.loads((DATA / "v0.1.0-runs" / f"{name}.json").read_text())
    got = json.loads(json.dumps(encode(read_run(run)), sort_keys=True))
    assert not _differences(got, want), _differences(got, want)
