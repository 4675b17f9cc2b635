"""Import the heavy optional dependencies of the local engine, or say what to install.

The core ``sdk`` package never imports numpy, llguidance, torch, transformers or xgrammar; every
module of ``sdk._local`` that needs one calls :func:`require` first, so a missing extra surfaces
as one clear :class:`~sdk.MissingDependencyError` naming the extra to install: ``local`` for
the llama.cpp runtime (xllamacpp, llguidance, numpy, jinja2), ``torch`` for the torch runtime
(torch, transformers, xgrammar, gguf, accelerate, safetensors).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from sdk._errors import MissingDependencyError

__all__ = ["INSTALL_HINT", "TORCH_HINT", "hint_for", "require"]

INSTALL_HINT = "pip install 'fieldstream[local]'"
"""What installs the local engine's llama.cpp runtime (the CPU default)."""
TORCH_HINT = "pip install 'fieldstream[torch]'"
"""What installs the torch runtime (CUDA, any Hugging Face model)."""

_TORCH_PACKAGES = frozenset(
    {"torch", "transformers", "xgrammar", "gguf", "accelerate", "safetensors"}
)
"""Top-level modules of the ``torch`` extra; everything else is the ``local`` extra's."""


def hint_for(name: str) -> str:
    """The install command of the extra that brings the module ``name``."""
    return TORCH_HINT if name.split(".")[0] in _TORCH_PACKAGES else INSTALL_HINT


def require(name: str) -> ModuleType:
    """Import and return the module ``name``; raise MissingDependencyError if it is missing."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise MissingDependencyError(
            f"the local engine needs the {name!r} package, which is not installed: {hint_for(name)}"
        ) from exc
