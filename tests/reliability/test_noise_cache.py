"""The machine-wide noise-table cache is verified whole when it is mapped: damage anywhere in it is
found, reported and rebuilt, never used; processes that build it at once never see half a file."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

from blackbox.core import noise as noise_module
from blackbox.core import noise_cache
from blackbox.core.noise import NoiseTable
from blackbox.core.noise_cache import NoiseCacheWarning, table_path
from tests.helpers import subprocess_env
from tests.reliability.helpers import note

SIZE, SEED = 2**17, 21
COUNTS = {"tried": 0, "refused": 0}


def teardown_module(module):
    if not COUNTS["tried"]:
        return
    note("damaged noise-table cache files", inputs=COUNTS["tried"], refused=COUNTS["refused"],
         uncaught=COUNTS["tried"] - COUNTS["refused"])


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BLACKBOX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(noise_module, "DISK_CACHE_THRESHOLD", 2**16)
    return tmp_path


def expected(size=SIZE, seed=SEED) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(size, dtype=np.float32)


def flip(offset_from_end: int | None = None, at: float | None = None):
    def damage(path):
        data = bytearray(path.read_bytes())
        where = len(data) - offset_from_end if offset_from_end is not None else int(len(data) * at)
        data[where] ^= 0x10
        path.write_bytes(bytes(data))
    return damage


def other_seed(path):
    """A whole, self-consistent table of another seed under this table's name."""
    other = table_path(path.parent, SIZE, SEED + 1)
    NoiseTable(SIZE, SEED + 1)
    os.replace(other, path)


DAMAGE = {
    "bit-in-the-middle": flip(at=0.5),
    "bit-in-the-last-value": flip(offset_from_end=41),
    "bit-in-the-header": flip(at=0.0001),
    "bit-in-the-trailer": flip(offset_from_end=1),
    "truncated": lambda path: path.write_bytes(path.read_bytes()[:-4096]),
    "extended": lambda path: path.write_bytes(path.read_bytes() + b"\0" * 8),
    "zeroed-page": lambda path: path.write_bytes(path.read_bytes()[:200000] + b"\0" * 4096
                                                 + path.read_bytes()[204096:]),
    "another-seed": other_seed,
    "a-folder": lambda path: (path.unlink(), path.mkdir()),
    "a-fifo": lambda path: (path.unlink(), os.mkfifo(path)),
}


@pytest.mark.parametrize("how", list(DAMAGE))
def test_a_damaged_cache_is_found_reported_and_rebuilt(cache, how):
    NoiseTable(SIZE, SEED)
    path = table_path(cache, SIZE, SEED)
    assert path.is_file()
    DAMAGE[how](path)
    COUNTS["tried"] += 1
    if how == "a-folder":  # cannot be replaced: the table is made in memory, and that is said
        with pytest.warns(NoiseCacheWarning, match="not a regular file"):
            table = NoiseTable(SIZE, SEED)
        assert not table.mapped
    else:
        with pytest.warns(NoiseCacheWarning, match=f"noise table cache {path} is damaged"):
            table = NoiseTable(SIZE, SEED)
        assert table.mapped
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert np.array_equal(NoiseTable(SIZE, SEED).data, expected())  # the rebuilt file verifies
    assert np.array_equal(table.data, expected())
    assert [p.name for p in cache.iterdir() if p.name.endswith(".tmp")] == []
    COUNTS["refused"] += 1


def test_an_intact_cache_maps_without_a_warning_and_without_reading_into_memory(cache):
    NoiseTable(SIZE, SEED)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = NoiseTable(SIZE, SEED)
    assert table.mapped and np.array_equal(table.data, expected())


BUILD = """
import hashlib, sys
from blackbox.core import noise
noise.DISK_CACHE_THRESHOLD = 2**16
table = noise.NoiseTable(int(sys.argv[1]), int(sys.argv[2]))
print(table.mapped, hashlib.sha256(table.data.tobytes()).hexdigest())
"""


