"""The IDX file format of MNIST (and Fashion-MNIST, KMNIST, EMNIST): read, check and write.

An IDX file is a 4-byte magic number ``00 00 <type> <ndim>``, then ``ndim`` big-endian 32-bit
sizes, then the values in C order, big-endian. Type codes: 0x08 unsigned byte, 0x09 signed byte,
0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64 (LeCun's description of the MNIST files).
Files may be gzipped; that is recognised from the content (gzip's magic bytes), not the name.
Every defect gets a :class:`~blackbox.errors.DatasetError` naming the file and what is wrong.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ....errors import DatasetError

__all__ = ["IDX_TYPES", "IDXHeader", "read_idx", "read_idx_header", "write_idx", "dtype_name"]

#: type code -> (big-endian numpy dtype, name used in messages)
IDX_TYPES: dict[int, tuple[str, str]] = {
    0x08: (">u1", "unsigned byte"),
    0x09: (">i1", "signed byte"),
    0x0B: (">i2", "int16"),
    0x0C: (">i4", "int32"),
    0x0D: (">f4", "float32"),
    0x0E: (">f8", "float64"),
}
_GZIP_MAGIC = b"\x1f\x8b"


def dtype_name(code: int) -> str:
    """``0x08 (unsigned byte)`` for a known code, ``0x07 (unknown)`` otherwise."""
    return f"0x{code:02X} ({IDX_TYPES[code][1] if code in IDX_TYPES else 'unknown'})"


@dataclass(frozen=True)
class IDXHeader:
    """What an IDX header declares: the type code and the dimensions."""

    path: Path
    type_code: int
    shape: tuple[int, ...]

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(IDX_TYPES[self.type_code][0])

    @property
    def header_bytes(self) -> int:
        return 4 + 4 * len(self.shape)

    @property
    def data_bytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


def _open(path: Path):
    """A binary stream of the file's IDX bytes (decompressed when the file is gzipped)."""
    try:
        with open(path, "rb") as raw:
            gzipped = raw.read(2) == _GZIP_MAGIC
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DatasetError(f"{path}: is a directory, expected an IDX file") from None
    except OSError as exc:
        raise DatasetError(f"{path}: cannot be read: {exc}") from exc
    return gzip.open(path, "rb") if gzipped else open(path, "rb")


def _read(stream, n: int, path: Path) -> bytes:
    try:
        return stream.read(n)
    except (EOFError, OSError, zlib.error) as exc:
        raise DatasetError(f"{path}: gzip data is truncated or corrupt ({exc})") from exc


def _parse_header(stream, path: Path) -> IDXHeader:
    magic = _read(stream, 4, path)
    if len(magic) < 4:
        raise DatasetError(f"{path}: too short for an IDX header ({len(magic)} bytes; the magic number alone needs 4)")
    if magic[:2] != b"\x00\x00":
        raise DatasetError(
            f"{path}: bad magic number {magic.hex(' ')}: an IDX file starts with bytes 00 00, "
            f"then a type code and the number of dimensions"
        )
    code, ndim = magic[2], magic[3]
    if code not in IDX_TYPES:
        known = ", ".join(dtype_name(c) for c in IDX_TYPES)
        raise DatasetError(f"{path}: unknown data type code {dtype_name(code)} in the magic number; expected one of {known}")
    if ndim == 0:
        raise DatasetError(f"{path}: the magic number declares 0 dimensions; an IDX file has at least 1")
    sizes = _read(stream, 4 * ndim, path)
    if len(sizes) < 4 * ndim:
        raise DatasetError(
            f"{path}: truncated header: it declares {ndim} dimensions ({4 + 4 * ndim} header bytes) "
            f"but the file ends after {4 + len(sizes)} bytes"
        )
    return IDXHeader(path, code, tuple(int(s) for s in struct.unpack(f">{ndim}I", sizes)))


def read_idx_header(path: str | Path) -> IDXHeader:
    """The header of the IDX file at ``path`` (reads only its first bytes)."""
    path = Path(path)
    with _open(path) as stream:
        return _parse_header(stream, path)


def read_idx(path: str | Path) -> np.ndarray:
    """The array in the IDX file at ``path``, in native byte order, after checking its size.

    Raises DatasetError when the file is missing, its header is malformed, it holds fewer bytes
    than its dimensions declare (truncated) or more (trailing data).
    """
    path = Path(path)
    with _open(path) as stream:
        header = _parse_header(stream, path)
        want = header.data_bytes
        data = _read(stream, want, path)
        extra = len(_read(stream, 1, path)) if len(data) == want else 0
    dims = "x".join(map(str, header.shape))
    if len(data) < want:
        raise DatasetError(
            f"{path}: truncated data: dims {dims} of {dtype_name(header.type_code)} need {want} bytes "
            f"after the header, the file has {len(data)}"
        )
    if extra:
        raise DatasetError(
            f"{path}: more data than the header declares: dims {dims} of {dtype_name(header.type_code)} "
            f"need {want} bytes after the header, the file has more; the dims in the header are wrong"
        )
    array = np.frombuffer(data, dtype=header.dtype).reshape(header.shape)
    return array.astype(header.dtype.newbyteorder("="))


def write_idx(path: str | Path, array: np.ndarray, *, compress: bool | None = None) -> Path:
    """Write ``array`` as an IDX file (gzipped when ``compress`` or, by default, when ``path`` ends in .gz)."""
    path = Path(path)
    array = np.asarray(array)
    codes = {np.dtype(dt).newbyteorder("="): code for code, (dt, _) in IDX_TYPES.items()}
    code = codes.get(array.dtype.newbyteorder("="))
    if code is None:
        raise DatasetError(
            f"cannot write dtype {array.dtype} as IDX; use one of uint8, int8, int16, int32, float32, float64"
        )
    if array.ndim == 0 or array.ndim > 255:
        raise DatasetError(f"cannot write a {array.ndim}-dimensional array as IDX; it needs 1 to 255 dimensions")
    payload = (bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
               + np.ascontiguousarray(array, dtype=IDX_TYPES[code][0]).tobytes())
    if compress if compress is not None else path.suffix == ".gz":
        payload = gzip.compress(payload, mtime=0)
    path.write_bytes(payload)
    return path
