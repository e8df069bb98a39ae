"""Sigma schedules for the strategies whose sigma does not adapt itself (openai-es, nes, ga, ars).

After every ``tell()``: ``sigma <- max(sigma_min, sigma * sigma_decay)``. Decay 1 (the default)
keeps sigma fixed, as in Salimans et al. 2017; estool's ``sigma_decay=0.999, sigma_limit=0.01`` is
``sigma_decay=0.999, sigma_min=0.01`` here. The current sigma is part of every strategy's
``state_dict``, so a resumed run continues the schedule where it stopped; ``Record.sigma`` shows it
each generation.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ConfigError
from .validation import check_float

__all__ = ["SigmaSchedule"]


@dataclass(frozen=True)
class SigmaSchedule:
    """Multiplicative decay per generation down to a floor."""

    decay: float = 1.0
    minimum: float = 0.0

    @classmethod
    def checked(cls, sigma: float, sigma_decay: float, sigma_min: float) -> SigmaSchedule:
        """Validate the options ``sigma_decay`` (in (0, 1]) and ``sigma_min`` (in [0, sigma])."""
        decay = check_float("sigma_decay", sigma_decay, positive=True, maximum=1.0)
        minimum = check_float("sigma_min", sigma_min, nonnegative=True)
        if minimum > sigma:
            raise ConfigError(
                f"sigma_min must be <= sigma (the initial sigma, {sigma!r}), got {minimum!r}; "
                f"it is a floor that the decay stops at"
            )
        return cls(decay, minimum)

    def __call__(self, sigma: float) -> float:
        """The sigma of the next generation."""
        return max(self.minimum, sigma * self.decay)
