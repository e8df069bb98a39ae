"""Run configs written by 0.1.0, read as they were meant.

0.1.0 wrote every option of a strategy into ``RUN/config.toml`` (and into each checkpoint), among
them the optimizer options that strategies took flat, at their defaults even where the chosen
optimizer does not use them: ``momentum = 0.9`` beside ``optimizer = "adam"``, ``beta1 = 0.9`` beside
``optimizer = "clipup"``. 0.1.0 ignored those; now an option the optimizer does not use is refused
(a warning when it holds 0.1.0's default). :func:`upgrade_v010` drops exactly these from a config's
``[strategy]`` table, so a 0.1.0 run resumes (and compares with its checkpoints) as it did.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError
from ..strategies.optim import RULES, read_optimizer_spec
from ..strategies.param_groups import FLAT_OPTIONS

__all__ = ["upgrade_v010"]


def upgrade_v010(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """``config`` without the flat optimizer options at 0.1.0's defaults that its optimizer does not use.

    Only a ``[strategy]`` table with an ``optimizer`` name is touched; anything else (and a config
    with nothing to drop) comes back as it is.
    """
    strategy = config.get("strategy")
    if not isinstance(strategy, Mapping) or not isinstance(strategy.get("optimizer"), str):
        return config
    try:
        name, _ = read_optimizer_spec(strategy["optimizer"])
    except ConfigError:
        return config  # the strategy refuses it with the full message
    used = RULES[name].option_names()
    unused = [key for key, default in FLAT_OPTIONS.items()
              if key not in used and key in strategy and strategy[key] == default and default is not None]
    if not unused:
        return config
    return {**config, "strategy": {key: value for key, value in strategy.items() if key not in unused}}
