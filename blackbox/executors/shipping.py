"""cloudpickle as the executors ship a problem to their workers, with the code's file names kept.

cloudpickle pickles the functions of ``__main__``, of a notebook and of modules registered with
``register_pickle_by_value`` by value, and since 3.1.3 it renames their code objects' file to
``<dynamic-code>`` (so that the bytes do not depend on where the code was defined). A worker's
traceback then shows neither the file nor the failing source line. :func:`dumps` keeps the real file
name, so a worker on the same machine (or one with the same files) shows the line that raised, as
it did before 3.1.3; only the payload's independence of the path is given up, which nothing here
relies on (a problem is pickled once per run).
"""

from __future__ import annotations

import io
import pickle
import types
from collections.abc import Callable

import cloudpickle

__all__ = ["dumps"]

_RENAMED = "<dynamic-code>"


# cloudpickle ships no type information (ignore_missing_imports in pyproject): its Pickler has no type.
class _Pickler(cloudpickle.Pickler):  # type: ignore[misc]
    def reducer_override(self, obj: object) -> object:
        if type(obj) is types.CodeType:
            reduce = self.dispatch_table.get(types.CodeType)
            if reduce is not None:
                constructor, args = reduce(obj)
                return constructor, tuple(obj.co_filename if arg == _RENAMED else arg for arg in args)
        return super().reducer_override(obj)


def dumps(obj: object, protocol: int | None = None,
          buffer_callback: Callable[[pickle.PickleBuffer], object] | None = None) -> bytes:
    """``cloudpickle.dumps(obj, protocol, buffer_callback)``, code keeping its file names."""
    with io.BytesIO() as file:
        _Pickler(file, protocol=protocol, buffer_callback=buffer_callback).dump(obj)
        return file.getvalue()
