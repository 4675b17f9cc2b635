"""Import the heavy optional dependencies of the local engine, or say what to install.

The core ``sdk`` package never imports torch, transformers or xgrammar; every module of
``sdk._local`` that needs them calls :func:`require` first, so a missing extra surfaces as one
clear :class:`~sdk.MissingDependencyError` instead of a bare ``ModuleNotFoundError``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from sdk._errors import MissingDependencyError

__all__ = ["INSTALL_HINT", "require"]

INSTALL_HINT = "pip install 'fieldstream[local]'"


def require(name: str) -> ModuleType:
    """Import and return the module ``name``; raise MissingDependencyError if it is missing."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise MissingDependencyError(
            f"the local engine needs the {name!r} package, which is not installed: {INSTALL_HINT}"
        ) from exc
