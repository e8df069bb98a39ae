"""Gymnasium environments that ship with blackbox, registered when this package is imported.

Gymnasium 1.x has no plugin discovery (the ``gymnasium.envs`` entry-point group of gym 0.26 is
gone), so third-party environments register on import. Either import this package first::

    import blackbox.problems.gym.envs, gymnasium as gym
    env = gym.make("blackbox/CyclicMDP-v0")

or let Gymnasium import it through the ``module:id`` form of the id::

    env = gym.make("blackbox.problems.gym.envs:blackbox/CyclicMDP-v0")

Needs the ``gym`` extra (``pip install "blackbox-es[gym]"``).
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

from .cyclic_mdp import MAX_EPISODE_STEPS, CyclicMDP

__all__ = ["CyclicMDP", "CYCLIC_MDP_ID"]

CYCLIC_MDP_ID = "blackbox/CyclicMDP-v0"

if CYCLIC_MDP_ID not in registry:  # importing twice must not warn about overriding
    register(
        id=CYCLIC_MDP_ID,
        entry_point="blackbox.problems.gym.envs.cyclic_mdp:CyclicMDP",
        max_episode_steps=MAX_EPISODE_STEPS,
        reward_threshold=float(MAX_EPISODE_STEPS),
    )
