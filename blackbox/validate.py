"""Checks of user values for plugins and user code: each returns the value in its plain type, or
raises a ConfigError of one line naming the value, what was expected and how to fix it.

The public face of the checks blackbox uses itself; a plugin imports them from here."""

from __future__ import annotations

from ._validate import (
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_int_between,
    check_nonnegative,
    check_nonnegative_int,
    check_number,
    check_seed,
    check_string,
    check_vector,
)

__all__ = ["check_bool", "check_choice", "check_float", "check_int", "check_int_between", "check_nonnegative",
           "check_nonnegative_int", "check_number", "check_seed", "check_string", "check_vector"]
