"""What keeps a checkpoint trustworthy: its checksums, and knowing which folders are ours.

``state.json`` begins with its own checksum, ``"state_sha256": "<64 hex digits>"``: the sha256 of
the file's bytes with those 64 digits read as zeros (every format version computes it so, which lets
a reader tell a flipped version number from a newer format). state.json holds the sha256 of
arrays.npz, so the two cover the whole checkpoint. Checkpoints of blackbox 0.1.0 have no
``state_sha256``; they are recognized by their first bytes, which no later writer produces.

A checkpoints folder holds only what blackbox wrote (:func:`is_ours`); a bad checkpoint is renamed,
never deleted (:func:`set_aside`).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path

__all__ = ["CHECKSUM_KEY", "CHECKPOINT_NAME", "TEMPORARY", "seal_state_json", "checksum_holds", "is_v010", "is_ours", "set_aside"]

#: A checkpoint folder's name.
CHECKPOINT_NAME = re.compile(r"^gen-(\d+)$")
#: state.json's own checksum: the first key of every checkpoint written since 0.1.0.
CHECKSUM_KEY = "state_sha256"
_CHECKSUM_FIELD = f'"{CHECKSUM_KEY}": "'.encode()
#: How every state.json of blackbox 0.1.0 begins (they have no CHECKSUM_KEY).
_V010_PREFIX = b'{\n "format": "blackbox-checkpoint",\n "format_version": 1,\n'
_FILES = frozenset({"state.json", "arrays.npz"})
#: The temporary folders of an interrupted checkpoint write.
TEMPORARY = re.compile(r"^\.gen-\d+\..+\.(tmp|old)$")
_SET_ASIDE = re.compile(r"^corrupt-gen-\d+(\.\d+)?$")


# -- what is ours ----------------------------------------------------------------------------------
def _holds_only(folder: Path, names: frozenset[str]) -> bool:
    try:
        return folder.is_dir() and not folder.is_symlink() and set(os.listdir(folder)) <= names
    except OSError:
        return False


def is_ours(entry: Path) -> bool:
    """True for an entry of a checkpoints folder that blackbox wrote and holds nothing else: a
    checkpoint (``gen-NNNNNN``, perhaps half deleted), one set aside (``corrupt-gen-NNNNNN``), or the
    temporary folder of an interrupted write (``.gen-NNNNNN.*.tmp``, ``.old`` holding the replaced one)."""
    name = entry.name
    if CHECKPOINT_NAME.match(name) or _SET_ASIDE.match(name) or (TEMPORARY.match(name) and name.endswith(".tmp")):
        return _holds_only(entry, _FILES)
    if TEMPORARY.match(name):
        inner = entry / "x"
        return _holds_only(entry, frozenset({"x"})) and (not inner.exists() or _holds_only(inner, _FILES))
    return False


def set_aside(path: Path) -> Path:
    """Rename the bad checkpoint ``path`` to ``corrupt-gen-NNNNNN`` beside it (``.2``, ``.3``, ... when
    that name is taken), so that the continued run can write that generation again. Deletes nothing."""
    path = Path(path)
    target, n = path.parent / f"corrupt-{path.name}", 1
    while target.exists() or target.is_symlink():
        n += 1
        target = path.parent / f"corrupt-{path.name}.{n}"
    os.rename(path, target)
    return target


# -- checksums ------------------------------------------------------------------------------------
def _zeroed(data: bytes) -> tuple[bytes, bytes] | None:
    """``(claimed digest, data with it zeroed)`` from state.json's bytes; None without the field."""
    at = data.find(_CHECKSUM_FIELD)
    if at < 0:
        return None
    start = at + len(_CHECKSUM_FIELD)
    return data[start:start + 64], data[:start] + b"0" * 64 + data[start + 64:]


def seal_state_json(text: str) -> bytes:
    """state.json's bytes from ``text`` (which holds ``"state_sha256": "<64 characters>"`` first), with
    the checksum filled in. Every format version computes it this way."""
    found = _zeroed(text.encode("utf-8"))
    if found is None:
        raise ValueError(f"state.json text has no {CHECKSUM_KEY} field to fill in")
    _, zeroed = found
    start = zeroed.find(_CHECKSUM_FIELD) + len(_CHECKSUM_FIELD)
    return zeroed[:start] + hashlib.sha256(zeroed).hexdigest().encode() + zeroed[start + 64:]


def checksum_holds(data: bytes, meta: Mapping[str, object]) -> bool | None:
    """Whether state.json's own checksum matches its bytes (None: it has none)."""
    found = _zeroed(data)
    claimed = meta.get(CHECKSUM_KEY)
    if found is None or claimed is None:
        return None if found is None and claimed is None else False
    digest, zeroed = found
    return isinstance(claimed, str) and claimed.encode() == digest and hashlib.sha256(zeroed).hexdigest().encode() == digest




def is_v010(data: bytes) -> bool:
    """True when state.json's bytes begin as every state.json of blackbox 0.1.0 does."""
    return data.startswith(_V010_PREFIX)
