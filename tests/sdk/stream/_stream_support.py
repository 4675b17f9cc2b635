"""Test helpers for the stream tests: a scripted source that records what the stream did."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
import anyio.lowlevel

from sdk._backend import Delta
from sdk._records import Attempt

PERSON: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "role": {"enum": ["admin", "user"]},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "role"],
    "additionalProperties": False,
}

HANG = object()
"""In a script: wait forever here (until cancelled or closed)."""

# In a script, an ``anyio.Event`` means: wait until it is set, then go on.

Item = str | Delta | BaseException | object


class Scripted:
    """A callable source: attempt n plays ``scripts[n - 1]``: chunks to yield, an exception to
    raise, an ``anyio.Event`` to wait for, or :data:`HANG`. Records every attempt it was called
    with, how many chunks each attempt handed out (``pulls``), and which attempts' generators
    ran their ``finally``."""

    def __init__(self, *scripts: Sequence[Item]) -> None:
        self.scripts = scripts
        self.attempts: list[Attempt] = []
        self.pulls: list[int] = []
        self.closed: list[int] = []

    def __call__(self, attempt: Attempt) -> AsyncIterator[str | Delta]:
        self.attempts.append(attempt)
        while len(self.pulls) < attempt.number:
            self.pulls.append(0)
        return self._play(attempt.number, self.scripts[attempt.number - 1])

    async def _play(self, number: int, script: Sequence[Item]) -> AsyncIterator[str | Delta]:
        try:
            for item in script:
                # A checkpoint per chunk, as a network read would have: lets callbacks run.
                await anyio.lowlevel.checkpoint()
                if item is HANG:
                    await anyio.sleep_forever()
                if isinstance(item, anyio.Event):
                    await item.wait()
                    continue
                if isinstance(item, BaseException):
                    raise item
                assert isinstance(item, str | Delta)
                self.pulls[number - 1] += 1
                yield item
        finally:
            self.closed.append(number)


def chunks(doc: str, size: int = 4) -> list[str]:
    """``doc`` cut into pieces of ``size`` characters."""
    return [doc[i : i + size] for i in range(0, len(doc), size)]
