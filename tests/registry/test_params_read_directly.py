"""The registry reads a factory's options from its ``Params`` dataclass and its constructor, never from
a published ``__signature__`` (which is only what ``help()`` shows)."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

import blackbox as bb
from blackbox.registry import options_of
from blackbox.strategies.snes import SNES


class Hidden(SNES):
    """SNES with a published signature that says nothing: the options must not change."""


Hidden.__signature__ = inspect.Signature([])  # type: ignore[attr-defined]


def test_a_published_signature_is_not_read():
    hidden, snes = options_of(Hidden), options_of(SNES)
    assert hidden.names == snes.names
    assert hidden.options == snes.options and hidden.params_argument == snes.params_argument
    assert "sigma_lr" in hidden.names and hidden.options["seed"].default is None


@pytest.mark.parametrize("name", ["snes", "openai-es", "pgpe", "cma-es", "ga"])
def test_options_are_the_params_fields_and_the_explicit_parameters(name):
    factory = type(bb.make_strategy(name, dim=3))
    known = options_of(factory)
    shown = [n for n in inspect.signature(factory).parameters if n != "params"]  # what help() shows
    assert known.names == shown
    for f in dataclasses.fields(factory.Params):
        assert f.name in known.options


class Plain:
    """A plugin class with Params and no published signature: its own __init__ and the fields."""

    @dataclasses.dataclass
    class Params:
        rate: float = 0.5
        steps: int = 3

    def __init__(self, dim: int, *, seed: int | None = None, **overrides: object):
        self.dim, self.seed, self.params = dim, seed, self.Params(**overrides)  # type: ignore[arg-type]


def test_a_plugin_class_with_params_reads_its_own_constructor():
    known = options_of(Plain)
    assert known.names == ["dim", "rate", "steps", "seed"]
    assert known.options["rate"].default == 0.5 and known.options["steps"].annotation is int
    assert known.positional == ["dim"] and not known.open and not known.params_argument
