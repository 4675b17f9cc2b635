"""The forward pass over llama.cpp's C API, through ctypes, on a GGUF file as it is.

The ``xllamacpp`` wheel links llama.cpp statically into its extension module and exports the
whole ``llama.h`` API as dynamic symbols; this module binds the few functions it needs with
ctypes (no compiler, no second copy of llama.cpp), its tokenizer's included
(``_llama_tokenizer``). The logits stay in llama.cpp's own buffer: :meth:`LlamaSequence.decode`
wraps it as a numpy float32 array without a copy, so the grammar masks and the sampler apply to
it in place. Nothing here imports torch or transformers.

``llama.h`` follows llama.cpp's master, not a stable ABI, so this module relies on as little of
its layout as it can, and checks that at load (:class:`LoadCheckFailed` names what did not
match, and the caller falls back to the torch implementation):

- every symbol bound here exists;
- ``llama_model_params`` and ``llama_context_params`` are opaque buffers of :data:`_PARAMS_SIZE`
  bytes, filled by ``llama_*_default_params()`` and passed back as they are (a buffer larger than
  the struct is safe both ways on the x86-64 and AArch64 C ABIs: a struct this large is returned
  through a buffer the caller provides, and passed in memory or by reference, the callee reading
  only its own fields). The only fields written are the first four of
  ``llama_context_params`` (``n_ctx``, ``n_batch``, ``n_ubatch``, ``n_seq_max``, four
  ``uint32_t`` at offset 0, unchanged since 2024); they must read their documented defaults
  (512, 2048, 512, 1) before they are written. Threads are set with ``llama_set_n_threads``;
- ``llama_batch`` (seven fields, unchanged since 2023) must come out of ``llama_batch_init``
  with no tokens, no embeddings and every array allocated;
- the model's tokenizer is llama.cpp's own (``_llama_tokenizer``), so its vocabulary is the
  logits' width by construction.

One context serves every sequence of a model, one at a time (the engine runs one forward pass at
a time anyway). It remembers which tokens its KV cache holds; a sequence's next pass keeps the
longest prefix the cache shares with that sequence and decodes only the rest. So a request whose
prompt begins like the previous one (a retry with feedback, the same system prompt) reuses that
prefix's KV cache, a rewind costs no re-decoding, and two generations taking turns stay correct
(each turn re-decodes what the other overwrote).
"""

from __future__ import annotations

import ctypes
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sdk._errors import BackendError
from sdk._local._deps import require
from sdk._local._llama_tokenizer import LlamaTokenizer

__all__ = ["LlamaCppForward", "LlamaSequence", "LoadCheckFailed", "load_llama_cpp"]

TESTED_XLLAMACPP = ("2026.10.11549",)
"""The ``xllamacpp`` versions whose llama.cpp this binding was checked against."""

DEFAULT_CONTEXT = 4096
"""The KV cache's size in tokens when the model's training context is larger."""

_PARAMS_SIZE = 1024
"""Bytes reserved for ``llama_model_params`` / ``llama_context_params`` (168 in 2026.10)."""

_CONTEXT_HEAD_DEFAULTS = {"n_ctx": 512, "n_batch": 2048, "n_ubatch": 512, "n_seq_max": 1}
"""The first four ``uint32_t`` fields of ``llama_context_params`` and their defaults."""

_BATCH = 2048
"""Tokens one ``llama_decode`` call takes at most (``n_batch``)."""


class LoadCheckFailed(BackendError):
    """The installed llama.cpp does not match what this binding was checked against."""


