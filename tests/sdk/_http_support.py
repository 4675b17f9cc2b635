"""A response body for httpx mock transports that records what the client read, and the
city document the misrouted-answer tests stream in pieces."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import httpx
from pydantic import BaseModel

MESSAGES = [{"role": "user", "content": "Where?"}]
DOC = '{"name": "Paris", "population": 2100000}'


class City(BaseModel):
    name: str
    population: int


PARIS = City(name="Paris", population=2100000)


def pieces(raw: bytes, split: int | None) -> list[bytes]:
    """``raw`` whole (``split`` None) or cut at random places (seeded by ``split``)."""
    if split is None:
        return [raw]
    rng = random.Random(split)
    cuts = sorted(rng.sample(range(1, len(raw)), min(12, len(raw) - 1)))
    return [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]


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
