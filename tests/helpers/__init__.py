"""Helpers shared by the tests: toy problems and strategies, fake plugin distributions, paths."""

from pathlib import Path

#: The repository's root folder and its tests folder.
ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"


def subprocess_env(extra: dict | None = None) -> dict[str, str]:
    """The environment for a Python subprocess that imports ``tests.*`` (the repository on PYTHONPATH)."""
    import os

    env = {**os.environ, **{k: str(v) for k, v in (extra or {}).items()}}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env
