"""A response body for httpx mock transports that records what the client read."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx


class Body(httpx.AsyncByteStream):
    """A response body served part by part; records how much was read and whether it closed.
    Like a socket, nothing arrives after close (not even ``error``, raised after the parts)."""

    def __init__(self, parts: list[bytes], *, error: Exception | None = None) -> None:
        self.parts = parts
        self.error = error
        self.pulled = 0
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for part in self.parts:
            if self.closed:
                return
            self.pulled += 1
            yield part
        if self.error is not None and not self.closed:
            raise self.error

    async def aclose(self) -> None:
        self.closed = True
