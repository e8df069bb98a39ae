"""Safe file output: atomic writes (temp file + rename), ``.npz`` without pickle, TOML and JSON.

A reader never sees half a file or half a folder: everything is written under a temporary name in
the same folder, flushed to disk, then renamed over the target (:func:`atomic_write` for a file,
:func:`atomic_folder` for a folder of files). Files and folders get the modes ``open()`` and
``mkdir()`` give (``0666`` and ``0777`` less the umask: ``0644`` and ``0755`` under the usual umask
022), not the private ``0600``/``0700`` of the temporary files they start as, so every file of a run
directory has one mode; a umask of 077 keeps them all private. Arrays are loaded with ``allow_pickle=False``, so a
file from elsewhere can never run code. :func:`map_tree` is the one walker over state trees
(nested dicts and lists); :func:`to_plain` and the checkpoint codec are built on it.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import IO, Any, overload

import numpy as np
import numpy.typing as npt
import tomli_w

from .errors import BlackboxError, CheckpointError, ConfigError, StorageError

__all__ = [
    "umask", "atomic_write", "atomic_folder", "write_synced", "fsync_dir", "describe_os_error", "npz_bytes", "save_npz",
    "load_npz", "write_toml", "write_json", "map_tree", "flat_leaves", "to_plain", "read_regular_file",
    "MAX_TEXT_BYTES", "ensure_folder", "check_path",
]


def umask() -> int:
    """The process's umask, read from ``/proc`` where it can be (setting it to read it races other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: str | Path, write: Callable[[Any], None], binary: bool = True) -> Path:
    """Write ``path`` through ``write(handle)`` so that it appears whole or not at all.

    A failure of the file system (a full disk, a read-only folder) is a :class:`StorageError`
    naming the file; the previous version of the file, if any, is left as it was.
    """
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.chmod(tmp, 0o666 & ~umask())  # as open() would create it, not mkstemp's 0600
        handle: IO[Any] = os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8")
        with handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, BlackboxError):
            raise StorageError(f"could not write {path}: {describe_os_error(exc)}") from exc
        raise
    return path


