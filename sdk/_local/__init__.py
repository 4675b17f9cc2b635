"""The local engine: a model decoding in this process under xgrammar masks.

Needs the ``local`` extra (``pip install 'fieldstream[local]'``): torch, transformers, xgrammar,
gguf, accelerate, safetensors, xllamacpp. Importing this package is cheap and needs none of
them; they are imported when a model loads, and a missing one raises
:class:`~sdk.MissingDependencyError`.

Modules: ``_deps`` (the heavy imports, or what to install), ``_model`` (find, convert, load the
model; which runtime), ``_forward`` (the forward pass the loop needs: decode, logits rows,
truncate), ``_torch_forward`` and ``_llama_cpp`` (the two runtimes), ``_threads`` (the default
thread count: the idle cores), ``_constrain`` (what each request is decoded under, what the
engine refuses), ``_grammar`` (schemas and constraints to masks, the special-token mask),
``_layout`` (JSON layouts as grammar text), ``_tools`` (several tools: the prompt and the calls'
format), ``_tool_calls`` (the calls' text read back into tool-call deltas), ``_sampling``
(greedy / temperature / top-p), ``_decode`` (the loop, jump-forward, rewinds), ``_drafts`` (what
jump-forward drafts), ``_output`` (tokens and their offsets), ``_choice`` (where a value's first
choice is), ``_bans`` (what a rewind rules out), ``_engine`` (a loaded model serving requests),
``_backend`` (the async ``LocalBackend``, whose generations can rewind: see its docstring).
"""

from __future__ import annotations

from sdk._local._backend import LocalBackend, LocalGeneration
from sdk._local._bans import RewindExhausted
from sdk._local._decode import DecodeStats
from sdk._local._model import pending_conversion
from sdk._local._tool_calls import LocalToolCalls

__all__ = [
    "DecodeStats",
    "LocalBackend",
    "LocalGeneration",
    "LocalToolCalls",
    "RewindExhausted",
    "pending_conversion",
]
