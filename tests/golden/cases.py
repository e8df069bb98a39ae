"""The golden runs: short runs whose records and centers must never change by a refactor.

Each case is a function returning ``{"records": [...], "center": [...]}`` (plus extra arrays for
CLI runs). ``make_golden.py`` writes their output once, at a commit whose results are the
reference; ``test_golden.py`` reruns them and compares bit for bit (floats are stored with
``float.hex``). Times are left out: they are the only fields that may differ between two runs.
"""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import blackbox as bb
from blackbox.core.simd import has_avx2_fma, numpy_simd_targets

DATA = Path(__file__).with_name("data")
ROOT = Path(__file__).resolve().parents[2]
#: Set in the pinned environment, so that make_golden knows it runs in one.
PINNED_MARK = "BLACKBOX_GOLDEN_PINNED"
TIME_FIELDS = ("time", "generation_time")
BUILTIN_STRATEGIES = ("openai-es", "nes", "ga", "pgpe", "snes", "xnes", "cma-es", "sep-cma-es", "ars", "cem")


def pinned_numerics() -> dict[str, str] | None:
    """The environment in which the golden data holds on any x86-64 CPU with AVX2 and FMA; None on others.

    The last bit of a matrix product or an ``exp`` depends on the kernels the CPU selects: OpenBLAS
    picks SkylakeX kernels on an AVX-512 CPU and Haswell kernels on an AVX2 one, and NumPy runs
    its AVX-512 loops where it finds AVX-512. The data holds under Haswell BLAS kernels and NumPy's
    AVX2 loops (the kernels an AVX2 CPU selects), and the runs are pinned to them, so a golden failure means the code changed
    a result, never that CI moved to another CPU. The variables must be set before NumPy loads,
    hence the runs go in a process of their own.
    """
    if not has_avx2_fma():
        return None
    above_avx2 = [t for t in numpy_simd_targets() if t.startswith("AVX512") or t == "X86_V4"]
    return {"OPENBLAS_CORETYPE": "Haswell", "NPY_DISABLE_CPU_FEATURES": " ".join(above_avx2), PINNED_MARK: "1"}


def pinned_environment() -> dict[str, str]:
    """``os.environ`` with the pinned numerics; raises RuntimeError on a CPU that cannot run them."""
    pinned = pinned_numerics()
    if pinned is None:
        raise RuntimeError(f"the golden data needs an x86-64 CPU with AVX2 and FMA; this one ({platform.machine()})"
                           " lacks them")
    return {**os.environ, **pinned, "COLUMNS": "120"}


def encode(value: Any) -> Any:
    """Exact, JSON-able: floats as hex strings, arrays as nested lists of them."""
    if isinstance(value, np.ndarray):
        return encode(value.tolist())
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, (float, np.floating)):
        return float(value).hex()
    if isinstance(value, np.integer):
        return int(value)
    return value


def record_rows(records: Any) -> list[dict[str, Any]]:
    rows = []
    for record in records:
        row = record if isinstance(record, dict) else {k: getattr(record, k) for k in _fields(record)}
        rows.append({k: v for k, v in row.items() if k not in TIME_FIELDS})
    return rows


def _fields(record: Any) -> list[str]:
    names = getattr(record, "__dataclass_fields__", None) or getattr(record, "_fields", None)
    return list(names)


def api_run(strategy: str, problem: str, executor: str = "serial", generations: int = 5, seed: int = 1
            ) -> dict[str, Any]:
    result = bb.optimize(strategy, problem, executor, generations=generations, seed=seed)
    return {"records": record_rows(result.records), "center": result.center,
            "best_params": result.best_params}


def cli_run(args: list[str], out: Path) -> dict[str, Any]:
    """``blackbox run ARGS --out OUT``; records from records.jsonl, arrays from solution.npz."""
    env = {**os.environ, "COLUMNS": "120"}
    subprocess.run([sys.executable, "-m", "blackbox", "run", *args, "--out", str(out), "--quiet",
                    "--no-plot"], check=True, env=env, capture_output=True, text=True)
    return read_run(out)


def read_run(out: Path) -> dict[str, Any]:
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines() if line]
    with np.load(out / "solution.npz", allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in sorted(npz.files)}
    return {"records": record_rows(records), **arrays}


def _strategy_case(name: str) -> Callable[[Path], dict[str, Any]]:
    return lambda tmp: api_run(name, "quadratic:dim=8")


def layout(value: Any) -> Any:
    """The types, dtypes and shapes of a state dict (its values are in ``encode``'s output)."""
    if isinstance(value, dict):
        return {key: layout(item) for key, item in value.items()}
    if isinstance(value, np.ndarray):
        return f"ndarray {value.dtype} {list(value.shape)}"
    if isinstance(value, (list, tuple)):
        return [layout(item) for item in value]
    return type(value).__name__


