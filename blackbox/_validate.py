"""Checks for user-supplied values; each raises ConfigError naming the value and what was expected."""

from __future__ import annotations

import importlib.util
import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

from .errors import ConfigError, did_you_mean

#: The largest dimension accepted: the largest noise table (2^31 float32 values).
MAX_DIM = 2**31
#: The largest population accepted (16.7 million rows; the ES paper's largest runs used about 10^4).
MAX_POPSIZE = 2**24

__all__ = [
    "check_int", "check_float", "check_number", "check_nonnegative", "check_bool", "check_string",
    "check_int_between", "check_nonnegative_int", "check_choice", "check_vector", "check_seed",
    "check_dim_x0", "check_stdev", "check_state_layout", "real_array", "step_counts", "MAX_STEPS_PER_ROW",
    "missing_modules", "require_modules",
]


def _plain(value):
    """Numpy scalars as Python ones, so messages read ``0.5`` rather than ``np.float64(0.5)``."""
    return value.item() if isinstance(value, np.generic) else value


def check_int(name: str, value, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer (bools refused) in ``[minimum, maximum]``."""
    value = _plain(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise ConfigError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ConfigError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_float(name: str, value, *, positive: bool = False, nonnegative: bool = False,
                maximum: float | None = None, below: float | None = None) -> float:
    """A finite real number; ``positive`` means > 0, ``nonnegative`` >= 0."""
    value = _plain(value)
    if isinstance(value, (bool, np.bool_)):
        raise ConfigError(f"{name} must be a number, got {value!r}")
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, got {value!r}") from None
    if not np.isfinite(value):
        raise ConfigError(f"{name} must be finite, got {value!r}")
    if positive and value <= 0:
        raise ConfigError(f"{name} must be > 0, got {value!r}")
    if nonnegative and value < 0:
        raise ConfigError(f"{name} must be >= 0, got {value!r}")
    if maximum is not None and value > maximum:
        raise ConfigError(f"{name} must be <= {maximum}, got {value!r}")
    if below is not None and value >= below:
        raise ConfigError(f"{name} must be < {below}, got {value!r}")
    return value


def check_number(name: str, value, *, positive: bool = False) -> float:
    """A finite real number as a config file writes it: text such as ``"0.1"`` is refused."""
    if isinstance(value, str):
        raise ConfigError(f"{name} must be a number, got {value!r}")
    return check_float(name, value, positive=positive)


def check_nonnegative(name: str, value, *, positive: bool = False) -> float:
    """A finite number >= 0 (> 0 when ``positive``); anything ``float()`` takes is accepted."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, got {value!r}") from None
    if not np.isfinite(value) or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise ConfigError(f"{name} must be a finite number {bound}, got {value!r}")
    return value


def check_bool(name: str, value) -> bool:
    """``True`` or ``False`` itself (no 0/1, no text)."""
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be true or false, got {value!r}")
    return value


def check_string(name: str, value, *, nonempty: bool = False) -> str:
    """A string (a non-empty one when ``nonempty``)."""
    if nonempty and (not isinstance(value, str) or not value):
        raise ConfigError(f"{name} must be a non-empty string, got {value!r}")
    if not isinstance(value, str):
        raise ConfigError(f"{name} must be a string, got {value!r}")
    return value


def check_int_between(name: str, value, minimum: int, maximum: int) -> int:
    """An integer (an integer-valued float too) in ``[minimum, maximum]``, said as a range."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        if not (isinstance(value, (float, np.floating)) and float(value).is_integer()):
            raise ConfigError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if not minimum <= value <= maximum:
        raise ConfigError(f"{name} must be between {minimum} and {maximum}, got {value}")
    return value


def check_nonnegative_int(name: str, value) -> int:
    """An integer >= 0 given as an integer (no bool, no float)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ConfigError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def check_choice(name: str, value, choices: Iterable[str]) -> str:
    """One of ``choices``, with a did-you-mean hint otherwise."""
    choices = list(choices)
    if value not in choices:
        hint = did_you_mean(str(value), choices)
        raise ConfigError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}.{hint}")
    return value


