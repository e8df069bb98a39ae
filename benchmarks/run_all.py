"""Every benchmark against the peers in one command; writes BENCHMARKS.md and PNG plots.

    python benchmarks/run_all.py                       # everything (long: run it on an idle machine)
    python benchmarks/run_all.py --quick               # a few minutes: small settings, CI smoke test
    python benchmarks/run_all.py --only overhead solve-cartpole   # some sections; the rest is kept
    python benchmarks/run_all.py --assemble            # only rebuild BENCHMARKS.md from saved sections

Sections: ``overhead`` (ask + tell per generation against EvoTorch, evosax, pycma, nevergrad and the
memory floor), ``solve-cartpole`` and ``solve-mujoco`` (wall time and environment steps to a goal
against EvoTorch's GymNE and VecGymNE), ``bbob`` (final loss at equal evaluations against pycma and
evosax), ``executors`` (serial, loky and ray: dispatch overhead and speed-up on 2 workers) and
``before-after`` (what each performance change bought, old and new code timed side by side).

Each section saves ``<out>/<section>.json`` (its table, targets, date, command, machine and load)
and its plots; ``BENCHMARKS.md`` is then assembled from every saved section, so sections run at
different times (or on different machines) merge into one report that says when and how each was
measured. A peer that is not installed is skipped with the reason in the table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from _common import machine, version  # noqa: E402

SECTIONS = ("overhead", "solve-cartpole", "solve-mujoco", "bbob", "executors", "before-after", "rl-presets",
            "contrast-rl")
TITLES = {
    "overhead": "Optimizer overhead: ask + tell per generation",
    "solve-cartpole": "Solving CartPole-v1 against EvoTorch",
    "solve-mujoco": "Solving a MuJoCo task against EvoTorch",
    "bbob": "Quality at equal budget: BBOB",
    "executors": "Executors: dispatch overhead and speed-up",
    "before-after": "Performance work: before and after, side by side",
    "rl-presets": "Gymnasium presets: blackbox run --problem gym:ID reaches the goal",
    "contrast-rl": "ES against PPO (and ARS against ARS): steps and wall time to the goal",
}
PEERS = {"evotorch": "evotorch", "evosax": "evosax", "jax": "jax", "pycma": "cma", "nevergrad": "nevergrad",
         "torch": "torch", "numpy": "numpy", "gymnasium": "gymnasium", "mujoco": "mujoco", "cocoex": "cocoex",
         "ray": "ray", "loky": "loky"}


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


# -- the sections ----------------------------------------------------------------------------------
def section_overhead(quick: bool, out: Path) -> dict:
    import peers_overhead

    dims = [1000, 10000] if quick else [1000, 10000, 100000, 1000000]
    measured = peers_overhead.measure(dims, popsize=256, repeats=1 if quick else 3, budget=5.0 if quick else 60.0,
                                      log=log)
    peers_overhead.plot(measured["results"], measured["floors"], dims, str(out / "overhead.png"))
    results, floors = measured["results"], measured["floors"]
    targets = []
    ahead = []
    for dim in dims:
        ours = [v[dim] for (lib, _), v in results.items() if lib == "blackbox" and isinstance(v[dim], float)]
        peers = [v[dim] for (lib, _), v in results.items() if lib != "blackbox" and isinstance(v[dim], float)]
        if ours and peers:
            ahead.append((dim, min(peers) / max(ours)))
    if ahead:
        worst_dim, worst = min(ahead, key=lambda kv: kv[1])
        targets.append({"target": "overhead: ahead of every peer at every dimension (fastest peer / our slowest)",
                        "measured": f"{worst:.1f}x at dim {worst_dim:,} (lowest over dims)", "met": worst > 1.0})
    top = max(dims)
    if top >= 10**6:
        ratios = {name: v[top] / floors[top] for (lib, name), v in results.items()
                  if lib == "blackbox" and isinstance(v[top], float)}
        if ratios:
            main = {k: r for k, r in ratios.items() if k in ("openai-es", "nes (mirrored)", "ga")}
            text = ", ".join(f"{k} {r:.2f}x" for k, r in ratios.items())
            targets.append({"target": "overhead: within 2x of the memory floor at dim 1e6 (openai-es, nes, ga)",
                            "measured": text, "met": bool(main) and max(main.values()) <= 2.0})
    data = {"dims": dims, "floors": floors, "compile_times": {f"{k[0]} {k[1]}": v for k, v in
                                                                  measured["compile_times"].items()},
            "results": {f"{lib}/{name}": v for (lib, name), v in results.items()}}
    return {"markdown": peers_overhead.markdown(measured), "targets": targets, "plots": ["overhead.png"],
            "data": data}


#: Wall-time budget of one MuJoCo run (--mujoco-seconds).
MUJOCO_SECONDS = {"full": 300.0, "quick": 60.0}


def _solve(task_key: str, quick: bool, out: Path) -> dict:
    import peers_solve

    task = peers_solve.CARTPOLE if task_key == "cartpole" else peers_solve.MUJOCO
    labels = None
    seeds = 5 if task_key == "cartpole" else 3
    if task_key != "cartpole":
        task = peers_solve.Task(**{**task.as_dict(), "max_seconds": MUJOCO_SECONDS["quick" if quick else "full"]})
    if quick:
        seeds = 1
        if task_key == "cartpole":
            task = peers_solve.Task(**{**task.as_dict(), "max_seconds": 60.0})
            labels = ["openai-es, serial", "snes, serial", "GymNE + SNES, main", "VecGymNE + SNES, main"]
        else:
            labels = ["snes, linear policy, serial", "VecGymNE + SNES, main"]
    result = peers_solve.measure(task, seeds, labels=labels, log=log)
    png = f"solve-{task_key}.png"
    peers_solve.plot(result, str(out / png), task.env)
    best = peers_solve.best_of(result)
    targets = []
    if best["blackbox"] and best["evotorch"]:
        ratio = peers_solve.ratio_of(result)
        pair = f"({best['blackbox']['label']} vs EvoTorch {best['evotorch']['label']})"
        measured = f"{ratio:.1f}x {pair}" if ratio > 0 else f"ours did not reach it within the budget {pair}"
        if task_key == "cartpole":
            targets.append({"target": "CartPole-v1: median wall time to solve >= 3x faster than EvoTorch's best",
                            "measured": measured, "met": ratio >= 3.0})
        else:
            goal = "n/a" if result["goal"] is None else f"{result['goal']:.0f}"
            targets.append({"target": f"{task.env}: reaches EvoTorch's return ({goal}) in less wall time than "
                                      f"EvoTorch's best", "measured": measured, "met": ratio > 1.0})
    return {"markdown": peers_solve.markdown(result), "targets": targets, "plots": [png], "data": result}


def section_solve_cartpole(quick: bool, out: Path) -> dict:
    return _solve("cartpole", quick, out)


def section_solve_mujoco(quick: bool, out: Path) -> dict:
    return _solve("mujoco", quick, out)


#: The full BBOB section's contenders (every one of them: benchmarks/bbob_quality.py).
BBOB_OURS = ("openai-es", "pgpe", "snes", "sep-cma-es", "cma-es")
BBOB_EVOSAX = ("Open_ES", "SNES")


def section_bbob(quick: bool, out: Path) -> dict:
    import bbob_quality

    if quick:
        results = bbob_quality.measure([10], [1, 8, 15], 2, 100, ours=("openai-es", "snes", "cma-es"),
                                       evosax=("Open_ES",), log=log)
    else:  # the strategies the targets name and their closest peers; every one: bbob_quality.py
        results = bbob_quality.measure([10, 40], list(range(1, 25)), 5, 1000, ours=BBOB_OURS,
                                       evosax=BBOB_EVOSAX, log=log)
    bbob_quality.plot(results, str(out / "bbob.png"))
    targets = []
    if "blackbox openai-es" in results.losses and "evosax Open_ES" in results.losses:
        verdict = bbob_quality.head_to_head(results, "blackbox openai-es", "evosax Open_ES")
        targets.append({"target": "BBOB: openai-es no worse than evosax Open_ES on any function (medians)",
                        "measured": f"worse on {len(verdict['worse'])}, even on {verdict['even']}, better on "
                                    f"{verdict['better']}" + (f" ({'; '.join(verdict['worse'])})"
                                                             if verdict["worse"] else ""),
                        "met": not verdict["worse"]})
    rest = [name for name in bbob_quality.OURS if name not in BBOB_OURS]
    rest_evosax = [name for name in bbob_quality.EVOSAX if name not in BBOB_EVOSAX]
    text = bbob_quality.markdown(results)
    if not quick:
        text += (f"\n\nThis section runs {', '.join(BBOB_OURS)} against evosax's {', '.join(BBOB_EVOSAX)} and pycma "
                 f"(each evosax generation is a jit call from Python, which makes a run of 40,000 evaluations take "
                 f"seconds). The others ({', '.join(rest)}; evosax {', '.join(rest_evosax)}): "
                 f"`python benchmarks/bbob_quality.py` (every strategy; hours on this machine).")
    return {"markdown": text, "targets": targets, "plots": ["bbob.png"],
            "data": bbob_quality.to_json(results)}


def section_executors(quick: bool, out: Path) -> dict:
    import dispatch
    import speedup

    names = ["serial", "loky"]
    ray_note = ""
    try:
        import blackbox_ray  # noqa: F401

        if not quick:
            names.append("ray")
    except ImportError:
        ray_note = " ray skipped: blackbox-ray is not installed (pip install -e plugins/blackbox-ray)."
    if quick:
        ray_note += " ray left out of --quick (starting Ray takes several seconds)."
    dims = [1000] if quick else [1000, 100000, 1000000]
    rows = []
    for dim in dims:
        for name in names:
            rows.append(dispatch.measure(name, dim, 256, 2, 2 if quick else 5))
            log(f"  dispatch {name} dim {dim:,}: {rows[-1]['overhead_ms']:.2f} ms overhead")
    lines = ["Dispatch: population 256 (+ the center) of a problem that returns zeros, 2 workers; medians of "
             f"{2 if quick else 5} generations after 2 warm-up ones.{ray_note}", "",
             "| executor | dim | startup s | wall ms/gen | work ms/gen | overhead ms/gen | bytes sent/gen | dense pop bytes |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['executor']} | {r['dim']:,} | {r['startup_s']:.2f} | {r['wall_ms']:.2f} | {r['work_ms']:.2f} | "
                     f"{r['overhead_ms']:.2f} | {r['bytes']:,} | {r['dense_bytes']:,} |")
    executors = ["serial", "loky:workers=2"] + (["ray:num_cpus=2"] if "ray" in names else [])
    problem = "rollout:steps=200" if quick else "rollout:steps=2000"
    generations = 3 if quick else 10
    speed = speedup.measure(problem, "openai-es:popsize=64", generations, executors, 0, log=log)
    lines += ["", f"Speed-up on a CPU-bound problem (`{problem}`, openai-es popsize 64, {generations} generations, "
                  "first generation left out): same seed under each executor.", "",
              "| executor | s/gen | speed-up over serial | evaluation CPU s/gen | same center as serial |",
              "|---|---|---|---|---|"]
    for r in speed:
        lines.append(f"| {r['executor']} | {r['seconds']:.3f} | {r['speedup']:.2f}x | {r['cpu']:.3f} | "
                     f"{'yes' if r['same_center'] else 'NO'} |")
    top = speedup.ceiling(problem, "openai-es:popsize=64", generations, 2, 0)
    loky = next(r for r in speed if r["executor"].startswith("loky"))
    lines += ["", f"Machine ceiling: the same serial run alone takes {top['alone']:.3f} s/gen, two copies at once "
                  f"{top['together']:.3f} s/gen each, so no executor can exceed **{top['speedup']:.2f}x** on 2 workers "
                  f"here; loky reaches {loky['speedup']:.2f}x = {loky['speedup'] / top['speedup']:.0%} of it."]
    data = {"dispatch": rows, "speedup": [{k: v for k, v in r.items() if k != "center"} for r in speed],
            "ceiling": top}
    targets = [{"target": "executors: parallel runs give the serial run's center bit for bit",
                "measured": ", ".join(f"{r['executor']}: {'same' if r['same_center'] else 'DIFFERENT'}" for r in speed),
                "met": all(r["same_center"] for r in speed)}]
    return {"markdown": "\n".join(lines), "targets": targets, "plots": [], "data": data}


def section_before_after(quick: bool, out: Path) -> dict:
    import before_after

    measured = before_after.measure(quick=quick, log=log)
    return {"markdown": before_after.markdown(measured), "targets": [], "plots": [], "data": measured}


def section_rl_presets(quick: bool, out: Path) -> dict:
    import rl_presets

    tasks = ["CartPole-v1", "Acrobot-v1"] if quick else list(rl_presets.TASKS)
    rows, trials = rl_presets.measure(tasks, 1 if quick else 5, log=log)
    return rl_presets_body(rows, trials)


def rl_presets_body(rows: list[dict], trials: list[dict]) -> dict:
    import rl_presets

    solved = [r["task"] for r in rows if r["solved"] == r["seeds"]]
    missed = [f"{r['task']} ({r['solved']}/{r['seeds']})" for r in rows if r["task"] not in solved]
    target = {"target": "Gymnasium presets: every task's preset reaches its goal on every seed (>= 5)",
              "measured": f"{len(solved)} of {len(rows)} tasks on every seed; not: {', '.join(missed) or 'none'}",
              "met": not missed and all(r["seeds"] >= 5 for r in rows)}
    return {"markdown": rl_presets.markdown(rows, trials), "targets": [target], "data": {"rows": rows, "trials": trials}}


#: Tasks of the ES-against-PPO section, and the seconds each method may train.
CONTRAST_TASKS = ("Pendulum-v1", "Hopper-v5", "HalfCheetah-v5")
CONTRAST_SECONDS = 600.0


def section_contrast_rl(quick: bool, out: Path) -> dict:
    from blackbox.cli.run import run_config_from_flags as read
    from blackbox.lab.contrast.rl import run_rl_contrast

    tasks = ("CartPole-v1",) if quick else CONTRAST_TASKS
    seconds = 60.0 if quick else CONTRAST_SECONDS
    reports = [run_rl_contrast(task, read, max_time=seconds) for task in tasks]
    if not quick:
        reports.append(run_rl_contrast("HalfCheetah-v5", read, baseline="ars", max_time=seconds))
    return contrast_rl_body([r.as_dict() for r in reports], seconds)


def contrast_rl_body(reports: list[dict], seconds: float) -> dict:
    from blackbox.lab.contrast.rl_report import contrast_markdown

    return {"markdown": contrast_markdown(reports, seconds), "targets": [], "data": {"reports": reports}}


RUNNERS: dict[str, Callable[[bool, Path], dict]] = {
    "overhead": section_overhead, "solve-cartpole": section_solve_cartpole, "solve-mujoco": section_solve_mujoco,
    "bbob": section_bbob, "executors": section_executors, "before-after": section_before_after,
    "rl-presets": section_rl_presets, "contrast-rl": section_contrast_rl,
}
#: Sections --quick leaves out unless named with --only, and why.
QUICK_SKIPS = {"solve-mujoco": "each run trains for minutes; `--only solve-mujoco` runs it (with --quick: one "
                               "seed, our SNES and EvoTorch's VecGymNE + SNES, 60 s each)",
               "contrast-rl": "needs the rl extra and trains PPO for minutes; `--only contrast-rl` runs it "
                              "(with --quick: CartPole-v1, 60 s each)"}


# -- running and assembling ------------------------------------------------------------------------
def run_section(name: str, quick: bool, out: Path, command: str) -> dict:
    started = time.perf_counter()
    load_before = load_average()
    log(f"== {name} ({'quick' if quick else 'full'})")
    body = RUNNERS[name](quick, out)
    record = {
        "section": name, "title": TITLES[name], "quick": quick, "command": command,
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "seconds": time.perf_counter() - started, "machine": machine(),
        "load": f"{load_before} -> {load_average()}",
        "versions": {k: version(v) for k, v in PEERS.items()}, **body,
    }
    (out / f"{name}.json").write_text(json.dumps(record, indent=1, default=_jsonable))
    log(f"   {name}: {record['seconds']:.0f} s")
    return record


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return str(value)


def assemble(out: Path, markdown_path: Path) -> str:
    """BENCHMARKS.md from every saved section, in the canonical order."""
    records = []
    for name in SECTIONS:
        path = out / f"{name}.json"
        if path.exists():
            records.append(json.loads(path.read_text()))
    relative = os.path.relpath(out, markdown_path.parent)
    lines = ["# Benchmarks against the peers", "",
             "Generated by `python benchmarks/run_all.py` (every section; `--only SECTION ...` reruns some and "
             "keeps the others, `--quick` is the CI smoke test). Each section states when and with which "
             "command it was measured, on which machine and under which load: compare figures within a "
             "section (ratios measured side by side in one run), not across machines.", ""]
    quick = [r["section"] for r in records if r["quick"]]
    if quick:
        lines += [f"> **Preliminary:** {', '.join(quick)} measured with `--quick` (tiny settings, one seed): "
                  "smoke-test figures, not results.", ""]
    loaded = [r["section"] for r in records if _busy(r["load"])]
    if loaded:
        lines += [f"> **Loaded machine:** {', '.join(loaded)} ran while the machine was busy (load average "
                  "above the core count): absolute times are inflated, ratios less so; rerun on an idle machine.",
                  ""]
    targets = [(r["title"], t) for r in records for t in r.get("targets", [])]
    if targets:
        lines += ["## Targets", "", "| target | measured | met |", "|---|---|---|"]
        for _, t in targets:
            lines.append(f"| {t['target']} | {t['measured']} | {'yes' if t['met'] else '**no**'} |")
        lines.append("")
    missing = [name for name in SECTIONS if not (out / f"{name}.json").exists()]
    if missing:
        lines += ["Not measured yet: " + ", ".join(f"`{m}` (`python benchmarks/run_all.py --only {m}`)"
                                                     for m in missing) + ".", ""]
    for number, record in enumerate(records, 1):
        versions = ", ".join(f"{k} {v}" for k, v in record["versions"].items() if v != "not installed")
        lines += [f"## {number}. {record['title']}", "",
                  f"Measured {record['date']} in {record['seconds']:.0f} s{' (--quick)' if record['quick'] else ''} "
                  f"with `{record['command']}`; machine: {record['machine']}; load average "
                  f"{record['load']} (1/5/15 min, before -> after).", "", f"Versions: {versions}.", "",
                  record["markdown"], ""]
        for plot in record.get("plots", []):
            if (out / plot).exists():
                lines += [f"![{record['title']}]({relative}/{plot})", ""]
    text = "\n".join(lines)
    markdown_path.write_text(text)
    return text


def _busy(load: str) -> bool:
    try:
        first = float(load.split()[0])
    except (ValueError, IndexError):
        return False
    return first > (os.cpu_count() or 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small settings, a few minutes in all")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, metavar="SECTION",
                        help=f"run these sections only ({', '.join(SECTIONS)}); saved ones are kept")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks",
                        help="where section results and plots go (default docs/benchmarks)")
    parser.add_argument("--markdown", type=Path, default=ROOT / "BENCHMARKS.md", help="the report to write")
    parser.add_argument("--assemble", action="store_true", help="only rebuild the report from saved sections")
    parser.add_argument("--mujoco-seconds", type=float,
                        help=f"training budget of one MuJoCo run (default {MUJOCO_SECONDS['full']:g} s; "
                             f"{MUJOCO_SECONDS['quick']:g} s with --quick)")
    args = parser.parse_args(argv)
    if args.mujoco_seconds:
        MUJOCO_SECONDS["quick" if args.quick else "full"] = args.mujoco_seconds
    args.out.mkdir(parents=True, exist_ok=True)
    command = "python benchmarks/run_all.py " + " ".join(shlex.quote(a) for a in (argv if argv is not None
                                                                                     else sys.argv[1:]))
    if not args.assemble:
        names = list(args.only or SECTIONS)
        for name in names:
            if args.quick and not args.only and name in QUICK_SKIPS:
                log(f"== {name}: skipped in --quick: {QUICK_SKIPS[name]}")
                continue
            run_section(name, args.quick, args.out, command.strip())
    assemble(args.out, args.markdown)
    log(f"wrote {args.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
