"""``options_signature``: one published signature for a factory with ``Params`` (strategies and the
gym problem): the fields in place of ``**kwargs``, a field taken by position keeping its place."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from blackbox.core.params import options_signature

P = inspect.Parameter


@dataclasses.dataclass(frozen=True)
class ToyParams:
    env: str = "A"
    steps: int = 3
    sizes: tuple[int, ...] = dataclasses.field(default_factory=lambda: (1, 2))


class Toy:
    Params = ToyParams

    def __init__(self, env: str = "A", *, steps: int = 3, frames: int | None = None, **options: Any):
        pass


class Closed(Toy):
    def __init__(self, env: str = "A"):
        pass


def test_fields_replace_the_keywords_and_a_positional_field_keeps_its_place():
    signature = options_signature(Toy)
    assert signature is not None
    assert [(p.name, p.kind, p.default) for p in signature.parameters.values()] == [
        ("env", P.POSITIONAL_OR_KEYWORD, "A"), ("steps", P.KEYWORD_ONLY, 3), ("sizes", P.KEYWORD_ONLY, (1, 2)),
        ("frames", P.KEYWORD_ONLY, None)]
    assert signature.parameters["steps"].annotation is int


def test_no_signature_without_params_or_keywords():
    assert options_signature(Closed) is None
    assert options_signature(object) is None
