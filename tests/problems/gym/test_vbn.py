"""Virtual batch normalization: statistics from the reference batch under each member's own
parameters, the numpy and torch paths agree, batching never changes a result, errors say what to do."""

import pickle

import numpy as np
import pytest

from tests.helpers.extras import reason

gym = pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install blackbox-es[gym])")
torch = pytest.importorskip("torch", reason=reason("torch", "torch"))  # VBN's torch path

import blackbox as bb  # noqa: E402
from blackbox.problems.gym.policies import MLPPolicy, TorchPolicy  # noqa: E402
from blackbox.problems.gym.problem import GymProblem  # noqa: E402
from blackbox.problems.gym.reference import collect_reference_batch  # noqa: E402
from blackbox.problems.gym.vbn import VBNRunner, VirtualBatchNorm, freeze, has_vbn  # noqa: E402


def members(policy, n, seed=0, scale=0.5):
    rng = np.random.default_rng(seed)
    return policy.initial_params(rng) + scale * rng.standard_normal((n, policy.dim))


def reference(n=32, size=4, seed=1):
    return (np.random.default_rng(seed).standard_normal((n, size)) * [1, 10, 0.1, 3]).astype(np.float32)


def test_mlp_layout_and_initialization():
    policy = MLPPolicy(4, 2, (8, 6), vbn=True)
    # hidden layers: weight + VBN scale + VBN shift (no bias); the output layer: weight + bias
    assert policy.dim == (4 * 8 + 8 + 8) + (8 * 6 + 6 + 6) + (6 * 2 + 2)
    assert policy.describe() == "mlp 4-8-6-2 tanh vbn"
    x0 = policy.initial_params(np.random.default_rng(0))
    net = policy.to_torch(x0)
    assert [type(m).__name__ for m in net] == ["Linear", "VirtualBatchNorm", "Tanh", "Linear", "VirtualBatchNorm",
                                              "Tanh", "Linear"]
    assert net[0].bias is None and torch.all(net[1].weight == 1) and torch.all(net[1].bias == 0)
    flat = torch.nn.utils.parameters_to_vector(net.parameters()).detach().double().numpy()
    np.testing.assert_allclose(flat, x0, rtol=1e-6)


def test_reference_statistics_normalize_each_members_first_layer():
    """With scale 1 and shift 0, the reference batch's pre-activations have mean 0 and variance ~1
    under every member's own weights: the statistics are the member's, not shared."""
    policy = MLPPolicy(4, 2, (16,), vbn=True)
    params = members(policy, 3)
    for p in params:  # VBN scale 1, shift 0
        p[64:80], p[80:96] = 1.0, 0.0
    ref = reference()
    batch = policy.batch(3)
    batch.set_reference(ref)
    for slot in range(3):
        batch.load(slot, params[slot])
        z = ref @ batch.weights[0][slot] + batch.biases[0][slot, 0]
        np.testing.assert_allclose(z.mean(axis=0), 0, atol=1e-4)
        np.testing.assert_allclose(z.var(axis=0), 1, rtol=1e-2)  # var / (var + eps)
    assert not np.allclose(batch.weights[0][0], batch.weights[0][1])


