"""blackbox-cma: CMA-ES through pycma as a blackbox strategy plugin (entry point ``cma``).

    import blackbox as bb
    es = bb.make_strategy("cma", dim=10, sigma=0.5, seed=0, CMA_diagonal=True)
"""

from importlib.metadata import PackageNotFoundError, version

from .strategy import CMAES

__all__ = ["CMAES"]

try:  # the version is pyproject.toml's, read from the installed distribution
    __version__ = version("blackbox-cma")
except PackageNotFoundError:  # a source tree on sys.path, not installed
    __version__ = "0+unknown"