class _Params(ctypes.Structure):
    _fields_ = (("raw", ctypes.c_uint64 * (_PARAMS_SIZE // 8)),)


class _Batch(ctypes.Structure):
    _fields_ = (
        ("n_tokens", ctypes.c_int32),
        ("token", ctypes.POINTER(ctypes.c_int32)),
        ("embd", ctypes.POINTER(ctypes.c_float)),
        ("pos", ctypes.POINTER(ctypes.c_int32)),
        ("n_seq_id", ctypes.POINTER(ctypes.c_int32)),
        ("seq_id", ctypes.POINTER(ctypes.POINTER(ctypes.c_int32))),
        ("logits", ctypes.POINTER(ctypes.c_int8)),
    )


_p = ctypes.c_void_p
_i32 = ctypes.c_int32
_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "llama_backend_init": (None, []),
    "llama_log_set": (None, [_p, _p]),
    "llama_model_default_params": (_Params, []),
    "llama_context_default_params": (_Params, []),
    "llama_model_load_from_file": (_p, [ctypes.c_char_p, _Params]),
    "llama_init_from_model": (_p, [_p, _Params]),
    "llama_model_get_vocab": (_p, [_p]),
    "llama_vocab_n_tokens": (_i32, [_p]),
    "llama_vocab_eos": (_i32, [_p]),
    "llama_vocab_get_attr": (_i32, [_p, _i32]),
    "llama_vocab_get_text": (ctypes.c_char_p, [_p, _i32]),
    "llama_tokenize": (
        _i32,
        [_p, ctypes.c_char_p, _i32, ctypes.POINTER(_i32), _i32, ctypes.c_bool, ctypes.c_bool],
    ),
    "llama_token_to_piece": (_i32, [_p, _i32, ctypes.c_char_p, _i32, _i32, ctypes.c_bool]),
    "llama_model_meta_val_str": (_i32, [_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
    "llama_model_n_ctx_train": (_i32, [_p]),
    "llama_n_ctx": (ctypes.c_uint32, [_p]),
    "llama_set_n_threads": (None, [_p, _i32, _i32]),
    "llama_batch_init": (_Batch, [_i32, _i32, _i32]),
    "llama_batch_free": (None, [_Batch]),
    "llama_decode": (_i32, [_p, _Batch]),
    "llama_get_logits": (ctypes.POINTER(ctypes.c_float), [_p]),
    "llama_get_memory": (_p, [_p]),
    "llama_memory_seq_rm": (ctypes.c_bool, [_p, _i32, _i32, _i32]),
    "llama_memory_seq_pos_max": (_i32, [_p, _i32]),
    "llama_free": (None, [_p]),
    "llama_model_free": (None, [_p]),
}

_LOG_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


def _quiet(level: int, text: bytes | None, user_data: int | None) -> None:
    """llama.cpp's log sink: fieldstream prints nothing of llama.cpp's own."""


_QUIET: Any = _LOG_CALLBACK(_quiet)  # kept alive here: llama.cpp holds the pointer


_lib: Any = None
_lib_lock = threading.Lock()


def _library() -> Any:
    """The xllamacpp extension module, its llama.h functions typed, the backend initialized."""
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        version = _installed_version()
        spec = importlib.util.find_spec("xllamacpp")
        if spec is None or spec.origin is None:
            raise LoadCheckFailed("xllamacpp is not installed (pip install 'fieldstream[local]')")
        found = sorted(Path(spec.origin).parent.glob("xllamacpp*.so")) + sorted(
            Path(spec.origin).parent.glob("xllamacpp*.pyd")
        )
        if not found:
            raise LoadCheckFailed(f"xllamacpp {version} has no extension module to bind")
        try:
            lib = ctypes.CDLL(str(found[0]))
        except OSError as exc:
            raise LoadCheckFailed(f"cannot load {found[0]}: {exc}") from exc
        missing = [name for name in _SIGNATURES if not hasattr(lib, name)]
        if missing:
            raise LoadCheckFailed(
                f"xllamacpp {version} does not export {', '.join(missing)} (tested with "
                f"{', '.join(TESTED_XLLAMACPP)})"
            )
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        lib.llama_log_set(ctypes.cast(_QUIET, _p), None)
        lib.llama_backend_init()
        _lib = lib
        return lib


def _installed_version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("xllamacpp")
    except importlib.metadata.PackageNotFoundError as exc:
        raise LoadCheckFailed(
            "xllamacpp is not installed (pip install 'fieldstream[local]')"
        ) from exc


def _context_head(params: _Params) -> dict[str, int]:
    head = ctypes.cast(ctypes.byref(params), ctypes.POINTER(ctypes.c_uint32))
    return {name: int(head[i]) for i, name in enumerate(_CONTEXT_HEAD_DEFAULTS)}


def _set_context_head(params: _Params, values: dict[str, int]) -> None:
    head = ctypes.cast(ctypes.byref(params), ctypes.POINTER(ctypes.c_uint32))
    for i, name in enumerate(_CONTEXT_HEAD_DEFAULTS):
        head[i] = values[name]


def load_llama_cpp(gguf: Path, *, threads: int) -> LlamaCppForward:
    """Load ``gguf`` through llama.cpp, checked as the module docstring says.

    Raises :class:`LoadCheckFailed` naming what did not match, BackendError when llama.cpp
    cannot read the file.
    """
    lib = _library()
    context = lib.llama_context_default_params()
    head = _context_head(context)
    if head != _CONTEXT_HEAD_DEFAULTS:
        raise LoadCheckFailed(
            f"llama_context_default_params() of xllamacpp {_installed_version()} starts with "
            f"{head}, not the documented defaults {_CONTEXT_HEAD_DEFAULTS}: its layout changed"
        )
    probe = lib.llama_batch_init(1, 0, 1)
    try:
        if (
            probe.n_tokens != 0
            or probe.embd
            or not (probe.token and probe.pos and probe.n_seq_id and probe.seq_id and probe.logits)
        ):
            raise LoadCheckFailed(
                "llama_batch_init() of xllamacpp "
                f"{_installed_version()} returned a batch of another layout"
            )
    finally:
        lib.llama_batch_free(probe)
    model = lib.llama_model_load_from_file(str(gguf).encode(), lib.llama_model_default_params())
    if not model:
        raise BackendError(f"llama.cpp could not load the GGUF model {str(gguf)!r}")
    try:
        vocab = lib.llama_model_get_vocab(model)
        n_vocab = int(lib.llama_vocab_n_tokens(vocab))
        trained = int(lib.llama_model_n_ctx_train(model))
        n_ctx = min(trained, DEFAULT_CONTEXT) if trained > 0 else DEFAULT_CONTEXT
        _set_context_head(
            context, {"n_ctx": n_ctx, "n_batch": _BATCH, "n_ubatch": 512, "n_seq_max": 1}
        )
        ctx = lib.llama_init_from_model(model, context)
        if not ctx:
            raise BackendError(f"llama.cpp could not create a context for {str(gguf)!r}")
        made = int(lib.llama_n_ctx(ctx))
        if made != n_ctx:
            lib.llama_free(ctx)
            raise LoadCheckFailed(
                f"llama.cpp made a context of {made} tokens, not the {n_ctx} written into "
                "llama_context_params.n_ctx"
            )
    except BaseException:
        lib.llama_model_free(model)
        raise
    # The GGUF's end-of-sequence token, the one transformers reads into the torch runtime's
    # generation config: both runtimes stop at the same tokens (llama.cpp's end-of-turn guess,
    # <|endoftext|> for SmolLM2, is not one of them).
    stops = {int(lib.llama_vocab_eos(vocab))} - {-1}
    try:
        tokenizer = LlamaTokenizer(lib, model)
    except BaseException:
        lib.llama_free(ctx)
        lib.llama_model_free(model)
        raise
    return LlamaCppForward(lib, model, ctx, n_vocab, n_ctx, frozenset(stops), threads, tokenizer)


class LlamaCppForward:
    """A GGUF model in llama.cpp as a :class:`~sdk._local._forward.ForwardModel`."""

    runtime = "llama.cpp"
    device = "cpu"

    def __init__(
        self,
        lib: Any,
        model: int,
        ctx: int,
        vocab_size: int,
        context_length: int,
        stop_token_ids: frozenset[int],
        threads: int,
        tokenizer: LlamaTokenizer,
    ) -> None:
        self._np = require("numpy")
        self.tokenizer = tokenizer
        """The model's tokenizer, llama.cpp's own (valid until :meth:`close`)."""
        self._lib, self._model, self._ctx = lib, model, ctx
        self._memory = lib.llama_get_memory(ctx)
        self.vocab_size = vocab_size
        self.context_length: int | None = context_length
        self._n_ctx = context_length
        self.stop_token_ids = stop_token_ids
        self._batch = lib.llama_batch_init(_BATCH, 0, 1)
        self._cached: list[int] = []
        """The tokens the KV cache holds (sequence 0), in order."""
        self.decoded_tokens = 0
        """Tokens run through ``llama_decode`` so far (a reused prefix is not counted)."""
        self.threads = threads

    @property
    def threads(self) -> int:
        """The threads llama.cpp decodes with."""
        return self._threads

    @threads.setter
    def threads(self, value: int) -> None:
        if value < 1:
            raise ValueError(f"threads must be >= 1, not {value}")
        self._lib.llama_set_n_threads(self._ctx, value, value)
        self._threads = value

    def sequence(self) -> LlamaSequence:
        """A new, empty sequence (it shares the context's KV cache; see the module docstring)."""
        return LlamaSequence(self)

    def _decode(self, tokens: list[int], keep: int) -> Any:
        """Make the KV cache hold ``tokens``; the logits of the last ``keep`` of them."""
        if len(tokens) > self._n_ctx:
            raise BackendError(
                f"{len(tokens)} tokens do not fit the llama.cpp context of {self._n_ctx}"
            )
        cached = self._cached
        limit = min(len(cached), len(tokens) - keep)
        common = 0
        while common < limit and cached[common] == tokens[common]:
            common += 1
        if common < len(cached):
            if not self._lib.llama_memory_seq_rm(self._memory, 0, common, -1):
                raise BackendError("llama.cpp could not truncate its KV cache")
            del cached[common:]
        start = common
        while start < len(tokens):
            end = min(len(tokens), start + _BATCH)
            if end < len(tokens) and len(tokens) - end < keep:
                end = len(tokens) - keep  # the rows asked for all come out of the last call
            self._submit(tokens, start, end, max(0, keep - (len(tokens) - end)))
            cached.extend(tokens[start:end])
            start = end
        logits = self._lib.llama_get_logits(self._ctx)
        if not logits:
            raise BackendError("llama.cpp returned no logits")
        # A view of llama.cpp's buffer (no copy): the masks write into it.
        return self._np.ctypeslib.as_array(logits, shape=(keep, self.vocab_size))

    def _submit(self, tokens: list[int], start: int, end: int, outputs: int) -> None:
        batch, n = self._batch, end - start
        for i in range(n):
            batch.token[i] = tokens[start + i]
            batch.pos[i] = start + i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = i >= n - outputs
        batch.n_tokens = n
        self.decoded_tokens += n
        status = int(self._lib.llama_decode(self._ctx, batch))
        if status != 0:
            # The KV cache may hold part of the batch now: forget what it holds.
            self._lib.llama_memory_seq_rm(self._memory, 0, -1, -1)
            self._cached.clear()
            what = "the context is full" if status == 1 else f"status {status}"
            raise BackendError(
                f"llama.cpp could not decode {n} tokens at position {start}: {what} "
                f"(context: {self.context_length} tokens)"
            )

    def forget(self) -> None:
        """Empty the KV cache: the next pass decodes its whole sequence (a cold start)."""
        self._lib.llama_memory_seq_rm(self._memory, 0, -1, -1)
        self._cached.clear()

    def close(self) -> None:
        """Free the context and the model (nothing may use them afterwards)."""
        if self._ctx:
            self._lib.llama_batch_free(self._batch)
            self._lib.llama_free(self._ctx)
            self._lib.llama_model_free(self._model)
            self._ctx = self._model = 0


class LlamaSequence:
    """One sequence over a :class:`LlamaCppForward` (see ``ForwardPass``)."""

    def __init__(self, forward: LlamaCppForward) -> None:
        self._forward = forward
        self._tokens: list[int] = []

    @property
    def length(self) -> int:
        """Tokens in the sequence."""
        return len(self._tokens)

    def decode(self, tokens: Sequence[int], keep: int) -> Any:
        """Append ``tokens``; the logits of the last ``keep`` positions: a ``keep`` x V numpy
        float32 array over llama.cpp's buffer (valid until the next decode of this model)."""
        if not 1 <= keep <= len(tokens):
            raise ValueError(f"keep must be in 1..{len(tokens)}, not {keep}")
        self._tokens.extend(tokens)
        try:
            return self._forward._decode(self._tokens, keep)
        except BaseException:
            del self._tokens[len(self._tokens) - len(tokens) :]
            raise

    def truncate(self, length: int) -> None:
        """Keep the first ``length`` tokens (the KV cache is cut at the next decode)."""
        if not 0 <= length <= len(self._tokens):
            raise ValueError(f"cannot truncate {len(self._tokens)} tokens to {length}")
        del self._tokens[length:]

    def close(self) -> None:
        """Nothing to free: the context belongs to the model."""
