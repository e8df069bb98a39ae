"""Gymnasium tasks as problems: policies, batched rollouts, observation normalization, presets."""
