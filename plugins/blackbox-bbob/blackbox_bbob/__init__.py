"""blackbox-bbob: the BBOB suite of COCO (coco-experiment) as a blackbox problem plugin (``bbob``).

    import blackbox as bb
    problem = bb.make_problem("bbob:function=8,dim=10,instance=3")   # or "bbob:rosenbrock,dim=10"
"""

from importlib.metadata import PackageNotFoundError, version

from .problem import BBOB, FUNCTIONS

__all__ = ["BBOB", "FUNCTIONS"]

try:  # the version is pyproject.toml's, read from the installed distribution
    __version__ = version("blackbox-bbob")
except PackageNotFoundError:  # a source tree on sys.path, not installed
    __version__ = "0+unknown"
