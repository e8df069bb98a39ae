"""Where torch code runs: one rule for every problem (the gym problem's policies, the mnist problem).

- ``"auto"``: the first CUDA device when torch sees one, else the CPU. It is decided where the
  problem is built, and the problem records the device it chose (``describe()``), so a run says
  where it ran.
- An explicit device (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``) is used as given. One that is
  not available is refused with a ConfigError naming it and the devices that are, both where the
  problem is built and in every process that runs it (:func:`resolve_device` is called again
  there), so a run never computes on other hardware than it was asked to: results on a GPU are
  reproducible on that GPU but differ from the CPU's in the last bits.
- ``None`` (the gym problem's default): no torch device, the numpy policy on the CPU.
"""

from __future__ import annotations

from ..errors import ConfigError

__all__ = ["AUTO", "available_devices", "check_device", "resolve_device"]

#: The device that means "CUDA where available, else the CPU".
AUTO = "auto"
_EXAMPLES = "a torch device such as 'cpu', 'cuda' or 'cuda:1'"
_AUTO_HINT = "'auto' (CUDA where available, else the CPU)"


def check_device(device: str | None) -> str | None:
    """``device`` spelled as torch spells it (``"auto"`` and None stay as they are), or a ConfigError
    for a string torch does not know as a device. Says nothing about availability."""
    if device is None or device == AUTO:
        return device
    if not isinstance(device, str) or not device.strip():
        raise ConfigError(f"device must be {_EXAMPLES}, got {device!r} (or {_AUTO_HINT})")
    try:
        import torch
    except ImportError:
        if device == "cpu":
            return "cpu"
        raise ConfigError(f"device={device!r} runs the policy in torch, which is not installed: "
                          f"pip install torch==2.13.0 (see the README)") from None
    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError, TypeError):
        raise ConfigError(f"device must be {_EXAMPLES}, got {device!r} (or {_AUTO_HINT})") from None
    return str(parsed)


def _available(device: str) -> tuple[bool, str]:
    """Whether ``device`` (checked) exists in this process, and why not."""
    import torch

    kind = device.split(":")[0]
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


def available_devices() -> list[str]:
    """The devices torch can use in this process: ``cpu``, then ``cuda:0``, ``cuda:1``, ..., ``mps``."""
    try:
        import torch
    except ImportError:
        return ["cpu"]
    found = ["cpu"]
    if torch.cuda.is_available():
        found += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    backend = getattr(torch.backends, "mps", None)
    if backend is not None and backend.is_available():
        found.append("mps")
    return found


def resolve_device(device: str | None) -> str:
    """The device to run on here for the option ``device``: None is the CPU, ``"auto"`` CUDA when
    available (else the CPU), anything else itself when available, else a ConfigError naming it
    and the devices that are available."""
    device = check_device(device)
    if device is None or device == "cpu":
        return "cpu"
    if device == AUTO:
        try:
            import torch  # noqa: F401
        except ImportError:
            return "cpu"
        return "cuda" if _available("cuda")[0] else "cpu"
    ok, why = _available(device)
    if not ok:
        raise ConfigError(
            f"device={device!r} is not available here: {why}. Available: {', '.join(available_devices())}; "
            f"use one of them, or device={_AUTO_HINT}"
        )
    return device
