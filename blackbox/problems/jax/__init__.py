"""JAX-native tasks: a whole generation's rollouts as one compiled call (``gymnax:ENV``).

The modules here import JAX and gymnax only when a problem is built or evaluated, never on
import, and nothing outside this package imports them (the core never imports JAX): a minimal
install lists the problems and refuses to build them with one line naming the ``jax`` extra.

- :mod:`.runtime`: importing JAX and gymnax, with the one-line error when they are missing.
- :mod:`.policies`: linear and MLP policies as pure JAX functions of one parameter row.
- :mod:`.device_noise`: the compact population (noise offsets, signs, sigma, bases) expanded on
  the device, from a noise table uploaded once per process.
- :mod:`.gymnax`: the ``gymnax`` problem (``jit(vmap(rollout))`` over the population).
- :mod:`.presets`: goals and budgets per task.
"""
