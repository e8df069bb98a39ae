"""ES against backpropagation over seeds and network sizes: the slowdown ratio as a table.

    python benchmarks/mnist_contrast.py [--problem mnist] [--hidden 16 64 256] [--seeds 3]
                                        [--target 0.95] [--max-time 60] [--threads 1]

Runs what ``blackbox contrast`` runs (same defaults: openai-es tuned for this job, Adam 0.01 with
batch 64, one torch thread) for each MLP width and seed, and prints per run the accuracy both
reach, each method's training time and passes to reach it, and ES's slowdown (wall time and
passes), then the median per width. The number of weights grows with the width; ES's gradient
estimate gets noisier with more weights, backprop's does not, so the ratio grows with the size.
Give ``--problem mnist:path=/data/mnist`` for the real MNIST. Times come from one shared machine,
run after run: compare ratios, not seconds, across machines.
"""

from __future__ import annotations

import argparse
import statistics

import blackbox as bb
from blackbox.lab.contrast import BLOG_SLOWDOWN, run_contrast


def fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default="mnist", help="problem spec without hidden= (default: mnist)")
    parser.add_argument("--hidden", type=int, nargs="+", default=[16, 64, 256], help="MLP widths")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--target", type=float, default=0.95)
    parser.add_argument("--max-time", type=float, default=60.0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    separator = "," if ":" in args.problem else ":"
    rows = []
    header = (f"{'hidden':>6} {'dim':>7} {'seed':>4} {'level':>6} {'ES s':>8} {'BP s':>8} "
              f"{'ES passes':>12} {'BP passes':>10} {'time x':>8} {'passes x':>9}")
    first = True
    for hidden in args.hidden:
        for seed in range(args.seeds):
            problem = bb.make_problem(f"{args.problem}{separator}hidden=[{hidden}]")
            if first:
                print(problem.data.statement)
                print(header)
                print("-" * len(header))
                first = False
            report = run_contrast(problem, max_time=args.max_time, target=args.target, seed=seed,
                                  threads=args.threads)
            c = report.comparison
            rows.append((hidden, c.time_ratio, c.pass_ratio))
            print(f"{hidden:>6} {problem.dim:>7,} {seed:>4} {c.level:>6.3f} {fmt(c.es_time, '8.3f')} "
                  f"{fmt(c.bp_time, '8.3f')} {fmt(c.es_passes, '12,')} {fmt(c.bp_passes, '10,')} "
                  f"{fmt(c.time_ratio, '8.1f')} {fmt(c.pass_ratio, '9.0f')}", flush=True)
    print("\nmedian slowdown of ES per width (OpenAI blog, MNIST: up to "
          f"{BLOG_SLOWDOWN:,.0f}x)")
    for hidden in args.hidden:
        times = [t for h, t, _ in rows if h == hidden and t is not None]
        passes = [p for h, _, p in rows if h == hidden and p is not None]
        print(f"  hidden {hidden:>4}: wall time {fmt(statistics.median(times) if times else None, '.1f')}x, "
              f"passes {fmt(statistics.median(passes) if passes else None, ',.0f')}x")


if __name__ == "__main__":
    main()
