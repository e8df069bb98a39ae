"""Names no file can have, given on the command line, are one line and exit status 2 (issue 25:
``blackbox new problem <300 characters>`` ended in ``internal error: OSError: File name too long``)."""

from __future__ import annotations

import pytest

from blackbox.cli import main
from blackbox.errors import ConfigError
from blackbox.files import check_path
from tests.reliability.helpers import note

LONG = "b" * 300


def test_a_plugin_name_too_long_for_a_file_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["new", "problem", "a" * 300]) == 2
    err = capsys.readouterr().err
    assert err == ("blackbox new: error: plugin name 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...' is 300 characters "
                   "long, more than the 100 it may have (it names a folder and files); choose a shorter one\n")
    assert list(tmp_path.iterdir()) == []
    assert main(["new", "problem", "a" * 100]) == 0  # the longest name allowed is written
    note("names too long for a file", faults=1, runs=1)


@pytest.mark.parametrize("args", [
    ["new", "problem", "ok-name", "--out", "{tmp}/" + LONG],
    ["run", "--problem", "sphere", "--generations", "1", "--out", "{tmp}/" + LONG],
    ["run", "--problem", "sphere", "--generations", "1", "--out", "{tmp}/" + LONG + "/run"],
    ["run", "--config", "{tmp}/" + LONG],
    ["resume", "{tmp}/" + LONG],
    ["play", "{tmp}/" + LONG],
])
def test_every_path_argument_too_long_for_a_file_is_one_line(args, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([a.format(tmp=tmp_path) for a in args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"blackbox {args[0]}: error: ") and len(err.splitlines()) == 1, err
    assert "internal error" not in err and ("File name too long" in err or "longer than the 255" in err), err
    assert list(tmp_path.iterdir()) == []
    note("names too long for a file", faults=1, runs=1)


@pytest.mark.parametrize("path, message", [
    ("a\0b", "out 'a\\x00b' contains a NUL character, which no file name may hold"),
    ("x/" + "c" * 256, "out 'x/cccccccccccccccccccccccccccccccccccccc...cccccccccccc' has a name of 256 bytes "
                       "('cccccccccccccccccccccccccccccccccccccccc...cccccccccccc'), longer than the 255 a file "
                       "name may have here; choose a shorter one"),
    ("d/" * 2100, "is 4200 bytes long, more than the 4096 a path may have; choose a shorter one"),
])
def test_check_path_names_what_no_file_can_have(path, message):
    with pytest.raises(ConfigError) as info:
        check_path(path, "out")
    assert str(info.value).endswith(message), str(info.value)
    assert check_path("c" * 255).name == "c" * 255
