"""device=: torch policies on the device asked for, or on the CPU with a note when it is missing."""

import warnings

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install blackbox-es[gym])")
torch = pytest.importorskip("torch", reason="device= runs policies in torch")

import blackbox as bb  # noqa: E402
from blackbox.problems import devices  # noqa: E402
from blackbox.problems.devices import DeviceFallbackWarning, check_device, resolve_device  # noqa: E402
from blackbox.problems.gym.policies import MLPPolicy, TorchPolicy, make_policy  # noqa: E402
from blackbox.problems.gym.problem import GymProblem  # noqa: E402

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="tests the fallback of a machine without CUDA")


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(devices, "_warned", set())


@no_cuda
def test_cuda_falls_back_to_the_cpu_with_a_note(caplog):
    with pytest.warns(DeviceFallbackWarning, match="device='cuda' was asked for, but CUDA is not available"):
        problem = GymProblem("CartPole-v1", hidden=[8], device="cuda")
    summary = problem.describe()
    assert summary["device"] == "cpu" and summary["device_requested"] == "cuda"
    assert "runs on the CPU instead" in summary["device_note"]
    assert "CUDA is not available" in caplog.text
    # on the CPU, the MLP is the numpy default: results are those of a problem without device=
    plain = GymProblem("CartPole-v1", hidden=[8])
    params = plain.initial_params(np.random.default_rng(0)) + 0.3 * np.random.default_rng(1).standard_normal(
        (4, plain.dim))
    np.testing.assert_array_equal(problem.evaluate(params, np.arange(4)).fitness,
                                  plain.evaluate(params, np.arange(4)).fitness)


@no_cuda
def test_torch_runtime_falls_back_per_process():
    policy = TorchPolicy(torch.nn.Linear(4, 2), 4, 2, device="cuda")
    with pytest.warns(DeviceFallbackWarning):
        batch = policy.batch(2)
    assert batch.device == "cpu" and batch.params.device.type == "cpu"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        policy.batch(2)  # said once per process


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
    assert check_device("cuda:1") == "cuda:1" and check_device(None) is None
    assert resolve_device(None) == ("cpu", "")
