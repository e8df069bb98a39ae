"""blackbox-cma: CMA-ES through pycma as a blackbox strategy plugin (entry point ``cma``).

    import blackbox as bb
    es = bb.make_strategy("cma", dim=10, sigma=0.5, seed=0, CMA_diagonal=True)
"""

from .strategy import CMAES

__all__ = ["CMAES"]
__version__ = "0.1.0"
