"""RL Baselines3 Zoo's tuned hyperparameters, read from the installed ``rl_zoo3`` package.

The zoo keeps one YAML file per algorithm (``rl_zoo3/hyperparams/ppo.yml``, ``ars.yml``) with an
entry per task. Nothing is downloaded: the file comes from the installed package. The zoo tunes
MuJoCo tasks under their ``-v4`` ids; a ``-v5`` task (same bodies and rewards, fixed bugs) takes the
newest older version's entry, and the report says which entry was used. Values the zoo writes as
code (``policy_kwargs: "dict(net_arch=[64, 64], activation_fn=nn.ReLU)"``, ``normalize: "dict(...)"``)
are evaluated with nothing but ``dict`` and ``torch.nn`` in reach; ``lin_X`` becomes a linear
schedule from X to 0, as the zoo does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ...errors import ConfigError

__all__ = ["SB3_EXTRA", "ZooEntry", "require_sb3", "zoo_entry"]

#: The exact command that installs what ``blackbox contrast rl`` needs besides blackbox itself.
SB3_EXTRA = "pip install 'blackbox-es[rl]'"
_MODULES = ("stable_baselines3", "sb3_contrib", "rl_zoo3", "yaml")
# Keys the zoo's own training script consumes itself instead of passing them to the algorithm.
_RUNNER_KEYS = ("n_envs", "n_timesteps", "normalize", "policy", "frame_stack", "env_wrapper",
                "callback", "vec_env_wrapper", "normalize_kwargs")


def require_sb3() -> None:
    """Refuse, with the install command, when Stable-Baselines3, sb3-contrib or the zoo is missing."""
    import importlib.util

    missing = [name for name in _MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(f"contrast rl needs Stable-Baselines3, sb3-contrib and RL Baselines3 Zoo "
                          f"({', '.join(missing)} not installed): {SB3_EXTRA}")


@dataclass
class ZooEntry:
    """One task's tuned settings for one algorithm, ready for Stable-Baselines3."""

    algo: str
    task: str
    key: str  # the zoo entry used (HalfCheetah-v4 for HalfCheetah-v5)
    n_envs: int
    n_timesteps: int
    policy: str
    normalize: dict[str, Any] | None  # VecNormalize keyword arguments, None: no normalization
    kwargs: dict[str, Any] = field(default_factory=dict)  # for the algorithm's constructor
    raw: dict[str, Any] = field(default_factory=dict)  # the entry as the YAML file has it

    def describe(self) -> str:
        same = "" if self.key == self.task else f" (the zoo's {self.key} entry)"
        return f"RL Baselines3 Zoo {self.algo}.yml{same}"


def _load(algo: str) -> dict[str, Any]:
    """The zoo's ``hyperparams/<algo>.yml``, read from the installed package's folder without importing
    ``rl_zoo3``: importing it replaces ``gymnasium.wrappers.TimeLimit`` with the zoo's own
    ``PatchedTimeLimit`` for the whole process (``rl_zoo3/gym_patches.py``), which would change every
    environment made afterwards."""
    import importlib.util
    from pathlib import Path

    import yaml

    spec = importlib.util.find_spec("rl_zoo3")  # finds the package; does not run its __init__
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    if not folders:
        raise ConfigError(f"contrast rl needs RL Baselines3 Zoo (rl_zoo3 not installed): {SB3_EXTRA}")
    text = (Path(folders[0]) / "hyperparams" / f"{algo}.yml").read_text()
    return yaml.safe_load(text)


def _older_versions(task: str) -> list[str]:
    match = re.fullmatch(r"(.*)-v(\d+)", task)
    if match is None:
        return [task]
    name, version = match.group(1), int(match.group(2))
    return [f"{name}-v{v}" for v in range(version, -1, -1)]


def _code(text: str) -> Any:
    """A value the zoo writes as Python (``dict(...)`` with ``nn.ReLU``): only dict and torch.nn in reach."""
    from torch import nn

    return eval(text, {"__builtins__": {}}, {"dict": dict, "nn": nn})  # noqa: S307 - the installed zoo's file


def _schedule(value: Any) -> Any:
    if isinstance(value, str) and value.startswith("lin_"):
        start = float(value[4:])
        return lambda progress_remaining: progress_remaining * start
    return value


def zoo_entry(algo: str, task: str) -> ZooEntry:
    """The zoo's tuned ``algo`` settings for ``task`` (or for its newest older version)."""
    require_sb3()
    table = _load(algo)
    key = next((k for k in _older_versions(task) if k in table), None)
    if key is None:
        import difflib

        near = difflib.get_close_matches(task, [k for k in table if k != "default"], n=4, cutoff=0.5)
        raise ConfigError(f"RL Baselines3 Zoo has no tuned {algo.upper()} settings for {task!r} "
                          f"(closest entries: {', '.join(near) or 'none'}); choose a task it tunes")
    raw = dict(table[key])
    kwargs = {k: _schedule(v) for k, v in raw.items() if k not in _RUNNER_KEYS}
    if isinstance(kwargs.get("policy_kwargs"), str):
        kwargs["policy_kwargs"] = _code(kwargs["policy_kwargs"])
    normalize = raw.get("normalize", False)
    if isinstance(normalize, str):
        normalize = _code(normalize)
    elif normalize:
        normalize = {}
    else:
        normalize = None
    return ZooEntry(algo=algo, task=task, key=key, n_envs=int(raw.get("n_envs", 1)),
                    n_timesteps=int(float(raw["n_timesteps"])), policy=str(raw.get("policy", "MlpPolicy")),
                    normalize=normalize, kwargs=kwargs, raw=raw)