def state_run(spec: str, dim: int = 5, generations: int = 3) -> dict[str, Any]:
    """``state_dict()`` of a strategy after a few generations of ask/tell on a quadratic, and again
    between the next ask and its tell: keys in order, types, dtypes and shapes, and every bit."""
    strategy = bb.make_strategy(spec, dim=dim, seed=7, x0=np.linspace(-1.0, 1.0, dim))
    target = np.arange(dim, dtype=np.float64) / dim

    def fitness(params: np.ndarray) -> np.ndarray:
        out: np.ndarray = -np.sum((params - target) ** 2, axis=1)
        return out

    for _ in range(generations):
        strategy.tell(fitness(strategy.ask().params))
    told = strategy.state_dict()
    population = strategy.ask()
    pending = strategy.state_dict()
    out = {"keys": list(told), "layout": layout(told), "state": told,
           "pending_keys": list(pending), "pending_layout": layout(pending), "pending": pending}
    if strategy.asks_ahead:  # the pipelined mode: a population asked ahead of the pending one's tell
        strategy.ask_ahead()
        strategy.tell(fitness(population.params))
        ahead = strategy.state_dict()
        out.update(ahead_keys=list(ahead), ahead_layout=layout(ahead), ahead=ahead)
    return out


#: The state dicts of every built-in strategy (and of the option sets whose state differs: an
#: optimizer, float32 rows): their keys, layout and bits must not change, for checkpoints to keep loading.
STATE_CASES = {
    **{f"state-{name}": name for name in BUILTIN_STRATEGIES},
    "state-pgpe-adam": "pgpe:optimizer=adam,lr=0.05,popsize=8",
    "state-openai-es-clipup": "openai-es:optimizer=clipup,popsize=8",
    "state-snes-float32": "snes:dtype=float32",
    "state-ga-truncation": "ga:popsize=12,truncation=0.25",
}


def _state_case(spec: str) -> Callable[[Path], dict[str, Any]]:
    return lambda tmp: state_run(spec)


CASES: dict[str, Callable[[Path], dict[str, Any]]] = {
    **{f"{name}-quadratic": _strategy_case(name) for name in BUILTIN_STRATEGIES},
    # 0.1.0's sgd ignored momentum (the reference is plain SGD); now the option is refused
    "openai-es-sgd-momentum-rosenbrock": lambda tmp: api_run(
        "openai-es:optimizer=sgd,lr=0.01,popsize=20", "rosenbrock:dim=5"),
    "pgpe-adam-rastrigin": lambda tmp: api_run("pgpe:optimizer=adam,lr=0.05,popsize=20", "rastrigin:dim=6"),
    "nes-unmirrored-sphere": lambda tmp: api_run("nes:mirrored=false,popsize=12", "sphere:dim=4"),
    "ga-sphere": lambda tmp: api_run("ga:popsize=16,truncation=0.25", "sphere:dim=10", generations=6),
    "openai-es-no-center-quadratic": lambda tmp: {
        "records": record_rows(bb.optimize("openai-es", "quadratic:dim=4", generations=4, seed=2,
                                           evaluate_center=False).records)},
    "openai-es-pendulum-obsnorm-mlp": lambda tmp: api_run(
        "openai-es:popsize=16,sigma=0.05", "gym:Pendulum-v1,hidden=[8],obs_norm=true,obs_norm_prob=0.5",
        generations=3),
    "ars-pendulum-linear": lambda tmp: api_run(
        "ars:popsize=8,top=4", "gym:Pendulum-v1,policy=linear,obs_norm=true", generations=3),
    "snes-cartpole-loky": lambda tmp: api_run(
        "snes:popsize=16", "gym:CartPole-v1,hidden=[8]", "loky:workers=2", generations=3),
    "openai-es-cartpole-loky": lambda tmp: api_run(
        "openai-es:popsize=32", "gym:CartPole-v1,hidden=[8],episodes=2", "loky:workers=2", generations=3),
    "cli-cartpole": lambda tmp: cli_run(["--problem", "gym:CartPole-v1", "--generations", "3",
                                         "--checkpoint-every", "0"], tmp / "run"),
    "cli-cma-es-rosenbrock": lambda tmp: cli_run(["--strategy", "cma-es", "--problem", "rosenbrock:dim=6",
                                                  "--generations", "6", "--seed", "4"], tmp / "run"),
    **{name: _state_case(spec) for name, spec in STATE_CASES.items()},
}

#: Which cases need which optional module (skipped without it).
NEEDS = {
    "openai-es-pendulum-obsnorm-mlp": "gymnasium", "ars-pendulum-linear": "gymnasium",
    "snes-cartpole-loky": "gymnasium", "openai-es-cartpole-loky": "gymnasium", "cli-cartpole": "gymnasium",
}

#: Runs written by 0.1.0 with a checkpoint every generation; the folder keeps the config and one
#: checkpoint, and ``resume`` must reach the uninterrupted run's records and solution.
RESUME_RUNS: dict[str, list[str]] = {
    "openai-es-cartpole": ["--problem", "gym:CartPole-v1,hidden=[8]", "--set", "popsize=32",
                           "--generations", "4"],
    "pgpe-pendulum-obsnorm": ["--strategy", "pgpe:popsize=16", "--problem",
                              "gym:Pendulum-v1,hidden=[8],obs_norm=true,obs_norm_prob=0.5", "--generations", "4"],
    "cma-es-rosenbrock": ["--strategy", "cma-es", "--problem", "rosenbrock:dim=6", "--generations", "4"],
    "sep-cma-es-quadratic": ["--strategy", "sep-cma-es", "--problem", "quadratic:dim=6", "--generations", "4"],
}
RESUME_FROM = "gen-000002"


def same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def nan_safe(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value
