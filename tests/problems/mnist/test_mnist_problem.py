"""The ``mnist`` problem: common minibatches, batched scoring, reproducibility, data choice, errors."""

import json
import pickle

import numpy as np
import pytest

from tests.helpers.extras import reason

torch = pytest.importorskip("torch", reason=reason("mnist", "torch"))
pytest.importorskip("sklearn", reason=reason("mnist", "sklearn"))

import blackbox as bb  # noqa: E402
from blackbox.core.problem import Scorable  # noqa: E402
from blackbox.driver.stop import ConfirmGoal, confirmation_seed  # noqa: E402
from blackbox.problems.mnist.classifiers import MaxPool2x2  # noqa: E402
from blackbox.problems.mnist.data import MNIST_DIR_ENV  # noqa: E402
from blackbox.problems.mnist.problem import MNIST  # noqa: E402
from tests.problems.mnist.test_idx import fake_mnist  # noqa: E402


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    """One torch thread (the machine is shared), and no MNIST folder from the environment."""
    monkeypatch.delenv(MNIST_DIR_ENV, raising=False)
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def population(problem, m, seed=0, scale=0.05):
    x0 = problem.initial_params(np.random.default_rng(seed))
    return x0 + scale * np.random.default_rng(seed + 1).standard_normal((m, problem.dim))


def test_defaults_are_the_offline_digits_and_say_so():
    problem = bb.make_problem("mnist")
    assert isinstance(problem, MNIST) and problem.shared_seed
    assert problem.dim == 64 * 64 + 64 + 64 * 10 + 10
    described = problem.describe()
    assert described["data"]["kind"] == "digits" and "NOT MNIST" in described["data"]["statement"]
    assert described["image_shape"] == [8, 8] and described["model"] == "mlp"
    assert bb.make_problem("mnist:model=cnn").dim == (8 * 9 + 8) + (16 * 8 * 9 + 16) + (16 * 2 * 2 * 10 + 10)
    assert bb.make_problem("mnist:hidden=[]").dim == 64 * 10 + 10
    assert bb.make_problem("mnist:hidden=[32,16]").dim == 64 * 32 + 32 + 32 * 16 + 16 + 16 * 10 + 10


def test_one_minibatch_per_seed_and_steps_count_examples():
    problem = bb.make_problem("mnist:batch_size=100")
    rows = population(problem, 4)
    same = problem.evaluate(np.stack([rows[0]] * 3), np.array([7, 7, 7]))
    assert np.all(same.fitness == same.fitness[0]) and np.all(same.steps == 100)
    mixed = problem.evaluate(np.stack([rows[0]] * 3), np.array([7, 8, 7]))
    assert mixed.fitness[0] == mixed.fitness[2] == same.fitness[0] != mixed.fitness[1]
    np.testing.assert_array_equal(problem.minibatch(7), problem.minibatch(7))
    assert len(set(problem.minibatch(7)) ^ set(problem.minibatch(8))) > 0
    full = bb.make_problem("mnist:batch_size=none")
    assert full.evaluate(rows[:1], np.array([1])).steps[0] == 1437
    np.testing.assert_array_equal(full.minibatch(1), full.minibatch(2))


def test_fitness_is_the_negated_cross_entropy_of_the_network():
    problem = bb.make_problem("mnist:batch_size=50")
    theta = population(problem, 1)[0]
    net = problem.network()
    torch.nn.utils.vector_to_parameters(torch.as_tensor(theta, dtype=torch.float32), net.parameters())
    data = problem.tensors()
    index = torch.as_tensor(problem.minibatch(3))
    with torch.no_grad():
        logits = net(data["x_train"][index])
        loss = torch.nn.functional.cross_entropy(logits.double(), data["y_train"][index]).item()
        accuracy = (logits.argmax(1) == data["y_train"][index]).double().mean().item()
    assert problem.evaluate(theta[None], np.array([3])).fitness[0] == pytest.approx(-loss, rel=1e-6)
    by_accuracy = bb.make_problem("mnist:batch_size=50,fitness=accuracy")
    assert by_accuracy.evaluate(theta[None], np.array([3])).fitness[0] == pytest.approx(accuracy)
    score = problem.split_score(theta)
    assert 0 <= score["accuracy"] <= 1 and score["loss"] > 0
    assert score["accuracy"] * 360 == pytest.approx(round(score["accuracy"] * 360))


