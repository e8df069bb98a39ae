"""Policies (numpy MLP / linear, any torch module) and the mapping of their outputs to actions."""

import sys

import numpy as np
import pytest

from tests.helpers.extras import import_or_skip

gym = pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install blackbox-es[gym])")
spaces = gym.spaces

import blackbox as bb  # noqa: E402
from blackbox.problems.gym.actions import make_action_adapter  # noqa: E402
from blackbox.problems.gym.policies import MLPPolicy, make_policy  # noqa: E402
from blackbox.problems.gym.problem import GymProblem  # noqa: E402


def test_mlp_layout_is_torchs_and_outputs_agree():
    torch = import_or_skip("torch", "torch")
    policy = MLPPolicy(5, 3, (16, 8), "tanh")
    assert policy.dim == 5 * 16 + 16 + 16 * 8 + 8 + 8 * 3 + 3
    params = np.random.default_rng(0).standard_normal((4, policy.dim))
    batch = policy.batch(4)
    for slot in range(4):
        batch.load(slot, params[slot])
    x = np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32)
    out = batch.forward(x, 4)
    for slot in range(4):
        net = policy.to_torch(params[slot])
        with torch.no_grad():
            want = net(torch.as_tensor(x[slot])).numpy()
        np.testing.assert_allclose(out[slot], want, rtol=1e-5, atol=1e-5)
    # the same vector restored from torch's own flattening
    flat = torch.nn.utils.parameters_to_vector(policy.to_torch(params[2]).parameters()).detach().double().numpy()
    np.testing.assert_allclose(flat, params[2], rtol=1e-6)


@pytest.mark.parametrize("hidden", [(), (16, 8)])
def test_without_bias_a_policy_is_its_biased_twin_with_zero_biases_bit_for_bit(hidden):
    """bias=false drops each layer's bias from the vector: the forward is the biased network's with
    zero biases, the layout torch's Linear(bias=False) (ARS's linear policy M x)."""
    torch = import_or_skip("torch", "torch")
    free, biased = MLPPolicy(5, 3, hidden, "tanh", bias=False), MLPPolicy(5, 3, hidden, "tanh")
    sizes = (5, *hidden, 3)
    assert free.dim == sum(i * o for i, o in zip(sizes[:-1], sizes[1:])) == biased.dim - sum(sizes[1:])
    params = np.random.default_rng(0).standard_normal((3, free.dim))
    twin, start = [], 0
    for i, o in zip(sizes[:-1], sizes[1:]):  # the biased vector: each weight block followed by zero biases
        twin += [params[:, start:start + i * o], np.zeros((3, o))]
        start += i * o
    twin = np.concatenate(twin, axis=1)
    x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    outputs = []
    for policy, rows in ((free, params), (biased, twin)):
        batch = policy.batch(3)
        for slot in range(3):
            batch.load(slot, rows[slot])
        outputs.append(batch.forward(x, 3))
    np.testing.assert_array_equal(outputs[0], outputs[1])
    net = free.to_torch(params[1])
    assert all(layer.bias is None for layer in net if isinstance(layer, torch.nn.Linear))
    with torch.no_grad():
        np.testing.assert_allclose(net(torch.as_tensor(x[1])).numpy(), outputs[0][1], rtol=1e-5, atol=1e-6)
    assert free.describe() == ("linear 5->3 no bias" if not hidden else "mlp 5-16-8-3 tanh no bias")
    init = free.initial_params(np.random.default_rng(2))
    assert init.shape == (free.dim,) and np.all(init != 0)  # weights only: no zero biases in the vector


