"""Datasets read from local files or from packages; nothing is downloaded at run time."""

from .idx import IDXHeader, read_idx, read_idx_header, write_idx
from .source import DATASETS, MNIST_DIR_ENV, DataSource, ImageDataset, resolve_data

__all__ = [
    "DATASETS", "MNIST_DIR_ENV", "DataSource", "IDXHeader", "ImageDataset", "read_idx",
    "read_idx_header", "resolve_data", "write_idx",
]
