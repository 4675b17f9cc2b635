"""The text of a local ``tools`` generation read back into tool-call deltas.

The engine writes several tools' calls as one text block (the format in ``_tools``). The stream
above wants what a Chat Completions server sends: each call's arguments as deltas with the
call's index (``Delta.tool_call``), its tool's name and an id on its first delta, and nothing
of the wrapping text, so that each call's arguments are tracked against its own tool's schema.
:class:`ToolCallSplitter` does that, chunk by chunk (sans-I/O; any chunking gives the same
calls and the same argument text); :class:`LocalToolCalls` wraps a generation with it.

A call's first delta carries only its name and id (no text): it is sent as soon as the call's
begin is complete, before its arguments, as servers send the name first. The wrapping text (the
``<tool_call>[`` line, each call's begin and end, the separators) is read and dropped; a token
count (``Delta.tokens``) of text that was all wrapping is carried to the next delta with text,
so the stream's own count stays whole. The finish delta says ``"tool_calls"`` when the output
ended after its calls (``"stop"`` from the engine), as servers do.

Such a generation is not :class:`~sdk.Rewindable`: the offsets a rewind takes count the
characters of the arguments, and going back across a call's begin would change which tool a
call is for; a stream falls back to a fresh attempt, as over HTTP.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from sdk._backend import STOP, TOOL_CALLS, Delta
from sdk._errors import BackendError
from sdk._local._tools import CALL_END, CALL_SEPARATOR, TOOLS_CLOSE, TOOLS_OPEN, call_begin
from sdk._trackers._extent import JsonExtent

if TYPE_CHECKING:
    from sdk._local._decode import DecodeStats

__all__ = ["Generation", "LocalToolCalls", "ToolCallSplitter", "new_call_id"]


def new_call_id() -> str:
    """A fresh tool-call id, shaped like OpenAI's (``call_`` and 24 hexadecimal digits)."""
    return "call_" + uuid.uuid4().hex[:24]


class ToolCallSplitter:
    """Reads a tools output (the format of ``_tools``, for the tools ``names``) into deltas.

    :meth:`feed` takes each piece of text as the engine writes it and returns the deltas it
    completes. ``new_id`` makes each call's id. Text that breaks the format (which the grammar
    rules out) raises :class:`~sdk.BackendError` naming where and what was expected.
    """

    __slots__ = (
        "_after",
        "_buffer",
        "_call",
        "_expect",
        "_extent",
        "_new_id",
        "_read",
        "_tokens",
    )

    def __init__(self, names: Sequence[str], *, new_id: Callable[[], str] = new_call_id) -> None:
        if not names:
            raise ValueError("ToolCallSplitter needs at least one tool name")
        # What the wrapping text may be at each point, and the tool each alternative begins
        # (None: the output's end). Begins never prefix each other: a name ends at its quote.
        self._expect: dict[str, str | None] | None = {TOOLS_OPEN + call_begin(n): n for n in names}
        self._after: dict[str, str | None] = {
            CALL_END + CALL_SEPARATOR + call_begin(n): n for n in names
        }
        self._after[CALL_END + TOOLS_CLOSE] = None
        self._new_id = new_id
        self._buffer = ""
        self._extent: JsonExtent | None = None
        self._call = -1
        self._tokens = 0
        self._read = 0

    @property
    def calls(self) -> int:
        """How many calls have begun."""
        return self._call + 1

    @property
    def done(self) -> bool:
        """True once the closing ``]</tool_call>`` was read: the output is complete."""
        return self._expect is None and self._extent is None

    def feed(self, text: str, *, forced: bool = False, tokens: int = 0) -> list[Delta]:
        """The deltas ``text`` completes: a call's first delta (name and id) when its begin
        ends, then its argument text (``forced`` as given; ``tokens`` counted on the first
        delta with text, now or later)."""
        out: list[Delta] = []
        self._tokens += tokens
        i, n = 0, len(text)
        while i < n:
            extent = self._extent
            if extent is not None:
                end = extent.scan(text, i)
                stop = n if end is None else end
                if stop > i:
                    tokens, self._tokens = self._tokens, 0
                    out.append(Delta(text[i:stop], forced, tool_call=self._call, tokens=tokens))
                if end is not None:
                    self._extent = None
                    self._expect = self._after
                i = stop
            else:
                i = self._literal(text, i, out)
        self._read += n
        return out

    def _literal(self, text: str, i: int, out: list[Delta]) -> int:
        """Read wrapping text from ``text[i]`` until an alternative is complete or the chunk
        ends; return where the reading stopped."""
        expect = self._expect
        if expect is None:
            raise self._broken(text, i, "", "the end of the output")
        buffer = self._buffer
        for j in range(i, len(text)):
            buffer += text[j]
            if buffer in expect:
                self._buffer = ""
                name = expect[buffer]
                if name is None:
                    self._expect = None
                else:
                    self._call += 1
                    self._extent = JsonExtent()
                    call_id = self._new_id()
                    out.append(Delta(tool_call=self._call, tool_name=name, tool_call_id=call_id))
                return j + 1
            if not any(a.startswith(buffer) for a in expect):
                raise self._broken(text, j, buffer[:-1], " or ".join(map(repr, expect)))
        self._buffer = buffer
        return len(text)

    def _broken(self, text: str, j: int, before: str, expected: str) -> BackendError:
        return BackendError(
            f"the local engine's tool calls left their format at character {self._read + j} "
            f"({text[j : j + 20]!r} after {before[-40:]!r}): expected {expected}"
        )


class Generation(Protocol):
    """What :class:`LocalToolCalls` reads: a generation's deltas, its counters, its close
    (a :class:`~sdk._local.LocalGeneration`). A protocol, so that this module does not import
    the backend that imports it: the dependency goes one way, ``_backend`` -> ``_tool_calls``."""

    @property
    def stats(self) -> DecodeStats: ...

    async def __anext__(self) -> Delta: ...

    async def aclose(self) -> None: ...


class LocalToolCalls:
    """A local generation of a ``tools`` request: its text read back into tool-call deltas.

    An async iterator of deltas, like :class:`~sdk._local.LocalGeneration` (closing it stops
    the engine within one step), but not rewindable (see the module docstring).
    """

    def __init__(self, generation: Generation, names: Sequence[str]) -> None:
        self._generation = generation
        self._splitter = ToolCallSplitter(names)
        self._out: deque[Delta] = deque()

    @property
    def stats(self) -> DecodeStats:
        """Counters of the generation (see :class:`~sdk._local.LocalGeneration`)."""
        return self._generation.stats

    def __aiter__(self) -> LocalToolCalls:
        return self

    async def __anext__(self) -> Delta:
        while not self._out:
            delta = await self._generation.__anext__()
            if delta.text:
                try:
                    self._out.extend(
                        self._splitter.feed(
                            delta.text, forced=delta.forced, tokens=delta.tokens or 0
                        )
                    )
                except BackendError:
                    await self._generation.aclose()
                    raise
            if delta.finish_reason is not None or delta.usage is not None:
                reason = delta.finish_reason
                if reason == STOP and self._splitter.done:
                    reason = TOOL_CALLS
                self._out.append(Delta(finish_reason=reason, usage=delta.usage))
        return self._out.popleft()

    async def aclose(self) -> None:
        """Stop the generation (see :meth:`LocalGeneration.aclose`)."""
        await self._generation.aclose()
