"""The policy a gym problem builds for its task: sized to its observations and actions, and checked
on one observation, so that a network that does not fit the task is one clear line at construction
rather than a failure in a worker."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import ConfigError
from .environment import pixel_scale
from .policies import TorchPolicy, make_policy

if TYPE_CHECKING:
    from .options import Policy
    from .problem import GymProblem

__all__ = ["task_policy"]


def task_policy(problem: GymProblem, options: Policy) -> Any:
    """The policy for ``problem``'s observations and actions, checked on one observation."""
    policy = make_policy(options.network, problem.obs_size, problem.adapter.out_size, options.hidden,
                         options.activation, obs_shape=getattr(problem.observation_space, "shape", None),
                         obs_scale=pixel_scale(problem.observation_space), vbn=problem.config.vbn is not None,
                         device=None if options.device is None else problem.device, threads=options.torch_threads,
                         bias=options.bias)
    if isinstance(policy, TorchPolicy):
        try:
            shape = policy.output_shape()
        except Exception as exc:  # noqa: BLE001 - any failure of user code on a probe observation
            raise ConfigError(
                f"the policy fails on one observation of {problem.where} ({problem.obs_size} values): "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if shape != (problem.adapter.out_size,):
            raise ConfigError(
                f"the policy's output for one observation has shape {shape}, but the action space "
                f"{problem.action_space} of {problem.where} needs {problem.adapter.out_size} values "
                f"({problem.adapter.describe()}); make the last layer output {problem.adapter.out_size}"
            )
    return policy
