"""A strategy's starting point while it is still open, and :meth:`~StartPoint.start_at`, which moves it.

A strategy built without ``x0`` starts at zeros, and :func:`blackbox.optimize` moves it to the
problem's ``initial_params`` before the first ``ask()``. Moving it means building the strategy
again as it was built, with that ``x0``: everything derived from the start (a GA's parents, a
wrapped library's object) then is what the constructor makes of it. :class:`StartPoint` records
the constructor's arguments for that, until the start is settled (``x0`` given, a state loaded,
the first ``ask()`` made, or :meth:`~StartPoint.start_at` called).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import StateError

if TYPE_CHECKING:
    from .population import Population

__all__ = ["StartPoint"]

_S = TypeVar("_S", bound="StartPoint")


class StartPoint:
    """The part of :class:`~blackbox.core.strategy.Strategy` that keeps its start open."""

    generation: int
    seed: int
    _pending: Population | None
    #: The constructor's arguments while the start is open (see :meth:`start_at`); an instance attribute.
    _construction: tuple[tuple[Any, ...], dict[str, Any]]

    def __new__(cls: type[_S], *args: Any, **kwargs: Any) -> _S:
        strategy = super().__new__(cls)
        # How it was built, so that start_at() can build it again at another x0 (dropped once the start is chosen).
        strategy._construction = (args, kwargs)
        return strategy

    def _settle_start(self) -> None:
        """The start is chosen: forget how the strategy was built."""
        self.__dict__.pop("_construction", None)

    @property
    def start_chosen(self) -> bool:
        """True once the starting point is settled: ``x0`` was given, :meth:`start_at` was called,
        a state was loaded, or the first ``ask()`` was made. Until then the center is the default
        ``x0`` (zeros), and :func:`blackbox.optimize` moves it to the problem's ``initial_params``."""
        return "_construction" not in self.__dict__ or self.generation != 0 or self._pending is not None

    def start_at(self, x0: Any) -> None:
        """Build this strategy again as it was built, with ``x0`` as its starting point.

        Only before the first ``ask()`` and only when no ``x0`` was given (StateError otherwise):
        the strategy then is exactly the one its constructor makes with this ``x0`` (everything
        derived from the start, such as a GA's parents, included).
        """
        construction = self.__dict__.get("_construction")
        if construction is None or self.start_chosen:
            raise StateError(
                f"start_at() moves a strategy whose start is still open; this one {self._start_settled_by()}. "
                f"Pass x0= when you build the strategy instead"
            )
        args, kwargs = construction
        kwargs = {**kwargs, "x0": x0, "seed": self.seed}
        type(self).__init__(self, *args, **kwargs)
        self._settle_start()

    def _start_settled_by(self) -> str:
        return ("has run a generation" if self.generation or self._pending is not None
                else "was given x0 or a loaded state")
