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
  (512, 2048, 512, 1) before they are written, and the context made must report them back
  (``llama_n_ctx``, ``llama_n_seq_max``, and ``llama_n_ctx_seq`` = the context per slot).
  Threads are set with ``llama_set_n_threads``;
- ``llama_batch`` (seven fields, unchanged since 2023) must come out of ``llama_batch_init``
  with no tokens, no embeddings and every array allocated;
- the model's tokenizer is llama.cpp's own (``_llama_tokenizer``), so its vocabulary is the
  logits' width by construction.

One context serves every sequence of a model, several at once (continuous batching, driven by
``_scheduler``). It holds :attr:`LlamaCppForward.slots` sequences (``n_seq_max``; llama.cpp's
default, non-unified KV cache gives each its own ``context`` tokens, ``n_ctx = slots *
context``). A :class:`LlamaSequence` takes a slot (a seq id) at its first decode and gives it
back when closed; :meth:`LlamaCppForward.decode_many` decodes, in one ``llama_decode`` call,
what every sequence of a round lacks, each row tagged with its sequence's seq id and a logits
flag on the rows asked for, and hands each sequence its own rows. Each slot remembers which
tokens its KV cache holds; a sequence's next round keeps the longest prefix its slot shares
with it and decodes only the rest (``llama_memory_seq_rm`` per sequence), so a rewind costs no
re-decoding. Slots keep their cache after their sequence closes: a new sequence takes the free
slot that keeps the live seq ids consecutive (llama.cpp decodes each run of consecutive seq ids
in a micro-batch of its own), of those the one whose cache shares the longest prefix with its
tokens (a retry finds its request's when nothing else is live), and copies a longer shared prefix
from any other slot (``llama_memory_seq_cp``, which copies the slot's KV buffer, then ``seq_rm``
of the rest) instead of decoding it again. More sequences than
slots stay correct (a slot is lent from the least recently used sequence outside the round, which
decodes its tokens again when it next runs); the scheduler admits at most ``slots``
generations, so serving never comes to that. A long prompt is prefilled in pieces between the
other sequences' tokens: :data:`PIECE_TOKENS` a round while other sequences of the round are
writing, so they keep their pace, else up to :data:`ROUND_TOKENS`; never a piece under
:data:`MIN_PIECE` tokens (a prompt alone is cut by the same rule), so each prompt token is
computed by the kernels that compute it alone; the rows whose logits are asked for (a prompt's
last token) are decoded in a call of their own right after the rest (the kernels of a small
call, as every generated token). For the same reason a new sequence keeps of a cached prefix
(its slot's, or one copied from another slot) only what a cold decode of its prompt computes
the same way: each slot records the kind of call each cached token was decoded in
(:attr:`_Slot.kinds`), and :func:`_reusable` keeps the tokens of the prompt's own kind, all of
the prompt but its last token, or else leaving at least :data:`MIN_PIECE` to decode. So a
repeated prompt decodes only its last token, and what a greedy request writes does not depend
on what ran before it (a retry decodes its first attempt's answer again: generated one token a
call, it is not what a cold decode of the retry's prompt computes).
"""

from __future__ import annotations

import ctypes
import importlib.util
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sdk._constants import DEFAULT_SLOTS
from sdk._errors import BackendError
from sdk._local._deps import require
from sdk._local._llama_tokenizer import LlamaTokenizer

__all__ = ["LlamaCppForward", "LlamaSequence", "LoadCheckFailed", "load_llama_cpp"]

TESTED_XLLAMACPP = ("2026.10.11549",)
"""The ``xllamacpp`` versions whose llama.cpp this binding was checked against."""

DEFAULT_CONTEXT = 4096
"""Tokens each slot's KV cache holds (one generation's prompt and output) when the model's
training context is larger."""


_PARAMS_SIZE = 1024
"""Bytes reserved for ``llama_model_params`` / ``llama_context_params`` (168 in 2026.10)."""

_CONTEXT_HEAD_DEFAULTS = {"n_ctx": 512, "n_batch": 2048, "n_ubatch": 512, "n_seq_max": 1}
"""The first four ``uint32_t`` fields of ``llama_context_params`` and their defaults."""

_KV_UNIFIED_OFFSET = 141
"""Byte offset of ``llama_context_params.kv_unified`` (a ``bool``; 2026.10: after
``embeddings``, ``offload_kqv``, ``no_perf``, ``op_offload`` and ``swa_full`` at 136-140). Written
only when asked for (``unified=True``), after it reads its default (false) and the bool before it
reads ``swa_full``'s (true); the context made must then report one sequence as long as the
whole context (``llama_n_ctx_seq`` = ``llama_n_ctx``), which only a unified KV cache does."""

_BATCH = 2048
"""Tokens one ``llama_decode`` call takes at most (``n_batch``)."""

ROUND_TOKENS = 512
"""Tokens one round of :meth:`LlamaCppForward.decode_many` decodes at most when several
sequences share it (``n_ubatch``): every sequence's next token and drafts first, then as much of
the prompts being prefilled as fits, so a long prompt is prefilled in pieces between the others'
tokens instead of stalling them."""

MIN_PIECE = 64
"""The fewest tokens a piece of a prompt holds, unless the whole rest of the prompt is shorter.
llama.cpp's CPU kernels compute a batch of 64 rows or more otherwise than a smaller one (this
machine, xllamacpp 2026.10, SmolLM2-135M Q4_1: a prompt decoded in two calls, r tokens in
one of them, gives its last logits bit for bit when r >= 64 and up to 0.8 apart when r is
1-63; ``bench_local.py --piece-gap``), so a prompt is cut only where both sides hold this many:
each of its tokens is computed by the kernels that compute it when the prompt is decoded
alone, whatever runs beside it."""

PIECE_TOKENS = MIN_PIECE
"""Prompt tokens one round prefills at most while other sequences of the round are writing
(their next token and drafts do not count; a piece may reach ``2 * MIN_PIECE - 1`` rather than
leave a shorter rest). A prompt token costs about as much as a writing row on a CPU
(SmolLM2-135M, one thread: about 7 ms; a round of 8 writing rows about 80 ms), so a writing
stream waits about 0.45 s more for a token while a prompt is admitted beside it, instead of up
to :data:`ROUND_TOKENS` of prompt (3.5 s), and a prompt's prefill is stretched by one writing
round per piece. Rounds with no writing sequence prefill up to :data:`ROUND_TOKENS`."""

_MIN_SHARED = 4
"""The fewest tokens a copy of another slot's cached prefix must save for a new sequence to
make it (``llama_memory_seq_cp`` copies the slot's whole KV buffer, done at the next decode:
SmolLM2-135M, one thread, it added 5 ms to that decode at 1,024 tokens a slot and 14 ms at
4,096; a prompt token prefilled costs about 7 ms)."""


_SMALL, _LARGE, _MIXED = 0, 1, 2
"""The kinds of call a token was decoded in: under :data:`MIN_PIECE` rows (llama.cpp's kernels
for small batches, which compute each row as a call of one row does), one sequence's
:data:`MIN_PIECE` rows or more (a prompt piece), several sequences' :data:`MIN_PIECE` rows or
more (never reused)."""


class LoadCheckFailed(BackendError):
    """The installed llama.cpp does not match what this binding was checked against."""


class _Params(ctypes.Structure):
    _fields_ = (("raw", ctypes.c_uint64 * (_PARAMS_SIZE // 8)),)


class _LlamaBatch(ctypes.Structure):
    """llama.cpp's ``llama_batch``: the tokens of one ``llama_decode`` call, each with its
    position, its sequence ids and whether its logits are wanted."""

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
    "llama_n_ctx_seq": (ctypes.c_uint32, [_p]),
    "llama_n_seq_max": (ctypes.c_uint32, [_p]),
    "llama_set_n_threads": (None, [_p, _i32, _i32]),
    "llama_batch_init": (_LlamaBatch, [_i32, _i32, _i32]),
    "llama_batch_free": (None, [_LlamaBatch]),
    "llama_decode": (_i32, [_p, _LlamaBatch]),
    "llama_get_logits": (ctypes.POINTER(ctypes.c_float), [_p]),
    "llama_get_memory": (_p, [_p]),
    "llama_memory_seq_rm": (ctypes.c_bool, [_p, _i32, _i32, _i32]),
    "llama_memory_seq_cp": (None, [_p, _i32, _i32, _i32, _i32]),
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


def load_llama_cpp(
    gguf: Path,
    *,
    threads: int,
    slots: int = DEFAULT_SLOTS,
    context: int | None = None,
    unified: bool = False,
) -> LlamaCppForward:
    """Load ``gguf`` through llama.cpp, checked as the module docstring says, with one context
    of ``slots`` sequences of ``context`` tokens each (None: the model's training context, at
    most :data:`DEFAULT_CONTEXT`). ``unified``: one KV cache of ``slots * context`` cells that
    every sequence shares (llama.cpp's ``kv_unified``; see :attr:`LlamaCppForward.unified`)
    instead of one per sequence.

    Raises :class:`LoadCheckFailed` naming what did not match, BackendError when llama.cpp
    cannot read the file, ValueError for slots or a context below 1.
    """
    if slots < 1:
        raise ValueError(f"slots must be >= 1, not {slots}")
    if context is not None and context < 1:
        raise ValueError(f"context must be >= 1, not {context}")
    lib = _library()
    params = lib.llama_context_default_params()
    head = _context_head(params)
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
        if context is None:
            trained = int(lib.llama_model_n_ctx_train(model))
            context = min(trained, DEFAULT_CONTEXT) if trained > 0 else DEFAULT_CONTEXT
        n_ctx = context * slots
        head = {"n_ctx": n_ctx, "n_batch": _BATCH, "n_ubatch": ROUND_TOKENS, "n_seq_max": slots}
        _set_context_head(params, head)
        if unified:
            _set_kv_unified(params)
        ctx = lib.llama_init_from_model(model, params)
        if not ctx:
            raise BackendError(
                f"llama.cpp could not create a context of {slots} x {context} tokens for "
                f"{str(gguf)!r}"
            )
        made = (int(lib.llama_n_ctx(ctx)), int(lib.llama_n_seq_max(ctx)))
        per_seq = int(lib.llama_n_ctx_seq(ctx))
        # A unified cache is one sequence of the whole context, rounded up (to 256 cells).
        fits = (
            made[1] == slots and n_ctx <= made[0] < n_ctx + 256 and per_seq == made[0]
            if unified
            else made == (n_ctx, slots) and per_seq == context
        )
        if not fits:
            lib.llama_free(ctx)
            raise LoadCheckFailed(
                f"llama.cpp made a context of {made[0]} tokens in {made[1]} sequences of "
                f"{per_seq}, not the {n_ctx} in {slots} of "
                f"{'all of them' if unified else context} written into llama_context_params "
                f"(n_ctx, n_seq_max{', kv_unified' if unified else ''})"
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
    forward = LlamaCppForward(
        lib, model, ctx, n_vocab, context, slots, frozenset(stops), threads, tokenizer
    )
    forward.unified = unified
    return forward


def _set_kv_unified(params: _Params) -> None:
    """Set ``kv_unified`` (see :data:`_KV_UNIFIED_OFFSET`) after checking its neighbourhood."""
    raw = ctypes.cast(ctypes.byref(params), ctypes.POINTER(ctypes.c_uint8))
    found = (int(raw[_KV_UNIFIED_OFFSET - 1]), int(raw[_KV_UNIFIED_OFFSET]))
    if found != (1, 0):
        raise LoadCheckFailed(
            f"llama_context_default_params() of xllamacpp {_installed_version()} has "
            f"{found} at bytes {_KV_UNIFIED_OFFSET - 1}-{_KV_UNIFIED_OFFSET}, not swa_full "
            "and kv_unified's defaults (1, 0): its layout changed"
        )
    raw[_KV_UNIFIED_OFFSET] = 1


class _Slot:
    """One of the context's sequences (a seq id) and what its KV cache holds."""

    __slots__ = ("cached", "kinds", "owner", "seq_id", "used")

    def __init__(self, seq_id: int) -> None:
        self.seq_id = seq_id
        self.cached: list[int] = []
        """The tokens this seq id's KV cache holds, in order (kept after its owner leaves:
        a later sequence with the same prefix starts from them)."""
        self.kinds = bytearray()
        """The kind of call that decoded each token of :attr:`cached` (:data:`_SMALL`,
        :data:`_LARGE`, :data:`_MIXED`): what another sequence may reuse (:func:`_reusable`)."""
        self.owner: LlamaSequence | None = None
        self.used = 0
        """When the slot last decoded (a round counter): the least recently used is lent out
        first."""


class LlamaCppForward:
    """A GGUF model in llama.cpp as a :class:`~sdk._local._forward.ForwardModel`: one context of
    :attr:`slots` sequences that :meth:`decode_many` decodes together."""

    runtime = "llama.cpp"
    drafts_in_shared_rounds = False
    device = "cpu"

    def __init__(
        self,
        lib: Any,
        model: int,
        ctx: int,
        vocab_size: int,
        context_length: int,
        slots: int,
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
        """Tokens one sequence may hold (each slot's share of the KV cache)."""
        self._n_ctx = context_length
        self.slots = slots
        """Sequences the context decodes together (``n_seq_max``)."""
        self.stop_token_ids = stop_token_ids
        self._batch = lib.llama_batch_init(_BATCH, 0, 1)
        self._slots = [_Slot(i) for i in range(slots)]
        self._rounds = 0
        self._lock = threading.RLock()
        """Held by every call into the context (decode, the KV cache's edits): one round at a
        time."""
        self._owners = threading.Lock()
        """Held while a slot changes hands (short: a sequence closes without waiting for the
        round in flight)."""
        self.decoded_tokens = 0
        """Tokens run through ``llama_decode`` so far (a reused prefix is not counted)."""
        self.copied_tokens = 0
        """Tokens of cached prefixes copied from one slot to another (``llama_memory_seq_cp``)
        instead of being decoded again."""
        self.unified = False
        """True when the sequences share one KV cache (llama.cpp's ``kv_unified``): a round's
        rows are decoded in one pass whatever their seq ids, and a copied prefix shares its
        cells instead of copying them; a row's attention then runs over the whole cache, its
        other sequences' cells masked, so its logits can differ in the last bits from the
        same sequence's alone (``docs/local-engine.md``)."""
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
        """A new, empty sequence (it takes a slot at its first decode; see the module
        docstring)."""
        return LlamaSequence(self)

    def decode_many(
        self,
        wants: Sequence[tuple[LlamaSequence, int]],
        ready: Callable[[int, Any], None] | None = None,
    ) -> list[Any]:
        """One round: decode, in one ``llama_decode`` call, what each sequence's KV cache lacks
        (the tokens :meth:`LlamaSequence.append` added), at most :data:`ROUND_TOKENS` of them
        when there are several sequences (the others' next tokens first, then the prompts in
        the order given, at most :data:`PIECE_TOKENS` of them when a sequence of the round is
        writing).

        For each ``(sequence, keep)`` (distinct sequences, at most :attr:`slots`): the logits
        of its last ``keep`` tokens (a ``keep`` x V numpy view of llama.cpp's buffer, valid
        until the next round) when all its tokens are decoded, None when part of its prompt is
        left for the next round, or the BackendError of a sequence that does not fit its slot.
        Raises BackendError when llama.cpp fails (the KV cache of every sequence in the round
        is then forgotten). ``ready(i, rows)`` is called for each sequence whose rows are out
        as soon as they are, before the round's later calls: a prompt's first token does not
        wait for the prompts prefilled after it (nor the others' tokens, decoded last).
        """
        if len(wants) > self.slots or len({id(s) for s, _ in wants}) != len(wants):
            raise ValueError(f"a round takes at most {self.slots} distinct sequences")
        with self._lock:
            return self._round(wants, ROUND_TOKENS, ready)

    def _round(
        self,
        wants: Sequence[tuple[LlamaSequence, int]],
        budget: int,
        ready: Callable[[int, Any], None] | None,
    ) -> list[Any]:
        results: list[Any] = [None] * len(wants)
        live: list[int] = []
        for i, (sequence, keep) in enumerate(wants):
            if not 1 <= keep <= len(sequence._tokens):
                raise ValueError(f"keep must be in 1..{len(sequence._tokens)}, not {keep}")
            if len(sequence._tokens) > self._n_ctx:
                results[i] = BackendError(
                    f"{len(sequence._tokens)} tokens do not fit the llama.cpp context of "
                    f"{self._n_ctx}"
                )
            else:
                live.append(i)
        self._rounds += 1
        members = {id(wants[i][0]) for i in live}
        for i in live:
            self._align(wants[i][0], wants[i][1], members)
        # The next tokens of sequences being decoded first, then prefills, in the order given.
        prefilling = {i for i in live if _prefilling(*wants[i])}
        order = sorted(live, key=lambda i: i in prefilling)
        plan: list[tuple[int, int, int]] = []  # (want, tokens this round, logits rows)
        room = budget
        writing = len(prefilling) < len(live)
        for i in order:
            sequence, keep = wants[i]
            pending = len(sequence._tokens) - len(sequence._slot_cached())
            if i in prefilling:
                if writing:
                    # The streams already writing keep their pace: a small piece beside them.
                    room = min(room, PIECE_TOKENS)
                    writing = False  # the prompts share one piece budget, in the order given
                body = pending - keep  # the prompt's tokens whose logits are not asked for
                take = _piece(body, room)
                if take <= 0:
                    continue
                plan.append((i, take, 0))
                room -= take
                if take == body:  # then its rows, in a small call of their own (see _submit)
                    plan.append((i, keep, keep))
                    room -= keep
                continue
            take = min(pending, room)
            if take < pending and pending - take < keep:
                take = pending - keep  # the rows asked for all come out of one round
            if take <= 0:
                continue
            plan.append((i, take, keep if take == pending else 0))
            room -= take
        # The others' tokens together in the first call (a prompt being admitted does not
        # hold up the streams already writing), then each prompt's piece in a call of its
        # own, and after its last piece its rows in one more: a call that mixes a piece of a
        # prompt with other sequences' tokens is split by llama.cpp into batches of other
        # shapes, whose logits differ in the last bits from the prompt's decoded alone; a
        # piece alone gives the same logits as the whole prompt, and the rows' small call the
        # same as when the prompt's body came from a cache (_reusable).
        pieces = [[step] for step in plan if step[0] in prefilling]
        # In seq id order: llama.cpp splits a batch of several sequences into micro-batches of
        # consecutive seq ids (its split_equal over a per-sequence KV cache), so rows in any
        # other order are decoded in more, smaller passes (8 streams of SmolLM2-135M, one
        # thread: a round took 131-134 ms of CPU unsorted, 77-103 ms sorted).
        together = sorted(
            (step for step in plan if step[0] not in prefilling),
            key=lambda step: _seq_id(wants[step[0]][0]),
        )
        calls = [together, *pieces] if together else pieces
        for n, call in enumerate(calls):
            self._submit([(wants[i][0], take, rows) for i, take, rows in call])
            total = sum(rows for _, _, rows in call)
            if not total:
                continue
            logits = self._lib.llama_get_logits(self._ctx)
            if not logits:
                raise BackendError("llama.cpp returned no logits")
            # A view of llama.cpp's buffer (no copy): the masks write into it. The next call
            # overwrites it: rows out of an earlier call of the round are copied.
            buffer = self._np.ctypeslib.as_array(logits, shape=(total, self.vocab_size))
            if n < len(calls) - 1:
                buffer = buffer.copy()
            row = 0
            for i, _, rows in call:
                if rows:
                    results[i] = buffer[row : row + rows]
                    row += rows
                    if ready is not None:
                        ready(i, results[i])
        return results

    def _align(self, sequence: LlamaSequence, keep: int, members: set[int]) -> None:
        """Give ``sequence`` a slot (its own, a free one, or the least recently used one of a
        sequence outside the round) and cut the slot's KV cache to the prefix it shares with
        the sequence, short of the ``keep`` tokens whose logits are wanted."""
        slot, tokens = sequence._slot, sequence._tokens
        if slot is None or slot.owner is not sequence:
            slot = self._lend(sequence, members)
            cached = slot.cached
            # What another sequence decoded: only what a cold decode computes the same way.
            common = min(len(cached), _reusable(slot, tokens, keep))
        else:  # the sequence's own tokens (a rewind's cut): computed as they are alone
            cached = slot.cached
            limit = min(len(cached), len(tokens) - keep)
            common = min(sequence._valid, limit)
            while common < limit and cached[common] == tokens[common]:
                common += 1
        if common < len(cached):
            if not self._lib.llama_memory_seq_rm(self._memory, slot.seq_id, common, -1):
                raise BackendError("llama.cpp could not truncate its KV cache")
            del cached[common:]
            del slot.kinds[common:]
        sequence._valid = common
        slot.used = self._rounds

    def _lend(self, sequence: LlamaSequence, members: set[int]) -> _Slot:
        tokens = sequence._tokens
        with self._owners:
            free = [s for s in self._slots if s.owner is None]
            if free:
                # The live seq ids kept in as few runs of consecutive ids as can be (llama.cpp
                # decodes each run in a micro-batch of its own: see _round), then the longest
                # cached prefix, then the lowest id; a longer prefix in another slot is copied
                # below.
                live = {s.seq_id for s in self._slots if s.owner is not None}
                slot = min(
                    free,
                    key=lambda s: (_runs(live | {s.seq_id}), -_reusable(s, tokens), s.seq_id),
                )
            else:  # a round holds at most `slots` sequences: one slot is not the round's
                taken = [s for s in self._slots if id(s.owner) not in members]
                slot = min(taken, key=lambda s: s.used)
                assert slot.owner is not None
                slot.owner._slot = None
            slot.owner, sequence._slot = sequence, slot
        mine = _reusable(slot, tokens)
        best, source = mine, None
        for other in self._slots:
            if other is not slot:
                shared = _reusable(other, tokens)
                if shared > best:
                    best, source = shared, other
        if source is not None and best - mine >= _MIN_SHARED:
            # Copy the other slot's cache (all of it: llama.cpp copies whole KV buffers between
            # the sequences of a context), then cut the copy to the shared prefix.
            self._lib.llama_memory_seq_cp(self._memory, source.seq_id, slot.seq_id, -1, -1)
            slot.cached = source.cached[:best]
            slot.kinds = source.kinds[:best]
            if not self._lib.llama_memory_seq_rm(self._memory, slot.seq_id, best, -1):
                raise BackendError("llama.cpp could not truncate its KV cache")
            self.copied_tokens += best
        sequence._valid = 0
        return slot

    def _submit(self, plan: Sequence[tuple[LlamaSequence, int, int]]) -> None:
        batch, n = self._batch, 0
        for sequence, take, rows in plan:
            slot = sequence._slot
            assert slot is not None
            start = len(slot.cached)
            tokens, seq_id = sequence._tokens, slot.seq_id
            for j in range(take):
                batch.token[n] = tokens[start + j]
                batch.pos[n] = start + j
                batch.n_seq_id[n] = 1
                batch.seq_id[n][0] = seq_id
                batch.logits[n] = j >= take - rows
                n += 1
        batch.n_tokens = n
        self.decoded_tokens += n
        status = int(self._lib.llama_decode(self._ctx, batch))
        if status != 0:
            # The KV cache may hold part of the batch now: forget what these slots hold.
            for sequence, _, _ in plan:
                assert sequence._slot is not None
                self._lib.llama_memory_seq_rm(self._memory, sequence._slot.seq_id, -1, -1)
                sequence._slot.cached.clear()
                sequence._slot.kinds.clear()
                sequence._valid = 0
            what = "the context is full" if status == 1 else f"status {status}"
            raise BackendError(
                f"llama.cpp could not decode {n} tokens of {len(plan)} sequences: {what} "
                f"(context: {self.context_length} tokens per sequence)"
            )
        # The kind of call, for what a later sequence may reuse of these tokens (_reusable).
        kind = _SMALL if n < MIN_PIECE else _LARGE if len(plan) == 1 else _MIXED
        for sequence, take, _ in plan:
            slot = sequence._slot
            assert slot is not None
            slot.kinds.extend(bytes([kind]) * take)
            slot.cached.extend(sequence._tokens[len(slot.cached) : len(slot.cached) + take])
            sequence._valid = len(slot.cached)

    def forget(self) -> None:
        """Empty the KV cache of every slot: the next pass of each sequence decodes it whole
        (a cold start)."""
        with self._lock:
            for slot in self._slots:
                self._lib.llama_memory_seq_rm(self._memory, slot.seq_id, -1, -1)
                slot.cached.clear()
                slot.kinds.clear()
                if slot.owner is not None:
                    slot.owner._valid = 0

    def close(self) -> None:
        """Free the context and the model (nothing may use them afterwards)."""
        with self._lock:
            if self._ctx:
                self._lib.llama_batch_free(self._batch)
                self._lib.llama_free(self._ctx)
                self._lib.llama_model_free(self._model)
                self._ctx = self._model = 0


def _piece(pending: int, room: int) -> int:
    """How many of a prompt's ``pending`` tokens a round with ``room`` left prefills: all when
    they fit, else a piece of at least :data:`MIN_PIECE` that leaves at least as many (0: none
    this round)."""
    if pending <= room:
        return pending
    if pending < 2 * MIN_PIECE:  # no cut leaves two pieces of MIN_PIECE: all, or none yet
        return pending if room >= MIN_PIECE else 0
    take = min(room, pending - MIN_PIECE)
    return take if take >= MIN_PIECE else 0


def _runs(ids: set[int]) -> int:
    """How many runs of consecutive numbers ``ids`` makes ({0, 1, 3}: two)."""
    return sum(1 for i in ids if i - 1 not in ids)


def _seq_id(sequence: LlamaSequence) -> int:
    assert sequence._slot is not None  # every sequence of a round was given a slot (_align)
    return sequence._slot.seq_id


def _prefilling(sequence: LlamaSequence, keep: int) -> bool:
    """True when ``sequence`` (aligned) has a prompt to decode rather than its next token and
    drafts: tokens whose logits are not asked for are missing (a prompt's body, or its tail
    after a cached prefix; a step's pick and drafts all want theirs). A prompt whose body is
    all cached decodes its last rows with the streams writing, as they do."""
    assert sequence._slot is not None
    return len(sequence._tokens) - len(sequence._slot.cached) > keep


def _reusable(slot: _Slot, tokens: list[int], keep: int = 1) -> int:
    """How many leading tokens of ``slot``'s cache a new sequence of ``tokens`` (the last
    ``keep`` of them wanted for their logits) keeps: of those they share, the ones decoded in
    the kind of call a cold decode of the prompt's body decodes them in (a large call for a
    body of :data:`MIN_PIECE` tokens or more, else a small one), all of the body, or else
    leaving at least :data:`MIN_PIECE` of it to decode in a large call again."""
    body = len(tokens) - keep
    shared = min(_shared(slot.cached, tokens), body)
    kind = _LARGE if body >= MIN_PIECE else _SMALL
    kinds, run = slot.kinds, 0
    while run < shared and kinds[run] == kind:
        run += 1
    if kind == _LARGE and run < body:
        run = min(run, body - MIN_PIECE)
    return max(run, 0)


def _shared(cached: list[int], tokens: list[int]) -> int:
    """How many leading tokens ``cached`` and ``tokens`` share."""
    limit = min(len(cached), len(tokens) - 1)  # the last token is decoded again for its logits
    n = 0
    while n < limit and cached[n] == tokens[n]:
        n += 1
    return n


class LlamaSequence:
    """One sequence over a :class:`LlamaCppForward` (see ``ForwardPass``): its tokens, and the
    slot whose KV cache holds them while it has one."""

    def __init__(self, forward: LlamaCppForward) -> None:
        self._forward = forward
        self._tokens: list[int] = []
        self._slot: _Slot | None = None
        self._valid = 0
        """Leading tokens known to be in the slot's KV cache as they are here."""

    @property
    def length(self) -> int:
        """Tokens in the sequence."""
        return len(self._tokens)

    def _slot_cached(self) -> list[int]:
        assert self._slot is not None
        return self._slot.cached

    def append(self, tokens: Sequence[int]) -> None:
        """Add ``tokens`` to the sequence (decoded by the next round that takes it)."""
        self._tokens.extend(tokens)

    def decode(self, tokens: Sequence[int], keep: int) -> Any:
        """Append ``tokens``; the logits of the last ``keep`` positions: a ``keep`` x V numpy
        float32 array over llama.cpp's buffer (valid until the next decode of this model)."""
        if not 1 <= keep <= len(tokens):
            raise ValueError(f"keep must be in 1..{len(tokens)}, not {keep}")
        before = len(self._tokens)
        self._tokens.extend(tokens)
        try:
            while True:
                (rows,) = self._forward.decode_many([(self, keep)])
                if isinstance(rows, BackendError):
                    raise rows
                if rows is not None:
                    return rows
        except BaseException:
            self.truncate(before)
            raise

    def truncate(self, length: int) -> None:
        """Keep the first ``length`` tokens (the KV cache is cut at the next decode)."""
        if not 0 <= length <= len(self._tokens):
            raise ValueError(f"cannot truncate {len(self._tokens)} tokens to {length}")
        del self._tokens[length:]
        self._valid = min(self._valid, length)

    def close(self) -> None:
        """Give the slot back; its KV cache stays for a later sequence with the same prefix."""
        with self._forward._owners:
            slot, self._slot = self._slot, None
            if slot is not None and slot.owner is self:
                slot.owner = None
