"""EvoTorch's VecGymNE on a Brax environment: the peer side of ``jax_tasks.py --evotorch-python``.

    /tmp/o27peers/bin/python benchmarks/evotorch_brax.py '{"env": "ant", "popsize": 64, ...}'

Run in the peers' own interpreter (torch, evotorch, brax, jax), never in blackbox's: it imports no
blackbox. It times ``generations + 1`` SNES generations (the first, compiling, apart) of VecGymNE on
``brax::<env>`` and prints one JSON line: first_wall, wall and cpu per generation, counted env steps
(VecGymNE's interaction count: each episode until its first done).

EvoTorch 0.6.1 does not run on JAX 0.10 as shipped: its ``evotorch/neuroevolution/net/vecrl.py``
calls ``jax.tree_map`` when it builds a Brax env (line 1429: ``AttributeError: module 'jax' has no
attribute 'tree_map'``), then ``jax.dlpack.to_dlpack`` at every reset and step (line 57), and hands
``jax.dlpack.from_dlpack`` a DLPack capsule (line 63), which it takes no more (it wants an object with
``__dlpack__``); JAX deprecated and then removed all three. :func:`shim` puts them back, each as the JAX
call that replaced it, so the timings are EvoTorch's own loop. Its ``VectorEnvFromBrax`` also drops
every env option but ``num_envs`` and ``auto_reset`` (its ``filtered_kwargs`` is never filled), so the
Brax backend and episode length are given to ``brax.envs.create`` here instead.
"""

from __future__ import annotations

import functools
import json
import sys
import time


def shim() -> list[str]:
    """Restore the JAX names EvoTorch 0.6.1 calls; the names restored (none on an old JAX)."""
    import jax
    import jax.dlpack

    restored = []
    if not hasattr(jax, "tree_map"):
        jax.tree_map = jax.tree_util.tree_map  # type: ignore[attr-defined]
        restored.append("jax.tree_map")
    if not hasattr(jax.dlpack, "to_dlpack"):
        jax.dlpack.to_dlpack = lambda x: x  # torch's from_dlpack takes any object with __dlpack__
        restored.append("jax.dlpack.to_dlpack")
        import evotorch.neuroevolution.net.vecrl as vecrl

        vecrl.torch_to_jax = lambda tensor: jax.dlpack.from_dlpack(tensor)  # a tensor, not a capsule
        restored.append("torch_to_jax")
    return restored


def main(options: dict) -> dict:
    import brax
    import brax.envs
    import evotorch
    import torch
    from evotorch.algorithms import SNES
    from evotorch.neuroevolution import VecGymNE

    restored = shim() if options.get("shim", True) else []
    brax.envs.create = functools.partial(brax.envs.create, backend=options["backend"],
                                         episode_length=options["episode_length"])
    hidden = options["hidden"]
    network = f"Linear(obs_length, {hidden}) >> Tanh() >> Linear({hidden}, act_length) >> Tanh()"
    problem = VecGymNE(f"brax::{options['env']}", network, observation_normalization=False, num_episodes=1)
    center = torch.tensor(options["x0"], dtype=torch.float32) if options.get("x0") is not None else None
    searcher = SNES(problem, popsize=options["popsize"], stdev_init=options["sigma"], center_init=center)
    torch.manual_seed(0)
    first = wall = cpu = 0.0
    steps = 0
    for generation in range(options["generations"] + 1):
        before = problem.interaction_count
        w, c = time.perf_counter(), time.process_time()
        searcher.step()
        w, c = time.perf_counter() - w, time.process_time() - c
        if generation == 0:
            first = w
        else:
            wall, cpu, steps = wall + w, cpu + c, steps + problem.interaction_count - before
    generations = options["generations"]
    return {"first_wall": first, "wall": wall / generations, "cpu": cpu / generations, "steps": steps,
            "dim": int(problem.solution_length), "restored": restored,
            "versions": {"evotorch": evotorch.__version__, "torch": torch.__version__,
                         "brax": getattr(brax, "__version__", "?"), "jax": __import__("jax").__version__}}


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))), flush=True)
