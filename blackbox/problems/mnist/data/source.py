"""Which image data a problem uses, said once and the same way everywhere, and loaded once per process.

:func:`resolve_data` turns the user's choice into a small picklable :class:`DataSource`: the real
MNIST from IDX files in a folder (``path=...`` or ``$BLACKBOX_MNIST_DIR``), or, when no folder is
given, the offline default, scikit-learn's bundled 8x8 digits. ``DataSource.label`` and
``DataSource.statement`` are what every output prints, so a digits result is never mistaken for an
MNIST one. :meth:`DataSource.load` reads the arrays on first use in each process and caches them.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...._validate import check_choice
from ....errors import ConfigError
from .digits import DIGITS_MAX_VALUE, DIGITS_SPLIT_SEED, DIGITS_TEST_SIZE, load_digits_arrays
from .idx import read_idx_header
from .mnist import N_CLASSES, find_mnist_files, load_mnist_arrays, mnist_image_shape

__all__ = ["MNIST_DIR_ENV", "DATASETS", "DataSource", "ImageDataset", "resolve_data"]

MNIST_DIR_ENV = "BLACKBOX_MNIST_DIR"
DATASETS = ("auto", "mnist", "digits")

_cache: dict[DataSource, ImageDataset] = {}
_cache_lock = threading.Lock()


@dataclass(frozen=True)
class ImageDataset:
    """Images as float32 ``(n, 1, rows, cols)``, scaled to [0, 1] then standardized with the
    training set's mean and standard deviation; labels as int64 ``(n,)``."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    n_classes: int


@dataclass(frozen=True)
class DataSource:
    """A recipe for a dataset: ``kind`` ("mnist" or "digits") and, for MNIST, the folder."""

    kind: str
    path: str | None = None

    @property
    def image_shape(self) -> tuple[int, int]:
        return (8, 8) if self.kind == "digits" else mnist_image_shape(self.folder)

    @property
    def folder(self) -> str:
        """The folder of the MNIST IDX files (every MNIST source names one; digits read no files)."""
        if self.path is None:
            raise ConfigError(f"the {self.kind} data source reads no files, so it has no folder")
        return self.path

    @property
    def n_classes(self) -> int:
        return N_CLASSES

    @property
    def label(self) -> str:
        """A short name for titles and table headers."""
        if self.kind == "digits":
            return "scikit-learn 8x8 digits (offline default, not MNIST)"
        return f"MNIST IDX files in {self.path}"

    @property
    def statement(self) -> str:
        """One sentence saying exactly which data this is."""
        if self.kind == "digits":
            return (
                "data: scikit-learn's bundled 8x8 digits, the offline default, NOT MNIST (1,797 images; "
                f"fixed split {1797 - DIGITS_TEST_SIZE} train / {DIGITS_TEST_SIZE} test, numpy seed "
                f"{DIGITS_SPLIT_SEED}); give path=... or ${MNIST_DIR_ENV} for the real MNIST"
            )
        files = find_mnist_files(self.folder)
        n_train = read_idx_header(files["train", "images"]).shape[0]
        n_test = read_idx_header(files["test", "images"]).shape[0]
        rows, cols = self.image_shape
        return f"data: MNIST IDX files in {self.path} ({n_train:,} train / {n_test:,} test images, {rows}x{cols})"

    def describe(self) -> dict:
        return {"kind": self.kind, "path": self.path, "label": self.label, "statement": self.statement}

    def load(self) -> ImageDataset:
        """The arrays, read on first use in this process and cached."""
        with _cache_lock:
            cached = _cache.get(self)
            if cached is None:
                cached = _cache[self] = self._read()
            return cached

    def _read(self) -> ImageDataset:
        if self.kind == "digits":
            raw, scale = load_digits_arrays(), DIGITS_MAX_VALUE
        else:
            raw, scale = load_mnist_arrays(self.folder), 255.0
        train = raw["x_train"].astype(np.float64) / scale
        mean, std = float(train.mean()), float(train.std()) or 1.0

        def prepare(x):
            x = (np.asarray(x, dtype=np.float64) / scale - mean) / std
            return np.ascontiguousarray(x[:, None, :, :], dtype=np.float32)

        return ImageDataset(
            x_train=prepare(raw["x_train"]), y_train=raw["y_train"].astype(np.int64),
            x_test=prepare(raw["x_test"]), y_test=raw["y_test"].astype(np.int64), n_classes=N_CLASSES,
        )


def resolve_data(dataset: str = "auto", path: str | os.PathLike | None = None) -> DataSource:
    """The data to use: ``mnist`` (from ``path`` or ``$BLACKBOX_MNIST_DIR``), ``digits``, or ``auto``
    (MNIST when a folder is given either way, else digits). The MNIST headers are checked now."""
    check_choice("dataset", dataset, DATASETS)
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"path must name the folder of the MNIST IDX files (a string), got {path!r}")
    if path is not None and dataset == "digits":
        raise ConfigError(f"path={path!s} names MNIST IDX files, but dataset='digits' reads no files; drop one")
    folder = path if path is not None else os.environ.get(MNIST_DIR_ENV) or None
    if dataset == "digits" or (dataset == "auto" and folder is None):
        return DataSource("digits")
    if folder is None:
        raise ConfigError(
            f"dataset='mnist' needs the folder of the MNIST IDX files: pass path=... or set ${MNIST_DIR_ENV} "
            "(nothing is downloaded); or use dataset='digits' for the offline 8x8 digits"
        )
    source = DataSource("mnist", str(Path(folder).expanduser().resolve()))
    mnist_image_shape(source.folder)  # fail now, in the driver, on missing or malformed headers
    return source
