"""Where a stream's chunks come from: the source of each attempt, pulled and closed.

A source is an async iterable of chunks, or a callable that starts one per :class:`Attempt`
(only that kind can be retried). :class:`SourceReader` starts the attempt's iterable, pulls one
chunk at a time, lets another task interrupt a pull that waits (an async callback that failed
must be seen at once, not at the next chunk), and closes the iterable: closing is how a
generation is stopped (the HTTP response is dropped, the local engine's loop ends), so it is
shielded from cancellation, yet bounded in time.

A backend whose deltas are mostly text alone (the HTTP backends) may return
:class:`~sdk._backend.TextChunks`: to its other users an iterator of deltas, while the reader
takes the text of such a delta as a ``str`` chunk, and no :class:`~sdk.Delta` is made for it.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import TypeAlias

import anyio

from sdk._backend import Chunk, Rewindable, Rewound, TextChunks
from sdk._records import Attempt
from sdk._server_policy import ServerPolicy

__all__ = ["Pulled", "Source", "SourceReader"]

Source: TypeAlias = AsyncIterable[Chunk] | Callable[[Attempt], AsyncIterable[Chunk]]
"""An async iterable of text (``str``) or :class:`~sdk.Delta` values, or a callable that
starts one for an :class:`~sdk.Attempt` (only a callable source can be retried)."""


class Pulled(enum.Enum):
    """What :meth:`SourceReader.pull` returns instead of a chunk."""

    END = "end"
    """The attempt's source is exhausted."""
    INTERRUPTED = "interrupted"
    """:meth:`SourceReader.interrupt` cut the pull short."""


# How long closing a source may take while cancelled or failing; closing is shielded from
# cancellation (the generation must stop), but a source that hangs in aclose() must not hang
# the caller forever.
CLOSE_TIMEOUT = 10.0

logger = logging.getLogger("fieldstream")


class SourceReader:
    """Reads the chunks of one attempt at a time from ``source``."""

    __slots__ = ("_factory", "_it", "_plain", "_scope", "prompt_estimate", "server_policy")

    def __init__(self, source: Source, *, retries: bool = False) -> None:
        self.prompt_estimate: int | None = None
        self.server_policy: ServerPolicy | None = None
        if retries and not callable(source):
            raise ValueError(
                "a plain async iterable cannot be read twice, so it cannot be retried: pass a "
                "callable that takes an Attempt and returns a fresh iterable"
            )
        if isinstance(source, AsyncIterable):
            self._plain: AsyncIterable[Chunk] | None = source
            self._factory: Callable[[Attempt], AsyncIterable[Chunk]] | None = None
        elif callable(source):
            self._plain = None
            self._factory = source
        else:
            raise TypeError(
                "source must be an async iterable of str/Delta, or a callable taking an Attempt"
            )
        self._it: AsyncIterator[Chunk] | None = None
        self._scope: anyio.CancelScope | None = None

    @property
    def retryable(self) -> bool:
        """Whether a new attempt can read afresh (the source is a callable)."""
        return self._factory is not None

    @property
    def started(self) -> bool:
        """An attempt's iterable is open."""
        return self._it is not None

    def start(self, attempt: Attempt) -> None:
        """Open the iterable of ``attempt`` (calls a callable source: its errors propagate)."""
        if self._factory is not None:
            it = aiter(self._factory(attempt))
        else:
            assert self._plain is not None
            it = aiter(self._plain)
        self._it = it.chunks if type(it) is TextChunks else it
        estimate = getattr(it, "prompt_estimate", None)
        self.prompt_estimate = estimate if isinstance(estimate, int) else None
        """The attempt's estimate of its prompt tokens, when its generation gave one."""
        policy = getattr(it, "server_policy", None)
        self.server_policy = policy if isinstance(policy, ServerPolicy) else None
        """What the attempt's generation said of its server's constraint, if anything."""

    async def pull(self, *, interruptible: bool) -> Chunk | Pulled:
        """The next chunk, ``Pulled.END``, or (``interruptible``) ``Pulled.INTERRUPTED``. The
        source's own errors propagate. A cancel scope per pull is not free: only ask for
        ``interruptible`` when something may interrupt."""
        it = self._it
        assert it is not None
        if not interruptible:  # the per-chunk path: nothing more than the read
            try:
                return await it.__anext__()
            except StopAsyncIteration:
                self._it = None
                return Pulled.END
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                chunk = await it.__anext__()
        except StopAsyncIteration:
            self._it = None
            return Pulled.END
        finally:
            self._scope = None
        return Pulled.INTERRUPTED if scope.cancelled_caught else chunk

    def puller(self) -> Callable[[], Awaitable[Chunk]]:
        """The open iterable's own ``__anext__``: what a pull that nothing may interrupt
        awaits, for a caller that pulls many chunks in a row (the stream, while text makes
        no event) without a coroutine of :meth:`pull` around each. It raises
        ``StopAsyncIteration`` at the end: then call :meth:`ended`."""
        it = self._it
        assert it is not None
        return it.__anext__

    def ended(self) -> None:
        """The iterable from :meth:`puller` is exhausted (what :meth:`pull` notes before it
        returns ``Pulled.END``)."""
        self._it = None

    @property
    def rewindable(self) -> bool:
        """The attempt's generation can go back on its output (the local engine's can)."""
        return isinstance(self._it, Rewindable)

    async def rewind(self, offset: int) -> Rewound:
        """Rewind the attempt's generation to ``offset`` (see :class:`~sdk._backend.Rewindable`);
        the next pulls continue from where it says."""
        it = self._it
        assert isinstance(it, Rewindable)
        return await it.rewind(offset)

    def interrupt(self) -> None:
        """Cut short an interruptible pull in progress (from another task); else nothing."""
        if self._scope is not None:
            self._scope.cancel()

    async def close(self) -> None:
        """Close the attempt's iterable, if open: the generation stops. Never raises: a failure
        to close is logged (the error that made us close matters more)."""
        it, self._it = self._it, None
        aclose = getattr(it, "aclose", None)
        if aclose is None:
            return
        try:
            with anyio.move_on_after(CLOSE_TIMEOUT, shield=True):
                await aclose()
        except Exception:
            logger.warning("closing the stream's source failed", exc_info=True)
