"""A Griffe extension for the API reference: the docstrings' reStructuredText bits, read as Markdown.

The docstrings are written for ``help()`` and use a few reST habits: roles such as
``:class:`Subject``` and a paragraph ending in ``::`` before an indented example. mkdocstrings
renders docstrings as Markdown, where a role would show as raw markup; this turns each role into a
code span (``~a.b.C`` shows as ``C``, as in Sphinx) and the ``::`` into ``:``. The sources stay as
they are. Loaded by ``mkdocs.yml`` (``plugins: mkdocstrings: handlers: python: options: extensions``).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj|const):`([^`]+)`")
LITERAL_MARKER = re.compile(r"::[ \t]*$", flags=re.M)


def role_as_code(match: re.Match[str]) -> str:
    """``:class:`~a.b.C``` -> ```C```; ``:func:`.loop.optimize``` -> ```loop.optimize```."""
    target = match.group(1).strip()
    if target.startswith("~"):
        target = target[1:].rsplit(".", 1)[-1]
    return f"`{target.lstrip('.')}`"


def as_markdown(text: str) -> str:
    """A docstring's reST roles as code spans and its ``::`` literal markers as ``:``."""
    text = ROLE.sub(role_as_code, text)
    return LITERAL_MARKER.sub(lambda m: "" if m.string[max(0, m.start() - 1)] in " \n" else ":", text)


class RestRoles(griffe.Extension):
    """Rewrite every loaded docstring with :func:`as_markdown` (mkdocstrings loads statically)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = as_markdown(obj.docstring.value)
