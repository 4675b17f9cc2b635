"""A griffe extension for the API reference: the docstrings' Sphinx-style roles as Markdown.

The docstrings in ``sdk`` and ``partial`` are Markdown with Sphinx roles for names
(``:class:`~sdk.Stream```, ``:meth:`feed```). mkdocstrings renders Markdown, so this turns each
role into a cross-reference where it names something the reference documents (a name in
``sdk.__all__`` or ``partial.__all__``, or a member of one), and into inline code otherwise (a
private helper, a module). A cross-reference that does not resolve fails ``mkdocs build
--strict``, so a renamed public name cannot leave a dead link behind.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

import partial
import sdk

_ROLE = re.compile(r":(?:py:)?(class|func|meth|attr|data|exc|obj|mod):`([^`]+)`")
_PUBLIC = {
    "sdk": set(sdk.__all__) - {"__version__"},
    "partial": set(partial.__all__),
}


def _target(name: str, package: str) -> str | None:
    """The reference's identifier for ``name`` written in ``package``, or None."""
    parts = name.split(".")
    if parts[0] in _PUBLIC:
        package, parts = parts[0], parts[1:]
    if parts and parts[0] in _PUBLIC[package] and len(parts) <= 2:
        return ".".join([package, *parts])
    return None


def convert(text: str, package: str) -> str:
    """``text`` with every Sphinx role replaced by a Markdown cross-reference or code."""

    def replace(match: re.Match[str]) -> str:
        role, body = match.group(1), match.group(2)
        short = body.startswith("~")
        name = body.lstrip("~").removesuffix("()")
        shown = name.rsplit(".", 1)[-1] if short else name
        if role in {"func", "meth"}:
            shown += "()"
        target = None if role == "mod" else _target(name, package)
        return f"[`{shown}`][{target}]" if target else f"`{shown}`"

    return _ROLE.sub(replace, text)


class SphinxRoles(griffe.Extension):
    """Rewrites the roles in every docstring griffe loads from ``sdk`` and ``partial``."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        package = obj.path.split(".", 1)[0]
        if obj.docstring is not None and package in _PUBLIC:
            obj.docstring.value = convert(obj.docstring.value, package)
