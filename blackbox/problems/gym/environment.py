"""The task's environment: made from an id or a factory, with errors that say how to fix them.

gymnasium is imported on first use, so the gym problem's module loads (for ``blackbox list``, say)
where gymnasium is not installed; using it there says what to install. (The environments this
project registers itself, such as ``blackbox/CyclicMDP-v0``, live in :mod:`.envs`.)
"""

from __future__ import annotations

import difflib
import importlib
import warnings
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import ConfigError, did_you_mean

if TYPE_CHECKING:
    import gymnasium

__all__ = ["import_gymnasium", "make_gym_env", "flat_size", "pixel_scale", "time_limit", "KNOWN_MUJOCO_WARNINGS"]

#: MuJoCo compiler warnings about gymnasium's own model files that are known to be harmless and
#: that MuJoCo would print (and log to ``MUJOCO_LOG.TXT`` in the working directory) every time such
#: an environment is made: HalfCheetah's ``settotalmass`` attribute, 65 times a generation.
KNOWN_MUJOCO_WARNINGS = ("compiler attribute 'settotalmass' is deprecated",)

_EXTRAS = {"box2d": "box2d", "mujoco": "mujoco", "atari": "atari", "ale_py": "atari"}


def import_gymnasium() -> ModuleType:
    """The gymnasium module, or a ConfigError that says how to install it."""
    try:
        import gymnasium
    except ImportError:
        raise ConfigError(
            'the gym problem needs gymnasium: pip install "blackbox-es[gym]" '
            '(and [box2d] or [mujoco] for those tasks)'
        ) from None
    return gymnasium


def unknown_environment(env: str, detail: str = "") -> ConfigError:
    """The one-line error for an id Gymnasium's registry does not hold, with the close names it does."""
    import gymnasium as gym

    known = list(gym.registry)
    close = difflib.get_close_matches(env, known, n=4, cutoff=0.6)
    why = f"Close names: {', '.join(close)}." if close else f"({detail or 'no close name'})"
    return ConfigError(f"unknown Gymnasium environment {env!r}.{did_you_mean(env, known)} "
                       f"{why} See gymnasium.pprint_registry() for the installed ones")


def check_registered(env: object) -> None:
    """Refuse, before any run is built, an id that no registry could hold: a plain id (no module
    ``pkg:Env-v0``, no namespace such as ``ALE/`` that registers on first use) Gymnasium does not know.
    Nothing is imported but gymnasium (a config from elsewhere imports nothing it names)."""
    if not isinstance(env, str) or not env or ":" in env or "/" in env:
        return
    try:
        import gymnasium as gym
    except ImportError:
        return  # making the task says which extra is missing
    if env not in gym.registry:
        raise unknown_environment(env)


def make_gym_env(env: str | Callable[..., object], max_episode_steps: int | None = None,
                 env_kwargs: Mapping[str, object] | None = None, render_mode: str | None = None,
                 checked: bool = True) -> Any:
    """Make one environment from an id or a factory, with errors that say how to fix them.

    ``checked=False`` leaves out gymnasium's checker wrappers (``PassiveEnvChecker``, which checks
    the first reset and step of each instance, and ``OrderEnforcing``, which checks that reset came
    before step): for the rollout engine's environments, of a task whose environment was already
    made, reset and stepped once under the checker (the problem's probe) and that the engine always
    resets before stepping. ``TimeLimit`` stays as ``gymnasium.make`` puts it, so episodes are
    truncated at the same step. MuJoCo's known-harmless model warnings
    (:data:`KNOWN_MUJOCO_WARNINGS`) are not printed.
    """
    gym = import_gymnasium()
    if isinstance(env, str):
        from .wrappers import register_namespace

        register_namespace(env)
    kwargs = dict(env_kwargs or {})
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    if callable(env):
        try:
            made = env(**kwargs)
        except TypeError as exc:
            if not kwargs:
                raise
            raise ConfigError(f"environment factory {env!r} does not accept {sorted(kwargs)}: {exc}") from None
        if not isinstance(made, gym.Env):
            raise ConfigError(f"environment factory {env!r} returned {type(made).__name__}, not a gymnasium.Env")
        return made
    if max_episode_steps is not None:
        kwargs["max_episode_steps"] = max_episode_steps
    if not checked:
        kwargs["disable_env_checker"] = True
    try:
        with _quiet_mujoco(env), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            made = gym.make(env, **kwargs)
        return made if checked else _without_order_enforcing(made)
    except gym.error.UnregisteredEnv as exc:
        raise unknown_environment(env, str(exc)) from None
    except gym.error.DependencyNotInstalled as exc:
        extra = next((v for k, v in _EXTRAS.items() if k in str(exc).lower()), None)
        if extra:  # one fix: gymnasium's own message names another install command (gymnasium[...])
            raise ConfigError(f"environment {env!r} needs the {extra} extra, which is not installed: "
                              f'pip install "blackbox-es[{extra}]"') from None
        raise ConfigError(f"environment {env!r} needs a package that is not installed: {exc}; "
                          "install the package it names") from None
    except ImportError as exc:  # "package.module:Env-v0" whose module is missing, or fails to import
        module = env.split(":", 1)[0] if ":" in env else None
        where = f"its module {module!r}" if module else "the module that registers it"
        raise ConfigError(
            f"environment {env!r} could not be made: {where} cannot be imported ({type(exc).__name__}: "
            f"{str(exc).split('. ')[0]}); install the package that provides it, or check the id"
        ) from None
    except gym.error.Error as exc:
        raise ConfigError(f"environment {env!r} could not be made: {type(exc).__name__}: {exc}") from None