def write_synced(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` and flush it to disk (no rename: for files inside :func:`atomic_folder`)."""
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def fsync_dir(path: Path) -> None:
    """Flush a folder's entries (new names, renames) to disk, where the platform allows it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_folder(final: Path, fill: Callable[[Path], None]) -> Path:
    """Create the folder ``final`` through ``fill(folder)`` so that it appears whole or not at all.

    ``fill`` writes the files into a temporary folder beside ``final`` (with :func:`write_synced`);
    the folder is then flushed and renamed to ``final``, replacing an existing one. On any failure
    the temporary folder is removed and ``final`` is left as it was; OSErrors propagate for the
    caller to word (it knows what the folder is).
    """
    directory = final.parent
    directory.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=directory))
    try:
        os.chmod(tmp, 0o777 & ~umask())  # as mkdir() would create it, not mkdtemp's 0700
        fill(tmp)
        fsync_dir(tmp)
        if final.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".old", dir=directory))
            os.replace(final, old / "x")
            os.replace(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, final)
        fsync_dir(directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def _name_max(path: Path) -> int:
    """The longest file name (bytes) the file system of ``path``'s nearest existing folder takes."""
    for folder in [path, *path.parents]:
        try:
            if folder.is_dir():
                return int(os.pathconf(folder, "PC_NAME_MAX"))
        except (OSError, ValueError):
            break
    return 255


def check_path(path: str | os.PathLike, what: str = "path") -> Path:
    """``path`` as a Path, or a ConfigError (one line) when no file can have it: a NUL character, a
    name longer than the file system takes (255 bytes on most), or more than 4096 bytes in all.

    For every command-line argument that becomes a path, so that a long name is bad input, not an
    ``OSError: File name too long`` from deep inside."""
    text = os.fspath(path)
    shown = text if len(text) <= 60 else f"{text[:40]}...{text[-12:]}"
    if "\0" in text:
        raise ConfigError(f"{what} {shown!r} contains a NUL character, which no file name may hold")
    if len(os.fsencode(text)) > 4096:
        raise ConfigError(f"{what} {shown!r} is {len(os.fsencode(text))} bytes long, more than the 4096 a path "
                          f"may have; choose a shorter one")
    limit = _name_max(Path(text).absolute())
    for part in Path(text).parts:
        size = len(os.fsencode(part))
        if size > limit:
            name = part if len(part) <= 60 else f"{part[:40]}...{part[-12:]}"
            raise ConfigError(f"{what} {shown!r} has a name of {size} bytes ({name!r}), longer than the {limit} "
                              f"a file name may have here; choose a shorter one")
    return Path(text)


def describe_os_error(exc: OSError) -> str:
    """``[Errno 28] No space left on device`` (without the file name, which the caller gives)."""
    if exc.errno is not None and exc.strerror:
        return f"[Errno {exc.errno}] {exc.strerror}"
    return str(exc)


def npz_bytes(arrays: Mapping[str, npt.ArrayLike]) -> bytes:
    """The bytes of an uncompressed ``.npz`` archive holding ``arrays`` under their names."""
    members: dict[str, Any] = dict(arrays)  # Any: savez types its other keywords (allow_pickle: bool) too
    buffer = io.BytesIO()
    np.savez(buffer, **members)
    return buffer.getvalue()


def save_npz(path: str | Path, arrays: Mapping[str, object]) -> Path:
    """Save arrays (numbers become 0-d arrays) atomically; object arrays are refused."""
    clean = {}
    for key, value in arrays.items():
        arr = np.asarray(value)
        if arr.dtype == object:
            raise CheckpointError(f"cannot save {key!r}: object arrays would need pickle")
        clean[key] = arr
    payload = npz_bytes(clean)
    return atomic_write(path, lambda handle: handle.write(payload))


#: An ``.npz`` may unpack to at most this many times its size (we write uncompressed archives), and
#: never to more than MAX_NPZ_BYTES: a small crafted file cannot make a reader allocate gigabytes.
MAX_NPZ_EXPANSION = 16
MAX_NPZ_BYTES = 2**36


def _check_npz_members(path: Path) -> None:
    """Refuse an archive whose members would unpack to far more than the file holds (a zip bomb)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            unpacked = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return  # not a zip archive: np.load says what it is
    limit = min(MAX_NPZ_BYTES, max(MAX_NPZ_EXPANSION * path.stat().st_size, 2**20))
    if unpacked > limit:
        raise CheckpointError(
            f"{path} would unpack to {unpacked} bytes from a {path.stat().st_size}-byte file; "
            f"refusing it (blackbox writes uncompressed archives)"
        )


def load_npz(path: str | Path) -> dict[str, np.ndarray]:
    """Load every array of an ``.npz`` without pickle; a clear CheckpointError if it is bad.

    Members that are not ``.npy`` arrays (numpy would hand back their raw bytes) and archives that
    unpack to far more than their size are refused, as are pickled objects.
    """
    path = Path(path)
    try:
        if path.is_file():
            _check_npz_members(path)
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise CheckpointError(f"{path} holds a single array, not an .npz archive of named arrays")
        with data:
            arrays = {key: data[key] for key in data.files}
        for key, value in arrays.items():
            if not isinstance(value, np.ndarray):
                raise CheckpointError(f"{path}: member {key!r} is not a .npy array; refusing it")
        return arrays
    except CheckpointError:
        raise
    except FileNotFoundError:
        raise CheckpointError(f"{path} does not exist") from None
    except ValueError as exc:
        if "allow_pickle" in str(exc) or "pickle" in str(exc).lower():
            raise CheckpointError(f"{path} holds pickled objects; refusing to load it (no pickle)") from None
        raise CheckpointError(f"{path} is not a valid .npz file: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - zipfile/OS errors of a truncated file
        raise CheckpointError(f"{path} is truncated or corrupt: {type(exc).__name__}: {exc}") from None


def _str_key(key: object, path: str) -> str:
    return str(key)


def map_tree(tree: object, leaf: Callable[[object, str], object], *, path: str = "",
             key: Callable[[object, str], Hashable] = _str_key, sequences: bool = True) -> object:
    """A copy of the state tree ``tree``: dicts stay dicts, lists and tuples become lists, and every
    other value becomes ``leaf(value, path)`` (lists and tuples too when ``sequences`` is False).

    ``path`` names a value by its keys and indices joined with ``/`` (``"strategy/optimizer/m"``,
    ``"problem/stack/0"``); ``key(k, path)`` gives the copy's key for the key ``k`` of the dict at
    ``path`` (default: ``str(k)``), and may refuse it by raising. Keys are visited before their values.
    """
    if isinstance(tree, dict):
        return {key(k, path): map_tree(v, leaf, path=f"{path}/{k}" if path else str(k), key=key, sequences=sequences)
                for k, v in tree.items()}
    if sequences and isinstance(tree, (list, tuple)):
        return [map_tree(v, leaf, path=f"{path}/{i}", key=key) for i, v in enumerate(tree)]
    return leaf(tree, path)


def flat_leaves(tree: object, prefix: str, *, sequences: bool = True) -> dict[str, object]:
    """``{"problem/obs_mean": value, ...}``: the leaves of a state tree under their ``/`` paths below
    ``prefix``, walked by :func:`map_tree` (None and strings left out)."""
    leaves: dict[str, object] = {}

    def collect(value: object, path: str) -> None:
        if value is not None and not isinstance(value, str):
            leaves[path] = value

    map_tree(tree, collect, path=prefix, sequences=sequences)
    return leaves


def _plain_leaf(value: object, path: str) -> object:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


@overload
def to_plain(value: Mapping[str, object], *, drop_none: bool = False) -> dict[str, object]: ...
@overload
def to_plain(value: object, *, drop_none: bool = False) -> object: ...
def to_plain(value: object, *, drop_none: bool = False) -> object:
    """Numpy scalars and arrays to Python numbers and lists, tuples to lists, recursively (for TOML
    and JSON); ``drop_none`` leaves out the dict entries that are None (TOML has no null)."""
    plain = map_tree(value, _plain_leaf)
    return _drop_none(plain) if drop_none else plain


def _drop_none(value: object) -> object:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def write_toml(path: str | Path, data: Mapping[str, object]) -> Path:
    """Write ``data`` as TOML atomically (None values are left out: TOML has no null)."""
    text = tomli_w.dumps(to_plain(data, drop_none=True))
    return atomic_write(path, lambda handle: handle.write(text), binary=False)


def write_json(path: str | Path, data: object) -> Path:
    """Write ``data`` as indented JSON atomically."""
    text = json.dumps(to_plain(data), indent=2, allow_nan=True)
    return atomic_write(path, lambda handle: handle.write(text + "\n"), binary=False)


# -- reading files a user hands over --------------------------------------------------------------
#: The largest text file (a config, an experiment, a result) read whole: real ones are kilobytes.
MAX_TEXT_BYTES = 16 * 2**20

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def read_regular_file(path: str | Path, max_bytes: int = MAX_TEXT_BYTES) -> bytes:
    """The bytes of ``path``, refused before anything is read unless it is a regular file of at most
    ``max_bytes``: ``/dev/zero`` would be read until memory runs out, a FIFO would block for ever.
    Raises OSError (FileNotFoundError for a missing file) with a message that says which."""
    path = Path(path)
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        raise OSError(f"{path} is {kind}, not a regular file")
    with open(path, "rb") as handle:
        if os.fstat(handle.fileno()).st_size > max_bytes:
            raise OSError(f"{path} is larger than {max_bytes:,} bytes; that is not a file blackbox reads")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:  # it grew while being read, or its size was not known (/proc)
        raise OSError(f"{path} is larger than {max_bytes:,} bytes; that is not a file blackbox reads")
    return data


def ensure_folder(path: str | Path, what: str = "output folder") -> Path:
    """``mkdir -p path``; a StorageError naming it (and ``what`` it is for) when the file system
    refuses: a path under a regular file, a read-only or missing mount, missing permissions."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"could not create the {what} {path}: {describe_os_error(exc)}; choose another "
                           f"place") from None
    return path
