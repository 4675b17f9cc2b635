"""Chat Completions chunks -> deltas, with each tool call's id (sans-I/O).

:class:`ToolIdDecoder` is a :class:`~sdk._http._chunks.ChunkDecoder` that also reads
``delta.tool_calls[i].id``, sent with a call's first chunk, and puts it on that call's first
delta (``Delta.tool_call_id``), so a tool call's events say which call they belong to. Used
for requests that call tools; a plain document stream keeps the plain decoder.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from sdk._backend import Delta
from sdk._http._chunks import ChunkDecoder

__all__ = ["ToolIdDecoder"]


class ToolIdDecoder(ChunkDecoder):
    """A :class:`~sdk._http._chunks.ChunkDecoder` that reports tool call ids."""

    def __init__(self, *, tools: bool = True) -> None:
        super().__init__(tools=tools)
        self._ids: set[int] = set()

    def feed_chunk(self, chunk: Mapping[str, Any]) -> list[Delta]:
        deltas = super().feed_chunk(chunk)
        new = self._new_ids(chunk)
        if not new:
            return deltas
        out: list[Delta] = []
        for index, call_id in new.items():
            # The id goes first, so that the call's tracker is made knowing it.
            first = next((d for d in deltas if d.tool_call == index), None)
            if first is None or first.tool_name is None:
                out.append(Delta(tool_call=index, tool_call_id=call_id))
            else:
                deltas[deltas.index(first)] = dataclasses.replace(first, tool_call_id=call_id)
        return out + deltas

    def _new_ids(self, chunk: Mapping[str, Any]) -> dict[int, str]:
        found: dict[int, str] = {}
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") if isinstance(choice, Mapping) else None
            calls = delta.get("tool_calls") if isinstance(delta, Mapping) else None
            if not isinstance(calls, list):
                continue
            for position, call in enumerate(calls):
                if not isinstance(call, Mapping):
                    continue
                index = call.get("index")
                index = index if isinstance(index, int) else position
                call_id = call.get("id")
                if isinstance(call_id, str) and call_id and index not in self._ids:
                    self._ids.add(index)
                    found[index] = call_id
        return found