def test_numpy_mlp_agrees_with_torch_vbn_layers():
    policy = MLPPolicy(4, 3, (16, 8), "tanh", vbn=True)
    params = members(policy, 4)
    ref = reference()
    x = np.random.default_rng(2).standard_normal((4, 4)).astype(np.float32)
    batch = policy.batch(4)
    batch.set_reference(ref)
    for slot in range(4):
        batch.load(slot, params[slot])
    out = batch.forward(x, 4)
    torch_policy = TorchPolicy(policy.to_torch(), 4, 3)
    torch_batch = torch_policy.batch(4)
    torch_batch.set_reference(ref)
    for slot in range(4):
        torch_batch.load(slot, params[slot])
        with torch.no_grad():  # a frozen module, on its own, computes the same
            want = policy.to_torch(params[slot], reference=ref)(torch.as_tensor(x[slot])).numpy()
        np.testing.assert_allclose(out[slot], want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(torch_batch.forward(x, 4), out, rtol=1e-4, atol=1e-5)


def test_torch_statistics_do_not_depend_on_the_grouping():
    policy = TorchPolicy(MLPPolicy(4, 3, (16, 8), vbn=True).to_torch(), 4, 3)
    runner = VBNRunner(policy.flat)
    params = torch.as_tensor(members(policy, 5), dtype=torch.float32)
    ref = torch.as_tensor(reference())
    together = runner.reference_stats(params, ref)
    for i in range(5):
        alone = runner.reference_stats(params[i : i + 1], ref)
        for a, b in zip(alone, together):
            assert torch.equal(a[0], b[i])
    assert len(together) == 4 and together[0].shape == (5, 16)


def test_torch_batch_slots_move_with_their_statistics():
    policy = TorchPolicy(MLPPolicy(4, 3, (8,), vbn=True).to_torch(), 4, 3)
    params = members(policy, 3)
    x = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    batch = policy.batch(3)
    batch.set_reference(reference())
    for slot in range(3):
        batch.load(slot, params[slot])
    before = batch.forward(x, 3)
    batch.move(2, 0)  # slot 0's member finished; slot 2's runs on in slot 0
    np.testing.assert_array_equal(batch.forward(x[[2, 1]], 2), before[[2, 1]])
    single = policy.batch(1)
    single.set_reference(reference())
    single.load(0, params[1])
    np.testing.assert_array_equal(single.forward(x[1:2], 1)[0], before[1])


def test_the_reference_batch_changes_the_policy():
    policy = MLPPolicy(4, 2, (8,), vbn=True)
    params = members(policy, 1)
    x = reference(2, seed=9)
    outs = []
    for ref in (reference(seed=1), reference(seed=2)):
        batch = policy.batch(1)
        batch.set_reference(ref)
        batch.load(0, params[0])
        outs.append(batch.forward(x[:1], 1))
    assert not np.array_equal(outs[0], outs[1])


def test_reference_batch_is_deterministic_random_play():
    env = gym.make("CartPole-v1")
    flat = lambda obs: np.asarray(obs, dtype=np.float32)  # noqa: E731
    a = collect_reference_batch(env, flat, 50, seed=3)
    b = collect_reference_batch(env, flat, 50, seed=3)
    c = collect_reference_batch(env, flat, 50, seed=4)
    assert a.shape == (50, 4) and np.array_equal(a, b) and not np.array_equal(a, c)
    problem = GymProblem("CartPole-v1", vbn=True, vbn_size=50, vbn_seed=3)
    np.testing.assert_array_equal(problem.reference, a)
    assert GymProblem("CartPole-v1", vbn=True, vbn_size=50, vbn_seed=3).reference_digest == problem.reference_digest
    assert GymProblem("CartPole-v1", vbn=True, vbn_size=50, vbn_seed=4).reference_digest != problem.reference_digest


@pytest.mark.parametrize("options", [
    {"hidden": [16, 16]},
    {"hidden": [8], "obs_norm": True, "obs_norm_prob": 0.5},
    {"hidden": [8], "vectorized": False, "episodes": 2},
], ids=["mlp", "obs-norm", "gym-slots"])
def test_gym_problem_batched_equals_one_by_one(options):
    batched = GymProblem("CartPole-v1", vbn=True, slots=3, **options)
    single = GymProblem("CartPole-v1", vbn=True, batched=False, **options)
    params = members(batched, 7, scale=0.3)
    seeds = np.random.default_rng(1).integers(0, 2**32, 7)
    a, b = batched.evaluate(params, seeds), single.evaluate(params, seeds)
    np.testing.assert_array_equal(a.fitness, b.fitness)
    np.testing.assert_array_equal(a.steps, b.steps)
    wide = GymProblem("CartPole-v1", vbn=True, slots=64, **options).evaluate(params, seeds)
    np.testing.assert_array_equal(wide.fitness, a.fitness)
    clone = pickle.loads(pickle.dumps(batched))
    np.testing.assert_array_equal(clone.evaluate(params, seeds).fitness, a.fitness)
    assert len(set(a.fitness)) > 1


def test_torch_vbn_policy_in_the_gym_problem():
    module = MLPPolicy(4, 2, (8,), vbn=True).to_torch()
    batched = GymProblem("CartPole-v1", policy=module, vbn=True, slots=2)
    single = GymProblem("CartPole-v1", policy=module, vbn=True, batched=False)
    params = members(batched, 5, scale=0.3)
    seeds = np.arange(5)
    np.testing.assert_array_equal(batched.evaluate(params, seeds).fitness, single.evaluate(params, seeds).fitness)
    assert has_vbn(batched.policy.flat.module) and batched.describe()["vbn"]["size"] == 128


def test_runs_are_identical_with_serial_and_loky():
    from blackbox.executors.loky import LokyExecutor

    def run(executor):
        problem = GymProblem("CartPole-v1", vbn=True, hidden=[8], obs_norm=True)
        es = bb.make_strategy("openai-es", dim=problem.dim, x0=problem.initial_params(np.random.default_rng(0)),
                              popsize=8, sigma=0.1, lr=0.05, seed=0)
        return bb.optimize(es, problem, executor, generations=2, seed=0).center

    with LokyExecutor(workers=2) as loky:
        np.testing.assert_array_equal(run("serial"), run(loky))


def test_vbn_errors_say_what_to_do():
    with pytest.raises(bb.ConfigError, match="vbn=true normalizes hidden layers, but the linear policy has none"):
        GymProblem("CartPole-v1", policy="linear", vbn=True)
    plain = torch.nn.Sequential(torch.nn.Linear(4, 2))
    with pytest.raises(bb.ConfigError, match="vbn=true, but Sequential has no VirtualBatchNorm layer"):
        GymProblem("CartPole-v1", policy=plain, vbn=True)
    with pytest.raises(bb.ConfigError, match="Sequential has VirtualBatchNorm layers, which need the reference "
                                             "batch: pass vbn=true"):
        GymProblem("CartPole-v1", policy=MLPPolicy(4, 2, (8,), vbn=True).to_torch())
    with pytest.raises(bb.ConfigError, match="vbn_size must be >= 2, got 1"):
        GymProblem("CartPole-v1", vbn=True, vbn_size=1)
    layer = VirtualBatchNorm(3)
    with pytest.raises(bb.StateError, match="VirtualBatchNorm has no reference statistics"):
        layer(torch.zeros(3))
    freeze(layer, torch.tensor([[0.0, 1.0, 2.0], [2.0, 3.0, 4.0]]))
    np.testing.assert_allclose(layer(torch.tensor([1.0, 2.0, 3.0])).detach().numpy(), 0, atol=1e-6)
    batch = MLPPolicy(4, 2, (8,), vbn=True).batch(1)
    with pytest.raises(bb.StateError, match="needs its reference batch"):
        batch.load(0, np.zeros(MLPPolicy(4, 2, (8,), vbn=True).dim))


def test_state_carries_the_reference_fingerprint():
    problem = GymProblem("CartPole-v1", vbn=True, hidden=[8])
    state = problem.state_dict()
    assert state == {"vbn_reference": problem.reference_digest}
    other = GymProblem("CartPole-v1", vbn=True, hidden=[8], vbn_seed=5)
    with pytest.raises(bb.StateError, match="the VBN reference batch of environment 'CartPole-v1' here"):
        other.load_state_dict(state)
