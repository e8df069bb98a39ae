"""Bytes on disk: checkpoints (state trees as JSON + ``.npz``, no pickle) and code fingerprints."""
