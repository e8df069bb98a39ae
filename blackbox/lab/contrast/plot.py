"""The contrast's picture: test accuracy against training wall time, ES beside backpropagation.

Drawn with matplotlib's Agg backend (no display needed) on a logarithmic time axis, because the
two methods differ by orders of magnitude. The title names the data, so an 8x8-digits plot is
never taken for an MNIST one. The accuracy both reach is a dashed line, with the slowdown ratio.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import ConfigError
from ...files import atomic_write
from .runner import BLOG_SLOWDOWN, ContrastReport

__all__ = ["plot_contrast"]


def _positive(curve):
    """Points with time > 0 (the log axis cannot show the untrained start at time 0)."""
    pairs = [(t, a) for t, a in zip(curve.times, curve.accuracies) if t > 0]
    return [t for t, _ in pairs], [a for _, a in pairs]


def plot_contrast(report: ContrastReport, path: str | Path) -> Path:
    """Save the plot as a PNG at ``path`` and return the path."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("the contrast plot needs matplotlib: pip install 'blackbox-es[mnist]'") from None
    comparison = report.comparison
    fig, ax = plt.subplots(figsize=(8, 5), dpi=120)
    for curve, color in ((report.es, "tab:red"), (report.backprop, "tab:blue")):
        times, accuracies = _positive(curve)
        ax.plot(times, accuracies, color=color, marker=".", markersize=3, linewidth=1.5, label=curve.method)
    ax.axhline(comparison.level, color="gray", linestyle="--", linewidth=1,
               label=f"accuracy both reach: {comparison.level:.3f}")
    for t, color in ((comparison.es_time, "tab:red"), (comparison.bp_time, "tab:blue")):
        if t is not None and t > 0:
            ax.axvline(t, color=color, linestyle=":", linewidth=1)
    if comparison.time_ratio is not None:
        ax.text(0.02, 0.04, f"ES needs {comparison.time_ratio:,.0f}x the wall time and "
                f"{comparison.pass_ratio:,.0f}x the passes of backprop\n"
                f"(OpenAI blog: up to {BLOG_SLOWDOWN:,.0f}x slower on MNIST)",
                transform=ax.transAxes, fontsize=9, verticalalignment="bottom",
                bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "lightgray"})
    ax.set_xscale("log")
    ax.set_xlabel("training wall time (s, log scale; test evaluations excluded)")
    ax.set_ylabel("test accuracy")
    ax.set_ylim(0.0, 1.0)
    ax.grid(True, which="both", alpha=0.3)
    model = report.problem.get("model", "?")
    ax.set_title(f"ES vs backprop, {model} with {report.problem.get('dim', '?'):,} weights\n"
                 f"data: {report.data_label}", fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path = Path(path)
    atomic_write(path, lambda handle: fig.savefig(handle, format="png"))
    plt.close(fig)
    return path
