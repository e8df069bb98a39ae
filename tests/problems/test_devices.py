"""device=: torch code on the device asked for, "auto" on CUDA where available, a missing device refused."""

import numpy as np
import pytest

from tests.helpers.extras import reason

gym = pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install blackbox-es[gym])")
torch = pytest.importorskip("torch", reason=reason("torch", "torch"))  # device= runs policies in torch

import blackbox as bb  # noqa: E402
from blackbox.problems import devices  # noqa: E402
from blackbox.problems.devices import available_devices, check_device, resolve_device  # noqa: E402
from blackbox.problems.gym.policies import MLPPolicy, TorchPolicy, make_policy  # noqa: E402
from blackbox.problems.gym.problem import GymProblem  # noqa: E402

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="tests a machine without CUDA")
MISSING_CUDA = ("device='cuda' is not available here: CUDA is not available (torch.cuda.is_available() is False). "
                "Available: cpu; use one of them, or device='auto' (CUDA where available, else the CPU)")


@no_cuda
def test_missing_cuda_is_refused_and_auto_runs_on_the_cpu():
    with pytest.raises(bb.ConfigError) as info:
        GymProblem("CartPole-v1", hidden=[8], device="cuda")
    assert str(info.value) == MISSING_CUDA
    problem = GymProblem("CartPole-v1", hidden=[8], device="auto")
    summary = problem.describe()
    assert summary["device"] == "cpu" and summary["device_requested"] == "auto"
    # on the CPU, the MLP is the numpy default: results are those of a problem without device=
    plain = GymProblem("CartPole-v1", hidden=[8])
    params = plain.initial_params(np.random.default_rng(0)) + 0.3 * np.random.default_rng(1).standard_normal(
        (4, plain.dim))
    np.testing.assert_array_equal(problem.evaluate(params, np.arange(4)).fitness,
                                  plain.evaluate(params, np.arange(4)).fitness)


@no_cuda
def test_torch_runtime_refuses_a_missing_device_in_every_process(monkeypatch):
    monkeypatch.setattr(devices, "_available", lambda device: (True, ""))  # where the policy was made: CUDA
    policy = TorchPolicy(torch.nn.Linear(4, 2), 4, 2, device="cuda")
    monkeypatch.undo()
    with pytest.raises(bb.ConfigError) as info:
        policy.batch(2)  # a process without CUDA does not compute elsewhere
    assert str(info.value) == MISSING_CUDA
    auto = TorchPolicy(torch.nn.Linear(4, 2), 4, 2, device="auto")  # decided once, where the policy is made
    batch = auto.batch(2)
    assert auto.device == "cpu" and batch.device == "cpu" and batch.params.device.type == "cpu"


def test_auto_is_cuda_where_available_else_the_cpu(monkeypatch):
    monkeypatch.setattr(devices, "_available", lambda device: (True, ""))
    assert resolve_device("auto") == "cuda" and resolve_device("cuda:1") == "cuda:1"
    monkeypatch.setattr(devices, "_available", lambda device: (False, "CUDA is not available"))
    assert resolve_device("auto") == "cpu" and resolve_device("cpu") == "cpu"
    with pytest.raises(bb.ConfigError, match=r"^device='cuda:1' is not available here: CUDA is not available\. "
                                             r"Available: cpu"):
        resolve_device("cuda:1")
    assert available_devices()[0] == "cpu"


def test_device_cuda_takes_the_torch_path(monkeypatch):
    """Where CUDA is available, the MLP becomes the same network in torch (same layout and init)."""
    monkeypatch.setattr(devices, "_available", lambda device: (True, ""))
    policy = make_policy("mlp", 4, 2, (8,), device="cuda")
    assert isinstance(policy, TorchPolicy) and policy.device == "cuda" and policy.describe().startswith("mlp 4-8-2")
    mlp = MLPPolicy(4, 2, (8,))
    np.testing.assert_array_equal(policy.initial_params(np.random.default_rng(3)),
                                  mlp.initial_params(np.random.default_rng(3)))
    assert next(policy.flat.module.parameters()).device.type == "cpu"  # the recipe stays on the CPU
    assert isinstance(make_policy("mlp", 4, 2, (8,)), MLPPolicy)  # no device: the numpy default


def test_torch_policy_on_an_explicit_cpu_device():
    module = MLPPolicy(4, 2, (8,)).to_torch()
    problem = GymProblem("CartPole-v1", policy=module, device="cpu")
    numpy_problem = GymProblem("CartPole-v1", hidden=[8])
    params = numpy_problem.initial_params(np.random.default_rng(0))[None].repeat(3, axis=0)
    np.testing.assert_array_equal(problem.evaluate(params, np.arange(3)).fitness,
                                  numpy_problem.evaluate(params, np.arange(3)).fitness)
    assert problem.describe()["device"] == "cpu" and "device_note" not in problem.describe()


def test_bad_devices():
    with pytest.raises(bb.ConfigError, match="device must be a torch device such as 'cpu', 'cuda' or 'cuda:1', "
                                             "got 'gpu'"):
        GymProblem("CartPole-v1", device="gpu")
    assert check_device("cuda:1") == "cuda:1" and check_device(None) is None and check_device("auto") == "auto"
    assert resolve_device(None) == "cpu"
