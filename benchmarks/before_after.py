"""What each performance change bought: the code before and after, timed side by side in one run.

    python benchmarks/before_after.py [--quick] [--rounds 3] [--baseline COMMIT]

The "before" code is the ``blackbox`` package of ``--baseline`` (default: the commit of ``main``
this work started from), extracted with ``git archive`` into a temporary folder; the "after" code
is this checkout. Every probe runs in a fresh process against one tree or the other, the two
alternating for ``--rounds`` rounds, and the best time of each is kept, so load on the machine hits
both alike. Needs git and the repository's history; without them the script says so and stops.

Probes (population 256 unless said):

- ``ask+tell``: one generation of ask + tell with a random fitness, no evaluation (the optimizer's
  own cost: noise-table slicing, the weighted sums, the update).
- ``driver``: ``optimize()`` on a trivial problem (fitness ``-|x|^2``), seconds per generation: the
  ask/tell plus everything the driver does around them (the center row, seeds, the record).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: main before the performance work of issue 8 (the merge of the gym branch).
BASELINE = "857feec"

ROWS = "rows() builds large blocks row by row in cache-sized chunks"
CENTER = "with_center() points at the equal first base instead of copying every base"
SMALL = ("window views cached per dim, no deep copy of the RNG state per ask, one sort per record, "
         "no np.r_ in the ranking")
CONTROL = "control: code path unchanged (the weighted sums)"
FULL_PROBES = [
    {"kind": "ask+tell", "strategy": "ga", "dim": 1_000_000, "change": ROWS},
    {"kind": "ask+tell", "strategy": "openai-es", "dim": 1_000_000, "change": CONTROL},
    {"kind": "ask+tell", "strategy": "pgpe", "dim": 1_000_000, "change": CONTROL},
    {"kind": "ask+tell", "strategy": "snes", "dim": 1_000_000, "change": CONTROL},
    {"kind": "ask+tell", "strategy": "openai-es", "dim": 1_000, "change": SMALL},
    {"kind": "driver", "strategy": "ga", "dim": 100_000, "popsize": 64, "generations": 5,
     "change": f"{ROWS}; {CENTER}"},
    {"kind": "driver", "strategy": "openai-es", "dim": 100_000, "popsize": 256, "generations": 5,
     "change": f"{CENTER} (serial evaluation builds the rows: {ROWS})"},
    {"kind": "driver", "strategy": "openai-es", "dim": 10, "popsize": 16, "generations": 500, "change": SMALL},
    {"kind": "driver", "strategy": "cma-es", "dim": 10, "popsize": 10, "generations": 500, "change": SMALL},
]
QUICK_PROBES = [
    {"kind": "ask+tell", "strategy": "ga", "dim": 100_000, "change": ROWS},
    {"kind": "ask+tell", "strategy": "pgpe", "dim": 100_000, "change": CONTROL},
    {"kind": "driver", "strategy": "ga", "dim": 20_000, "popsize": 64, "generations": 3,
     "change": f"{ROWS}; {CENTER}"},
    {"kind": "driver", "strategy": "openai-es", "dim": 10, "popsize": 16, "generations": 200, "change": SMALL},
]


# -- the probe, run in a child process against one tree ----------------------------------------------
def probe(spec: dict) -> dict:
    import numpy as np

    import blackbox as bb

    popsize = spec.get("popsize", 256)
    strategy = bb.make_strategy(spec["strategy"], dim=spec["dim"], popsize=popsize, seed=0)
    if spec["kind"] == "ask+tell":
        fitness = np.random.default_rng(0).standard_normal(popsize)
        strategy.ask()
        strategy.tell(fitness)  # warm-up: maps the noise table, touches the pages
        times = []
        for _ in range(spec.get("repeats", 3)):
            started = time.perf_counter()
            strategy.ask()
            strategy.tell(fitness)
            times.append(time.perf_counter() - started)
        seconds = min(times)
    else:

        class Trivial(bb.Problem):
            def __init__(self, dim):
                self.dim = dim

            def evaluate(self, params, seeds):
                return bb.EvalResult(-np.einsum("ij,ij->i", params, params), np.zeros(len(params), dtype=np.int64))

        result = bb.optimize(strategy, Trivial(spec["dim"]), generations=spec["generations"], seed=0)
        seconds = float(np.median([r.generation_time for r in result.records[1:]]))
    return {"seconds": seconds, "blackbox": str(Path(bb.__file__).parent)}


def run_probe(spec: dict, tree: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--probe", json.dumps(spec)],
                          capture_output=True, text=True, env=env, timeout=900)
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("RESULT "):
            out = json.loads(line[len("RESULT "):])
            if Path(out["blackbox"]).resolve() != (tree / "blackbox").resolve():
                raise RuntimeError(f"the probe imported {out['blackbox']}, not {tree / 'blackbox'}")
            return out
    raise RuntimeError(f"probe {spec} failed: {(done.stderr or done.stdout)[-500:]}")


# -- the comparison --------------------------------------------------------------------------------
def extract_baseline(commit: str, into: Path) -> str | None:
    """Write ``blackbox/`` of ``commit`` into ``into``; None, or the reason it cannot be done."""
    try:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "blackbox"], capture_output=True,
                                 check=True, timeout=120)
    except FileNotFoundError:
        return "git is not installed"
    except subprocess.CalledProcessError as exc:
        return f"git archive {commit} failed: {exc.stderr.decode(errors='replace').strip()[:200]}"
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return None


def measure(quick: bool = False, rounds: int | None = None, baseline: str = BASELINE, log=print) -> dict:
    probes = QUICK_PROBES if quick else FULL_PROBES
    rounds = rounds or (2 if quick else 3)
    with tempfile.TemporaryDirectory(prefix="blackbox-before-") as tmp:
        reason = extract_baseline(baseline, Path(tmp))
        if reason:
            log(f"  before-after skipped: {reason}")
            return {"baseline": baseline, "skipped": reason, "rows": []}
        best: dict[int, dict[str, float]] = {k: {"before": float("inf"), "after": float("inf")}
                                             for k in range(len(probes))}
        for round_ in range(rounds):
            for k, spec in enumerate(probes):
                for side, tree in (("before", Path(tmp)), ("after", ROOT)):
                    seconds = run_probe(spec, tree)["seconds"]
                    best[k][side] = min(best[k][side], seconds)
                log(f"  round {round_ + 1}/{rounds} {describe(spec)}: before {best[k]['before'] * 1e3:.2f} ms, "
                    f"after {best[k]['after'] * 1e3:.2f} ms")
    rows = [{**spec, "before": best[k]["before"], "after": best[k]["after"]} for k, spec in enumerate(probes)]
    return {"baseline": baseline, "rounds": rounds, "rows": rows}


def describe(spec: dict) -> str:
    text = f"{spec['kind']} {spec['strategy']} dim {spec['dim']:,}"
    if spec["kind"] == "driver":
        text += f" popsize {spec.get('popsize', 256)}"
    return text


def markdown(measured: dict) -> str:
    if measured.get("skipped"):
        return f"Skipped: {measured['skipped']}."
    lines = [f"Before: `blackbox/` of commit {measured['baseline']} (main before this work); after: this "
             f"checkout. Best of {measured['rounds']} interleaved rounds, each probe a fresh process.", "",
             "| probe | before | after | speed-up | what changed on this path |", "|---|---|---|---|---|"]
    for row in measured["rows"]:
        lines.append(f"| {describe(row)} | {row['before'] * 1e3:.2f} ms | {row['after'] * 1e3:.2f} ms | "
                     f"{row['before'] / row['after']:.2f}x | {row.get('change', '')} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--baseline", default=BASELINE)
    args = parser.parse_args(argv)
    print(markdown(measure(args.quick, args.rounds, args.baseline)))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--probe":
        print("RESULT " + json.dumps(probe(json.loads(sys.argv[2]))), flush=True)
    else:
        sys.exit(main())
