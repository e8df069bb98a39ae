"""No class in ``blackbox/`` is over 250 lines (issue 26): a class that grows past it is split by
job (as ``Strategy``, ``Population`` and ``GymProblem`` were), not let grow.

The length is counted by ``tools/code_counts.py`` (``python tools/code_counts.py`` prints the
classes over the limit), from the ``class`` statement to the class's last line, so the test and
the tool never disagree.
"""

import importlib.util
import sys

from tests.helpers import ROOT

LIMIT = 250


def code_counts():
    spec = importlib.util.spec_from_file_location("code_counts", ROOT / "tools" / "code_counts.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("code_counts", module)
    spec.loader.exec_module(module)
    return module


def test_no_class_in_blackbox_is_over_250_lines():
    found = code_counts().long_classes(LIMIT)
    assert not found, "classes over 250 lines (split them by job): " + "; ".join(
        f"{name} ({lines} lines, {where})" for lines, where, name in found)


def test_the_count_finds_a_long_class_and_its_nested_classes(tmp_path, monkeypatch):
    """The check can fail: a 252-line class and the 251-line class inside it are found, a 250-line one is not."""
    tool = code_counts()
    inner = "".join(f"        y{i} = {i}\n" for i in range(250))
    fits = "".join(f"    z{i} = {i}\n" for i in range(249))
    source = tmp_path / "pkg" / "module.py"
    source.parent.mkdir()
    source.write_text(f"class Long:\n    class Inner:\n{inner}\n\nclass Fits:\n{fits}")
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    monkeypatch.setattr(tool, "sources", lambda: [source])
    assert tool.long_classes(LIMIT) == [(252, "pkg/module.py:1-252", "Long"), (251, "pkg/module.py:2-252", "Long.Inner")]
