"""Helpers shared by the tests: toy problems and strategies, fake plugin distributions, paths."""

from pathlib import Path

#: The repository's root folder and its tests folder.
ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"


def benchmark_module(name: str):
    """Import ``benchmarks/<name>.py`` (the benchmarks are scripts beside each other, not a package)."""
    import importlib
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def subprocess_env(extra: dict | None = None) -> dict[str, str]:
    """The environment for a Python subprocess that imports ``tests.*`` (the repository on PYTHONPATH)."""
    import os

    env = {**os.environ, **{k: str(v) for k, v in (extra or {}).items()}}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def interruptible() -> None:
    """``preexec_fn`` of a subprocess that a test stops with Ctrl-C (SIGINT): SIGINT back to its default.

    A shell starts background jobs with SIGINT ignored (``pytest ... &``, CI runners, ``nohup``), the
    children inherit that, and Python then installs no handler of its own: the signal would be
    dropped and the test wait for an exit that never comes."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
