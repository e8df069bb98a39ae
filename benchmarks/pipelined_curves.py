"""Learning curves of the pipelined mode beside the synchronous loop: CartPole, Hopper, HalfCheetah.

    nice -n 19 python benchmarks/pipelined_curves.py [--envs CartPole-v1 Hopper-v5 HalfCheetah-v5]
        [--seeds 0 1 2] [--generations 40 60 60] [--executor loky:workers=2] [--out runs/pipelined]
        [--report benchmarks/PIPELINED.md]

Each task runs OpenAI-ES with the task's preset (``blackbox run``'s recommended settings: popsize,
sigma, learning rate, observation normalization) for the same number of generations, once per seed
in each mode; the pipelined mode samples generation g+1 before g is told, so every update is one
generation old. The curves are the unperturbed center's return each generation (the number the
records call ``center``); the report gives its mean and spread over the seeds at a few points, the
best center return, the generations each run took (a run stops early once the center holds the
task's preset goal, e.g. 475 on CartPole; its curve then keeps its last value), and a plot per task
(``--report``'s folder, ``pipelined-<task>.png``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from blackbox.config.run import run_config
from blackbox.lab.runs import start_run


def train(env: str, seed: int, generations: int, pipelined: bool, executor: str, out: Path) -> list[float]:
    config = run_config("openai-es", f"gym:{env}", executor, seed=seed, pipelined=pipelined,
                        stop={"generations": generations}, checkpoint={"every": 0})
    folder = out / env / ("pipelined" if pipelined else "synchronous") / f"seed-{seed}"
    start_run(config, folder, overwrite=True, show_progress=False)
    records = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines() if line]
    return [float(r["center"]) for r in records]


def padded(curves: list[list[float]], generations: int) -> np.ndarray:
    """Seeds x generations; a run that met the task's preset goal early keeps its last value."""
    return np.array([curve + [curve[-1]] * (generations - len(curve)) for curve in curves])


def summary(curves: dict, generations: int) -> list[str]:
    points = sorted({max(1, generations // 4), generations // 2, 3 * generations // 4, generations})
    lines = []
    for mode in ("synchronous", "pipelined"):
        runs = padded(curves[mode], generations)
        cells = [f"{runs[:, p - 1].mean():,.1f} ± {runs[:, p - 1].std():,.1f}" for p in points]
        best = runs.max(axis=1)
        ran = ", ".join(str(len(c)) for c in curves[mode])
        lines.append(f"| {mode} | " + " | ".join(cells) + f" | {best.mean():,.1f} ± {best.std():,.1f} | {ran} |")
    header = "| mode | " + " | ".join(f"gen {p}" for p in points) + " | best center | generations run |"
    return [header, "|---|" + "---:|" * (len(points) + 2), *lines]


def plot(env: str, curves: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for mode, color in (("synchronous", "tab:blue"), ("pipelined", "tab:orange")):
        runs = padded(curves[mode], max(len(c) for m in curves.values() for c in m))
        x = np.arange(1, runs.shape[1] + 1)
        for run in runs:
            ax.plot(x, run, color=color, alpha=0.25, linewidth=0.8)
        ax.plot(x, runs.mean(axis=0), color=color, label=f"{mode} (mean of {len(runs)})")
    ax.set_xlabel("generation")
    ax.set_ylabel("center return")
    ax.set_title(f"OpenAI-ES on {env}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=["CartPole-v1", "Hopper-v5", "HalfCheetah-v5"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--generations", type=int, nargs="+", default=[40, 60, 60], help="one per task")
    parser.add_argument("--executor", default="loky:workers=2")
    parser.add_argument("--out", type=Path, default=Path("runs/pipelined"))
    parser.add_argument("--report", type=Path, help="write the tables (and plots beside it) to this markdown file")
    args = parser.parse_args()
    started = time.time()
    sections = []
    for env, generations in zip(args.envs, args.generations):
        curves: dict[str, list[list[float]]] = {"synchronous": [], "pipelined": []}
        for seed in args.seeds:
            for pipelined in (False, True):
                curve = train(env, seed, generations, pipelined, args.executor, args.out)
                curves["pipelined" if pipelined else "synchronous"].append(curve)
                print(f"{env} seed {seed} {'pipelined' if pipelined else 'synchronous'}: last center "
                      f"{curve[-1]:,.1f}, best {max(curve):,.1f} ({time.time() - started:.0f} s)", flush=True)
        table = summary(curves, generations)
        print("\n".join(table), flush=True)
        sections.append((env, generations, table, curves))
        if args.report:
            plot(env, curves, args.report.with_name(f"pipelined-{env.split('-')[0].lower()}.png"))
    if args.report:
        text = [f"Center return (mean ± std over seeds {', '.join(map(str, args.seeds))}) of OpenAI-ES with each "
                f"task's preset, `{args.executor}`, {time.time() - started:.0f} s in all. Command: "
                f"`python benchmarks/pipelined_curves.py --report {args.report}`.", ""]
        for env, generations, table, _ in sections:
            text += [f"### {env} ({generations} generations)", "", *table, "",
                     f"![{env}](pipelined-{env.split('-')[0].lower()}.png)", ""]
        args.report.write_text("\n".join(text))


if __name__ == "__main__":
    main()
