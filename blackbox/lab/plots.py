"""Learning-curve figures (matplotlib, headless): one run's curve, and curves with interval bands.

matplotlib is an extra (``pip install 'blackbox-es[plot]'``), imported only here and only when a
figure is drawn. Figures are drawn with ``matplotlib.figure.Figure`` and the Agg canvas directly,
never through pyplot, so no display is needed and the user's backend is left alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Union

import numpy as np

from ..errors import ConfigError

if TYPE_CHECKING:
    from ..driver.record import Record

#: A generation's record: the driver's :class:`Record`, or a row read back from records.csv.
RecordLike = Union["Record", Mapping[str, "float | None"]]

__all__ = ["have_matplotlib", "plot_run", "plot_bands", "PLOT_EXTRA"]

PLOT_EXTRA = "pip install 'blackbox-es[plot]'"


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _figure(width: float, height: float, panels: int = 1):
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ConfigError(f"plots need matplotlib: {PLOT_EXTRA}") from None
    figure = Figure(figsize=(width, height))
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, panels, squeeze=False)[0]
    # Fixed margins: a layout engine would double the time to draw.
    figure.subplots_adjust(left=0.8 / width, right=1 - 0.25 / width, bottom=0.55 / height,
                           top=1 - 0.45 / height, wspace=0.25)
    return figure, list(axes)


def _scale_y(axis, values: Sequence[np.ndarray]) -> None:
    """Symmetric-log y axis for negated losses spanning many decades (test functions), else linear."""
    data = np.concatenate([np.asarray(v, float).ravel() for v in values]) if values else np.zeros(0)
    data = data[np.isfinite(data)]
    if len(data) < 2 or data.max() > 0:
        return
    magnitudes = np.abs(data[data != 0])
    if len(magnitudes) == 0 or magnitudes.max() / magnitudes.min() < 1e3:
        return
    floor = max(float(np.quantile(magnitudes, 0.02)), 1e-300)
    axis.set_yscale("symlog", linthresh=10.0 ** math.floor(math.log10(floor)))


#: Beyond this magnitude matplotlib's margins and ticks overflow (they add and subtract spans of the
#: data): such curves are drawn divided by a power of ten, which the axis label gives.
_HUGE = 1e300


def _huge_scale(records: Sequence[RecordLike], names: Sequence[str]) -> float:
    """1.0, or the power of ten to divide fitness by when a finite value is too large to draw."""
    data = np.concatenate([_column(records, name) for name in names]) if records else np.zeros(0)
    data = np.abs(data[np.isfinite(data)])
    if not len(data) or data.max() <= _HUGE:
        return 1.0
    return 10.0 ** math.floor(math.log10(float(data.max())))


def _column(records: Sequence[RecordLike], name: str) -> np.ndarray:
    values = []
    for record in records:
        value = record[name] if isinstance(record, dict) else getattr(record, name)
        values.append(np.nan if value is None else float(value))
    return np.array(values, dtype=np.float64)


def plot_run(records: Sequence[RecordLike], path: str | Path, title: str = "") -> Path:
    """The run's learning curve: fitness against generations, and against steps (or evaluations)."""
    path = Path(path)
    figure, (left, right) = _figure(11, 4, 2)
    generation = _column(records, "generation")
    steps = _column(records, "steps")
    x_right, right_label = (steps, "environment steps") if len(steps) and np.nanmax(steps) > 0 else (
        _column(records, "evaluations"), "evaluations")
    lines = [("center", "center (unperturbed)", "C0", 2.0), ("best", "best member", "C1", 1.0),
             ("mean", "population mean", "C2", 1.0), ("best_ever", "best ever", "C3", 1.0)]
    scale = _huge_scale(records, [name for name, *_ in lines])
    for axis, x, label in ((left, generation, "generation"), (right, x_right, right_label)):
        shown = []
        for name, legend, color, width in lines:
            y = _column(records, name) / scale
            if np.isfinite(y).any():
                axis.plot(x, y, label=legend, color=color, linewidth=width,
                          linestyle="--" if name == "best_ever" else "-")
                shown.append(y)
        _scale_y(axis, shown)
        axis.set_xlabel(label)
        axis.set_ylabel("fitness (higher is better)" if scale == 1.0 else f"fitness / {scale:.0e} (higher is better)")
        axis.grid(alpha=0.3)
    left.legend(loc="lower right", fontsize="small")
    if title:
        figure.suptitle(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    return path


def plot_bands(
    curves: dict[str, dict[str, np.ndarray]], path: str | Path, *, xlabel: str, ylabel: str,
    title: str = "", target: float | None = None, band_label: str = "95% bootstrap interval",
) -> Path:
    """One line per method with a shaded band: ``curves[label] = {"x", "mean", "low", "high", "n"}``."""
    path = Path(path)
    figure, (axis,) = _figure(7.5, 4.5)
    for i, (label, curve) in enumerate(curves.items()):
        color = f"C{i % 10}"
        n = int(curve.get("n", 0))
        axis.plot(curve["x"], curve["mean"], color=color, linewidth=1.8, label=f"{label} (n={n})")
        axis.fill_between(curve["x"], curve["low"], curve["high"], color=color, alpha=0.2, linewidth=0)
    _scale_y(axis, [c["mean"] for c in curves.values()])
    if target is not None and math.isfinite(target):
        axis.axhline(target, color="black", linestyle=":", linewidth=1, label=f"target {target:g}")
    axis.set_xlabel(xlabel)
    axis.set_ylabel(ylabel)
    axis.grid(alpha=0.3)
    axis.legend(loc="best", fontsize="small", title=f"mean, band: {band_label}", title_fontsize="small")
    if title:
        axis.set_title(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    return path
