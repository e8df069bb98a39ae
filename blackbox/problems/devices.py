"""Which torch device a policy runs on: the one asked for, or the CPU with a note when it is missing.

``device="cuda"`` (or ``"cuda:1"``, ``"mps"``) puts the policy's parameters and its batched forward
on that device; environments stay on the CPU. A run asked for CUDA on a machine without it goes on
on the CPU: :func:`resolve_device` says so with a warning (and a log record) in every process that
falls back, and the gym problem records the request and the fallback in ``describe()``.
"""

from __future__ import annotations

import logging
import warnings

from ..errors import ConfigError

__all__ = ["check_device", "resolve_device", "DeviceFallbackWarning"]

log = logging.getLogger("blackbox.devices")


class DeviceFallbackWarning(UserWarning):
    """The requested torch device is not available here; the CPU is used instead."""


def check_device(device: str | None) -> str | None:
    """``device`` as a canonical torch device string (None stays None), or a ConfigError."""
    if device is None:
        return None
    if not isinstance(device, str) or not device.strip():
        raise ConfigError(f"device must be a torch device such as 'cpu', 'cuda' or 'cuda:1', got {device!r}")
    try:
        import torch
    except ImportError:
        if device == "cpu":
            return "cpu"
        raise ConfigError(f"device={device!r} runs the policy in torch, which is not installed: "
                          f"pip install torch==2.13.0 (see the README)") from None
    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError):
        raise ConfigError(f"device must be a torch device such as 'cpu', 'cuda' or 'cuda:1', got {device!r}") from None
    return str(parsed)


def _available(device: str) -> tuple[bool, str]:
    import torch

    kind = device.split(":")[0]
    if kind == "cpu":
        return True, ""
    if kind == "cuda":
        if not torch.cuda.is_available():
            return False, "CUDA is not available (torch.cuda.is_available() is False)"
        index = int(device.split(":")[1]) if ":" in device else 0
        if index >= torch.cuda.device_count():
            return False, f"there are {torch.cuda.device_count()} CUDA devices, so {device} does not exist"
        return True, ""
    if kind == "mps":
        backend = getattr(torch.backends, "mps", None)
        if backend is None or not backend.is_available():
            return False, "the MPS backend is not available"
        return True, ""
    return True, ""


_warned: set[str] = set()


def resolve_device(device: str | None, warn: bool = True) -> tuple[str, str]:
    """``(device to use, note)``: the note is empty unless the request falls back to the CPU, which
    is said once per process (a warning and a log record)."""
    if device is None or device == "cpu":
        return "cpu", ""
    device = check_device(device)
    ok, why = _available(device)
    if ok:
        return device, ""
    note = f"device={device!r} was asked for, but {why}; the policy runs on the CPU instead"
    if warn and note not in _warned:
        _warned.add(note)
        warnings.warn(note, DeviceFallbackWarning, stacklevel=3)
        log.warning(note)
    return "cpu", note
