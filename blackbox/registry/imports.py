"""The object a ``"package.module:attribute"`` path names: entry points and policies import through here."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["import_object"]


def import_object(path: str) -> Any:
    """Import ``"package.module:attr.sub"`` and return the attribute (the module for a path without ``:``).

    Whatever the import raises (ImportError, AttributeError, or the module's own error) propagates,
    so that the caller can say who asked for the object and where it came from.
    """
    module_name, _, attr = path.partition(":")
    obj = importlib.import_module(module_name.strip())
    for part in filter(None, attr.strip().split(".")):
        obj = getattr(obj, part)
    return obj
