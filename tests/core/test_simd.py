"""The CPU-kernel facts the golden test and the Ray node check rely on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from blackbox.core.simd import has_avx2_fma, numpy_simd_targets


def test_avx2_and_fma_are_read_as_the_kernel_reports_them():
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.exists():
        pytest.skip("needs /proc/cpuinfo (Linux)")
    flags = next((line.split(":", 1)[1].split() for line in cpuinfo.read_text().splitlines()
                  if line.startswith("flags")), [])
    if not flags:
        pytest.skip("/proc/cpuinfo lists no flags (not x86)")
    assert has_avx2_fma() == ("avx2" in flags and "fma" in flags)


def test_a_target_numpy_is_told_to_leave_out_is_not_listed():
    targets = numpy_simd_targets()
    if not targets:
        pytest.skip("numpy runs no SIMD target beyond its baseline on this CPU")
    code = "import json; from blackbox.core.simd import numpy_simd_targets; print(json.dumps(numpy_simd_targets()))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "NPY_DISABLE_CPU_FEATURES": targets[-1]})
    assert json.loads(done.stdout) == targets[:-1]
