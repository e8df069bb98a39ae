import pickle
import warnings

import numpy as np
import pytest

from tests.helpers.extras import reason

torch = pytest.importorskip("torch", reason=reason("torch", "torch"))

import blackbox as bb  # noqa: E402
from blackbox.problems.torch_params import FlatParams  # noqa: E402


def small_net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))


def test_flat_round_trip_uses_torch_order():
    net = small_net()
    fp = FlatParams(net)
    assert fp.dim == 4 * 8 + 8 + 8 * 2 + 2
    theta = fp.initial()
    expected = torch.nn.utils.parameters_to_vector(net.parameters()).double().numpy()
    np.testing.assert_array_equal(theta, expected)
    fp.load(theta + 1.0)
    np.testing.assert_allclose(fp.initial(), theta + 1.0, rtol=1e-6)


def test_batched_forward_equals_member_by_member():
    fp = FlatParams(small_net())
    flat = fp.initial() + 0.1 * np.random.default_rng(0).standard_normal((16, fp.dim))
    x = torch.randn(16, 4)
    batched = fp.forward(flat, x)
    single = torch.stack([fp.forward(flat[i : i + 1], x[i : i + 1])[0] for i in range(16)])
    assert torch.equal(batched, single)
    fp.load(flat[5])
    torch.testing.assert_close(fp.module(x[5:6])[0], batched[5])
    shared = fp.forward(flat[:3], torch.randn(10, 4), shared_input=True)
    assert shared.shape == (3, 10, 2)
    assert torch.equal(pickle.loads(pickle.dumps(fp)).forward(flat, x), batched)


def test_wrong_length_is_named():
    fp = FlatParams(small_net())
    with pytest.raises(bb.ConfigError, match="parameter vector has length 5, but Sequential has 58 parameters"):
        fp.load(np.zeros(5))


def test_read_only_vectors_need_no_copy_warning():
    fp = FlatParams(small_net())
    flat = fp.initial()[None].repeat(2, axis=0)
    flat.flags.writeable = False  # as a strategy's center is
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = fp.forward(flat, torch.randn(2, 4))
    assert out.shape == (2, 2)
