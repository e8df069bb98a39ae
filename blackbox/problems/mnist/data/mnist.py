"""MNIST from its four IDX files in a folder: find them, read them, check they fit together.

The folder holds ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
``t10k-images-idx3-ubyte`` and ``t10k-labels-idx1-ubyte``, each plain or gzipped (``.gz``); the
``train-images.idx3-ubyte`` spelling of some mirrors is accepted too. Fashion-MNIST and KMNIST ship
the same four files and load the same way. Nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ....errors import DatasetError
from .idx import IDXHeader, dtype_name, read_idx, read_idx_header

__all__ = ["MNIST_FILES", "find_mnist_files", "mnist_image_shape", "load_mnist_arrays"]

#: (split, kind) -> canonical file name
MNIST_FILES: dict[tuple[str, str], str] = {
    ("train", "images"): "train-images-idx3-ubyte",
    ("train", "labels"): "train-labels-idx1-ubyte",
    ("test", "images"): "t10k-images-idx3-ubyte",
    ("test", "labels"): "t10k-labels-idx1-ubyte",
}
N_CLASSES = 10


def _candidates(name: str) -> list[str]:
    dotted = name.replace("-idx", ".idx")  # train-images.idx3-ubyte
    return [name, name + ".gz", dotted, dotted + ".gz"]


def find_mnist_files(folder: str | Path) -> dict[tuple[str, str], Path]:
    """The four MNIST files in ``folder``, or a DatasetError naming what is missing."""
    folder = Path(folder).expanduser()
    if not folder.exists():
        raise DatasetError(f"MNIST folder {folder} does not exist; pass the folder that holds the four IDX files")
    if not folder.is_dir():
        raise DatasetError(f"MNIST path {folder} is a file; pass the folder that holds the four IDX files")
    found: dict[tuple[str, str], Path] = {}
    missing = []
    for key, name in MNIST_FILES.items():
        path = next((folder / c for c in _candidates(name) if (folder / c).is_file()), None)
        if path is None:
            missing.append(name)
        else:
            found[key] = path
    if missing:
        present = sorted(p.name for p in folder.iterdir())[:12]
        raise DatasetError(
            f"MNIST file {missing[0]} (plain or .gz) not found in {folder}"
            + (f" (also missing: {', '.join(missing[1:])})" if len(missing) > 1 else "")
            + f"; the folder must hold {', '.join(MNIST_FILES.values())}, plain or gzipped. "
            f"It holds: {', '.join(present) or 'nothing'}"
        )
    return found


def _check_header(header: IDXHeader, kind: str) -> None:
    if header.type_code != 0x08:
        raise DatasetError(
            f"{header.path}: wrong data type code {dtype_name(header.type_code)}; MNIST {kind} are "
            f"{dtype_name(0x08)}"
        )
    want = 3 if kind == "images" else 1
    layout = "(count, rows, columns)" if kind == "images" else "(count,)"
    if len(header.shape) != want:
        raise DatasetError(
            f"{header.path}: dims mismatch: {len(header.shape)} dimensions {header.shape}, MNIST {kind} "
            f"have {want} {layout}"
        )


def _check_pair(images: IDXHeader, labels: IDXHeader) -> None:
    if images.shape[0] != labels.shape[0]:
        raise DatasetError(
            f"{labels.path.name} has {labels.shape[0]} labels but {images.path.name} has {images.shape[0]} "
            f"images; the label count must equal the image count (in {labels.path.parent})"
        )


def _headers(files: dict[tuple[str, str], Path]) -> dict[tuple[str, str], IDXHeader]:
    headers = {}
    for (split, kind), path in files.items():
        header = read_idx_header(path)
        _check_header(header, kind)
        headers[split, kind] = header
    for split in ("train", "test"):
        _check_pair(headers[split, "images"], headers[split, "labels"])
    train, test = headers["train", "images"].shape[1:], headers["test", "images"].shape[1:]
    if train != test:
        raise DatasetError(
            f"dims mismatch: training images ({files['train', 'images'].name}) are {train[0]}x{train[1]} "
            f"but test images ({files['test', 'images'].name}) are {test[0]}x{test[1]}"
        )
    return headers


def mnist_image_shape(folder: str | Path) -> tuple[int, int]:
    """(rows, columns) of the images, from the headers alone; checks that the four files fit."""
    headers = _headers(find_mnist_files(folder))
    rows, cols = headers["train", "images"].shape[1:]
    return int(rows), int(cols)


def load_mnist_arrays(folder: str | Path) -> dict[str, np.ndarray]:
    """``x_train`` (n, rows, cols) uint8, ``y_train`` (n,) uint8, ``x_test``, ``y_test``."""
    files = find_mnist_files(folder)
    _headers(files)
    out = {}
    for (split, kind), path in files.items():
        array = read_idx(path)
        if kind == "labels":
            bad = np.flatnonzero(array >= N_CLASSES)
            if len(bad):
                raise DatasetError(
                    f"{path}: label {int(array[bad[0]])} at index {int(bad[0])} is outside 0..{N_CLASSES - 1} "
                    f"({len(bad)} such labels)"
                )
        out[("x_" if kind == "images" else "y_") + split] = array
    return out
