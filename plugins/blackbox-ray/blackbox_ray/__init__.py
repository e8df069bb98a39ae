"""blackbox-ray: the ``ray`` executor for blackbox (one actor per CPU of a Ray cluster)."""

from .executor import RayExecutor

__all__ = ["RayExecutor"]
__version__ = "0.1.0"
