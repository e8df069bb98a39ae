"""The golden test: short runs of every built-in strategy, the gym problem, the CLI and loky give
the records and centers committed in ``data/`` bit for bit, and runs checkpointed by 0.1.0 resume to
the uninterrupted run's results. A refactor that changes one bit fails here.

The runs go in one process of their own, under ``cases.pinned_numerics()``: the BLAS kernels and
NumPy loops a CPU selects change last bits, and the test is about the code, not the CPU."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .cases import (
    CASES,
    DATA,
    NEEDS,
    RESUME_RUNS,
    ROOT,
    encode,
    pinned_environment,
    pinned_numerics,
    read_run,
)


@pytest.fixture(scope="session")
def pinned_env() -> dict[str, str]:
    if pinned_numerics() is None:
        pytest.skip("the golden data holds on x86-64 CPUs with AVX2 and FMA; this CPU lacks them")
    return pinned_environment()


@pytest.fixture(scope="session")
def golden_outputs(pinned_env, tmp_path_factory) -> Path:
    """Every case run once, in a process with the pinned numerics: ``NAME.json`` or ``NAME.error``."""
    out = tmp_path_factory.mktemp("golden-outputs")
    done = subprocess.run([sys.executable, "-m", "tests.golden.make_golden", "--out", str(out), "--no-resume"],
                          capture_output=True, text=True, env=pinned_env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return out


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
def test_golden_run(name, golden_outputs):
    _needs(name)
    error = golden_outputs / f"{name}.error"
    assert not error.exists(), error.read_text()
    want = json.loads((DATA / f"{name}.json").read_text())
    got = json.loads((golden_outputs / f"{name}.json").read_text())
    assert not _differences(got, want), _differences(got, want)


@pytest.mark.parametrize("name", sorted(RESUME_RUNS))
def test_v010_checkpoint_resumes_bit_identically(name, tmp_path, pinned_env):
    if "cartpole" in name or "pendulum" in name:
        _needs("cli-cartpole")
    run = tmp_path / "run"
    shutil.copytree(DATA / "v0.1.0-runs" / name, run)
    done = subprocess.run([sys.executable, "-m", "blackbox", "resume", str(run), "--quiet", "--no-plot"],
                          capture_output=True, text=True, env=pinned_env)
    assert done.returncode == 0, done.stderr
    want = json.loads((DATA / "v0.1.0-runs" / f"{name}.json").read_text())
    got = json.loads(json.dumps(encode(read_run(run)), sort_keys=True))
    assert not _differences(got, want), _differences(got, want)
