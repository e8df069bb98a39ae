"""One validator family (blackbox._validate): config readers, optimizers and the noise table share it,
each message as it was."""

from __future__ import annotations

import numpy as np
import pytest

import blackbox as bb
from blackbox._validate import (
    check_bool,
    check_int_between,
    check_nonnegative,
    check_nonnegative_int,
    check_number,
    check_string,
)


@pytest.mark.parametrize("call,message", [
    (lambda: check_number("target", "1"), "target must be a number, got '1'"),
    (lambda: check_number("max_time", 0, positive=True), "max_time must be > 0, got 0.0"),
    (lambda: check_bool("plot", 1), "plot must be true or false, got 1"),
    (lambda: check_string("out", 3), "out must be a string, got 3"),
    (lambda: check_string("name", "", nonempty=True), "name must be a non-empty string, got ''"),
    (lambda: check_nonnegative("lr", 0, positive=True), "lr must be a finite number > 0, got 0.0"),
    (lambda: check_nonnegative("momentum", "x"), "momentum must be a number, got 'x'"),
    (lambda: check_int_between("noise table size", 2.5, 1, 9), "noise table size must be an integer, got 2.5"),
    (lambda: check_int_between("noise table size", 10, 1, 9), "noise table size must be between 1 and 9, got 10"),
    (lambda: check_nonnegative_int("noise table seed", -1), "noise table seed must be a non-negative integer, got -1"),
    (lambda: check_nonnegative_int("noise table seed", 1.0), "noise table seed must be a non-negative integer, got 1.0"),
])
def test_messages(call, message):
    with pytest.raises(bb.ConfigError) as info:
        call()
    assert str(info.value) == message


def test_values_that_pass():
    assert check_number("x", 3) == 3.0 and check_bool("b", False) is False and check_string("s", "") == ""
    assert check_nonnegative("x", np.float32(0.5)) == 0.5 and check_int_between("n", 4.0, 1, 9) == 4
    assert check_nonnegative_int("s", np.int64(3)) == 3


def test_the_optimizers_and_the_noise_table_use_them():
    with pytest.raises(bb.ConfigError, match="^beta1 must be a finite number >= 0, got -0.1$"):
        bb.optim.Adam(lr=0.1, beta1=-0.1)
    with pytest.raises(bb.ConfigError, match="^noise table size must be between 65536 and 2147483648, got 3$"):
        bb.NoiseTable(3)
    with pytest.raises(bb.ConfigError, match="^noise table seed must be a non-negative integer, got True$"):
        bb.NoiseTable.get(2**16, True)