def test_a_gym_problem_without_bias_evaluates_as_torchs_bias_free_linear(tmp_path, monkeypatch):
    """The option end to end: a bias-free linear problem gives the returns of the same rows run
    through torch.nn.Linear(bias=False) given as an import path."""
    import_or_skip("torch", "torch")
    (tmp_path / "bias_free.py").write_text(
        "import torch\ndef linear(i, o):\n    return torch.nn.Linear(i, o, bias=False)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ours = GymProblem("Pendulum-v1", policy="linear", bias=False, action_bounds="clip")
    theirs = GymProblem("Pendulum-v1", policy="bias_free:linear", action_bounds="clip")
    assert ours.dim == theirs.dim == 3 and ours.describe() != theirs.describe()
    rows = np.random.default_rng(3).standard_normal((4, 3))
    a, b = ours.evaluate(rows, np.arange(4)), theirs.evaluate(rows, np.arange(4))
    np.testing.assert_allclose(a.fitness, b.fitness, rtol=1e-4)
    assert bb.make_problem("gym:Pendulum-v1,policy=linear,bias=false").dim == 3


@pytest.mark.parametrize("given, message", [
    ({"bias": "no"}, "bias must be true or false, got 'no'"),
    ({"policy": "cnn", "bias": False},
     "bias=false applies to policy='mlp' or 'linear', got policy='cnn'; "
     "a network of your own sets its biases itself (leave bias at true)"),
])
def test_bias_refuses_a_bad_value_in_one_line(given, message):
    with pytest.raises(bb.ConfigError) as caught:
        GymProblem("CartPole-v1", **given)
    assert str(caught.value) == message


@pytest.mark.parametrize("activation", ["tanh", "relu", "sigmoid", "elu"])
def test_each_slot_depends_only_on_itself(activation):
    policy = MLPPolicy(4, 2, (64, 64), activation)
    params = np.random.default_rng(0).standard_normal((10, policy.dim))
    x = np.random.default_rng(1).standard_normal((10, 4)).astype(np.float32) * 10
    wide, single = policy.batch(10), policy.batch(1)
    for slot in range(10):
        wide.load(slot, params[slot])
    out = wide.forward(x, 10)
    for slot in range(10):
        single.load(0, params[slot])
        np.testing.assert_array_equal(single.forward(x[slot : slot + 1], 1)[0], out[slot])
    wide.move(9, 0)
    np.testing.assert_array_equal(wide.forward(x[9:10], 1)[0], out[9])


@pytest.mark.parametrize("hidden", [(), (64, 64), (32,)])
def test_forward_in_preallocated_buffers_gives_the_plain_products_bits_and_a_fresh_output(hidden):
    policy = MLPPolicy(5, 3, hidden)
    params = np.random.default_rng(0).standard_normal((6, policy.dim))
    batch = policy.batch(6)
    for slot in range(6):
        batch.load(slot, params[slot])
    x = np.random.default_rng(1).standard_normal((6, 5)).astype(np.float32)
    h = x[:, None, :]  # the plain layer-by-layer products, a fresh array per layer
    for k, (w, b) in enumerate(zip(batch.weights, batch.biases)):
        h = np.matmul(h, w) + b
        if k < len(batch.weights) - 1:
            h = np.tanh(h)
    out = batch.forward(x, 6)
    np.testing.assert_array_equal(out, h[:, 0, :])
    kept = out.copy()
    batch.forward(x[::-1].copy(), 6)  # a later step rewrites the hidden buffers, never the output given out
    np.testing.assert_array_equal(out, kept)


def test_initialization_as_in_the_paper():
    policy = MLPPolicy(4, 2)
    theta = policy.initial_params(np.random.default_rng(0))
    w1 = theta[: 64 * 4].reshape(64, 4)
    np.testing.assert_allclose(np.linalg.norm(w1, axis=1), 1.0)
    last = theta[-(64 * 2 + 2) : -2].reshape(2, 64)
    np.testing.assert_allclose(np.linalg.norm(last, axis=1), 0.01)
    assert np.all(theta[64 * 4 : 64 * 4 + 64] == 0)


def _net(in_size, out_size):
    import torch

    return torch.nn.Sequential(torch.nn.Linear(in_size, 8), torch.nn.ReLU(), torch.nn.Linear(8, out_size))


def test_torch_modules_factories_and_import_paths():
    torch = import_or_skip("torch", "torch")
    torch.manual_seed(0)
    module = _net(4, 2)
    by_module = GymProblem("CartPole-v1", policy=module)
    assert by_module.dim == 4 * 8 + 8 + 8 * 2 + 2 and by_module.policy.describe().startswith("torch Sequential")
    np.testing.assert_array_equal(by_module.initial_params(None),
                                  torch.nn.utils.parameters_to_vector(module.parameters()).double().numpy())
    by_factory = GymProblem("CartPole-v1", policy=_net)
    by_path = bb.make_problem(f"gym:CartPole-v1,policy={__name__}:_net")
    assert by_factory.dim == by_path.dim == by_module.dim
    params = by_module.initial_params(None)[None] + np.zeros((3, by_module.dim))
    a = by_module.evaluate(params, np.arange(3))
    b = GymProblem("CartPole-v1", policy=module, batched=False).evaluate(params, np.arange(3))
    np.testing.assert_array_equal(a.fitness, b.fitness)
    with pytest.raises(bb.ConfigError, match="policy 'no.such.module:net' could not be imported: ModuleNotFoundError"):
        make_policy("no.such.module:net", 4, 2)
    with pytest.raises(bb.ConfigError, match="returned int; it must return a torch.nn.Module"):
        make_policy(lambda i, o: 3, 4, 2)


def test_a_policy_import_path_that_fails_names_the_path_and_the_cause(tmp_path, monkeypatch):
    """Policies import "module:attr" through the registry's importer; any failure is one ConfigError."""
    (tmp_path / "broken_policy_module.py").write_text("raise RuntimeError('no GPU driver')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(bb.ConfigError) as info:
        make_policy("broken_policy_module:net", 4, 2)
    assert str(info.value) == "policy 'broken_policy_module:net' could not be imported: RuntimeError: no GPU driver"
    sys.modules.pop("broken_policy_module", None)
    with pytest.raises(bb.ConfigError) as info:
        make_policy("blackbox.problems.gym.policies:no_such_net", 4, 2)
    assert str(info.value) == ("policy 'blackbox.problems.gym.policies:no_such_net' could not be imported: "
                               "AttributeError: module 'blackbox.problems.gym.policies' has no attribute "
                               "'no_such_net'")


def test_discrete_and_multidiscrete_take_the_argmax():
    adapter = make_action_adapter(spaces.Discrete(3, start=-1))
    out = np.array([[0.1, 0.5, 0.2], [2.0, 1.0, 0.0]], dtype=np.float32)
    np.testing.assert_array_equal(adapter(out), [0, -1])
    np.testing.assert_array_equal(adapter(out, noise=np.array([[0, 0, 1.0], [0, 0, 0]], dtype=np.float32)), [1, -1])
    multi = make_action_adapter(spaces.MultiDiscrete([2, 3]))
    assert multi.out_size == 5
    np.testing.assert_array_equal(multi(np.array([[1, 0, 0, 0, 1]], dtype=np.float32)), [[0, 2]])
    binary = make_action_adapter(spaces.MultiBinary(3))
    np.testing.assert_array_equal(binary(np.array([[1, -1, 0.5]], dtype=np.float32)), [[1, 0, 1]])


def test_box_actions_are_squashed_into_the_bounds():
    space = spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32), dtype=np.float32)
    adapter = make_action_adapter(space)
    out = np.array([[-100.0, 100.0], [0.0, 0.0]], dtype=np.float32)
    actions = adapter(out)
    assert actions.dtype == np.float32
    np.testing.assert_allclose(actions, [[-2.0, 1.0], [0.0, 0.5]])
    noisy = adapter(out, noise=np.array([[-5.0, 5.0], [0.25, 0.0]], dtype=np.float32))
    np.testing.assert_allclose(noisy, [[-2.0, 1.0], [0.25, 0.5]])  # noise, then clipped to the bounds
    half_open = make_action_adapter(spaces.Box(np.array([-1.0, -np.inf], np.float32), np.array([1.0, np.inf], np.float32)))
    np.testing.assert_allclose(half_open(np.array([[0.0, 7.5]], dtype=np.float32)), [[0.0, 7.5]])


