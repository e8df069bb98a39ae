"""The IDX reader and the MNIST folder loader, on small IDX files written here byte by byte."""

import gzip
import struct

import numpy as np
import pytest

import blackbox as bb
from blackbox.problems.mnist.data import MNIST_DIR_ENV, read_idx, read_idx_header, resolve_data, write_idx
from blackbox.problems.mnist.data.mnist import find_mnist_files, load_mnist_arrays, mnist_image_shape

CODES = {np.uint8: 0x08, np.int8: 0x09, np.int16: 0x0B, np.int32: 0x0C, np.float32: 0x0D, np.float64: 0x0E}


def idx_bytes(array: np.ndarray, code: int | None = None, dims=None) -> bytes:
    """IDX bytes made independently of the library: magic, big-endian dims, big-endian data."""
    code = CODES[array.dtype.type] if code is None else code
    dims = array.shape if dims is None else dims
    return bytes([0, 0, code, len(dims)]) + struct.pack(f">{len(dims)}I", *dims) + array.astype(
        array.dtype.newbyteorder(">")).tobytes()


def write(path, data: bytes, gz: bool = False):
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("dtype", list(CODES))
def test_reads_every_type_plain_and_gzipped(tmp_path, dtype, gz):
    array = (np.arange(2 * 3 * 4).reshape(2, 3, 4) - 7).astype(dtype)
    if dtype is np.uint8:
        array = np.arange(24, dtype=np.uint8).reshape(2, 3, 4) * 10
    path = write(tmp_path / ("f.gz" if gz else "f"), idx_bytes(array), gz)
    got = read_idx(path)
    assert got.dtype == np.dtype(dtype) and got.dtype.isnative
    np.testing.assert_array_equal(got, array)
    header = read_idx_header(path)
    assert header.shape == (2, 3, 4) and header.type_code == CODES[dtype]


def test_gzip_is_recognised_by_content_not_name(tmp_path):
    array = np.arange(6, dtype=np.uint8)
    path = write(tmp_path / "labels-idx1-ubyte", idx_bytes(array), gz=True)  # gzipped, no .gz
    np.testing.assert_array_equal(read_idx(path), array)
    plain = write(tmp_path / "labels.gz", idx_bytes(array))  # plain, named .gz
    np.testing.assert_array_equal(read_idx(plain), array)


def test_write_idx_round_trip(tmp_path):
    array = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    for name in ("a", "a.gz"):
        path = write_idx(tmp_path / name, array)
        assert path.read_bytes()[:2] == (b"\x1f\x8b" if name.endswith(".gz") else b"\x00\x00")
        np.testing.assert_array_equal(read_idx(path), array)
    assert (tmp_path / "a").read_bytes() == idx_bytes(array)
    with pytest.raises(bb.errors.DatasetError, match="cannot write dtype complex128 as IDX"):
        write_idx(tmp_path / "c", np.zeros(2, dtype=complex))


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("data,message", [
    (b"\x00\x00", r"too short for an IDX header \(2 bytes"),
    (b"\x12\x34\x08\x01" + struct.pack(">I", 1) + b"\x00", r"bad magic number 12 34 08 01: an IDX file starts with bytes 00 00"),
    (b"\x00\x00\x07\x01" + struct.pack(">I", 1) + b"\x00", r"unknown data type code 0x07 \(unknown\) in the magic number; expected one of 0x08 \(unsigned byte\)"),
    (b"\x00\x00\x08\x00", r"declares 0 dimensions"),
    (b"\x00\x00\x08\x03" + struct.pack(">I", 5), r"truncated header: it declares 3 dimensions \(16 header bytes\) but the file ends after 8 bytes"),
    (b"\x00\x00\x08\x02" + struct.pack(">2I", 3, 4) + bytes(11), r"truncated data: dims 3x4 of 0x08 \(unsigned byte\) need 12 bytes after the header, the file has 11"),
    (b"\x00\x00\x0b\x01" + struct.pack(">I", 3) + bytes(5), r"truncated data: dims 3 of 0x0B \(int16\) need 6 bytes after the header, the file has 5"),
    (b"\x00\x00\x08\x01" + struct.pack(">I", 3) + bytes(4), r"more data than the header declares: dims 3 of 0x08 \(unsigned byte\) need 3 bytes"),
])
def test_malformed_files_are_named_with_the_defect(tmp_path, data, message, gz):
    path = write(tmp_path / "bad-idx", data, gz)
    with pytest.raises(bb.errors.DatasetError, match=message) as info:
        read_idx(path)
    assert str(path) in str(info.value)


