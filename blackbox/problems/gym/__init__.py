"""Gymnasium tasks as problems: policies, batched rollouts, observation normalization, presets.

The package exports the problem, its option groups (:mod:`.options`) and :func:`make_gym_env`
(0.1.0's ``blackbox.problems.gym`` module exported the first and the last), so
``from blackbox.problems.gym import GymProblem, ObsNorm`` works. Importing it imports neither
Gymnasium nor torch; building a problem does.
"""

from .environment import make_gym_env
from .options import VBN, Environment, EpisodeCap, Episodes, Frames, ObsNorm, Policy
from .problem import GymProblem

__all__ = ["GymProblem", "make_gym_env", "Environment", "Episodes", "Policy", "ObsNorm", "EpisodeCap", "Frames",
           "VBN"]
