"""Write the golden reference data (run once, at the commit whose results are the reference).

    python -m tests.golden.make_golden            # every case and the 0.1.0 resume runs
    python -m tests.golden.make_golden --only X   # one case
    python -m tests.golden.make_golden --out DIR --no-resume   # the cases' outputs to DIR (the test)

It runs itself again under ``cases.pinned_numerics()``: the data must not depend on the CPU.
Never rerun this to make a failing golden test pass: a refactor must change no result. Rerun it
only for a deliberate change of results, in a commit of its own that says why.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

from tests.golden.cases import (
    CASES,
    DATA,
    NEEDS,
    PINNED_MARK,
    RESUME_FROM,
    RESUME_RUNS,
    ROOT,
    encode,
    pinned_environment,
    read_run,
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--no-resume", action="store_true")
    parser.add_argument("--out", type=Path, help="write the cases' outputs here instead of the reference data; "
                        "a case that fails writes NAME.error with its traceback")
    args = parser.parse_args()
    if not os.environ.get(PINNED_MARK):
        env = pinned_environment()
        sys.exit(subprocess.run([sys.executable, "-m", "tests.golden.make_golden", *sys.argv[1:]], env=env,
                                cwd=ROOT).returncode)
    out_dir = args.out or DATA
    out_dir.mkdir(exist_ok=True)
    for name, case in CASES.items():
        if args.only and name not in args.only:
            continue
        if NEEDS.get(name) and importlib.util.find_spec(NEEDS[name]) is None:
            continue
        try:
            with tempfile.TemporaryDirectory() as tmp:
                out = case(Path(tmp))
        except Exception:
            if args.out is None:
                raise
            (out_dir / f"{name}.error").write_text(traceback.format_exc())
            continue
        (out_dir / f"{name}.json").write_text(json.dumps(encode(out), indent=0, sort_keys=True) + "\n")
        print("wrote", name)
    if args.no_resume:
        return
    for name, run_args in RESUME_RUNS.items():
        if args.only and name not in args.only:
            continue
        target = out_dir / "v0.1.0-runs" / name
        shutil.rmtree(target, ignore_errors=True)
        with tempfile.TemporaryDirectory() as tmp:
            run = Path(tmp) / "run"
            subprocess.run([sys.executable, "-m", "blackbox", "run", *run_args, "--out", str(run), "--quiet",
                            "--no-plot", "--checkpoint-every", "1", "--keep", "10"], check=True,
                           env={**os.environ})
            reference = read_run(run)
            target.mkdir(parents=True)
            shutil.copy(run / "config.toml", target / "config.toml")
            shutil.copytree(run / "checkpoints" / RESUME_FROM, target / "checkpoints" / RESUME_FROM)
            (target.parent / f"{name}.json").write_text(json.dumps(encode(reference), indent=0, sort_keys=True) + "\n")
        print("wrote resume run", name)


if __name__ == "__main__":
    main()