def test_missing_and_corrupt_gzip(tmp_path):
    with pytest.raises(bb.errors.DatasetError, match=r"nope-idx1-ubyte: no such file"):
        read_idx(tmp_path / "nope-idx1-ubyte")
    good = gzip.compress(idx_bytes(np.arange(1000, dtype=np.int32)))
    path = write(tmp_path / "cut.gz", good[: len(good) // 2])
    with pytest.raises(bb.errors.DatasetError, match=r"cut.gz: gzip data is truncated or corrupt"):
        read_idx(path)
    with pytest.raises(bb.errors.DatasetError, match="is a directory"):
        read_idx(tmp_path)


# -- MNIST folders -------------------------------------------------------------------------------

def fake_mnist(folder, n_train=30, n_test=12, rows=12, cols=12, gz=False, dotted=False, seed=0):
    """A tiny MNIST-shaped folder: random images, labels 0..9."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {
        "train-images-idx3-ubyte": rng.integers(0, 256, (n_train, rows, cols), dtype=np.uint8),
        "train-labels-idx1-ubyte": (np.arange(n_train) % 10).astype(np.uint8),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (n_test, rows, cols), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": (np.arange(n_test) % 10).astype(np.uint8),
    }
    for name, array in arrays.items():
        name = name.replace("-idx", ".idx") if dotted else name
        write(folder / (name + (".gz" if gz else "")), idx_bytes(array), gz)
    return arrays


@pytest.mark.parametrize("gz,dotted", [(False, False), (True, False), (True, True)])
def test_loads_an_mnist_folder(tmp_path, gz, dotted):
    arrays = fake_mnist(tmp_path, gz=gz, dotted=dotted)
    out = load_mnist_arrays(tmp_path)
    np.testing.assert_array_equal(out["x_train"], arrays["train-images-idx3-ubyte"])
    np.testing.assert_array_equal(out["y_test"], arrays["t10k-labels-idx1-ubyte"])
    assert mnist_image_shape(tmp_path) == (12, 12)


def test_missing_mnist_file_is_named(tmp_path):
    fake_mnist(tmp_path)
    (tmp_path / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(bb.errors.DatasetError, match=r"MNIST file t10k-labels-idx1-ubyte \(plain or .gz\) not found in "):
        find_mnist_files(tmp_path)
    with pytest.raises(bb.errors.DatasetError, match="does not exist"):
        find_mnist_files(tmp_path / "absent")


@pytest.mark.parametrize("name,array,message", [
    ("train-labels-idx1-ubyte", np.arange(29, dtype=np.uint8) % 10,
     r"train-labels-idx1-ubyte has 29 labels but train-images-idx3-ubyte has 30 images"),
    ("train-images-idx3-ubyte", np.zeros((30, 12, 12), dtype=np.float32),
     r"train-images-idx3-ubyte: wrong data type code 0x0D \(float32\); MNIST images are 0x08 \(unsigned byte\)"),
    ("t10k-images-idx3-ubyte", np.zeros((12, 144), dtype=np.uint8),
     r"t10k-images-idx3-ubyte: dims mismatch: 2 dimensions \(12, 144\), MNIST images have 3"),
    ("t10k-images-idx3-ubyte", np.zeros((12, 10, 12), dtype=np.uint8),
     r"dims mismatch: training images \(train-images-idx3-ubyte\) are 12x12 but test images \(t10k-images-idx3-ubyte\) are 10x12"),
    ("t10k-labels-idx1-ubyte", np.full(12, 11, dtype=np.uint8),
     r"t10k-labels-idx1-ubyte: label 11 at index 0 is outside 0..9 \(12 such labels\)"),
])
def test_inconsistent_mnist_files(tmp_path, name, array, message):
    fake_mnist(tmp_path)
    write(tmp_path / name, idx_bytes(array))
    with pytest.raises(bb.errors.DatasetError, match=message):
        load_mnist_arrays(tmp_path)


def test_truncated_mnist_images_caught_at_load(tmp_path):
    fake_mnist(tmp_path)
    path = tmp_path / "train-images-idx3-ubyte"
    path.write_bytes(path.read_bytes()[:-5])
    assert mnist_image_shape(tmp_path) == (12, 12)  # the header alone is fine
    with pytest.raises(bb.errors.DatasetError, match=r"train-images-idx3-ubyte: truncated data: dims 30x12x12"):
        load_mnist_arrays(tmp_path)


def test_resolve_data_path_env_and_default(tmp_path, monkeypatch):
    fake_mnist(tmp_path / "m")
    monkeypatch.delenv(MNIST_DIR_ENV, raising=False)
    assert resolve_data().kind == "digits"
    assert "NOT MNIST" in resolve_data().statement
    explicit = resolve_data(path=tmp_path / "m")
    assert explicit.kind == "mnist" and explicit.image_shape == (12, 12)
    assert "(30 train / 12 test images, 12x12)" in explicit.statement
    monkeypatch.setenv(MNIST_DIR_ENV, str(tmp_path / "m"))
    assert resolve_data() == explicit
    assert resolve_data("digits").kind == "digits"
    monkeypatch.delenv(MNIST_DIR_ENV)
    with pytest.raises(bb.ConfigError, match=r"dataset='mnist' needs the folder of the MNIST IDX files: pass path=... or set \$BLACKBOX_MNIST_DIR"):
        resolve_data("mnist")
    with pytest.raises(bb.ConfigError, match=r"dataset='digits' reads no files"):
        resolve_data("digits", tmp_path)
    with pytest.raises(bb.ConfigError, match=r"dataset must be one of .* got 'mnsit'. Did you mean 'mnist'\?"):
        resolve_data("mnsit")
    with pytest.raises(bb.errors.DatasetError, match="not found in"):
        resolve_data(path=tmp_path)  # a folder without the files fails when the problem is made
