"""Observation normalization as in Salimans et al. 2017: running mean and std, clipped inputs.

Workers normalize every observation with the statistics they were sent at the start of the
generation: ``clip((obs - mean) / std, -clip, clip)``. A fraction of the rollouts also report the
moments of the raw observations they saw (count, mean, sum of squared deviations per row). The
driver folds these rows into the running statistics in row order with Chan et al.'s parallel
formula, so the result does not depend on how the rows were split among workers, and ships the new
mean and std with the next generation's center.

As in OpenAI's ``es_distributed`` code the variance has a floor of ``1e-2`` (std >= 0.1), so a
constant feature is not blown up, and std is 1 before anything was seen.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["RunningStats", "Normalizer", "Moments", "SlotMoments", "episode_moments", "combine_moments",
           "sampled_rows"]

#: (count, mean, sum of squared deviations) of a sample of observations.
Moments = tuple[float, np.ndarray, np.ndarray]

VARIANCE_FLOOR = 1e-2
# A spawn key that keeps the sampling decision independent of every other use of the seed.
_SAMPLE_KEY = 0x6F627374  # "obst"


def episode_moments(observations: np.ndarray) -> Moments:
    """(count, mean, sum of squared deviations) of ``observations`` (T, d), two-pass."""
    obs = np.asarray(observations, dtype=np.float64)
    count = float(len(obs))
    if not count:
        return 0.0, np.zeros(obs.shape[1]), np.zeros(obs.shape[1])
    mean = obs.mean(axis=0)
    m2 = np.square(obs - mean).sum(axis=0)
    return count, mean, m2


class SlotMoments:
    """Running observation moments of the episodes in ``capacity`` slots, one update per step.

    Per slot it keeps the count, the plain sum of the observations and, shifted by the episode's
    first observation ``k``, the sums of ``x - k`` and ``(x - k)**2``. :meth:`add` folds one step's
    observations of the given slots in with a few whole-array operations (no list of rows, no array
    built at the episode's end), and :meth:`take` gives the episode's moments:

    - the mean is ``sum / count``: the rows are added one after another, as numpy's
      ``obs.mean(axis=0)`` adds them, so the mean has the bits of the two-pass
      :func:`episode_moments`;
    - the sum of squared deviations is ``S2 - S1**2 / count`` of the shifted sums (the "shifted
      data" formula; the shift by an observation of the same episode keeps it accurate where the
      plain ``sum(x**2) - sum(x)**2 / n`` cancels catastrophically). A two-pass ``m2`` needs the
      final mean, so every observation kept until the episode ends, which is what this replaces;
      so ``m2`` is within rounding of :func:`episode_moments`'s, not bit-equal to it.
    """

    def __init__(self, capacity: int, size: int):
        self.size = int(size)
        self.count = np.zeros(int(capacity), dtype=np.int64)
        self.shift = np.zeros((int(capacity), self.size), dtype=np.float64)
        # per slot: plain sum, shifted sum, shifted sum of squares
        self.sums = np.zeros((int(capacity), 3, self.size), dtype=np.float64)
        # add's scratch: per slot the row, its shift and the shift's square, added to sums in one go
        self._terms = np.zeros((int(capacity), 3, self.size), dtype=np.float64)

    def start(self, slot: int, first: np.ndarray) -> None:
        """A new episode in ``slot`` whose first observation is ``first``."""
        self.count[slot] = 0
        self.shift[slot] = first
        self.sums[slot] = 0.0

    def add(self, x: np.ndarray, slots: slice | np.ndarray) -> None:
        """Fold in the observations ``x[slots]`` of ``slots`` (a slice ``0:live`` or indices).

        The three terms of each row (``x``, ``x - k``, ``(x - k)**2``, in float64) are written into
        a scratch block and added to the sums in ONE operation: the same additions element by
        element as three separate ones, so the same bits, in fewer numpy calls per step."""
        rows = x[slots]
        terms = self._terms[: len(rows)]
        np.copyto(terms[:, 0], rows)  # float64: what sums += rows would cast rows to
        shifted = np.subtract(rows, self.shift[slots], out=terms[:, 1], dtype=np.float64)
        np.multiply(shifted, shifted, out=terms[:, 2])
        if isinstance(slots, slice):
            self.sums[slots] += terms
        else:
            self.sums[slots] = self.sums[slots] + terms
        self.count[slots] += 1

    def move(self, src: int, dst: int) -> None:
        """Give slot ``dst`` the running episode of slot ``src``."""
        self.count[dst] = self.count[src]
        self.shift[dst] = self.shift[src]
        self.sums[dst] = self.sums[src]

    def take(self, slot: int) -> Moments:
        """(count, mean, sum of squared deviations) of the episode in ``slot`` so far."""
        n = int(self.count[slot])
        if not n:
            return 0.0, np.zeros(self.size), np.zeros(self.size)
        total, shifted, squares = self.sums[slot]
        m2 = np.maximum(squares - np.square(shifted) / n, 0.0)
        return float(n), total / n, m2


def combine_moments(a: Moments, b: Moments) -> Moments:
    """Moments of the union of two samples (Chan, Golub & LeVeque)."""
    na, mean_a, m2_a = a
    nb, mean_b, m2_b = b
    if nb == 0:
        return a
    if na == 0:
        return b
    n = na + nb
    delta = mean_b - mean_a
    mean = mean_a + delta * (nb / n)
    m2 = m2_a + m2_b + np.square(delta) * (na * nb / n)
    return n, mean, m2


def sampled_rows(seeds: np.ndarray, probability: float) -> np.ndarray:
    """Which rows report observation statistics: a function of each row's seed alone."""
    if probability >= 1.0:
        return np.ones(len(seeds), dtype=bool)
    if probability <= 0.0:
        return np.zeros(len(seeds), dtype=bool)
    threshold = probability * 2.0**32
    draws = [np.random.SeedSequence(int(s), spawn_key=(_SAMPLE_KEY,)).generate_state(1)[0] for s in seeds]
    return np.asarray(draws, dtype=np.float64) < threshold


class RunningStats:
    """Count, mean and sum of squared deviations of every observation folded in so far."""

    def __init__(self, size: int):
        self.size = int(size)
        self.count = 0.0
        self.mean = np.zeros(self.size, dtype=np.float64)
        self.m2 = np.zeros(self.size, dtype=np.float64)

    def fold_rows(self, counts: np.ndarray, means: np.ndarray, m2s: np.ndarray) -> None:
        """Fold per-row moments in, in row order (rows with count 0 add nothing)."""
        moments = (self.count, self.mean, self.m2)
        for i in np.flatnonzero(np.asarray(counts) > 0):
            moments = combine_moments(moments, (float(counts[i]), means[i], m2s[i]))
        self.count, self.mean, self.m2 = float(moments[0]), np.array(moments[1]), np.array(moments[2])

    @property
    def std(self) -> np.ndarray:
        if self.count < 1:
            return np.ones(self.size, dtype=np.float64)
        return np.sqrt(np.maximum(self.m2 / self.count, VARIANCE_FLOOR))

    def normalizer(self, clip: float) -> Normalizer:
        return Normalizer(self.mean.copy(), self.std, clip)

    def state_dict(self) -> dict[str, object]:
        return {"obs_count": self.count, "obs_mean": self.mean.copy(), "obs_m2": self.m2.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        mean = np.array(state["obs_mean"], dtype=np.float64).reshape(-1)
        m2 = np.array(state["obs_m2"], dtype=np.float64).reshape(-1)
        if mean.shape != (self.size,) or m2.shape != (self.size,):
            from ...errors import StateError

            raise StateError(
                f"observation statistics are for {mean.size} features, but this problem's "
                f"observations have {self.size}; the state comes from another environment"
            )
        self.count = float(np.asarray(state["obs_count"]))
        self.mean, self.m2 = mean, m2


class Normalizer:
    """``clip((obs - mean) / std, -clip, clip)`` as float32 policy inputs."""

    def __init__(self, mean: np.ndarray, std: np.ndarray, clip: float):
        self.mean = np.asarray(mean, dtype=np.float64)
        self.std = np.asarray(std, dtype=np.float64)
        self.clip = float(clip)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        z = (obs - self.mean) / self.std
        np.clip(z, -self.clip, self.clip, out=z)
        return z.astype(np.float32)

    def into(self, obs: np.ndarray, z: np.ndarray, out: np.ndarray) -> np.ndarray:
        """What ``self(obs)`` returns, computed in the float64 buffer ``z`` and written into the
        float32 buffer ``out`` (both shaped as ``obs``): the same operations in the same order,
        so the same bits, with no array allocated (the rollout engine's path, once per step)."""
        np.subtract(obs, self.mean, out=z)
        np.divide(z, self.std, out=z)
        np.maximum(z, -self.clip, out=z)  # np.clip's result (NaN stays NaN), without its Python wrappers
        np.minimum(z, self.clip, out=z)
        np.copyto(out, z, casting="same_kind")
        return out
