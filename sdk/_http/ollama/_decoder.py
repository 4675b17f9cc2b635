"""Ollama's ``/api/chat`` stream lines -> :class:`~sdk._backend.Delta` values (sans-I/O).

Each line is one JSON object. :class:`OllamaDecoder` has the face of every provider's decoder
(``decode``, ``end``, ``done``), so the shared read loop drives it with JSON-lines framing:

- ``message.content`` -> ``Delta(text=...)`` (only whitespace is dropped while tools are
  offered); ``message.thinking`` -> ``Delta(reasoning=...)``.
- ``message.tool_calls``: Ollama sends each call whole, its ``arguments`` an object; each is
  one delta, ``Delta(text=<the arguments' JSON text>, tool_call=k, tool_name=name)`` (``k``
  counts the calls), so its field events come together.
- A call forced as the answer (``call=``, :func:`~sdk._http.ollama._request.forced_call`):
  ``message.content`` is that call's arguments, every piece of it (whitespace too) reported
  as ``Delta(text=..., tool_call=0)``, the tool's name on the first; Ollama sends no id, so
  the call's id is ``"call_0"`` where one is needed, as for any call without one.
- ``done: true`` ends the stream: ``done_reason`` read by :data:`STOP_REASONS` (the words
  Ollama's server writes): ``"stop"`` (``"tool_calls"`` when the model called a tool, a forced
  call included; also when ``done_reason`` is absent), ``"length"`` (a
  :class:`~sdk.TruncatedError` when the document is unfinished), others (``load``,
  ``unload``, ``connection_closed``) as they are (an unfinished document is then a
  :class:`~sdk.TruncatedError` with that ``reason``); usage from ``prompt_eval_count`` and
  ``eval_count``.
- ``{"error": "..."}`` raises :class:`~sdk.TransportError` (retryable: a server failing
  mid-generation); a line that is not a JSON object raises it too (not retryable).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sdk._backend import LENGTH, STOP, TOOL_CALLS, Delta, Usage
from sdk._errors import TransportError
from sdk._http._json_message import json_object
from sdk._http._stop_reasons import AS_IS, finish_reason_of

__all__ = ["STOP_REASONS", "OllamaDecoder"]

STOP_REASONS: Mapping[str, str] = {
    "stop": STOP,  # "tool_calls" when the model called a tool
    "length": LENGTH,
    # Not a generation's end: a bare load or unload request, or the runner's connection closed
    # (which some versions write as an absent done_reason, read as "stop").
    "load": AS_IS,
    "unload": AS_IS,
    "connection_closed": AS_IS,
}
"""Ollama's ``done_reason`` (its server's ``DoneReason`` words, and those ``/api/chat``
writes itself) -> the finish reason the stream reads (:mod:`sdk._http._stop_reasons`)."""


class OllamaDecoder:
    """Turns the lines of one streamed chat into deltas. ``tools``: tools were offered, so text
    that is only whitespace is not the answer. ``call``: the tool whose call the answer is
    (a forced call sent as ``format``), its text read as that call's arguments."""

    def __init__(self, *, tools: bool = False, call: str | None = None) -> None:
        self._tools = tools
        self._call_name = call
        self._answered = False
        self._calls = 0
        self._finish: str | None = None
        self._usage: Usage | None = None
        self._ended = False
        self.done = False
        """True once the ``done: true`` line arrived."""

    def decode(self, event: str, data: str) -> str | list[Delta]:
        """The deltas of one line (``event`` is always ``""`` in JSON lines)."""
        line = json_object(data, "a line", "a line", fast=False)
        if line.get("error") is not None:
            error = line["error"]
            said = error if isinstance(error, str) else json.dumps(error)
            raise TransportError(f"Ollama: {said}", retryable=True, body=line)
        out: list[Delta] = []
        message = line.get("message")
        if isinstance(message, Mapping):
            thinking = message.get("thinking")
            if isinstance(thinking, str) and thinking:
                out.append(Delta(reasoning=thinking))
            content = message.get("content")
            if isinstance(content, str) and content and self._call_name is not None:
                out.append(self._answer(content))
            elif isinstance(content, str) and content and not (self._tools and content.isspace()):
                if not out and not message.get("tool_calls") and not line.get("done"):
                    return content  # the common line: text alone
                out.append(Delta(text=content))
            calls = message.get("tool_calls")
            if isinstance(calls, list):
                out.extend(self._call(call) for call in calls if isinstance(call, Mapping))
        if line.get("done"):
            self.done = True
            reason = line.get("done_reason")
            finish = STOP
            if isinstance(reason, str) and reason:
                finish = finish_reason_of(STOP_REASONS, reason)
            # Only a call the model ended is done: a cut-off one's arguments are unfinished.
            self._finish = TOOL_CALLS if self._calls and finish == STOP else finish
            self._usage = Usage(
                prompt_tokens=_int(line.get("prompt_eval_count")),
                completion_tokens=_int(line.get("eval_count")),
            )
            out.extend(self.end())
        return out

    def end(self) -> list[Delta]:
        """The stream is over: the last delta, if the ``done`` line came."""
        if self._ended or self._finish is None:
            return []
        self._ended = True
        return [Delta(finish_reason=self._finish, usage=self._usage)]

    def _answer(self, text: str) -> Delta:
        """A piece of the forced call's arguments: call 0, named on its first piece."""
        first = not self._answered
        self._answered = True
        self._calls = max(self._calls, 1)
        return Delta(text=text, tool_call=0, tool_name=self._call_name if first else None)

    def _call(self, call: Mapping[str, Any]) -> Delta:
        function = call.get("function")
        function = function if isinstance(function, Mapping) else {}
        arguments = function.get("arguments")
        text = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
        name = function.get("name")
        call_id = call.get("id")
        number = self._calls
        self._calls += 1
        return Delta(
            text=text,
            tool_call=number,
            tool_name=name if isinstance(name, str) else None,
            tool_call_id=call_id if isinstance(call_id, str) else None,
        )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