def test_score_is_the_fitness_on_fresh_minibatches_as_scorable_says():
    problem = bb.make_problem("mnist:batch_size=50")
    assert isinstance(problem, Scorable)
    theta = population(problem, 1)[0]
    scores = problem.score(theta, 3, seed=7)
    assert scores.shape == (3,) and len(set(scores.tolist())) == 3  # three different minibatches
    assert scores[0] == problem.evaluate(theta[None], np.array([7])).fitness[0]  # the first is seed's own
    np.testing.assert_array_equal(problem.score(theta, 3, seed=7), scores)
    whole = bb.make_problem("mnist:batch_size=null")
    assert len(set(whole.score(theta, 4, seed=7).tolist())) == 1  # every minibatch is the training set
    with pytest.raises(bb.ConfigError) as info:
        problem.score(theta, "test")
    assert str(info.value) == ("MNIST.score(params, episodes, seed) scores fresh minibatches, got episodes='test'; "
                               "the loss and accuracy on a split are split_score(params, 'test')")


def test_a_goal_confirmed_on_fresh_minibatches():
    problem = bb.make_problem("mnist:hidden=[16],batch_size=50")
    x0 = problem.initial_params(np.random.default_rng(0))
    strategy = bb.make_strategy("openai-es", dim=problem.dim, x0=x0, popsize=4, sigma=0.05, seed=0)
    confirm = ConfirmGoal(-5.0, episodes=3)  # the untrained network's cross-entropy is about -2.3
    result = bb.optimize(strategy, problem, max_generations=5, seed=3, stop=[confirm])
    assert result.generations == 1 and result.stop_reason.startswith("center's mean over 3 fresh episodes")
    generation, mean = confirm.checks[0]
    expected = problem.score(result.center, 3, confirmation_seed(3, int(generation)))
    assert mean == float(np.mean(expected)) >= -5.0


@pytest.mark.parametrize("spec", ["mnist", "mnist:forward=loop", "mnist:model=cnn", "mnist:model=cnn,forward=vmap"])
def test_rows_score_the_same_however_they_are_split(spec):
    problem = bb.make_problem(spec)
    rows = population(problem, 9)
    seeds = np.full(9, 12345)
    whole = problem.evaluate(rows, seeds).fitness
    for chunk in (1, 2, 4):
        parts = np.concatenate([problem.evaluate(rows[i:i + chunk], seeds[i:i + chunk]).fitness
                                for i in range(0, 9, chunk)])
        np.testing.assert_array_equal(parts, whole)
    clone = pickle.loads(pickle.dumps(problem))
    np.testing.assert_array_equal(clone.evaluate(rows, seeds).fitness, whole)


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_vmap_and_loop_forwards_agree_with_the_module(model):
    vmap = bb.make_problem(f"mnist:model={model},forward=vmap")
    loop = bb.make_problem(f"mnist:model={model},forward=loop")
    rows = population(vmap, 5)
    x = vmap.tensors()["x_test"][:40]
    a, b = vmap.logits(rows, x), loop.logits(rows, x)
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    net = vmap.network()
    torch.nn.utils.vector_to_parameters(torch.as_tensor(rows[3], dtype=torch.float32), net.parameters())
    with torch.no_grad():
        torch.testing.assert_close(net(x), a[3], rtol=1e-5, atol=1e-5)


def test_maxpool2x2_equals_torch_maxpool():
    x = torch.randn(3, 4, 7, 9)
    assert torch.equal(MaxPool2x2()(x), torch.nn.MaxPool2d(2)(x))


def test_problem_pickles_as_a_small_recipe():
    problem = bb.make_problem("mnist")
    problem.evaluate(population(problem, 2), np.zeros(2, dtype=np.int64))  # loads data and network
    assert len(pickle.dumps(problem)) < 5000


def test_initial_params_follow_the_seed_and_leave_torch_rng_alone():
    problem = bb.make_problem("mnist")
    torch.manual_seed(5)
    before = torch.rand(1)
    torch.manual_seed(5)
    a = problem.initial_params(np.random.default_rng(1))
    assert torch.equal(torch.rand(1), before)
    np.testing.assert_array_equal(a, problem.initial_params(np.random.default_rng(1)))
    assert not np.array_equal(a, problem.initial_params(np.random.default_rng(2)))


