"""Importing JAX, gymnax and Brax where a problem needs them, with one line naming the extra when they are missing."""

from __future__ import annotations

import contextlib
import io
import sys
import warnings
from types import ModuleType

from ...errors import ConfigError

__all__ = ["INSTALL", "BRAX_BACKENDS", "import_jax", "import_gymnax", "import_brax"]

#: The install line the errors name.
INSTALL = 'pip install "blackbox-es[jax]"'


def import_jax(problem: str) -> ModuleType:
    """The ``jax`` module, or a ConfigError naming the extra that installs it."""
    try:
        import jax
    except ImportError:
        raise ConfigError(f"the {problem} problem needs JAX, which is not installed: {INSTALL}") from None
    return jax


def import_gymnax() -> ModuleType:
    """The ``gymnax`` module (after JAX), or a ConfigError naming the extra that installs it."""
    import_jax("gymnax")
    try:
        import gymnax
    except ImportError:
        raise ConfigError(f"the gymnax problem needs gymnax, which is not installed: {INSTALL}") from None
    return gymnax


#: Brax's physics pipelines (``backend=``), in the order the docs list them.
BRAX_BACKENDS = ("spring", "positional", "generalized", "mjx")


#: What Brax and the libraries it imports print or warn that says nothing about a run: MJX's optional
#: GPU backend (warp) missing, printed at import; Brax's notice that its pipelines are not maintained,
#: warned at each environment made; jaxopt's, at import.
_HARMLESS_PRINTS = ("Failed to import warp:", "Failed to import mujoco_warp:")
_HARMLESS_WARNINGS = ("Brax System, piplines and environments are not actively being maintained",
                      "JAXopt is no longer maintained")


def import_brax() -> ModuleType:
    """``brax.envs`` (after JAX), or a ConfigError naming the extra that installs it.

    The notices listed in ``_HARMLESS_PRINTS`` and ``_HARMLESS_WARNINGS`` are left out; anything
    else Brax prints at import still reaches stdout."""
    import_jax("brax")
    for message in _HARMLESS_WARNINGS:
        warnings.filterwarnings("ignore", message=message)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            import brax.envs
    except ImportError:
        raise ConfigError(f"the brax problem needs Brax, which is not installed: {INSTALL}") from None
    finally:
        kept = [line for line in printed.getvalue().splitlines(keepends=True) if not line.startswith(_HARMLESS_PRINTS)]
        sys.stdout.write("".join(kept))
    return brax.envs
