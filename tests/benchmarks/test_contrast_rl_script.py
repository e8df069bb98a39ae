"""benchmarks/contrast_rl.py --from: a table pools contrasts' own files and saved sections, and a task run on
several seeds gets its line over them below the table."""

from __future__ import annotations

import importlib
import json
import sys

import pytest

from tests.helpers import ROOT


@pytest.fixture(scope="module")
def script():
    pytest.importorskip("gymnasium")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        yield importlib.import_module("contrast_rl")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_from_pools_a_saved_section_with_a_contrasts_own_file(script, tmp_path, capsys):
    section = json.loads((ROOT / "docs/benchmarks/contrast-rl-hopper-unraced.json").read_text())
    first, *others = section["data"]["reports"][:3]  # seeds 100-102: three plots to draw, not ten
    section["data"]["reports"] = others
    (tmp_path / "section.json").write_text(json.dumps(section))
    (tmp_path / "Hopper-v5-100").mkdir()
    (tmp_path / "Hopper-v5-100" / "contrast-rl.json").write_text(json.dumps(first))
    reports, dates, names = script._read_saved([tmp_path / "section.json",
                                                tmp_path / "Hopper-v5-100" / "contrast-rl.json"])
    assert sorted(r["seed"] for r in reports) == [100, 101, 102]
    assert dates[0] == section["date"] and names[0] == "Hopper-v5-ars-101.png" and names[-1] == "Hopper-v5-100.png"
    assert script.main(["--from", str(tmp_path / "section.json"), str(tmp_path / "Hopper-v5-100" / "contrast-rl.json"),
                        "--section", str(tmp_path / "pooled.json")]) == 0
    out = capsys.readouterr().out
    assert out.count("| Hopper-v5 | ") == 3
    # ES 528,202, 801,767 and 357,052 steps against 1,660,000, 470,000 and a miss: 7 of the 9 pairs won.
    assert ("- Hopper-v5, seeds 100-102: ES reached the goal on 3/3, ARS on 2/3; ES needed no more steps on 2 of "
            "3 seeds; median steps 528,202 against 1,660,000; probability of improvement (ES fewer steps) 0.78") in out
    pooled = json.loads((tmp_path / "pooled.json").read_text())
    assert pooled["markdown"] in out and len(pooled["plots"]) == 3
    assert all((tmp_path / name).is_file() for name in pooled["plots"])


def test_reading_a_version_imports_nothing():
    """A section's versions were read by importing each package; importing rl_zoo3 replaced gymnasium's
    TimeLimit for the rest of the process, and the gym tests that ran after failed. Metadata comes first."""
    import importlib.metadata
    import importlib.util
    import subprocess

    if importlib.util.find_spec("rl_zoo3") is None:  # not importorskip: importing it is what must not happen
        pytest.skip("needs rl_zoo3 (the rl extra)")
    code = ("import sys; sys.path.insert(0, 'benchmarks'); from _common import version; "
            "print(version('rl_zoo3'), version('no_such_package_here'), 'rl_zoo3' in sys.modules, sep='|')")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip().split("|") == [importlib.metadata.version("rl_zoo3"), "not installed", "False"]
