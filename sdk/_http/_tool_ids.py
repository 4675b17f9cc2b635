"""Chat Completions chunks -> deltas, with each tool call's id (sans-I/O).

:class:`ToolIdDecoder` is a :class:`~sdk._http._chunks.ChunkDecoder` that also reports
``delta.tool_calls[i].id``: the first delta of a call that carries its id has it
(``Delta.tool_call_id``; usually the call's first delta, with its name, but a server may send
the id later), so a tool call's events say which call they belong to. Without an ``index``,
the ids also tell the calls apart (see :mod:`sdk._http._chunks`). Used for requests that call
tools; a plain document stream keeps the plain decoder.
"""

from __future__ import annotations

from sdk._http._chunks import ChunkDecoder

__all__ = ["ToolIdDecoder"]


class ToolIdDecoder(ChunkDecoder):
    """A :class:`~sdk._http._chunks.ChunkDecoder` that reports tool call ids."""

    def __init__(self, *, tools: bool = True) -> None:
        super().__init__(tools=tools, ids=True)
