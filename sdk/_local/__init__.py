"""The local engine: a model decoding in this process under grammar masks.

Two runtimes (``_model``): llama.cpp (the CPU default) needs the ``local`` extra (``pip install
'fieldstream[local]'``: xllamacpp, llguidance, numpy, jinja2) and imports no torch,
transformers or xgrammar; torch (CUDA, any Hugging Face model) needs the ``torch`` extra
(torch, transformers, xgrammar, gguf, accelerate, safetensors). Importing this package is cheap
and needs none of them; they are imported when a model loads, and a missing one raises
:class:`~sdk.MissingDependencyError` naming the extra.

Modules: ``_deps`` (the heavy imports, or what to install), ``_model`` (find, convert, load the
model; which runtime), ``_forward`` (the forward pass the loop needs: decode, logits rows,
truncate), ``_torch_forward`` and ``_llama_cpp`` (the two runtimes), ``_llama_tokenizer`` and
``_chat_template`` (llama.cpp's tokenizer and the GGUF's chat template, without transformers),
``_prompt`` (the prompt's ids: the template's markup special, the messages' text as text),
``_threads`` (the default thread count: the idle cores), ``_constrain`` (what each request is
decoded under, what the engine refuses), ``_grammar`` (xgrammar's masks, the special-token mask:
torch runtime), ``_llg_grammar`` (llguidance's masks: llama.cpp runtime), ``_layout`` (JSON
layouts as grammar text), ``_tools`` (several tools: the prompt and the calls' format),
``_tool_calls`` (the calls' text read back into tool-call deltas), ``_sampling`` (greedy /
temperature / top-p, over torch or numpy logits), ``_decode`` (the loop, jump-forward, rewinds),
``_drafts`` (what jump-forward drafts), ``_output`` (tokens and their offsets), ``_choice``
(where a value's first choice is), ``_bans`` (what a rewind rules out), ``_engine`` (a loaded
model serving requests: its masks and sampler per runtime), ``_backend`` (the async
``LocalBackend``, whose generations can rewind: see its docstring).
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
