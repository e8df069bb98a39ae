"""Importing JAX, gymnax and Brax where a problem needs them, with one line naming the extra when they are missing."""

from __future__ import annotations

from typing import Any

from ...errors import ConfigError

__all__ = ["INSTALL", "BRAX_BACKENDS", "import_jax", "import_gymnax", "import_brax"]

#: The install line the errors name.
INSTALL = 'pip install "blackbox-es[jax]"'


def import_jax(problem: str) -> Any:
    """The ``jax`` module, or a ConfigError naming the extra that installs it."""
    try:
        import jax
    except ImportError:
        raise ConfigError(f"the {problem} problem needs JAX, which is not installed: {INSTALL}") from None
    return jax


def import_gymnax() -> Any:
    """The ``gymnax`` module (after JAX), or a ConfigError naming the extra that installs it."""
    import_jax("gymnax")
    try:
        import gymnax
    except ImportError:
        raise ConfigError(f"the gymnax problem needs gymnax, which is not installed: {INSTALL}") from None
    return gymnax


#: Brax's physics pipelines (``backend=``), in the order the docs list them.
BRAX_BACKENDS = ("spring", "positional", "generalized", "mjx")


def import_brax() -> Any:
    """``brax.envs`` (after JAX), or a ConfigError naming the extra that installs it."""
    import_jax("brax")
    try:
        import brax.envs
    except ImportError:
        raise ConfigError(f"the brax problem needs Brax, which is not installed: {INSTALL}") from None
    return brax.envs
