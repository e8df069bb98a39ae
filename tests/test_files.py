"""``blackbox.files``: the one atomic writer for files and for folders, and the one state-tree walker."""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

from blackbox import files
from blackbox.errors import CheckpointError, StorageError


# -- map_tree and to_plain --------------------------------------------------------------------------
def test_map_tree_visits_every_leaf_with_its_path_and_keys_before_values():
    seen = []

    def leaf(value, path):
        seen.append(("leaf", path, value))
        return -value

    def key(name, path):
        seen.append(("key", path, name))
        return name.upper()

    tree = {"a": 1, "b": [2, (3, {"c": 4})]}
    assert files.map_tree(tree, leaf, key=key) == {"A": -1, "B": [-2, [-3, {"C": -4}]]}
    assert seen == [("key", "", "a"), ("leaf", "a", 1), ("key", "", "b"), ("leaf", "b/0", 2),
                    ("leaf", "b/1/0", 3), ("key", "b/1/1", "c"), ("leaf", "b/1/1/c", 4)]
    assert files.map_tree([7], lambda v, p: p, path="root") == ["root/0"]


def test_to_plain_turns_numpy_into_python_numbers_and_lists():
    plain = files.to_plain({"x": np.arange(3), 4: (np.float32(0.5), np.int64(2), np.bool_(True)), "s": "t"})
    assert plain == {"x": [0, 1, 2], "4": [0.5, 2, True], "s": "t"}
    assert [type(v) for v in plain["4"]] == [float, int, bool] and type(plain["x"][0]) is int

    with_none = {"a": None, "b": [None, {"c": None, "d": (1, None)}], "e": {"f": np.float64(2.0)}}
    assert files.to_plain(with_none, drop_none=True) == {"b": [None, {"d": [1, None]}], "e": {"f": 2.0}}
    assert files.to_plain(with_none)["a"] is None


def test_flat_leaves_names_each_leaf_by_its_path():
    mean = np.arange(3.0)
    tree = {"obs_mean": mean, "obs_count": 7.0, "digest": "abc", "none": None, "cap": {"n": np.int64(5)},
            "stack": [1, 2]}
    flat = files.flat_leaves(tree, "problem")
    assert flat == {"problem/obs_mean": mean, "problem/obs_count": 7.0, "problem/cap/n": 5,
                    "problem/stack/0": 1, "problem/stack/1": 2}
    assert flat["problem/obs_mean"] is mean
    assert files.flat_leaves(tree, "problem", sequences=False)["problem/stack"] == [1, 2]
    assert files.flat_leaves({}, "problem") == {} and files.flat_leaves(mean, "problem") == {"problem": mean}


# -- atomic_folder -----------------------------------------------------------------------------------
def fill_with(**contents):
    def fill(folder):
        for name, data in contents.items():
            files.write_synced(folder / name, data)
    return fill


def test_atomic_folder_creates_and_replaces_a_whole_folder(tmp_path):
    final = tmp_path / "deep" / "gen-000001"
    assert files.atomic_folder(final, fill_with(a=b"1", b=b"2")) == final
    assert sorted(p.name for p in final.iterdir()) == ["a", "b"] and (final / "a").read_bytes() == b"1"
    files.atomic_folder(final, fill_with(c=b"3"))
    assert sorted(p.name for p in final.iterdir()) == ["c"]
    assert sorted(p.name for p in final.parent.iterdir()) == ["gen-000001"]  # no temporary folder left


@pytest.mark.parametrize("failure", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()])
def test_a_failing_fill_leaves_the_previous_folder_and_no_temporary_one(tmp_path, failure):
    final = tmp_path / "gen-000001"
    files.atomic_folder(final, fill_with(a=b"old"))

    def fill(folder):
        files.write_synced(folder / "a", b"new")
        raise failure

    with pytest.raises(type(failure)):
        files.atomic_folder(final, fill)
    assert [p.name for p in tmp_path.iterdir()] == ["gen-000001"]
    assert (final / "a").read_bytes() == b"old"


def test_a_failing_atomic_write_is_a_storage_error_and_keeps_the_previous_file(tmp_path, monkeypatch):
    target = tmp_path / "x.json"
    files.write_json(target, {"a": 1})

    def full_disk(src, dst):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(StorageError, match=rf"^could not write {target}: \[Errno {errno.ENOSPC}\] No space left"):
        files.write_json(target, {"a": 2})
    assert target.read_text() == '{\n  "a": 1\n}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]  # the temporary file is gone


# -- .npz ------------------------------------------------------------------------------------------
def test_npz_bytes_round_trip_through_load_npz(tmp_path):
    arrays = {"a/b": np.arange(4.0), "c": np.array(3, dtype=np.int8)}
    (tmp_path / "x.npz").write_bytes(files.npz_bytes(arrays))
    loaded = files.load_npz(tmp_path / "x.npz")
    assert set(loaded) == {"a/b", "c"} and np.array_equal(loaded["a/b"], arrays["a/b"])
    assert loaded["c"].dtype == np.int8 and loaded["c"].shape == ()
    with pytest.raises(CheckpointError, match="cannot save 'o': object arrays would need pickle"):
        files.save_npz(tmp_path / "y.npz", {"o": np.array([None])})


# -- modes ---------------------------------------------------------------------------------------
@pytest.fixture
def umask_027():
    old = os.umask(0o027)
    yield
    os.umask(old)


def test_written_files_and_folders_get_the_modes_open_and_mkdir_give(tmp_path, umask_027):
    assert files.umask() == 0o027
    path = files.atomic_write(tmp_path / "a.json", lambda handle: handle.write(b"{}"))
    folder = files.atomic_folder(tmp_path / "gen", lambda tmp: files.write_synced(tmp / "x.bin", b"1"))
    opened = tmp_path / "opened"
    opened.write_bytes(b"")
    (tmp_path / "made").mkdir()
    modes = {p.name: p.stat().st_mode & 0o777 for p in (path, folder, folder / "x.bin", opened, tmp_path / "made")}
    assert modes == {"a.json": 0o640, "gen": 0o750, "x.bin": 0o640, "opened": 0o640, "made": 0o750}


def test_every_file_of_a_run_directory_has_one_mode(tmp_path, umask_027):
    from blackbox.lab.runs import start_run

    start_run({"problem": {"name": "sphere", "dim": 3}, "stop": {"generations": 2}, "log": {"plot": False}},
              tmp_path / "run")
    found = {str(p.relative_to(tmp_path)): p.stat().st_mode & 0o777 for p in (tmp_path / "run").rglob("*")}
    assert set(found) >= {"run/config.toml", "run/records.csv", "run/records.jsonl", "run/result.json",
                          "run/solution.npz", "run/checkpoints", "run/checkpoints/gen-000002",
                          "run/checkpoints/gen-000002/state.json", "run/checkpoints/gen-000002/arrays.npz"}
    assert {mode for name, mode in found.items() if (tmp_path / name).is_file()} == {0o640}
    assert {mode for name, mode in found.items() if (tmp_path / name).is_dir()} == {0o750}