def test_openai_es_learns_the_digits_reproducibly():
    def run():
        problem = bb.make_problem("mnist:hidden=[16]")
        x0 = problem.initial_params(np.random.default_rng(0))
        es = bb.make_strategy("openai-es", dim=problem.dim, x0=x0, popsize=40, sigma=0.05, lr=0.03,
                              weight_decay=0.0, seed=0)
        result = bb.optimize(es, problem, generations=40, evaluate_center=False)
        return problem, x0, result

    problem, x0, result = run()
    assert problem.split_score(x0)["accuracy"] < 0.3
    assert problem.split_score(result.center)["accuracy"] > 0.7
    assert result.steps == 40 * 40 * 256  # members x examples
    np.testing.assert_array_equal(run()[2].center, result.center)


def test_reads_mnist_idx_files_from_a_path_or_the_environment(tmp_path, monkeypatch):
    arrays = fake_mnist(tmp_path / "mnist", n_train=40, n_test=20, rows=12, cols=12, gz=True)
    problem = bb.make_problem(f"mnist:path={tmp_path / 'mnist'},model=cnn,batch_size=16")
    assert problem.data.kind == "mnist" and problem.describe()["image_shape"] == [12, 12]
    assert problem.dim == (8 * 9 + 8) + (16 * 8 * 9 + 16) + (16 * 3 * 3 * 10 + 10)
    assert "MNIST IDX files in" in problem.data.statement and "NOT MNIST" not in problem.data.statement
    result = problem.evaluate(population(problem, 3), np.full(3, 4))
    assert result.steps.tolist() == [16, 16, 16] and np.all(np.isfinite(result.fitness))
    images = problem.tensors()["x_train"]
    assert images.shape == (40, 1, 12, 12)
    pixels = arrays["train-images-idx3-ubyte"] / 255.0
    expected = (pixels - pixels.mean()) / pixels.std()
    np.testing.assert_allclose(images[:, 0].numpy(), expected, rtol=1e-5, atol=1e-5)
    monkeypatch.setenv(MNIST_DIR_ENV, str(tmp_path / "mnist"))
    assert bb.make_problem("mnist").data == problem.data


@pytest.mark.parametrize("spec,message", [
    ("mnist:model=resnet", r"model must be one of 'mlp', 'cnn', got 'resnet'"),
    ("mnist:fitness=acuracy", r"fitness must be one of 'cross_entropy', 'accuracy', got 'acuracy'. Did you mean 'accuracy'\?"),
    ("mnist:forward=jit", r"forward must be one of 'auto', 'vmap', 'loop', got 'jit'"),
    ("mnist:batch_size=0", r"batch_size must be >= 1, got 0"),
    ("mnist:activation=gelu", r"activation must be one of 'relu', 'tanh', got 'gelu'"),
    ("mnist:hidden=[64,0]", r"hidden\[1\] must be >= 1, got 0"),
    ("mnist:model=cnn,channels=[4,4,4,4]", r"channels=\[4, 4, 4, 4\] asks for 4 2x2 poolings, but 8x8 images allow at most 3"),
    ("mnist:model=cnn,channels=[]", r"channels must list at least one width"),
    ("mnist:device=tpu", r"device must be a torch device such as 'cpu', 'cuda' or 'cuda:1', got 'tpu' "
                         r"\(or 'auto' \(CUDA where available, else the CPU\)\)"),
    ("mnist:dataset=mnist", r"dataset='mnist' needs the folder"),
    ("mnist:path=/nonexistent/mnist", r"MNIST folder /nonexistent/mnist does not exist"),
])
def test_bad_options_are_named(spec, message):
    with pytest.raises(bb.BlackboxError, match=message):
        bb.make_problem(spec)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on machines without CUDA")
def test_cuda_device_without_cuda_is_refused():
    with pytest.raises(bb.ConfigError) as info:
        bb.make_problem("mnist:device=cuda")
    assert str(info.value) == (
        "device='cuda' is not available here: CUDA is not available (torch.cuda.is_available() is False). "
        "Available: cpu; use one of them, or device='auto' (CUDA where available, else the CPU)")
    auto = bb.make_problem("mnist:device=auto,hidden=8,batch_size=16")  # the same rule as the gym problem's
    assert auto.device == "cpu" and auto.describe()["device"] == "cpu" and auto.describe()["device_requested"] == "auto"


def test_run_command_states_the_data(tmp_path, capsys):
    from blackbox.cli import main

    assert main(["run", "--problem", "mnist:hidden=[8],batch_size=32", "--generations", "1", "--set", "popsize=4",
                 "--out", str(tmp_path / "r")]) == 0
    assert "NOT MNIST" in capsys.readouterr().out
    result = json.loads((tmp_path / "r" / "result.json").read_text())
    assert result["problem_description"]["data"]["kind"] == "digits"
