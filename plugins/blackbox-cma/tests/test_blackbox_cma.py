"""blackbox-cma: the conformance kit over pycma's main options, and what the kit cannot see."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

pytest.importorskip("blackbox_cma", reason="needs the blackbox-cma plugin: pip install -e plugins/blackbox-cma")

from blackbox_cma import CMAES
from blackbox_cma.state import decode, encode

import blackbox as bb
from blackbox.testing import Subject, parametrize_with_checks, through_files

SUBJECTS = [
    Subject("cma"),
    Subject("cma", CMA_diagonal=True, dim=12),
    Subject("cma", bounds=[-1, 3]),
    Subject("cma", popsize=20, CMA_elitist=True, dim=8),
    Subject("cma", CMA_mirrors=True, CMA_active=False),
    Subject("cma", integer_variables=[0], dim=4),
    Subject("cma", AdaptSigma="CMAAdaptSigmaTPA"),
    Subject("cma", CMA_sampler="GaussDiagonalSampler"),
    Subject("cma", fixed_variables={1: 0.1}, expected_failures={
        "check_protocol": "a fixed variable takes its fixed value, not x0's, so the center differs from x0"}),
    Subject("cma", bounds=[-1, 3], BoundaryHandler="BoundPenalty", expected_failures={
        "check_constant_fitness": "pycma 4's BoundPenalty takes the median of an empty history when a "
                                  "generation's fitness is flat and then raises ValueError"}),
]


@parametrize_with_checks(SUBJECTS)
def test_conformance(check):
    check()


def test_entry_point_and_provenance():
    entry = bb.registry.strategies.entry("cma")
    assert entry.distribution == "blackbox-cma" and entry.value == "blackbox_cma.strategy:CMAES"
    assert isinstance(bb.make_strategy("cma", dim=3), CMAES)


def test_same_numbers_as_pycma_itself():
    """Given the same normal draws, the plugin asks exactly what pycma asks."""
    import cma

    ours = bb.make_strategy("cma", dim=6, seed=4, sigma=0.3, x0=np.ones(6), CMA_active=False)
    rng = np.random.default_rng(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = cma.CMAEvolutionStrategy(np.ones(6), 0.3, {"randn": lambda *s: rng.standard_normal(s),
                                                          "seed": np.nan, "verbose": -9, "CMA_active": False})
    for _ in range(25):
        x, population = raw.ask(), ours.ask()
        np.testing.assert_array_equal(np.array(x), population.params)
        fitness = -np.sum((population.params - 0.3) ** 2, axis=1)
        raw.tell(x, (-fitness).tolist())
        ours.tell(fitness)
    np.testing.assert_array_equal(raw.mean, ours.es.mean)
    assert raw.sigma == ours.sigma


def test_converges_fast_on_a_rotated_ellipsoid():
    """What CMA-ES is for: an ill-conditioned rotated problem that the isotropic ES crawl on."""
    dim = 10
    rotation = np.linalg.qr(np.random.default_rng(0).standard_normal((dim, dim)))[0]
    scales = 10.0 ** (3 * np.arange(dim) / (dim - 1))

    def fitness(x):
        return -np.sum((scales * ((x - 1.0) @ rotation.T)) ** 2, axis=1)

    es = bb.make_strategy("cma", dim=dim, seed=1, sigma=0.5)
    for _ in range(600):
        population = es.ask()
        es.tell(fitness(population.params))
    assert np.max(np.abs(es.center - 1.0)) < 1e-5


def test_nan_ranks_worst_like_any_worse_value():
    def run(replace):
        es = bb.make_strategy("cma", dim=5, seed=2)
        for _ in range(4):
            population = es.ask()
            f = -np.sum(population.params ** 2, axis=1)
            f[[1, 5]] = replace(f)
            es.tell(f)
        return es.ask().params

    np.testing.assert_array_equal(run(lambda f: np.nan), run(lambda f: f.min() - 1e6))


@pytest.mark.parametrize("options", [{}, {"CMA_diagonal": True}, {"bounds": [-1, 1], "CMA_mirrors": True},
                                     {"integer_variables": [0, 2]}, {"CMA_sampler": "GaussDiagonalSampler"}],
                         ids=["default", "diagonal", "bounds-mirrors", "integer", "sampler"])
def test_user_global_numpy_stream_is_untouched(options):
    """pycma rounds integer variables with np.random: seeded from the strategy and restored."""
    np.random.seed(123)
    expected = np.random.random_sample(3)
    np.random.seed(123)
    es = bb.make_strategy("cma", dim=4, seed=0, **options)
    for _ in range(8):
        population = es.ask()
        es.tell(-np.sum(population.params ** 2, axis=1))
    es.stop_reason()
    np.testing.assert_array_equal(np.random.random_sample(3), expected)


@pytest.mark.parametrize("options,message", [
    ({"CMA_diagnoal": True}, "cma has no option 'CMA_diagnoal'. Did you mean 'CMA_diagonal'?"),
    ({"randn": np.random.randn}, "cma option 'randn' cannot be set: all randomness comes from"),
    ({"is_feasible": None}, "cma option 'is_feasible' cannot be set"),
    ({"verb_plot": 1}, "cma option 'verb_plot' cannot be set: pycma reads it in cma.fmin2 only"),
    ({"AdaptSigma": "TPA"}, "cma option AdaptSigma must name one of"),
    ({"BoundaryHandler": "BoundPenalti"}, "Did you mean 'BoundPenalty'?"),
    ({"CMA_diagonal": 1}, "pycma refused the options"),
])
def test_bad_options_are_config_errors(options, message):
    with pytest.raises(bb.ConfigError) as info:
        bb.make_strategy("cma", dim=3, **options)
    assert message in str(info.value)


def test_option_prefixes_are_made_canonical():
    es = bb.make_strategy("cma", dim=3, tolfunh=1e-9)
    assert es.options == {"tolfunhist": 1e-9} and es.es.opts["tolfunhist"] == 1e-9


def test_state_is_plain_json_and_arrays_and_needs_the_same_options():
    es = bb.make_strategy("cma", dim=4, seed=0, bounds=[-2, 2])
    for _ in range(3):
        population = es.ask()
        es.tell(-np.sum(population.params ** 2, axis=1))
    state = es.state_dict()
    assert isinstance(state["pycma"], str) and json.loads(state["pycma"])["~"] == "object"
    assert all(isinstance(a, np.ndarray) and a.dtype != object for a in state["pycma_arrays"].values())
    other = bb.make_strategy("cma", dim=4, seed=0, bounds=[-3, 3])
    with pytest.raises(bb.ConfigError, match="made with cma options"):
        other.load_state_dict(through_files(state))


def test_state_never_names_a_class_outside_cma():
    es = bb.make_strategy("cma", dim=3, seed=0)
    tree, arrays = encode(es.es)
    forged = tree.replace('"class":"cma.evolution_strategy:CMAEvolutionStrategy"', '"class":"os:system"', 1)
    assert forged != tree
    with pytest.raises(bb.StateError, match="outside the 'cma' package"):
        decode(forged, arrays, es.es)
    forged = tree.replace('"class":"cma.evolution_strategy:CMAEvolutionStrategy"',
                          '"class":"cma.evolution_strategy:np"', 1)
    with pytest.raises(bb.StateError, match="not a class of the installed cma package"):
        decode(forged, arrays, es.es)


def test_pycma_termination_ends_a_run():
    es = bb.make_strategy("cma", dim=4, seed=0)
    assert es.termination() == {} and es.stop_reason() is None
    result = bb.optimize(es, "sphere:dim=4", generations=5000, seed=0)
    assert result.stop_reason.startswith("pycma: tol") and result.generations < 5000
    assert result.best_fitness > -1e-10
    looser = bb.make_strategy("cma", dim=4, seed=0, maxiter=7)
    assert bb.optimize(looser, "sphere:dim=4", generations=5000).stop_reason == "pycma: maxiter=7"


def test_verb_log_writes_pycma_data_files(tmp_path):
    es = bb.make_strategy("cma", dim=3, seed=0, verb_log=1, verb_filenameprefix=str(tmp_path) + "/")
    for _ in range(4):
        population = es.ask()
        es.tell(-np.sum(population.params ** 2, axis=1))
    assert len((tmp_path / "fit.dat").read_text().splitlines()) >= 4


def test_command_line(tmp_path):
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "blackbox", "run", "--strategy", "cma:CMA_diagonal=true",
                           "--problem", "rosenbrock:dim=4", "--generations", "40", "--set", "sigma=0.3",
                           "--quiet", "--json", "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["generations"] == 40
    config = (out / "config.toml").read_text()
    assert 'name = "cma"' in config and "CMA_diagonal = true" in config and "sigma = 0.3" in config
    listed = subprocess.run([sys.executable, "-m", "blackbox", "list", "strategies", "--json"],
                            capture_output=True, text=True, check=True)
    row = next(r for r in json.loads(listed.stdout) if r["name"] == "cma")
    assert row["distribution"] == "blackbox-cma" and row["status"] == "ok"
