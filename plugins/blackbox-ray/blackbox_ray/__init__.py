"""blackbox-ray: the ``ray`` executor for blackbox (one actor per CPU of a Ray cluster)."""

from importlib.metadata import PackageNotFoundError, version

from .executor import ClusterSizeWarning, ClusterStats, RayExecutor

__all__ = ["RayExecutor", "ClusterStats", "ClusterSizeWarning"]

try:  # the version is pyproject.toml's, read from the installed distribution
    __version__ = version("blackbox-ray")
except PackageNotFoundError:  # a source tree on sys.path, not installed
    __version__ = "0+unknown"
