"""Token counting for the command's progress display: a backend wrapper that watches deltas.

The stream itself only learns the token usage at the end of an attempt (most backends report
it on the last delta). To show tokens per second while the output streams, the command wraps
its backend in :class:`MeteredBackend`, which counts what passes through: the
backend's own live count when it has one (the local engine's ``DecodeStats``), else one token
per delta with text, until the backend reports the true usage, which then replaces the
estimate. Nothing is changed on the way; closing the wrapper's generator closes the backend's.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable

from sdk._backend import Backend, Delta, GenerationRequest

__all__ = ["MeteredBackend"]


class MeteredBackend:
    """A :class:`~sdk.Backend` that passes everything through and counts generated tokens.

    ``counter``, when given, returns the tokens the attempt in progress generated so far (read
    at each delta with text).

    ``tokens`` is the count over every attempt so far; ``rate()`` tokens per second of
    generation (from each attempt's first delta to its last, summed). Read them any time.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        counter: Callable[[], int] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.backend = backend
        self._counter = counter
        self._clock = clock
        self._done_tokens = 0
        self._done_seconds = 0.0
        self._tokens = 0
        self._first: float | None = None
        self._last: float | None = None

    @property
    def tokens(self) -> int:
        """Completion tokens generated so far, every attempt included (estimated while an
        attempt streams, exact once its backend reported usage)."""
        return self._done_tokens + self._tokens

    def rate(self) -> float | None:
        """Tokens per second of generation so far; ``None`` before there is anything to say."""
        seconds = self._done_seconds
        if self._first is not None and self._last is not None:
            seconds += self._last - self._first
        if seconds <= 0 or self.tokens == 0:
            return None
        return self.tokens / seconds

    async def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        """The backend's deltas for ``request``, counted on the way."""
        self._tokens = 0
        self._first = self._last = None
        deltas = self.backend.generate(request)
        try:
            async for delta in deltas:
                self._count(delta)
                yield delta
        finally:
            # Closing this generator must stop the generation: close the backend's at once.
            aclose = getattr(deltas, "aclose", None)
            if aclose is not None:
                await aclose()
            self._done_tokens += self._tokens
            if self._first is not None and self._last is not None:
                self._done_seconds += self._last - self._first
            self._tokens = 0
            self._first = self._last = None

    def _count(self, delta: Delta) -> None:
        now = self._clock()
        if delta.usage is not None and delta.usage.completion_tokens:
            self._tokens = delta.usage.completion_tokens
        elif self._counter is not None and delta.text:
            self._tokens = self._counter()
        elif delta.text:
            self._tokens += 1
        else:
            return
        if self._first is None:
            self._first = now
        self._last = now

    async def aclose(self) -> None:
        """Close the wrapped backend."""
        await self.backend.aclose()
