"""OpenAI-ES on CartPole-v1 with two worker processes (loky), saved as a run directory.

    python examples/cartpole_loky.py                   # until the center holds 475 for 3 generations
    BLACKBOX_SMOKE=1 python examples/cartpole_loky.py  # 3 generations (CI)

The same seed gives the same result with any executor and any number of workers: the run is
repeated with the serial executor and the two final centers are compared bit for bit.
"""

import os
import tempfile
from pathlib import Path

import numpy as np

from blackbox.config.run import ResolvedRun, run_config
from blackbox.files import load_npz
from blackbox.lab.runs import start_run

SMOKE = os.environ.get("BLACKBOX_SMOKE", "") not in ("", "0")
STOP = {"generations": 3} if SMOKE else {"generations": 100, "goal": 475.0, "goal_generations": 3}


def config(executor: str) -> ResolvedRun:
    """The resolved run; its `to_dict()` is exactly what `blackbox run` writes into RUN/config.toml."""
    return run_config("openai-es:popsize=50,sigma=0.1,lr=0.03", "gym:CartPole-v1", executor, seed=1, stop=STOP)


out = Path(os.environ.get("BLACKBOX_EXAMPLE_OUT") or tempfile.mkdtemp(prefix="cartpole-loky-"))
loky = start_run(config("loky:workers=2"), out / "loky", overwrite=True, show_progress=not SMOKE)
serial = start_run(config("serial"), out / "serial", overwrite=True)
print(f"loky: center return {loky['center_fitness']} after {loky['generations']} generations, "
      f"{loky['steps']} steps, {loky['wall_time']:.2f} s (serial: {serial['wall_time']:.2f} s)")
same = np.array_equal(load_npz(out / "loky" / "solution.npz")["center"],
                      load_npz(out / "serial" / "solution.npz")["center"])
print(f"same final center with loky and serial: {same}; runs saved in {out}")
assert same, "loky and serial runs differ"
