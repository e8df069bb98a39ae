"""What a gym problem says about itself (``GymProblem.describe()``): the task, the policy and the
options that change the objective, as plain JSON-able data for run records and reports."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .problem import GymProblem

__all__ = ["describe"]


def describe(problem: GymProblem) -> dict[str, object]:
    """The summary of ``problem``: always its task, sizes, policy and engine; an option only when set."""
    config = problem.config
    summary: dict[str, object] = {"name": problem.name, "env": problem.env_id, "dim": problem.dim, "policy": problem.policy.describe(),
               "actions": problem.adapter.describe(), "episodes": config.episodes.count,
               "max_episode_steps": problem.max_episode_steps, "obs_norm": config.obs_norm is not None,
               "batched": config.episodes.batched, "vectorized": problem.vectorized,
               "direct": problem.direct}
    if problem.atari or problem.frame_skip > 1 or problem.frame_stack > 1:
        summary.update(atari=problem.atari, frame_skip=problem.frame_skip, frame_stack=problem.frame_stack,
                       decisions_per_episode=problem.step_limit)
    if config.vbn is not None:
        summary["vbn"] = {"size": config.vbn.size, "seed": config.vbn.seed, "reference": problem.reference_digest}
    if problem.cap is not None:
        summary["episode_cap"] = problem.cap.describe()
    if config.episodes.reward_shift:
        summary["reward_shift"] = config.episodes.reward_shift
    if config.episodes.reward_floor is not None:
        summary["reward_floor"] = config.episodes.reward_floor
    if problem.shared_seed:
        summary["shared_seed"] = True
    requested = config.policy.device
    if requested is not None:
        summary["device"] = problem.device
        if requested != problem.device:
            summary["device_requested"] = requested  # "auto"
    return summary
