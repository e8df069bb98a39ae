"""JAX stays optional: importing blackbox, listing and making other problems, and even importing the
gymnax and brax problems' modules never imports JAX; only building such a problem does."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import ROOT

CODE = """
import sys
import blackbox as bb
import blackbox.core.executor, blackbox.core.population, blackbox.core.problem, blackbox.driver, blackbox.registry
import blackbox.problems.jax.gymnax, blackbox.problems.jax.policies, blackbox.problems.jax.device_noise
import blackbox.problems.jax.brax, blackbox.problems.jax.batched
from blackbox.registry.plugins import registry_for
registry_for("problem").load("gymnax")
registry_for("problem").load("brax")
bb.optimize("openai-es:popsize=8", "quadratic", "serial", max_generations=2, seed=0)
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("jax", "jaxlib", "gymnax", "flax", "brax", "mujoco"))
print(loaded)
"""


def test_the_core_never_imports_jax():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
