"""What the gym problem wraps around an environment: Atari preprocessing, frame skip, frame stack.

- Atari (``ALE/...`` ids, registered from ``ale_py`` on first use): the preprocessing of Mnih et
  al. (used by Salimans et al. 2017): up to 30 no-op actions after each reset (drawn from the reset
  seed), the action repeated ``frame_skip`` frames (4 by default) with the rewards summed and the
  last two frames max-pooled, grayscale, downsampled to 84x84, and the last ``frame_stack`` (4)
  frames stacked; full episodes (a lost life does not end one). This is gymnasium's
  ``AtariPreprocessing`` + ``FrameStackObservation`` on the ALE environment made with
  ``frameskip=1``; it needs ``pip install "blackbox-es[atari]"`` (ale-py with its ROMs, OpenCV).
- Any other task: ``frame_skip=k`` repeats each action ``k`` steps and sums the rewards
  (:class:`RepeatAction`; an episode that ends inside the k steps ends there), and
  ``frame_stack=k`` stacks the last ``k`` observations.

The task's own time limit (``max_episode_steps``) still counts environment steps (frames), so a
frame skip of k leaves the horizon as it was and gives the policy k times fewer decisions.
"""

from __future__ import annotations

from collections.abc import Mapping

import gymnasium
import numpy as np

from ...errors import ConfigError
from .options import Frames

__all__ = ["RepeatAction", "wrap_env", "is_atari_id", "register_namespace", "resolve_frames",
           "ATARI_FRAME_SKIP", "ATARI_FRAME_STACK", "ATARI_NOOP_MAX", "ATARI_SCREEN"]

ATARI_FRAME_SKIP = 4
ATARI_FRAME_STACK = 4
ATARI_NOOP_MAX = 30
ATARI_SCREEN = 84


def register_namespace(env_id: str) -> None:
    """Register the environments behind ``env_id``'s namespace: ``ALE/`` (ale_py), ``blackbox/``."""
    if env_id.startswith("ALE/") and env_id not in gymnasium.registry:
        try:
            import ale_py
        except ImportError:
            raise ConfigError(f"environment {env_id!r} is an Atari game, which needs ale-py: "
                              f'pip install "blackbox-es[atari]"') from None
        gymnasium.register_envs(ale_py)
    elif env_id.startswith("blackbox/") and env_id not in gymnasium.registry:
        import blackbox.problems.gym.envs  # noqa: F401 - registers on import


def is_atari_id(env: object) -> bool:
    """True for a registered id whose environment comes from ale_py."""
    if not isinstance(env, str):
        return False
    spec = gymnasium.registry.get(env.split(":")[-1])
    entry = getattr(spec, "entry_point", "") if spec is not None else ""
    return "ale_py" in str(entry)


def resolve_frames(env: object, frames: Frames, env_kwargs: Mapping[str, object]) -> tuple[bool, int, int, dict[str, object]]:
    """``(atari, frame_skip, frame_stack, env_kwargs)`` for ``env`` under the ``frames`` options:
    Atari preprocessing on for ALE ids unless turned off, the paper's 4 and 4 for Atari, else 1
    and 1, and the emulator's own frame skip turned off under the preprocessing (which repeats
    the action itself)."""
    if isinstance(env, str):
        register_namespace(env)
    detected = is_atari_id(env)
    if frames.atari and not detected:
        raise ConfigError(f"atari=true applies Atari preprocessing, but {env!r} is not an ALE environment "
                          f"(ids such as 'ALE/Pong-v5'); use frame_skip= and frame_stack= for other tasks")
    atari = detected if frames.atari is None else bool(frames.atari)
    skip = (ATARI_FRAME_SKIP if atari else 1) if frames.skip is None else frames.skip
    stack = (ATARI_FRAME_STACK if atari else 1) if frames.stack is None else frames.stack
    kwargs = dict(env_kwargs)
    if atari:
        if "frameskip" in kwargs:
            raise ConfigError("env_kwargs frameskip is set by the Atari preprocessing (the emulator steps one "
                              "frame at a time and the preprocessing repeats the action); use frame_skip= instead")
        kwargs["frameskip"] = 1
    return atari, skip, stack, kwargs


class RepeatAction(gymnasium.Wrapper):
    """Repeats every action ``repeat`` steps (or until the episode ends), summing the rewards."""

    def __init__(self, env: gymnasium.Env, repeat: int):
        super().__init__(env)
        self.repeat = int(repeat)

    def step(self, action):
        total = 0.0
        for _ in range(self.repeat):
            observation, reward, terminated, truncated, info = self.env.step(action)
            total = float(np.float64(total) + np.float64(reward))
            if terminated or truncated:
                break
        return observation, total, terminated, truncated, info


def wrap_env(env: gymnasium.Env, atari: bool, frame_skip: int, frame_stack: int) -> gymnasium.Env:
    """``env`` with Atari preprocessing (or a plain frame skip) and frame stacking."""
    if atari:
        try:
            from gymnasium.wrappers import AtariPreprocessing
            env = AtariPreprocessing(env, noop_max=ATARI_NOOP_MAX, frame_skip=frame_skip, screen_size=ATARI_SCREEN,
                                     terminal_on_life_loss=False, grayscale_obs=True, scale_obs=False)
        except Exception as exc:  # noqa: BLE001 - DependencyNotInstalled (OpenCV) and friends
            env.close()
            if "cv2" in str(exc) or "opencv" in str(exc).lower():
                raise ConfigError(f'Atari preprocessing needs OpenCV: pip install "blackbox-es[atari]" ({exc})') from None
            raise
    elif frame_skip > 1:
        env = RepeatAction(env, frame_skip)
    if frame_stack > 1:
        from gymnasium.wrappers import FrameStackObservation

        env = FrameStackObservation(env, frame_stack)
    return env
