"""CMA-ES (Hansen & Ostermeier 2001; Hansen 2016, "The CMA Evolution Strategy: A Tutorial") as a
blackbox strategy, computed by pycma's ``cma.CMAEvolutionStrategy``.

Fitness is maximized here and minimized by pycma, so ``tell`` hands pycma the negated values.
NaN fitness ranks worst: it is replaced by a value just worse than the worst finite one (CMA-ES
uses ranks only, so the update is the same as for any worse value). Populations are dense, since
CMA-ES samples from its own covariance matrix rather than from the noise table.

Every pycma option (``cma.CMAOptions()``) can be given as a keyword or in a spec string,
``cma:popsize=20,CMA_diagonal=true,bounds=[-5,5]``, except three the strategy owns: ``seed`` (use
``seed=``), ``randn`` (all randomness comes from the strategy's generator) and the options that
only ``cma.fmin`` reads (``verb_plot``, ``eval_final_mean``, ``is_feasible``). pycma's
termination criteria (``tolx``, ``tolfun``, ``maxiter``, ...) end a ``blackbox.optimize`` run
through :meth:`CMAES.stop_reason`; ``verb_disp`` and ``verb_log`` print and log as in pycma.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import json
import math
import warnings
from typing import Any

import numpy as np

from blackbox import ConfigError, Population, StateError, Strategy
from blackbox.errors import did_you_mean
from blackbox.strategies.cma_es import check_dense_dim, dense_memory_needed
from blackbox.validate import check_float

from .state import decode, encode

__all__ = ["CMAES"]

#: pycma options this strategy sets itself, with the reason a user cannot.
OWNED_OPTIONS = {
    "seed": "pass seed= to the strategy; pycma's own seeding touches numpy's global generator",
    "randn": "all randomness comes from the strategy's own numpy Generator",
    "popsize": "pass popsize= to the strategy",
    "verb_plot": "pycma reads it in cma.fmin2 only, not in ask/tell",
    "eval_final_mean": "pycma reads it in cma.fmin only, not in ask/tell",
    "is_feasible": "pycma reads it in ask_and_eval/fmin only; return NaN fitness for infeasible rows instead",
}
#: Options whose value is a pycma class, which may also be given by name: where to look, and the base class.
CLASS_OPTIONS = {
    "AdaptSigma": ("cma.sigma_adaptation", "cma.sigma_adaptation.CMAAdaptSigmaBase"),
    "BoundaryHandler": ("cma.boundary_handler", "cma.boundary_handler.BoundaryHandlerBase"),
    "CMA_sampler": ("cma.sampler", "cma.interfaces.StatisticalModelSamplerWithZeroMeanBaseClass"),
}
#: Defaults that differ from pycma's: quiet, no files, no signals file read from the working directory.
DEFAULTS = {"verbose": -1, "verb_disp": 0, "verb_log": 0, "signals_filename": ""}


def _import_cma():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Could not import matplotlib")
        import cma
    return cma


def check_cma_options(options: dict[str, Any]) -> dict[str, Any]:
    """pycma option names made canonical (pycma accepts unique prefixes), unknown and owned ones refused."""
    cma = _import_cma()
    known = cma.CMAOptions()
    out: dict[str, Any] = {}
    for key, value in options.items():
        canonical = known.corrected_key(key) if not key.startswith("_") else None
        if canonical is None:
            raise ConfigError(
                f"cma has no option {key!r}.{did_you_mean(key, list(known))} "
                f"See cma.CMAOptions() for the {len(known)} options of pycma {cma.__version__}"
            )
        if canonical in OWNED_OPTIONS:
            raise ConfigError(f"cma option {canonical!r} cannot be set: {OWNED_OPTIONS[canonical]}")
        if canonical in ("noise_handling", "restarts"):
            raise ConfigError(f"cma option {canonical!r} belongs to cma.fmin; it has no meaning in ask/tell")
        out[canonical] = _class_by_name(canonical, value) if canonical in CLASS_OPTIONS else value
    return out


def _class_by_name(option: str, value: Any) -> Any:
    """For options that take a pycma class, accept its name too (spec strings cannot hold classes)."""
    if not isinstance(value, str):
        return value
    import importlib

    module_name, base_path = CLASS_OPTIONS[option]
    module = importlib.import_module(module_name)
    base_module, _, base_name = base_path.rpartition(".")
    base = getattr(importlib.import_module(base_module), base_name)
    choices = {name: cls for name, cls in inspect.getmembers(module, inspect.isclass)
               if issubclass(cls, base) and cls is not base and not name.startswith("_")}
    if value not in choices:
        raise ConfigError(f"cma option {option} must name one of {', '.join(sorted(choices))}, "
                          f"got {value!r}.{did_you_mean(value, choices)}")
    return choices[value]


def _fingerprint(options: dict[str, Any]) -> str:
    """The options as JSON, code by name: two strategies must agree on them to share a state."""

    def plain(value):
        if isinstance(value, np.ndarray):
            return value.tolist()
        if isinstance(value, np.generic):
            return value.item()
        if callable(value):
            return f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', repr(value))}"
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value

    return json.dumps(plain(options), sort_keys=True, allow_nan=True)


class CMAES(Strategy):
    """CMA-ES through pycma: full covariance adaptation, dense populations, every pycma option."""

    name = "cma"

    def __init__(
        self,
        dim: int | None = None,
        *,
        popsize: int | None = None,
        sigma: float = 0.5,
        x0: Any = None,
        seed: int | None = None,
        **options: Any,
    ):
        provisional = popsize if popsize is not None else 2
        super().__init__(dim=dim, popsize=provisional, x0=x0, seed=seed)
        self.sigma0 = check_float("sigma", sigma, positive=True)
        self.options = check_cma_options(options)
        self._popsize_given = popsize is not None
        self._make_es()

    def _start(self) -> None:
        """pycma's object is made around the start: by the constructor once its options are read, and
        again by start_at(), from the generator as the constructor left it."""
        super()._start()
        if "_popsize_given" in self.__dict__:  # start_at(), not the base constructor (nothing read yet)
            self.rng.bit_generator.state = np.random.default_rng(self.seed).bit_generator.state
            self._make_es()

    def _make_es(self) -> None:
        """pycma's ``CMAEvolutionStrategy`` around the center, with the checked options."""
        inopts = {**DEFAULTS, **self.options, "randn": self._randn, "seed": math.nan}
        if self._popsize_given:
            inopts["popsize"] = self.popsize
        sampler = self.options.get("CMA_sampler")
        sampler_takes_randn = isinstance(sampler, type) and "randn" in inspect.signature(sampler).parameters
        if sampler_takes_randn:
            inopts["CMA_sampler_options"] = {"randn": self._randn, **self.options.get("CMA_sampler_options", {})}
        # pycma draws from numpy's global generator only to round integer variables and in samplers
        # that take no randn; only then is that generator seeded and restored around each call.
        self._uses_global_rng = bool(self.options.get("integer_variables")) or (
            sampler is not None and not sampler_takes_randn)
        if self.options.get("CMA_diagonal") is not True:  # dim x dim matrices unless always diagonal
            check_dense_dim("cma", self.dim, "CMA_diagonal=true or sep-cma-es")
        with self._global_numpy_rng(0), _quiet_pycma():
            try:
                self._es = _import_cma().CMAEvolutionStrategy(self._center.copy(), self.sigma0, inopts)
            except (ValueError, TypeError, AssertionError) as exc:
                raise ConfigError(f"pycma refused the options {self.options}: {type(exc).__name__}: {exc}") from exc
            except MemoryError as exc:
                raise self._out_of_memory("building it", exc) from None
        self.popsize = int(self._es.popsize)
        self.sigma = float(self._es.sigma)
        self._center = self._phenotype_mean()
        self._solutions: list[np.ndarray] | None = None
        self._replay: list[np.ndarray] | None = None

    def memory_needed(self) -> str:
        if self.options.get("CMA_diagonal") is True:
            return ""
        return dense_memory_needed(self.dim, "CMA_diagonal=true or sep-cma-es")

    # -- randomness: pycma draws its samples through randn, from the strategy's generator. The
    #    few things it takes from numpy's global generator (integer variables, samplers without
    #    randn) get a global generator seeded from (seed, generation, call site), which is put
    #    back afterwards, so the user's global stream is untouched and the strategy's own stream
    #    is exactly pycma's. With other options pycma never touches the global generator (tested).
    def _randn(self, *shape: int) -> np.ndarray:
        return self.rng.standard_normal(shape)

    @contextlib.contextmanager
    def _global_numpy_rng(self, site: int):
        if not getattr(self, "_uses_global_rng", True):
            yield
            return
        saved = np.random.get_state()
        sequence = np.random.SeedSequence(self.seed, spawn_key=(self.generation, site))
        np.random.seed(int(sequence.generate_state(1)[0]))
        try:
            yield
        finally:
            np.random.set_state(saved)

    def _phenotype_mean(self) -> np.ndarray:
        es = self._es
        return np.array(es.gp.pheno(es.mean, copy=True, into_bounds=es.boundary_handler.repair), dtype=np.float64)

    # -- ask / tell -------------------------------------------------------------------------
    def _ask(self) -> Population:
        if self._replay is not None:  # loaded from a state taken between ask() and tell()
            solutions, self._replay = self._replay, None
        else:
            with self._global_numpy_rng(1), _quiet_pycma():
                solutions = self._es.ask()
        self._solutions = solutions
        return Population.from_dense(np.array(solutions, dtype=np.float64))

    def _tell(self, population: Population, fitness: np.ndarray) -> None:
        values = -fitness  # pycma minimizes
        bad = np.isnan(values)
        if bad.any():
            finite = values[~bad]
            worst = float(finite.max()) if len(finite) else 0.0
            spread = float(finite.max() - finite.min()) if len(finite) else 0.0
            values = np.where(bad, worst + max(spread, abs(worst), 1.0), values)
        with self._global_numpy_rng(2), _quiet_pycma():
            try:
                self._es.tell(self._solutions, values.tolist())
            except (AssertionError, ArithmeticError, ValueError, np.linalg.LinAlgError) as exc:
                # pycma's own checks failing on an update it cannot take (e.g. sigma=1e308):
                # the distribution is unusable, as when an update overflows (Strategy.tell).
                raise self._diverge(self._center, fitness, f"pycma: {type(exc).__name__}: {exc}") from exc
            self._es.disp()
            if self._es.opts["verb_log"]:
                self._es.logger.add()
        self._solutions = None
        self.sigma = float(self._es.sigma)
        self._center = self._phenotype_mean()
        return None

    # -- pycma's extras ---------------------------------------------------------------------
    @property
    def es(self):
        """The pycma ``CMAEvolutionStrategy`` (read it; changing it voids reproducibility)."""
        return self._es

    def termination(self) -> dict[str, Any]:
        """pycma's termination criteria that are met now (``es.stop()``); empty while it can go on."""
        if self.generation == 0:
            return {}
        with _quiet_pycma():
            return dict(self._es.stop())

    def stop_reason(self) -> str | None:
        """Why pycma would stop (e.g. ``"pycma: tolfun=1e-11"``); blackbox.optimize stops on it."""
        met = self.termination()
        return "pycma: " + ", ".join(f"{k}={v}" for k, v in met.items()) if met else None

    # -- state ------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """As :meth:`Strategy.state_dict`; between ask() and tell() it holds pycma's state after
        that ask() and the asked population, which the next ask() after loading returns again."""
        state = super().state_dict()
        if self.pending:
            state["rng"] = copy.deepcopy(self.rng.bit_generator.state)
            state["pending"] = np.array(self._solutions, dtype=np.float64)
        return state

    def _state_dict(self) -> dict[str, Any]:
        tree, arrays = encode(self._es)
        return {"options": _fingerprint(self.options), "sigma0": self.sigma0, "pycma": tree,
                "pycma_arrays": arrays}

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        for key in ("options", "pycma", "pycma_arrays"):
            if key not in state:
                raise StateError(f"state_dict has no {key!r}; it was not made by the cma strategy")
        if state["options"] != _fingerprint(self.options):
            raise ConfigError(f"state_dict was made with cma options {state['options']}; this strategy has "
                              f"{_fingerprint(self.options)}; build it with the same options to load it")
        arrays = {k: np.asarray(v) for k, v in state["pycma_arrays"].items()}
        self._es = decode(str(state["pycma"]), arrays, self._es)
        self.sigma0 = float(state["sigma0"])
        self._solutions = None
        pending = state.get("pending")
        self._replay = None if pending is None else [row.copy() for row in np.asarray(pending, dtype=np.float64)]


@contextlib.contextmanager
def _quiet_pycma():
    """Keep pycma's import-time matplotlib notice out; its own warnings still show."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Could not import matplotlib")
        yield
