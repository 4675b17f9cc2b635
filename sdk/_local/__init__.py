"""The local engine: a Hugging Face causal LM decoding in this process under xgrammar masks.

Needs the ``local`` extra (``pip install 'fieldstream[local]'``): torch, transformers, xgrammar,
gguf, accelerate, safetensors. Importing this package is cheap and needs none of them; they are
imported when a model loads, and a missing one raises :class:`~sdk.MissingDependencyError`.

Modules: ``_model`` (find, convert, load the model), ``_grammar`` (schemas to masks, special
tokens), ``_sampling`` (greedy / temperature / top-p), ``_decode`` (the loop and jump-forward),
``_engine`` (a loaded model serving requests), ``_backend`` (the async ``LocalBackend``).
"""

from __future__ import annotations

from sdk._local._backend import LocalBackend
from sdk._local._decode import DecodeStats
from sdk._local._model import pending_conversion

__all__ = ["DecodeStats", "LocalBackend", "pending_conversion"]
