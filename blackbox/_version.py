"""The version of blackbox, read once from the distribution's metadata (pyproject.toml is its only source).

Installed (``pip install blackbox-es`` or ``pip install -e .``), the version is the metadata's. A
source tree used without installing it (``PYTHONPATH=.``) reads the ``pyproject.toml`` beside the
package instead; anything else reports ``0+unknown`` rather than failing.
"""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

__all__ = ["__version__", "DISTRIBUTION"]

#: The name blackbox is published under.
DISTRIBUTION = "blackbox-es"


def _from_source_tree() -> str:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    try:
        project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]
    except (OSError, ValueError, KeyError):
        return "0+unknown"
    return str(project["version"]) if project.get("name") == DISTRIBUTION and "version" in project else "0+unknown"


try:
    __version__: str = version(DISTRIBUTION)
except PackageNotFoundError:
    __version__ = _from_source_tree()