def test_processes_building_the_same_table_at_once_all_get_it_whole(tmp_path):
    size = 2**22
    env = subprocess_env({"BLACKBOX_CACHE_DIR": tmp_path, "PYTHONWARNINGS": "error::UserWarning"})
    processes = [subprocess.Popen([sys.executable, "-c", BUILD, str(size), str(SEED)], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(6)]
    outputs = [p.communicate(timeout=300) for p in processes]
    want = hashlib.sha256(expected(size).tobytes()).hexdigest()
    for process, (out, err) in zip(processes, outputs):
        assert process.returncode == 0, err
        assert out.split() == ["True", want]
    assert sorted(p.name for p in tmp_path.iterdir()) == [table_path(tmp_path, size, SEED).name]
    note("processes building one noise table at once", faults=len(processes), runs=len(processes),
         identical=len(processes))


@pytest.mark.reliability_long
def test_verifying_the_largest_default_table_costs_a_fraction_of_building_it(tmp_path, monkeypatch):
    """Measured on the 2^26 table (256 MB): building it, then mapping it again (read through sha256)."""
    size = 2**26
    monkeypatch.setenv("BLACKBOX_CACHE_DIR", str(tmp_path))
    start = time.perf_counter()
    NoiseTable(size, SEED)
    built = time.perf_counter() - start
    probe = noise_module._probe(SEED)
    start = time.perf_counter()
    data, problem = noise_cache._open_verified(table_path(tmp_path, size, SEED), size, probe)
    verified = time.perf_counter() - start
    assert data is not None and problem is None
    start = time.perf_counter()
    noise_module._generate_into(np.empty(size, dtype=np.float32), SEED)
    generated = time.perf_counter() - start
    assert verified < generated
    note("noise table 2^26: verify on map", verify_s=round(verified, 3), generate_s=round(generated, 3),
         build_and_write_s=round(built, 3))


def test_a_seed_whose_file_name_is_too_long_is_no_damage(cache):
    seed = 10**300  # the cache file's name would exceed the file system's limit
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = NoiseTable(SIZE, seed)
    assert not table.mapped and np.array_equal(table.data[:256], noise_module._probe(seed))


def test_a_damaged_cache_file_of_another_user_is_left_alone(cache, monkeypatch):
    NoiseTable(SIZE, SEED)
    path = table_path(cache, SIZE, SEED)
    DAMAGE["bit-in-the-middle"](path)
    damaged = path.read_bytes()
    monkeypatch.setattr(noise_cache, "_mine", lambda path: False)
    with pytest.warns(NoiseCacheWarning, match="belongs to another user, so it is left as it is"):
        table = NoiseTable(SIZE, SEED)
    assert not table.mapped and np.array_equal(table.data, expected())
    assert path.read_bytes() == damaged


RUN = """
import sys
from blackbox.core import noise
noise.DISK_CACHE_THRESHOLD = 2**16
from blackbox.cli import main
sys.exit(main(["run", "--strategy", "openai-es:popsize=4,noise_size=131072,noise_seed=21", "--problem", "sphere",
               "--generations", "1", "--quiet", "--no-plot", "--out", sys.argv[1]]))
"""


def test_the_cli_prints_a_damaged_cache_warning_as_one_line(tmp_path):
    """Issue 25: the warning came in Python's two-line format, with a file name and a source line."""
    env = subprocess_env({"BLACKBOX_CACHE_DIR": tmp_path / "cache"})
    first = subprocess.run([sys.executable, "-c", RUN, str(tmp_path / "a")], env=env, capture_output=True,
                           text=True, timeout=300)
    assert first.returncode == 0 and first.stderr == "", first.stderr
    path = table_path(tmp_path / "cache", 131072, 21)
    flip(at=0.5)(path)
    second = subprocess.run([sys.executable, "-c", RUN, str(tmp_path / "b")], env=env, capture_output=True,
                            text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    assert re.fullmatch(rf"blackbox run: warning: noise table cache {re.escape(str(path))} is damaged \([^\n]*\); "
                        rf"rebuilding it\n", second.stderr), second.stderr
