"""Which SIMD kernels this CPU runs numpy with: the last bit of an ``exp``, a ``tanh`` or a matrix
product depends on them, so bit-identity across machines does too (docs/cluster.md)."""

from __future__ import annotations

import importlib
import platform
from types import ModuleType

__all__ = ["numpy_simd_targets", "has_avx2_fma"]


def _umath() -> ModuleType:
    try:
        return importlib.import_module("numpy._core._multiarray_umath")
    except ImportError:  # NumPy 1.x
        return importlib.import_module("numpy.core._multiarray_umath")


def numpy_simd_targets() -> list[str]:
    """numpy's SIMD targets beyond its baseline that it runs on this CPU (``numpy.show_runtime()``'s ``found``)."""
    umath = _umath()
    return [target for target in umath.__cpu_dispatch__ if umath.__cpu_features__.get(target)]


def has_avx2_fma() -> bool:
    """An x86-64 CPU with AVX2 and FMA: it can run OpenBLAS's Haswell kernels and numpy's AVX2 loops."""
    features = _umath().__cpu_features__
    return platform.machine().lower() in ("x86_64", "amd64") and bool(features.get("AVX2") and features.get("FMA3"))
