"""JAX-native tasks: a whole generation's rollouts as one compiled call (``gymnax:ENV``, ``brax:ENV``).

The modules here import JAX and gymnax only when a problem is built or evaluated, never on
import (Brax likewise), and nothing outside this package imports them (the core never imports
JAX): a minimal install lists the problems and refuses to build them
with one line naming the ``jax`` extra.

- :mod:`.runtime`: importing JAX, gymnax and Brax, with the one-line error when they are missing.
- :mod:`.policies`: linear and MLP policies as pure JAX functions of one parameter row.
- :mod:`.device_noise`: the compact population (noise offsets, signs, sigma, bases) expanded on
  the device, from a noise table uploaded once per process.
- :mod:`.batched`: what both problems share: the protocol side (dense or compact rows, seeds,
  read-back, observation statistics) and the compiled generation with done-masking.
- :mod:`.gymnax`: the ``gymnax`` problem (``jit(vmap(rollout))`` over the population).
- :mod:`.brax`: the ``brax`` problem (the same, a ``lax.scan`` over Brax's steps).
- :mod:`.presets`: goals and budgets per task.
"""
