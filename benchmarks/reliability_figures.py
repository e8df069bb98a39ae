"""Run the reliability tests and print the figures RELIABILITY.md quotes.

    python benchmarks/reliability_figures.py            # default and long tests (several minutes)
    python benchmarks/reliability_figures.py --fast     # only the tests of the default run

Each test under ``tests/reliability`` reports what it did (faults injected, runs survived and found
identical to a clean run, inputs tried and refused, memory growth measured) through
``tests/reliability/helpers.note`` into the file named by ``BLACKBOX_RELIABILITY_FIGURES``. This
script points that variable at a temporary file, runs pytest (default selection, then
``-m reliability_long``), and prints one Markdown table per kind of promise, with the pytest
outcome of each part. Timings are not part of it (the figures are counts), except the cost of
verifying the largest default noise table when it is mapped, which the long run measures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUMMED = ("faults", "runs", "identical", "inputs", "refused", "uncaught", "executed", "rows_rerun",
          "kills_inside_write", "orphans", "services_checked", "non_loopback", "fell_back", "silent_same",
          "silent_different")


def run_pytest(marker: str | None, figures: Path) -> str:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/reliability"]
    if marker:
        command += ["-m", marker]
    env = {**os.environ, "BLACKBOX_RELIABILITY_FIGURES": str(figures)}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    summary = [line for line in done.stdout.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    return summary[-1].strip("= ") if summary else f"pytest exited {done.returncode}"


def collect(figures: Path) -> dict[str, dict]:
    rows: dict[str, dict] = defaultdict(dict)
    if not figures.exists():
        return rows
    for line in figures.read_text().splitlines():
        entry = json.loads(line)
        row = rows[entry.pop("test")]
        for key, value in entry.items():
            if key in SUMMED:
                row[key] = row.get(key, 0) + value
            elif key.endswith("_pct"):
                row[key] = max(row.get(key, value), value)
            elif key == "point":
                row.setdefault("points", []).append(value)
            else:
                row[key] = value
    return rows


def table(rows: dict[str, dict], columns: list[str]) -> str:
    head = "| what | " + " | ".join(columns) + " |"
    lines = [head, "|" + " --- |" * (len(columns) + 1)]
    for name, row in rows.items():
        cells = []
        for column in columns:
            value = row.get(column, "")
            cells.append(", ".join(value) if isinstance(value, list) else str(value))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="only the tests of the default run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        figures = Path(folder) / "figures.jsonl"
        outcomes = {"default run": run_pytest(None, figures)}
        if not args.fast:
            outcomes["-m reliability_long"] = run_pytest("reliability_long", figures)
        rows = collect(figures)
    print("## pytest\n")
    for part, outcome in outcomes.items():
        print(f"- tests/reliability, {part}: {outcome}")
    faults = {k: v for k, v in rows.items() if "faults" in v}
    inputs = {k: v for k, v in rows.items() if "inputs" in v and "silent_different" not in v}
    endurance = {k: v for k, v in rows.items() if "driver_rss_growth_pct" in v}
    services = {k: v for k, v in rows.items() if "services_checked" in v}
    flips = {k: v for k, v in rows.items() if "silent_different" in v}
    timings = {k: v for k, v in rows.items() if "verify_s" in v}
    print("\n## Faults injected\n")
    print(table(faults, ["faults", "runs", "identical", "rows_rerun", "kills_inside_write", "orphans", "points"]))
    print("\n## Bad and crafted inputs\n")
    print(table(inputs, ["inputs", "refused", "uncaught", "executed"]))
    print("\n## Bit flips in real checkpoints (resume to the end of the budget)\n")
    print(table(flips, ["inputs", "fell_back", "refused", "silent_same", "silent_different"]))
    print("\n## Verifying the noise-table cache when it is mapped (seconds)\n")
    print(table(timings, ["verify_s", "generate_s", "build_and_write_s"]))
    print("\n## Long runs (growth after warm-up, %)\n")
    print(table(endurance, ["generations", "samples", "driver_rss_mb", "driver_rss_growth_pct",
                            "driver_anon_growth_pct", "children", "worker_rss_growth_pct", "worker_anon_growth_pct"]))
    print("\n## Listening sockets\n")
    print(table(services, ["services_checked", "non_loopback"]))
    totals = {key: sum(v.get(key, 0) for v in rows.values()) for key in ("faults", "runs", "identical", "inputs")}
    print(f"\nTotals: {totals['faults']} faults injected, {totals['runs']} runs survived "
          f"({totals['identical']} compared bit for bit with a clean run), {totals['inputs']} bad or crafted inputs.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
