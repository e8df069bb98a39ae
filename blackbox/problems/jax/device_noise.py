"""The compact population expanded on the device: the noise table goes up once, rows never do.

A compact population is per row a parent (index into the base vectors), a noise-table offset and a
sign, plus sigma and the bases (:mod:`blackbox.core.population`). :class:`DeviceNoise` keeps one
device copy of each noise table per process and device (uploaded on first use), and
:func:`compact_arrays` turns a population into the few small arrays a generation sends: int32
offsets and parents, float32 signs, float32 sigma and bases. :func:`expand` builds the rows from
them inside the compiled generation, in float32, with the arithmetic of
``Population.dense(np.float32)``::

    row i = float32(bases[parents[i]]) + noise_i * float32(signs[i] * sigma)     (sign 0: the base)

so the device rows equal the host's float32 rows (on the CPU backend bit for bit, where XLA keeps
the multiply and the add apart; a GPU may fuse them, a rounding apart) and differ from the float64
``Population.params`` by float32 rounding alone.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np

from ...core.population import Population

if TYPE_CHECKING:
    import jax

__all__ = ["DeviceNoise", "compact_arrays", "expand"]


class DeviceNoise:
    """One device copy of each noise table ``(size, seed)`` per device, uploaded on first use."""

    _copies: dict[tuple[int, int, str], jax.Array] = {}
    _lock = threading.Lock()

    @classmethod
    def table(cls, population: Population, device: jax.Device) -> jax.Array:
        """The device array of the population's noise table (uploaded once per process and device)."""
        import jax

        table = population.table
        assert table is not None
        key = (table.size, table.seed, str(device))
        with cls._lock:
            copy = cls._copies.get(key)
            if copy is None:
                copy = cls._copies[key] = jax.device_put(np.asarray(table.data, dtype=np.float32), device)
            return copy

    @classmethod
    def clear(cls) -> None:
        """Drop every device copy (a test's way to count uploads)."""
        with cls._lock:
            cls._copies.clear()


def compact_arrays(population: Population) -> dict[str, np.ndarray]:
    """The small host arrays a compact population sends to the device each generation."""
    bases, parents, offsets, signs = population.bases, population.parents, population.offsets, population.signs
    assert bases is not None and parents is not None and offsets is not None and signs is not None
    sigma = population.sigma
    return {
        "bases": np.ascontiguousarray(bases, dtype=np.float32),
        "parents": parents.astype(np.int32),
        "offsets": np.where(signs == 0, 0, offsets).astype(np.int32),  # sign-0 rows read nothing
        "signs": signs.astype(np.float32),
        "sigma": np.asarray(sigma, dtype=np.float32),
    }


def expand(table: jax.Array, bases: jax.Array, parents: jax.Array, offsets: jax.Array, signs: jax.Array,
           sigma: jax.Array, dim: int) -> jax.Array:
    """The ``(m, dim)`` float32 rows on the device (traced inside a jitted function; ``dim`` static)."""
    import jax
    import jax.numpy as jnp

    noise = jax.vmap(lambda offset: jax.lax.dynamic_slice(table, (offset,), (dim,)))(offsets)
    coefficient = signs[:, None] * sigma  # exact: a sign is -1, 0 or +1
    perturbation = jnp.where(signs[:, None] != 0, noise * coefficient, jnp.float32(0))
    return perturbation + bases[parents]