class _quiet_mujoco:
    """Around the making of a MuJoCo environment: MuJoCo's warnings in :data:`KNOWN_MUJOCO_WARNINGS`
    are dropped; any other goes to the handler that was there, or becomes a Python warning (when the
    environment is made) where none was: MuJoCo's own default, a print, cannot be called back. The
    handler is MuJoCo's one process-wide callback, so it is put back as it was."""

    def __init__(self, env: object):
        self.mujoco: ModuleType | None = None
        if isinstance(env, str):
            import gymnasium

            spec = gymnasium.registry.get(env.split(":")[-1])
            if spec is not None and "mujoco" in str(spec.entry_point):
                try:
                    self.mujoco = importlib.import_module("mujoco")
                except ImportError:  # gymnasium says what to install when it makes the environment
                    pass
        self.previous: Callable[[str], None] | None = None
        self.pending: list[str] = []

    def __enter__(self) -> None:
        if self.mujoco is not None:
            self.previous = self.mujoco.get_mju_user_warning()
            self.mujoco.set_mju_user_warning(self._warning)

    def _warning(self, message: str) -> None:
        if any(known in message for known in KNOWN_MUJOCO_WARNINGS):
            return
        if self.previous is not None:
            self.previous(message)
        else:
            self.pending.append(message)

    def __exit__(self, *exc: object) -> None:
        if self.mujoco is not None:
            self.mujoco.set_mju_user_warning(self.previous)
        for message in self.pending:
            warnings.warn(f"MuJoCo: {message}", RuntimeWarning, stacklevel=3)


def _without_order_enforcing(env: Any) -> Any:
    """``env`` with gymnasium's ``OrderEnforcing`` wrapper taken out of its chain (its other
    wrappers, ``TimeLimit`` among them, kept in order)."""
    from gymnasium.wrappers import OrderEnforcing

    if isinstance(env, OrderEnforcing):
        return env.env
    outer = env
    while hasattr(outer, "env"):
        inner = outer.env
        if isinstance(inner, OrderEnforcing):
            outer.env = inner.env
            break
        outer = inner
    return env


def time_limit(env: gymnasium.Env, atari: bool) -> int | None:
    """The time limit the task's registration gives (ALE's frame limit for Atari), or None."""
    spec = env.spec
    limit = spec.max_episode_steps if spec is not None else None
    if limit is None and atari and spec is not None:
        limit = spec.kwargs.get("max_num_frames_per_episode")  # ALE truncates there itself
    return limit


def pixel_scale(space: object) -> float:
    """1/255 for uint8 image observations (what the convnets multiply their inputs by), else 1."""
    dtype = getattr(space, "dtype", None)
    shape = getattr(space, "shape", None) or ()
    return 1.0 / 255.0 if dtype == np.uint8 and len(shape) >= 2 else 1.0


def flat_size(space: gymnasium.spaces.Space, where: str) -> int:
    """How many values one observation of ``space`` flattens into."""
    from gymnasium import spaces

    try:
        return int(spaces.flatdim(space))
    except (NotImplementedError, ValueError, TypeError):
        raise ConfigError(f"{where} has observation space {space}, which cannot be flattened into a vector") from None
