"""A strategy's starting point: open until it is chosen, then moved by one explicit step.

A strategy built without ``x0`` starts at zeros, and :func:`blackbox.optimize` moves it to the
problem's ``initial_params`` before the first ``ask()`` (:meth:`StartPoint.start_at`). The start is
chosen once ``x0`` is given, a state is loaded, the first ``ask()`` is made or ``start_at`` is
called; after that it cannot move.

What derives from the start is derived in one place, the strategy's ``_start()`` hook: the base
constructor ends with it, and ``start_at`` calls it again after putting the new ``x0`` (checked as
the constructor checks it) in the center. A GA's parents, a float32 strategy's rounded center and
a wrapped library's object are made there, so that a strategy moved by ``start_at`` is the one its
constructor makes with that ``x0``, bit for bit, without building it a second time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._validate import check_dim_x0
from ..errors import StateError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike

    from .population import Population

__all__ = ["StartPoint"]


class StartPoint:
    """The part of :class:`~blackbox.core.strategy.Strategy` that keeps its start open and moves it."""

    dim: int
    generation: int
    _center: np.ndarray
    _pending: Population | None
    #: True while no ``x0`` was given, no state loaded, no population asked and ``start_at`` not called.
    _start_open: bool = False

    def _start(self) -> None:
        """Derive from the center (the start) what depends on it: a GA's parents, a float32 center's
        rounding, a wrapped library's object. The constructor ends with it, :meth:`start_at` calls it
        again; an override calls ``super()._start()``."""

    def _settle_start(self) -> None:
        """The start is chosen: it cannot move any more."""
        self._start_open = False

    @property
    def start_chosen(self) -> bool:
        """True once the starting point is settled: ``x0`` was given, :meth:`start_at` was called,
        a state was loaded, or the first ``ask()`` was made. Until then the center is the default
        ``x0`` (zeros), and :func:`blackbox.optimize` moves it to the problem's ``initial_params``."""
        return not self._start_open or self.generation != 0 or self._pending is not None

    def start_at(self, x0: ArrayLike) -> None:
        """Move the start of this strategy to ``x0``: the center becomes ``x0`` and the strategy's
        ``_start()`` derives from it what depends on it.

        Only before the first ``ask()`` and only when no ``x0`` was given (StateError otherwise):
        the strategy then is exactly the one its constructor makes with this ``x0`` (everything
        derived from the start, such as a GA's parents, included).
        """
        if self.start_chosen:
            raise StateError(
                f"start_at() moves a strategy whose start is still open; this one {self._start_settled_by()}. "
                f"Pass x0= when you build the strategy instead"
            )
        self.dim, self._center = check_dim_x0(self.dim, x0)
        self._start()
        self._settle_start()

    def _start_settled_by(self) -> str:
        return ("has run a generation" if self.generation or self._pending is not None
                else "was given x0 or a loaded state")