def check_vector(name: str, value, dim: int | None = None) -> np.ndarray:
    """A finite 1-d float64 vector (of length ``dim`` when given)."""
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a vector of numbers, got {value!r}") from None
    if arr.ndim != 1:
        raise ConfigError(f"{name} must be 1-d, got shape {arr.shape}")
    if dim is not None and len(arr) != dim:
        raise ConfigError(f"{name} has length {len(arr)}, expected dim={dim}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if len(bad):
        raise ConfigError(
            f"{name} must be finite; entry {bad[0]} is {float(arr[bad[0]])} ({len(bad)} non-finite in all)"
        )
    return arr


def check_seed(seed) -> int:
    """A non-negative integer seed; None draws one from the OS so it can be recorded."""
    if seed is None:
        entropy = np.random.SeedSequence().entropy  # drawn from the OS: an int (a sequence only when given one)
        assert isinstance(entropy, int)
        return int(entropy % (2**63))
    return check_int("seed", seed, minimum=0)


def check_dim_x0(dim, x0) -> tuple[int, np.ndarray]:
    """Resolve ``dim`` and the initial point ``x0`` (None: zeros; scalar: filled; vector: as is)."""
    if x0 is not None and not np.isscalar(x0):
        vec = check_vector("x0", x0)
        if dim is not None and check_int("dim", dim, minimum=1) != len(vec):
            raise ConfigError(f"x0 has length {len(vec)} but dim={dim}; pass one or make them agree")
        if len(vec) == 0:
            raise ConfigError("x0 is empty; pass at least one parameter")
        return len(vec), vec
    if dim is None:
        raise ConfigError("dim is required when x0 is not a vector: pass dim=N or x0=[...]")
    dim = check_int("dim", dim, minimum=1, maximum=MAX_DIM)
    if x0 is None:
        return dim, np.zeros(dim, dtype=np.float64)
    return dim, np.full(dim, check_float("x0", x0), dtype=np.float64)


def check_stdev(name: str, value, dim: int) -> np.ndarray:
    """Per-dimension standard deviations: a positive number (for every dimension) or a vector."""
    if np.isscalar(value) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return np.full(dim, check_float(name, value, positive=True), dtype=np.float64)
    vec = check_vector(name, value, dim)
    bad = np.flatnonzero(vec <= 0)
    if len(bad):
        raise ConfigError(f"{name} must be > 0 in every dimension; entry {bad[0]} is {float(vec[bad[0]])}")
    return vec


def check_state_layout(template, state, path: str = "state_dict", skip: tuple[str, ...] = ("rng",)) -> None:
    """Refuse a loaded state whose arrays or numbers do not fit ``template`` (a fresh object's own
    ``state_dict()``): an array of another shape, text where a number belongs, a value where a
    table belongs. Only keys present in both are compared (older states may lack newer keys); lists
    and the subtrees named in ``skip`` are left to their owner. A ConfigError names the key."""
    if isinstance(template, dict):
        if not isinstance(state, dict):
            raise ConfigError(f"{path} must be a table, got {type(state).__name__}")
        for key, value in template.items():
            if key in state and key not in skip:
                check_state_layout(value, state[key], f"{path}/{key}", ())
    elif isinstance(template, np.ndarray):
        if isinstance(state, (str, bytes, dict)) or not hasattr(state, "__len__") and template.ndim:
            raise ConfigError(f"{path} must be an array of shape {template.shape}, got {type(state).__name__}")
        shape = np.shape(state)
        if shape != template.shape:
            raise ConfigError(f"{path} has shape {shape}, expected {template.shape}")
        kind = np.asarray(state).dtype.kind
        if template.dtype.kind in "biuf" and kind not in "biuf":
            raise ConfigError(f"{path} must hold numbers, got values of type {np.asarray(state).dtype}")
    elif isinstance(template, (int, float, np.number)) and not isinstance(template, (bool, np.bool_)):
        if isinstance(state, (bool, np.bool_)) or not isinstance(state, (int, float, np.number)):
            raise ConfigError(f"{path} must be a number, got {state!r}")


#: The most environment steps one evaluation of one row may report (4.3 billion): a larger count is
#: a bug in the problem, and 2^24 rows of it would overflow the run's int64 step counter.
MAX_STEPS_PER_ROW = 2**32


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def real_array(value: Any) -> np.ndarray:
    """``value`` as a float64 array of real numbers, for ``tell()`` and for what a problem returns.

    Booleans count as 0 and 1, Python integers too large for int64 as floats, masked entries of a
    masked array as NaN; NaN and infinities pass. Anything else raises TypeError with the reason:
    complex numbers, text, dates, None and other objects are refused rather than converted (numpy
    would drop an imaginary part, parse ``"1.5"`` or turn None into NaN), and so is any object whose
    conversion fails (a torch tensor that requires grad, a ragged list). The one conversion both
    paths use, so that what ``tell()`` refuses is refused when a problem returns it too.
    """
    mask = np.ma.getmaskarray(value) if isinstance(value, np.ma.MaskedArray) else None
    try:
        raw = np.asarray(np.ma.getdata(value) if mask is not None else value)
        if raw.dtype.kind == "O":
            others = [v for v in raw.ravel() if not isinstance(v, numbers.Real)][:1]
            if others:
                other = others[0]
                raise TypeError(f"{type(other).__name__} {_short(other)} is not a real number")
            raw = raw.astype(np.float64)  # Python ints too large for int64, mixed numbers
        if raw.dtype.kind not in "biuf":
            raise TypeError(f"values of type {raw.dtype}")
        out = raw.astype(np.float64, copy=mask is not None)  # a float64 array comes back as it is
    except Exception as exc:  # noqa: BLE001 - whatever the object's conversion raises, it is refused
        raise TypeError(str(exc) or type(exc).__name__) from None
    if mask is not None and mask.shape == out.shape:
        out[mask] = np.nan
    return out


def step_counts(value: object) -> np.ndarray:
    """Environment steps as an int64 array of whole numbers in ``[0, MAX_STEPS_PER_ROW]``; TypeError or
    ValueError with the reason otherwise (None, NaN, negative, fractional or huge counts would make
    ``max_steps`` meaningless)."""
    if value is None:
        raise TypeError("None; return one step count per row (zeros for a problem without steps)")
    try:
        raw = np.asarray(value)
    except Exception as exc:  # noqa: BLE001 - whatever the object's conversion raises, it is refused
        raise TypeError(str(exc) or type(exc).__name__) from None
    if raw.dtype.kind in "iu":
        bad = (raw < 0) | (raw > MAX_STEPS_PER_ROW)
        if np.any(bad):
            raise ValueError(f"{raw[bad].flat[0]} steps; counts must be whole numbers from 0 to {MAX_STEPS_PER_ROW}")
        return raw.astype(np.int64)
    counts = real_array(raw)
    bad = ~np.isfinite(counts) | (counts < 0) | (counts > MAX_STEPS_PER_ROW) | (counts != np.floor(counts))
    if np.any(bad):
        raise ValueError(f"{float(counts[bad].flat[0])!r} steps; counts must be whole numbers from 0 to {MAX_STEPS_PER_ROW}")
    return counts.astype(np.int64)


def missing_modules(needs: dict[str, str]) -> dict[str, str]:
    """The modules of ``needs`` (module -> the extra that installs it) that cannot be imported here,
    found without importing them."""
    gone = {}
    for module, extra in needs.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a parent package missing, or a module set to None
            found = False
        if not found:
            gone[module] = extra
    return gone


def require_modules(needs: dict[str, str], who: str) -> None:
    """A ConfigError naming the extra to install when a module of ``needs`` (module -> extra) is
    missing, before anything tries to import it (a ModuleNotFoundError from deep inside otherwise)."""
    gone = missing_modules(needs)
    if gone:
        modules = ", ".join(gone)
        extras = ",".join(dict.fromkeys(gone.values()))
        raise ConfigError(f"{who} needs {modules}, which {'is' if len(gone) == 1 else 'are'} not installed: "
                          f"pip install 'blackbox-es[{extras}]'")
