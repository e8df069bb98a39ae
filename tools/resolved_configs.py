"""Resolved configs and error messages of many flag sets and tables, as JSON: compare two checkouts.

    PYTHONPATH=/path/to/other/checkout python tools/resolved_configs.py > before.json
    python tools/resolved_configs.py > after.json && diff before.json after.json

Each case is resolved as ``blackbox run`` resolves it (``resolve_run_config``; no run starts):
``run.to_dict()`` (what ``RUN/config.toml`` holds) or the ConfigError's message. A refactor of the
resolve pass (issue 26) must leave the output identical.
"""

import json
import sys
import warnings

from blackbox.cli import build_parser
from blackbox.cli.run import apply_flags
from blackbox.config.run import read_run_config, resolve_run_config, run_config
from blackbox.config.toml import ConfigDoc
from blackbox.errors import BlackboxError

warnings.simplefilter("ignore")

CASES = [
    "--problem gym:Pendulum-v1 --strategy ars --set sigma=0.0371 --generations 1",
    "--problem gym:Pendulum-v1",
    "--problem gym:Hopper-v5 --set popsize=8 --generations 1",
    "--problem gym:Hopper-v5 --set weight_decay=0 --generations 1",
    "--problem gym:CartPole-v1",
    "--problem gym:CartPole-v1 --strategy nes",
    "--problem gym:CartPole-v1,episodes=3 --set problem.env=Acrobot-v1 --generations 2",
    "--problem gym:MountainCar-v0",
    "--problem gym:MountainCar-v0,max_episode_steps=20 --set popsize=4 --generations 1",
    "--problem quadratic:dim=10 --strategy nes:popsize=100 --generations 5",
    "--problem sphere:3 --generations 5",
    "--problem sphere:3,4 --generations 5",
    "--problem sphere --set dim=3 --set problem.dimm=3 --generations 5",
    "--strategy nes:sigmaa=0.2 --problem sphere:dimm=4 --generations 2",
    "--strategy cma-es --problem rosenbrock:dim=5 --generations 2",
    "--strategy openai-es --set seed=3 --generations 2",
    "--strategy openai-es --set dim=3 --generations 2",
    "--strategy openai-es --set x0=[1,2] --problem sphere:dim=2 --generations 2",
    "--strategy openai-es --set sigma=abc --generations 2",
    "--strategy ga --generations 2 --executor loky:workers=2",
    "--strategy snes --problem rastrigin:dim=7 --max-evaluations 100 --set lr=0.1 --no-preset",
    "--problem gym:Pendulum-v1 --no-preset --generations 3",
    "--problem gym:Pendulum-v1 --goal 10",
    "--problem gym:Acrobot-v1 --set problem.obs_norm=true --set problem.obs_norm_prob=0.5 --generations 1",
    "--problem gym:Acrobot-v1,bogus=1 --generations 1",
    "--executor serial:bogus=1 --generations 1",
    "--executor threads --generations 1",
    "--strategy pepg --generations 1",
    "--problem gym:HalfCheetah-v5 --generations 1",
    "--problem gym:Pendulum-v1 --strategy openai-es --set popsize=10 --max-time 5",
]
TABLES = [
    {"strategy": {"name": "nes", "popsize": 20}, "problem": {"spec": "sphere:4", "dim": 5}, "stop": {"generations": 2}},
    {"strategy": "nes:popsize=20", "problem": {"name": "gym", "env": "Pendulum-v1"}, "stop": {"generations": 2}},
    {"problem": {"spec": "gym:Pendulum-v1", "episodes": 2}},
]
out = []
parser = build_parser()
for case in CASES:
    try:
        args = parser.parse_args(["run", *case.split()])
        config = read_run_config(None)
        apply_flags(config, args)
        out.append([case, resolve_run_config(config).to_dict()])
    except BlackboxError as exc:
        out.append([case, "ERROR " + str(exc)])
for table in TABLES:
    try:
        out.append([repr(table), resolve_run_config(read_run_config(ConfigDoc(None, table))).to_dict()])
    except BlackboxError as exc:
        out.append([repr(table), "ERROR " + str(exc)])
for args, kwargs in [(("nes:popsize=100", "quadratic:dim=10"), {"stop": {"generations": 5}, "sigma": 0.05}),
                     (("ars", "gym:Pendulum-v1"), {}), (("ars", "gym:Pendulum-v1"), {"stop": {"generations": 5}})]:
    try:
        out.append([repr((args, kwargs)), run_config(*args, **kwargs).to_dict()])
    except BlackboxError as exc:
        out.append([repr((args, kwargs)), "ERROR " + str(exc)])
json.dump(out, sys.stdout, indent=1, default=repr)
