"""The reference batch of virtual batch normalization: observations collected once, deterministically.

As in the ES code (``get_ref_batch``): step the environment with uniformly random actions and keep
the observation after every step, resetting when an episode ends, until ``size`` observations are
collected. Here the first reset and the action sampler are seeded with ``seed``, so the batch is a
function of the task and the seed alone: a resumed run, and every worker, gets the same one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ...errors import StateError

if TYPE_CHECKING:
    import gymnasium

__all__ = ["collect_reference_batch", "digest", "reference_batch", "check_reference"]


def collect_reference_batch(env: gymnasium.Env, flatten: Callable[[object], np.ndarray], size: int, seed: int) -> np.ndarray:
    """``size`` flat observations ``(size, obs_size)`` of ``env`` under random actions seeded by ``seed``."""
    env.action_space.seed(int(seed))
    env.reset(seed=int(seed))
    rows: list[np.ndarray] = []
    while len(rows) < size:
        observation, _, terminated, truncated, _ = env.step(env.action_space.sample())
        rows.append(flatten(observation))
        if terminated or truncated:
            env.reset()
    return np.stack(rows)


def digest(batch: np.ndarray) -> str:
    """A short fingerprint of a reference batch (its dtype, shape and bytes)."""
    h = hashlib.sha256(f"{batch.dtype.str}{batch.shape}".encode())
    h.update(np.ascontiguousarray(batch).tobytes())
    return h.hexdigest()[:16]


def reference_batch(make_env: Callable[[], gymnasium.Env], flatten: Callable[[object], np.ndarray], size: int,
                    seed: int) -> tuple[np.ndarray, str]:
    """The batch collected in a fresh environment of ``make_env`` (closed after), and its fingerprint."""
    env = make_env()
    try:
        batch = collect_reference_batch(env, flatten, size, seed)
    finally:
        env.close()
    return batch, digest(batch)


def check_reference(where: str, here: str, saved: str) -> None:
    """StateError when the batch made here (fingerprint ``here``) is not the run's (``saved``)."""
    if saved != here:
        raise StateError(
            f"the VBN reference batch of {where} here (fingerprint {here}) differs from "
            f"the run's ({saved}): the environment yields other observations than where the "
            f"run started (another gymnasium/ale-py version?), so the objective would change"
        )
