"""Learning curve of OpenAI-ES on a MuJoCo task under a wall-time budget: a PNG and a table.

    python benchmarks/mujoco_curve.py --env Hopper-v5 --seconds 1800 [--executor serial] [--seed 0]
        [--set popsize=64 ...] [--problem-set episodes=1 ...] [--eval-every 60] [--out benchmarks/results]

Settings are the preset ``blackbox run --problem gym:<env>`` uses (the paper's sigma 0.02, Adam lr
0.01, L2 0.005, observation normalization), overridable with ``--set`` / ``--problem-set``. Every
generation logs the center's training return (1 episode, noisy); every ``--eval-every`` seconds the
center is also scored on ``--eval-episodes`` fresh episodes (not counted in the budget's steps, nor
in the training time). Writes ``<out>/<env>-seed<seed>.csv`` and ``.png`` (return against wall time
and against environment steps) and prints a table at every tenth of the budget. For reference,
Table 1 of Salimans et al. 2017 reports what ES reaches on these tasks with many more CPUs.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import blackbox as bb  # noqa: E402
from blackbox.driver.loop import Callback  # noqa: E402
from blackbox.problems.gym.presets import recommended  # noqa: E402
from blackbox.registry.spec import parse_value  # noqa: E402


class Curve(Callback):
    """Logs every generation and scores the center on fresh episodes every ``every`` seconds."""

    def __init__(self, problem, every: float, episodes: int, seed: int):
        self.problem, self.every, self.episodes, self.seed = problem, every, episodes, seed
        self.rows: list[dict] = []
        self.next_eval = 0.0
        self.eval_seconds = 0.0

    def on_generation(self, run, record):
        row = {"generation": record.generation, "time": record.time, "steps": record.steps,
               "center": record.center, "mean": record.mean, "best": record.best, "eval_mean": None,
               "eval_std": None}
        if record.time >= self.next_eval:
            started = time.perf_counter()
            returns = self.problem.score(run.strategy.center, self.episodes, seed=self.seed + record.generation)
            self.eval_seconds += time.perf_counter() - started
            row["eval_mean"], row["eval_std"] = float(np.mean(returns)), float(np.std(returns))
            self.next_eval = record.time + self.every
        self.rows.append(row)


def plot(rows: list[dict], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = np.array([r["time"] for r in rows]) / 60
    steps = np.array([r["steps"] for r in rows]) / 1e6
    center = np.array([np.nan if r["center"] is None else r["center"] for r in rows])
    evaluated = [(r["time"] / 60, r["steps"] / 1e6, r["eval_mean"], r["eval_std"]) for r in rows
                 if r["eval_mean"] is not None]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, x, k, label in ((axes[0], t, 0, "wall time (minutes)"), (axes[1], steps, 1, "environment steps (millions)")):
        ax.plot(x, center, lw=0.8, alpha=0.6, label="center, 1 training episode")
        if evaluated:
            e = np.array(evaluated)
            ax.errorbar(e[:, k], e[:, 2], yerr=e[:, 3], fmt="o-", ms=3, lw=1.5, capsize=2,
                        label="center, fresh episodes (mean +- std)")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("episode return")
    axes[0].legend(loc="lower right", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="Hopper-v5")
    parser.add_argument("--seconds", type=float, default=1800.0, help="wall-time budget of training")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--executor", default="serial", help="executor spec, e.g. serial or loky:workers=2")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--problem-set", dest="problem_settings", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--eval-every", type=float, default=60.0, help="seconds between fresh-episode scores")
    parser.add_argument("--eval-episodes", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)

    preset = recommended(args.env, "openai-es")
    options = {**preset["strategy"], **{k: parse_value(v) for k, v in (s.split("=", 1) for s in args.settings)}}
    problem_options = {**preset["problem"],
                       **{k: parse_value(v) for k, v in (s.split("=", 1) for s in args.problem_settings)}}
    problem = bb.make_problem("gym", env=args.env, **problem_options)
    es = bb.make_strategy("openai-es", dim=problem.dim, x0=problem.initial_params(np.random.default_rng(args.seed)),
                          seed=args.seed, **options)
    curve = Curve(problem, args.eval_every, args.eval_episodes, seed=10**6 + args.seed)
    print(f"openai-es on {args.env}: {problem.describe()['policy']}, dim {problem.dim}, strategy {options}, "
          f"problem {problem_options}, executor {args.executor}, budget {args.seconds:g} s")
    result = bb.optimize(es, problem, args.executor, max_time=args.seconds, seed=args.seed, callbacks=[curve])

    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"{args.env}-seed{args.seed}"
    with open(stem.with_suffix(".csv"), "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(curve.rows[0]))
        writer.writeheader()
        writer.writerows(curve.rows)
    plot(curve.rows, stem.with_suffix(".png"), f"OpenAI-ES on {args.env} (seed {args.seed}, {args.executor})")

    print(f"{'time':>8} {'gen':>5} {'env steps':>11} {'center (1 ep)':>13} {'pop mean':>9} "
          f"{'fresh eval mean':>15}")
    marks = [args.seconds * k / 10 for k in range(1, 11)]
    shown = set()
    for mark in marks:
        row = next((r for r in curve.rows if r["time"] >= mark), curve.rows[-1])
        if row["generation"] in shown:
            continue
        shown.add(row["generation"])
        last_eval = next((r["eval_mean"] for r in reversed(curve.rows[: curve.rows.index(row) + 1])
                          if r["eval_mean"] is not None), None)
        print(f"{row['time']:>7.0f}s {row['generation']:>5} {row['steps']:>11,} {row['center'] or float('nan'):>13.1f} "
              f"{row['mean']:>9.1f} {last_eval if last_eval is not None else float('nan'):>15.1f}")
    final = problem.score(result.center, 10, seed=2 * 10**6 + args.seed)
    print(f"final center over 10 fresh episodes: {np.mean(final):.1f} +- {np.std(final):.1f}; "
          f"{result.generations} generations, {result.steps:,} steps, {result.wall_time:.0f} s training "
          f"({curve.eval_seconds:.0f} s more in evaluations); wrote {stem}.csv and {stem}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