def test_box_actions_clipped_to_the_bounds():
    space = spaces.Box(np.array([-2.0, 0.0, -np.inf], np.float32), np.array([2.0, 1.0, np.inf], np.float32),
                       dtype=np.float32)
    adapter = make_action_adapter(space, action_bounds="clip")
    out = np.array([[-100.0, 100.0, -7.5], [0.5, 0.25, 3.0]], dtype=np.float32)
    np.testing.assert_array_equal(adapter(out), [[-2.0, 1.0, -7.5], [0.5, 0.25, 3.0]])  # inside: the output itself
    noisy = adapter(out, noise=np.array([[5.0, -0.5, 1.0], [2.0, -1.0, 0.0]], dtype=np.float32))
    np.testing.assert_array_equal(noisy, [[-2.0, 1.0, -6.5], [2.0, 0.0, 3.0]])  # noise, then the bounds
    assert adapter.describe() == "clipped to the bounds of 3 continuous dimensions"
    problem = GymProblem("Pendulum-v1", policy="linear", action_bounds="clip", max_episode_steps=20)
    assert problem.describe()["actions"] == "clipped to the bounds of 1 continuous dimensions"
    params = np.full((2, problem.dim), 3.0)  # large outputs: full torque either way, the same episode
    squashing = GymProblem("Pendulum-v1", policy="linear", max_episode_steps=20)
    assert not np.array_equal(problem.evaluate(params * 0.01, np.array([1, 2])).fitness,
                              squashing.evaluate(params * 0.01, np.array([1, 2])).fitness)
    with pytest.raises(bb.ConfigError, match="action_bounds must be one of 'tanh', 'clip', got 'clamp'"):
        GymProblem("Pendulum-v1", action_bounds="clamp")


def test_discretized_box_actions():
    space = spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)
    adapter = make_action_adapter(space, bins=5)
    assert adapter.out_size == 10
    out = np.zeros((1, 10), dtype=np.float32)
    out[0, 4] = 1.0  # dim 0 -> bin 4 (+1.0)
    out[0, 5 + 1] = 1.0  # dim 1 -> bin 1 (-0.5)
    np.testing.assert_array_equal(adapter(out), [[1.0, -0.5]])
    with pytest.raises(bb.ConfigError, match="bins=3 needs finite action bounds"):
        make_action_adapter(spaces.Box(-np.inf, np.inf, (2,)), bins=3)
    with pytest.raises(bb.ConfigError, match="bins must be >= 2"):
        make_action_adapter(space, bins=1)
    problem = GymProblem("Pendulum-v1", bins=11, policy="linear")
    assert problem.dim == 3 * 11 + 11
