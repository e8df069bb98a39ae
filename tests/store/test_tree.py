"""``blackbox.store.tree``: the state-tree codec of checkpoints, and the kit's trip through files
that is that codec itself."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from blackbox.errors import CheckpointError
from blackbox.store import checkpoint, tree
from blackbox.testing import plain_data_faults, through_files


def test_the_kit_sends_states_through_the_checkpoint_codec():
    assert through_files is tree.through_files
    assert checkpoint.encode_tree is tree.encode_tree and checkpoint.decode_tree is tree.decode_tree


def test_through_files_keeps_what_a_checkpoint_keeps():
    state = {"$odd": {"$array": "not a reference"}, "scalar": np.float32(1.5), "count": np.int64(7),
             "inf": -math.inf, "big": 2**100, "rows": (np.arange(3), None, True, "text")}
    back = through_files(state)
    assert set(back) == {"$odd", "scalar", "count", "inf", "big", "rows"}
    assert back["$odd"] == {"$array": "not a reference"}
    assert type(back["scalar"]) is np.float32 and back["scalar"] == np.float32(1.5)
    assert type(back["count"]) is np.int64 and back["count"] == 7
    assert back["inf"] == -math.inf and back["big"] == 2**100
    assert np.array_equal(back["rows"][0], np.arange(3)) and back["rows"][1:] == [None, True, "text"]


def test_encode_tree_puts_arrays_under_their_paths():
    arrays = {}
    encoded = tree.encode_tree({"a": {"m": np.ones(2)}, "l": [np.zeros(1)], "n": math.nan}, arrays)
    assert encoded == {"a": {"m": {"$array": "a/m"}}, "l": [{"$array": "l/0"}], "n": {"$float": "nan"}}
    assert json.dumps(encoded, allow_nan=False)
    assert sorted(arrays) == ["a/m", "l/0"]


def test_leaf_faults_are_what_the_codec_refuses():
    assert tree.leaf_fault(np.ones(2)) is None and tree.leaf_fault(np.int8(3)) is None
    assert tree.leaf_fault(None) is None and tree.leaf_fault("x") is None
    assert tree.leaf_fault(np.array([None])) == "is an object array (it would need pickle)"
    assert tree.leaf_fault(object()) == "is a builtins.object, not an array or JSON-able value"
    with pytest.raises(CheckpointError, match="cannot checkpoint x/0 of type object"):
        tree.encode_tree({"x": [object()]}, {})


def test_the_kit_asks_for_more_than_the_codec_python_numbers_not_numpy_scalars():
    state = {"ok": np.float64(1.0), "int": np.int64(3), "nested": [{1: np.float32(2.0)}]}
    assert plain_data_faults(state) == [
        "state/int is numpy.int64; use a Python number or a 0-d array",
        "state/nested/0 has key 1 of type int; JSON keys are strings",
        "state/nested/0/1 is numpy.float32; use a Python number or a 0-d array",
    ]
