"""ES against backpropagation on a supervised problem: the same network, data and evaluation.

``run_contrast(problem)`` trains both, measures test accuracy against training time and passes
through the network, and compares them at the accuracy both reach; ``blackbox contrast mnist`` is
the command around it.
"""

from .backprop import BackpropConfig, train_backprop
from .curves import Comparison, Curve, EvalSchedule, compare
from .es import ES_DEFAULTS, train_es
from .runner import BLOG_QUOTE, BLOG_SLOWDOWN, ContrastReport, run_contrast

__all__ = [
    "BLOG_QUOTE", "BLOG_SLOWDOWN", "BackpropConfig", "Comparison", "ContrastReport", "Curve",
    "ES_DEFAULTS", "EvalSchedule", "compare", "run_contrast", "train_backprop", "train_es",
]
