"""0.1.0's ``blackbox.envs``, moved in 0.2.0 (a stub package: ``blackbox._moved``).

Importing it warns; its names are those of ``blackbox.problems.gym.envs`` (the same objects), and its
0.1.0 submodules (``cyclic_mdp``) are the modules of that package.
"""

from blackbox._moved import forward_package

__getattr__ = forward_package(__name__)
