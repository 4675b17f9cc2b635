"""Messages API stream events -> :class:`~sdk._backend.Delta` values (sans-I/O).

:class:`AnthropicDecoder` is to ``POST /v1/messages`` what
:class:`~sdk._http.openai._chat_decoder.ChunkDecoder` is to Chat Completions, with the same face
(``decode``, ``end``, ``done``), so the shared read loop (:func:`~sdk._http._read_loop.
stream_deltas`) drives it. The event's ``type`` (in its JSON; the SSE ``event:`` name is the
same) decides:

- ``content_block_start`` of a ``tool_use`` block -> the call's first delta,
  ``Delta(tool_call=k, tool_name=name, tool_call_id=id)``, ``k`` counting the response's
  tool_use blocks (0, 1, ...); its ``input_json_delta`` pieces -> ``Delta(text=partial_json,
  tool_call=k)``; a block that stops with none (a tool that takes no arguments) ->
  ``Delta(text="{}", tool_call=k)``, as Anthropic's SDK reads it. A ``text`` block's
  ``text_delta`` -> ``Delta(text=...)`` (only whitespace
  is dropped when the request forced a tool call); a ``thinking`` block's ``thinking_delta``
  -> ``Delta(reasoning=...)``. Signatures, citations, redacted thinking and server tool
  blocks carry nothing the stream reads.
- ``message_start`` and ``message_delta`` carry the usage (input, cache creation and cache
  read tokens are the prompt; ``output_tokens`` the completion; a later report replaces an
  earlier one); ``message_start``'s is given at once, as ``Delta(usage=...)``, so that a
  stream aborted before its end keeps what it was reported; ``message_delta`` the
  ``stop_reason``, given on the last delta (at ``message_stop``, or at the end of the body)
  in the stream's words, by :data:`STOP_REASONS` (every value of Anthropic's ``StopReason``):
  ``end_turn`` and ``stop_sequence`` are ``"stop"``, ``max_tokens`` and
  ``model_context_window_exceeded`` are ``"length"`` (a :class:`~sdk.TruncatedError` when the
  document is unfinished), ``tool_use`` is ``"tool_calls"``; ``refusal`` stays as it is and
  adds a ``Delta(refusal=...)`` (the ``stop_details`` explanation when there is one), so the
  stream raises :class:`~sdk.RefusedError`; ``pause_turn`` (a server tool paused the turn)
  stays as it is: an unfinished document is then a :class:`~sdk.TruncatedError` with reason
  ``"pause_turn"``. The finishing delta keeps Anthropic's own word
  (``Delta.response["stop_reason"]``) when the finish reason is another.
- ``ping`` is ignored; ``error`` raises the :class:`~sdk.APIStatusError` of the error's
  ``type`` (``overloaded_error`` is HTTP 529, retried as a 5xx; ``rate_limit_error`` 429;
  ``api_error`` 500; ``invalid_request_error`` 400, not retried, ...:
  :data:`~sdk._http.anthropic._errors.ERROR_STATUS`).
- An event's data that is not a JSON object raises :class:`~sdk.TransportError`; an event
  type this decoder does not know is ignored (the API adds new ones, as its versioning
  policy says clients must expect).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sdk._backend import LENGTH, STOP, TOOL_CALLS, Delta, Usage
from sdk._http._json_message import json_object
from sdk._http._stop_reasons import AS_IS, finish_reason_of, stop_said
from sdk._http.anthropic._errors import anthropic_error

__all__ = ["STOP_REASONS", "AnthropicDecoder"]

STOP_REASONS: Mapping[str, str] = {
    "end_turn": STOP,
    "stop_sequence": STOP,
    "max_tokens": LENGTH,
    "model_context_window_exceeded": LENGTH,
    "tool_use": TOOL_CALLS,
    "refusal": AS_IS,  # with a refusal delta: the stream raises RefusedError
    "pause_turn": AS_IS,  # a server tool paused the turn: not done, not cut by a limit
}
"""Anthropic's ``stop_reason`` (the SDK's ``StopReason``, every value) -> the finish reason the
stream reads (:mod:`sdk._http._stop_reasons`)."""


class AnthropicDecoder:
    """Turns the events of one streamed message into deltas. ``tools`` says the request forced
    a tool call: text that is only whitespace is then dropped."""

    def __init__(self, *, tools: bool = False) -> None:
        self._tools = tools
        self._calls: dict[int, int] = {}  # content block index -> tool call number
        self._argued: set[int] = set()  # the tool calls some input text came for
        self._kinds: dict[int, str] = {}  # content block index -> its type
        self._stop_reason: str | None = None
        self._stop_details: Any = None
        self._input = 0  # prompt tokens not read from or written to the cache
        self._output = 0
        self._reported = False
        self._ended = False
        self.done = False
        """True once ``message_stop`` arrived: nothing more is expected."""
        self.cache_creation_tokens = 0
        """Prompt tokens written to the prompt cache (``cache_creation_input_tokens``)."""
        self.cache_read_tokens = 0
        """Prompt tokens read from the prompt cache (``cache_read_input_tokens``)."""
        self.thinking_tokens = 0
        """Of the output tokens, those spent thinking (``output_tokens_details``)."""
        self.message_id: str | None = None
        """The message's ``id`` (from ``message_start``)."""

    @property
    def stop_reason(self) -> str | None:
        """Anthropic's own ``stop_reason``, once ``message_delta`` said it."""
        return self._stop_reason

    def decode(self, event: str, data: str) -> str | list[Delta]:
        """The deltas of one event (``event``: the SSE event name, ``""`` when absent)."""
        if event == "ping" or not data.strip():
            return []
        payload = json_object(data, "an event", "an event's data")
        kind = payload.get("type") or event
        if kind == "content_block_delta":
            return self._block_delta(payload)
        if kind == "content_block_start":
            return self._block_start(payload)
        if kind == "message_start":
            message = payload.get("message")
            if isinstance(message, Mapping):
                if isinstance(message.get("id"), str):
                    self.message_id = message["id"]
                self._usage(message.get("usage"))
            # Given now, not only at the end: an abort (a violation) never reaches the end,
            # and the prompt tokens reported here are what the attempt cost.
            return [Delta(usage=self._usage_so_far())] if self._reported else []
        if kind == "message_delta":
            delta = payload.get("delta")
            if isinstance(delta, Mapping) and isinstance(delta.get("stop_reason"), str):
                self._stop_reason = delta["stop_reason"]
                self._stop_details = delta.get("stop_details")
            self._usage(payload.get("usage"))
            return []
        if kind == "message_stop":
            self.done = True
            return self.end()
        if kind == "content_block_stop":
            return self._block_stop(payload)
        if kind == "error":
            raise anthropic_error(payload, default="the server sent an error event")
        return []  # ping, and types added later

    def end(self) -> list[Delta]:
        """The stream is over (``message_stop`` or end of body): the last delta, if any."""
        if self._ended or (self._stop_reason is None and not self._reported):
            return []
        self._ended = True
        out = []
        reason = self._stop_reason
        if reason == "refusal":
            details = self._stop_details
            explanation = details.get("explanation") if isinstance(details, Mapping) else None
            out.append(
                Delta(
                    refusal=explanation
                    if isinstance(explanation, str) and explanation
                    else "the model refused (stop_reason 'refusal')"
                )
            )
        finish = None if reason is None else finish_reason_of(STOP_REASONS, reason)
        out.append(
            Delta(
                finish_reason=finish,
                usage=self._usage_so_far(),
                response=stop_said(reason, finish),
            )
        )
        return out

    def _usage_so_far(self) -> Usage:
        """The usage reported so far (cache creation and read tokens are prompt)."""
        prompt = self._input + self.cache_creation_tokens + self.cache_read_tokens
        return Usage(
            prompt_tokens=prompt,
            completion_tokens=self._output,
            prompt_tokens_details=_details(
                cached_tokens=self.cache_read_tokens,
                cache_creation_tokens=self.cache_creation_tokens,
            ),
            completion_tokens_details=_details(reasoning_tokens=self.thinking_tokens),
        )

    def _block_start(self, payload: Mapping[str, Any]) -> list[Delta]:
        index = payload.get("index")
        block = payload.get("content_block")
        if not isinstance(index, int) or not isinstance(block, Mapping):
            return []
        kind = block.get("type")
        self._kinds[index] = kind if isinstance(kind, str) else ""
        if kind == "tool_use":
            number = self._calls[index] = len(self._calls)
            name = block.get("name")
            call_id = block.get("id")
            return [
                Delta(
                    tool_call=number,
                    tool_name=name if isinstance(name, str) else None,
                    tool_call_id=call_id if isinstance(call_id, str) else None,
                )
            ]
        if kind == "text" and isinstance(text := block.get("text"), str) and text:
            return self._text(text)
        if kind == "thinking" and isinstance(thought := block.get("thinking"), str) and thought:
            return [Delta(reasoning=thought)]
        return []

    def _block_delta(self, payload: Mapping[str, Any]) -> str | list[Delta]:
        delta = payload.get("delta")
        if not isinstance(delta, Mapping):
            return []
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text")
            if type(text) is str and text and not (self._tools and text.isspace()):
                return text  # the common event: text alone
            return []
        if kind == "input_json_delta":
            piece = delta.get("partial_json")
            call = self._calls.get(payload.get("index"))  # type: ignore[arg-type]
            if call is None or not isinstance(piece, str) or not piece:
                return []
            self._argued.add(call)
            return [Delta(text=piece, tool_call=call)]
        if kind == "thinking_delta":
            thought = delta.get("thinking")
            return [Delta(reasoning=thought)] if isinstance(thought, str) and thought else []
        return []  # signature_delta, citations_delta, and types added later

    def _block_stop(self, payload: Mapping[str, Any]) -> list[Delta]:
        """A ``tool_use`` block that ended with no input text is a call with no arguments:
        ``{}``, as Anthropic's SDK reads it (a tool that takes none streams no
        ``input_json_delta``, or an empty one)."""
        call = self._calls.get(payload.get("index"))  # type: ignore[arg-type]
        if call is None or call in self._argued:
            return []
        self._argued.add(call)
        return [Delta(text="{}", tool_call=call)]

    def _text(self, text: str) -> list[Delta]:
        return [] if self._tools and text.isspace() else [Delta(text=text)]

    def _usage(self, usage: Any) -> None:
        if not isinstance(usage, Mapping):
            return
        self._reported = True
        created = usage.get("cache_creation_input_tokens")
        read = usage.get("cache_read_input_tokens")
        if isinstance(created, int):
            self.cache_creation_tokens = created
        if isinstance(read, int):
            self.cache_read_tokens = read
        given = usage.get("input_tokens")
        if isinstance(given, int):
            self._input = given
        output = usage.get("output_tokens")
        if isinstance(output, int):
            self._output = output
        details = usage.get("output_tokens_details")
        if isinstance(details, Mapping) and isinstance(details.get("thinking_tokens"), int):
            self.thinking_tokens = details["thinking_tokens"]


def _details(**counts: int) -> dict[str, int]:
    """The counts that are not zero (a detail the provider did not report is left out)."""
    return {key: value for key, value in counts.items() if value}
