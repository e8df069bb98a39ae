"""Write real (fake) installed distributions: a ``*.dist-info`` folder plus the plugin's modules.

Python finds them like any installed package once their folder is on ``sys.path``, so the registry
is tested through ``importlib.metadata`` exactly as it meets third-party plugins.
"""

from __future__ import annotations

import contextlib
import sys
import textwrap
from pathlib import Path

from blackbox import registry


def write_distribution(root: Path, name: str, version: str, entry_points: dict[str, dict[str, str]] | str,
                       modules: dict[str, str] | None = None) -> Path:
    """Write ``name-version.dist-info`` (METADATA, entry_points.txt) and ``modules`` under ``root``.

    ``entry_points`` maps a group to ``{entry name: "module:object"}``, or is the raw text of
    entry_points.txt (to write a malformed one).
    """
    root = Path(root)
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if isinstance(entry_points, str):
        text = entry_points
    else:
        text = "".join(
            f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in entries.items()) + "\n"
            for group, entries in entry_points.items()
        )
    (info / "entry_points.txt").write_text(text)
    for module, source in (modules or {}).items():
        path = root / (module.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    return info


@contextlib.contextmanager
def on_sys_path(root: Path, module_prefixes: tuple[str, ...] = ()):
    """Put ``root`` on ``sys.path`` and rediscover plugins; undo both (and the imports) afterwards."""
    sys.path.insert(0, str(root))
    registry.refresh()
    try:
        yield
    finally:
        sys.path.remove(str(root))
        for module in [m for m in sys.modules if m.startswith(module_prefixes)] if module_prefixes else []:
            del sys.modules[module]
        registry.refresh()
