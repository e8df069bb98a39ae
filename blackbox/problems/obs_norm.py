"""0.1.0's ``blackbox.problems.obs_norm``, moved in 0.2.0 (a stub: ``blackbox._moved``).

Importing it gives the module ``blackbox.problems.gym.obs_norm`` itself, with a DeprecationWarning.
"""

from blackbox._moved import alias

alias(__name__)
