"""Every built-in strategy, problem and executor passes the conformance kit (``blackbox.testing``).

Checks of a problem whose extra is not installed (gym, mnist; torch policies, Atari) are skipped,
naming the extra."""

from __future__ import annotations

import pytest

from blackbox.registry.plugins import executors, problems, strategies
from blackbox.testing import Subject, parametrize_with_checks
from tests.helpers.extras import requires, requires_problem


def torch_vbn_mlp(in_size, out_size):
    """A torch policy with VirtualBatchNorm layers (the torch path of vbn=true)."""
    from blackbox.problems.gym.policies import MLPPolicy

    return MLPPolicy(in_size, out_size, (8,), vbn=True).to_torch()

STRATEGIES = [
    Subject("openai-es"),
    Subject("openai-es", mirrored=False, popsize=15, optimizer="sgd", shaping="zscore"),
    Subject("nes"),
    Subject("nes", mirrored=True, popsize=20, optimizer="momentum", dim=12),
    Subject("ga"),
    Subject("ga", elitism=0, truncation=0.5, popsize=9, dim=2),
    Subject("openai-es", sigma_decay=0.99, sigma_min=0.001),
    Subject("pgpe"),
    Subject("pgpe", optimizer="adam", mirrored=False, popsize=12),
    Subject("snes"),
    Subject("xnes"),
    Subject("cma-es"),
    Subject("cma-es", active=False, popsize=20),
    Subject("sep-cma-es"),
    Subject("ars"),
    Subject("ars", top=4, std_scaling=False, popsize=16),
    Subject("cem"),
    Subject("cem", smoothing=0.5, popsize=30),
    Subject("cem", extra_noise=0.0, expected_failures={
        "check_converges_on_quadratic": "plain CEM (no extra noise) collapses its variance before "
                                        "reaching the optimum: the reason Szita & Lorincz add noise"}),
]
PROBLEMS = [
    Subject("quadratic"),
    Subject("quadratic", dim=7, solution=1.5),
    Subject("sphere"),
    Subject("rosenbrock", dim=3),
    Subject("rastrigin"),
    Subject("mnist:hidden=8,batch_size=32"),
    Subject("gym:CartPole-v1,hidden=[8]"),
    Subject("gym:Pendulum-v1,obs_norm=true,hidden=[8],action_noise=0.1"),
    Subject("gym:MountainCarContinuous-v0,policy=linear,bins=5,max_episode_steps=50"),
    Subject("gym:Acrobot-v1,episodes=2,max_episode_steps=40,hidden=[4]"),
    Subject("mnist:model=cnn,channels=2,batch_size=16,fitness=accuracy"),
    # the paper's tricks (issue 10): VBN, adaptive episode caps, frame skip/stack, device=, Atari
    Subject("gym:CartPole-v1,hidden=[8],vbn=true,vbn_size=16,vbn_seed=3,obs_norm=true,obs_norm_prob=0.5"),
    Subject("gym:CartPole-v1,hidden=[4],episode_cap=mean,episode_cap_factor=1.5"),
    Subject("gym:Acrobot-v1,max_episode_steps=40,hidden=[4],episode_cap=adaptive,episode_cap_start=10,"
            "episode_cap_threshold=0.25,episode_cap_ratio=1.5"),
    Subject("gym:CartPole-v1,hidden=[4],frame_skip=3,frame_stack=2"),
    Subject("gym:blackbox/CyclicMDP-v0,policy=linear", env_kwargs={"state_dependent": True}),
    Subject("gymnax:CartPole-v1,hidden=[4]"),
    Subject("gymnax:Pendulum-v1,policy=linear,obs_norm=true,episodes=2,max_episode_steps=50"),
]
#: Problems whose policies run in torch.
TORCH_PROBLEMS = [
    Subject("gym:CartPole-v1,hidden=[4],device=auto"),  # CUDA where available, else the CPU
    Subject("gym:CartPole-v1,vbn=true,vbn_size=16", policy=torch_vbn_mlp),
]
# Atari: each reset with a seed reloads the ROM (about 0.3 s), so the checks take about 40 s: slow.
# tests/problems/gym/test_atari.py checks Pong's batched rollouts and a tiny run in the default suite.
# Brax: each population shape compiles for tens of seconds on a CPU; tests/problems/jax/test_brax.py
# checks one compiled problem in the default suite. MinAtar: each shape compiles for seconds (about 17 s
# for the checks); the default suite checks two gymnax tasks, which share the problem's code.
SLOW_PROBLEMS = [
    Subject("gym:ALE/Pong-v5,policy=cnn,vbn=true,vbn_size=8,max_episode_steps=24,slots=2"),
    Subject("brax:inverted_pendulum,policy=linear,episode_length=12"),
    Subject("gymnax:Breakout-MinAtar,hidden=[4],max_episode_steps=40"),
]
EXECUTORS = [
    Subject("serial"),
    Subject("serial", batch_size=2),
    Subject("loky", workers=2),
    Subject("loky", workers=1, chunks_per_worker=3),
    Subject("futures:kind=thread,workers=2"),
    Subject("futures:kind=process,workers=2"),
]


def parse_name(subject: Subject) -> str:
    return subject.target.partition(":")[0]


def skipped_without_extras(subjects, needs=()):
    """``parametrize_with_checks(subjects)``, each check skipped where its problem's extra (or, for
    ``subjects`` that are in ``needs``, the extra named there) is not installed."""
    argname, params = parametrize_with_checks(subjects).args
    marked = []
    for param in params:
        subject = param.values[0].subject
        marks = [*param.marks, requires_problem(parse_name(subject))]
        for extra, group in needs:
            if any(subject is member for member in group):
                marks.append(requires(extra))
        marked.append(pytest.param(*param.values, id=param.id, marks=marks))
    return pytest.mark.parametrize(argname, marked)


@skipped_without_extras(STRATEGIES + PROBLEMS + TORCH_PROBLEMS + EXECUTORS, needs=[("torch", TORCH_PROBLEMS)])
def test_builtins_conform(check):
    check()


@pytest.mark.slow
@skipped_without_extras(SLOW_PROBLEMS, needs=[("atari", SLOW_PROBLEMS[:1])])
def test_slow_builtins_conform(check):
    check()


def test_every_builtin_is_checked():
    checked = {parse_name(s) for s in STRATEGIES + PROBLEMS + TORCH_PROBLEMS + EXECUTORS + SLOW_PROBLEMS}
    for registry in (strategies, problems, executors):
        builtins = {e.name for e in registry.entries() if e.distribution == "blackbox-es"}
        missing = builtins - checked
        assert not missing, f"built-in {registry.kind}(s) {sorted(missing)} not in tests/testing/test_conformance.py"
