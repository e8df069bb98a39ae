"""``blackbox new {strategy,problem,executor} NAME [--out DIR]``: write a new plugin distribution.

The folder holds ``pyproject.toml`` (the entry point naming the class), the module (a working
plugin of that kind whose comments say what to fill in) and ``test_<module>.py`` (the conformance
kit, one pytest test per check). As written it installs (``pip install -e DIR``) and passes its
test; :func:`write_plugin` is the same without the command line.
"""

from __future__ import annotations

import argparse
import importlib.util
import keyword
import re
import sys
from pathlib import Path
from typing import IO

from .._version import __version__
from ..errors import ConfigError
from ..files import atomic_write, check_path
from .plugin_templates import GROUPS, MAKERS, MODULES, PYPROJECT, README, TEST

__all__ = ["add_parser", "run", "write_plugin", "plugin_names"]

_NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def add_parser(sub) -> None:
    parser = sub.add_parser(
        "new", help="write a new plugin (pyproject.toml, module, conformance test)",
        description="Write a plugin distribution for a strategy, a problem or an executor: pyproject.toml with "
                    "its entry point, a working module to edit, and its conformance test. It installs with "
                    "`pip install -e DIR` and passes `python -m pytest DIR` as written.",
    )
    parser.add_argument("kind", choices=tuple(GROUPS), help="what the plugin provides")
    parser.add_argument("name", help="its registered name, also the distribution's: lowercase words joined by "
                                     "hyphens, such as my-es")
    parser.add_argument("--out", type=Path, help="the folder to write (default: ./NAME); must not hold files yet")
    parser.set_defaults(func=run)


#: The longest plugin name: it names the folder and ``test_<module>.py``, which stay well within the
#: 255 bytes a file name may have (with room for the temporary names the files are written under).
MAX_NAME = 100


def plugin_names(name: str) -> tuple[str, str]:
    """The module (``my_es``) and class (``MyEs``) names for the plugin ``name``, or a ConfigError."""
    if not _NAME.match(name):
        raise ConfigError(f"plugin name {name!r} is not lowercase words joined by hyphens; use something like "
                          f"'my-es' (it names the distribution, the entry point and, as my_es, the module)")
    if len(name) > MAX_NAME:
        raise ConfigError(f"plugin name {name[:40] + '...'!r} is {len(name)} characters long, more than the "
                          f"{MAX_NAME} it may have (it names a folder and files); choose a shorter one")
    module = name.replace("-", "_")
    if keyword.iskeyword(module):
        raise ConfigError(f"plugin name {name!r} gives the module name {module!r}, a Python keyword; choose another")
    if importlib.util.find_spec(module) is not None:
        raise ConfigError(f"plugin name {name!r} gives the module name {module!r}, which is already importable "
                          f"here and would be shadowed; choose another name")
    return module, "".join(part.capitalize() for part in name.split("-"))


def write_plugin(kind: str, name: str, out: str | Path | None = None) -> list[Path]:
    """Write the plugin ``name`` of ``kind`` into ``out`` (default ``./name``); the paths written."""
    if kind not in GROUPS:
        raise ConfigError(f"kind must be one of {', '.join(GROUPS)}, got {kind!r}")
    module, cls = plugin_names(name)
    folder = check_path(name if out is None else out, "--out")
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ConfigError(f"{folder} already exists and is not an empty folder; choose another --out")
    major, minor = __version__.split(".")[:2]
    fields = {"name": name, "kind": kind, "module": module, "cls": cls, "group": GROUPS[kind],
              "group_short": GROUPS[kind].split(".")[1], "blackbox_version": f"{major}.{minor}",
              "out": folder.as_posix()}
    fields["maker"] = MAKERS[kind].format(**fields)
    files = {
        "pyproject.toml": PYPROJECT.format(**fields),
        f"{module}.py": MODULES[kind].format(**fields),
        f"test_{module}.py": TEST.format(**fields),
        "README.md": README.format(**fields),
    }
    return [_write_text(folder / filename, text) for filename, text in files.items()]


def _write_text(path: Path, text: str) -> Path:
    def write(handle: IO[str]) -> None:
        handle.write(text)

    return atomic_write(path, write, binary=False)


def run(args: argparse.Namespace) -> int:
    written = write_plugin(args.kind, args.name, args.out)
    folder = written[0].parent
    group = GROUPS[args.kind].split(".")[1]
    print(f"wrote the {args.kind} plugin {args.name} in {folder}/: {', '.join(p.name for p in written)}")
    print(f"next, in the environment where blackbox is installed:\n"
          f"  pip install -e \"{folder.as_posix()}[test]\"\n"
          f"  blackbox list {group}\n"
          f"  python -m pytest {folder.as_posix()}", file=sys.stdout)
    return 0
