"""Responses API stream events -> :class:`~sdk._backend.Delta` values (sans-I/O).

:class:`ResponsesDecoder` is to ``POST /responses`` what
:class:`~sdk._http.openai._chat_decoder.ChunkDecoder` is to Chat Completions, with the same
face (``feed_event`` and ``decode``, ``end``, ``done``), so the shared read loop
(:func:`~sdk._http._read_loop.stream_deltas`) drives either. Each event's
``type`` (in its JSON; the SSE ``event:`` name is the same) decides:

- ``response.output_text.delta`` -> ``Delta(text=delta)``; ``response.refusal.delta`` ->
  ``Delta(refusal=delta)``; ``response.reasoning_text.delta`` and
  ``response.reasoning_summary_text.delta`` -> ``Delta(reasoning=delta)``.
- ``response.output_item.added`` with a ``function_call`` item -> the call's first delta:
  ``Delta(tool_call=k, tool_name=name, tool_call_id=call_id)`` where ``k`` counts the function
  calls of the response (0, 1, ...); ``response.function_call_arguments.delta`` -> that call's
  ``Delta(text=delta, tool_call=k)`` (found by ``item_id``, else ``output_index``). An
  ``output_item.added`` for an item already added (the same item ``id``; without one, the same
  ``call_id``; without either, the same ``output_index``) is the same call said twice: it adds
  no call, and its arguments, if any, are the call's text so far, not new text.
- ``response.completed`` -> the last ``Delta(finish_reason, usage)``: ``"tool_calls"`` when
  the response called a function, else ``"stop"``; usage from ``response.usage``
  (``input_tokens``, ``output_tokens``). ``response.incomplete`` -> the same with the finish
  reason its ``incomplete_details.reason`` is, by :data:`STOP_REASONS` (openai-python's
  values): ``max_output_tokens`` is ``"length"``, ``content_filter`` is ``"content_filter"``
  (so the stream raises the same errors for both APIs); ``max_messages`` and ``steered`` stay
  as they are, and an incomplete response that gives no reason is ``"incomplete"`` (an
  unfinished document is then a :class:`~sdk.TruncatedError` with that ``reason``). The
  finishing delta keeps the API's own word (``Delta.response["stop_reason"]``).
- ``response.failed`` and ``error`` raise :class:`~sdk.TransportError` (its ``retryable`` from
  the error's code: ``server_error``, ``rate_limit_exceeded`` and other transient codes, or a
  numeric 429/5xx, are retryable; an invalid request or prompt is not).
- ``response.created`` / ``response.in_progress`` -> ``Delta(response={"id", "model",
  "service_tier"})`` (each once); an ``output_text.delta``'s ``logprobs`` (asked for by
  ``include: ["message.output_text.logprobs"]``) go with its text.
- ``response.custom_tool_call_input.delta`` -> ``Delta(text=delta)``: the input of a custom
  tool is the output of a constraint OpenAI applies itself (a forced custom tool whose
  ``format`` is a grammar: :func:`sdk._http.openai._flavours.custom_tool`); its ``.done`` adds
  what the deltas did not carry (its ``input`` goes on from the text given), as does a
  ``custom_tool_call`` item's ``input`` when it is added or done. Such a call is the answer, so
  the finish reason stays ``"stop"``.
- Every other event is ignored, each for a reason :data:`IGNORED` gives (a ``*.done`` repeats
  what its deltas said; a hosted tool's progress is not output...): :data:`READ` and
  :data:`IGNORED` together name every event type of the API (a test holds them to
  openai-python's ``ResponseStreamEvent``). Events need not carry ``sequence_number`` or
  ``output_index`` (llama.cpp's do not).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic_core import from_json

from sdk._backend import CONTENT_FILTER, LENGTH, STOP, TOOL_CALLS, Delta, GenerationRequest
from sdk._errors import TransportError
from sdk._http._request_checks import calls_forced
from sdk._http._stop_reasons import AS_IS, finish_reason_of, stop_said
from sdk._http.openai._errors import responses_error
from sdk._http.openai._flavours import Server
from sdk._http.openai._usage import responses_usage

__all__ = [
    "IGNORED",
    "READ",
    "STOP_REASONS",
    "ResponsesDecoder",
    "responses_decoder",
    "responses_error",
]

# The reasoning text itself (vLLM, gpt-oss) and, where only a summary is shown, the summary.
_REASONING = frozenset({"response.reasoning_text.delta", "response.reasoning_summary_text.delta"})
STOP_REASONS: Mapping[str, str] = {
    "max_output_tokens": LENGTH,
    "content_filter": CONTENT_FILTER,
    "max_messages": AS_IS,
    # Stopped at a safe boundary after a WebSocket ``response.steer``; a successor follows.
    "steered": AS_IS,
}
"""An incomplete response's ``incomplete_details.reason`` (openai-python's
``IncompleteDetails``, every value) -> the finish reason the stream reads
(:mod:`sdk._http._stop_reasons`)."""

_NO_REASON = "incomplete"  # an incomplete response that does not say why

READ: frozenset[str] = frozenset(
    {
        "response.created",
        "response.in_progress",
        "response.output_text.delta",
        "response.refusal.delta",
        "response.reasoning_text.delta",
        "response.reasoning_summary_text.delta",
        "response.output_item.added",
        "response.output_item.done",  # a custom tool call's input, if the deltas missed some
        "response.function_call_arguments.delta",
        "response.custom_tool_call_input.delta",
        "response.custom_tool_call_input.done",
        "response.completed",
        "response.incomplete",
        "response.failed",
        "error",
    }
)
"""The event types :class:`ResponsesDecoder` reads (see the module docstring)."""

_DONE = "repeats, whole, what its deltas already said"
_HOSTED = "progress of a tool OpenAI runs itself (not output; fieldstream sends none)"
IGNORED: Mapping[str, str] = {
    "response.queued": "the response waits for a slot: nothing said yet",
    "response.output_text.done": _DONE,
    "response.output_text.annotation.added": "a citation beside the text, not the text",
    "response.refusal.done": _DONE,
    "response.reasoning_text.done": _DONE,
    "response.reasoning_summary_text.done": _DONE,
    "response.reasoning_summary_part.added": "a summary part begins; its text comes as deltas",
    "response.reasoning_summary_part.done": _DONE,
    "response.content_part.added": "a content part begins; its text comes as deltas",
    "response.content_part.done": _DONE,
    "response.function_call_arguments.done": _DONE,
    "response.audio.delta": "audio output, not text",
    "response.audio.done": "audio output, not text",
    "response.audio.transcript.delta": "the transcript of audio output, not the output",
    "response.audio.transcript.done": "the transcript of audio output, not the output",
    "response.compaction.compacting": "the server compacts the conversation: not output",
    "response.code_interpreter_call.in_progress": _HOSTED,
    "response.code_interpreter_call.interpreting": _HOSTED,
    "response.code_interpreter_call.completed": _HOSTED,
    "response.code_interpreter_call_code.delta": _HOSTED,
    "response.code_interpreter_call_code.done": _HOSTED,
    "response.file_search_call.in_progress": _HOSTED,
    "response.file_search_call.searching": _HOSTED,
    "response.file_search_call.completed": _HOSTED,
    "response.web_search_call.in_progress": _HOSTED,
    "response.web_search_call.searching": _HOSTED,
    "response.web_search_call.completed": _HOSTED,
    "response.image_generation_call.in_progress": _HOSTED,
    "response.image_generation_call.generating": _HOSTED,
    "response.image_generation_call.partial_image": _HOSTED,
    "response.image_generation_call.completed": _HOSTED,
    "response.mcp_call.in_progress": _HOSTED,
    "response.mcp_call.completed": _HOSTED,
    "response.mcp_call.failed": _HOSTED,
    "response.mcp_call_arguments.delta": _HOSTED,
    "response.mcp_call_arguments.done": _HOSTED,
    "response.mcp_list_tools.in_progress": _HOSTED,
    "response.mcp_list_tools.completed": _HOSTED,
    "response.mcp_list_tools.failed": _HOSTED,
    "response.shell_call_command.added": _HOSTED,
    "response.shell_call_command.delta": _HOSTED,
    "response.shell_call_command.done": _HOSTED,
    "response.shell_call_output_content.delta": _HOSTED,
    "response.shell_call_output_content.done": _HOSTED,
}
"""Each event type :class:`ResponsesDecoder` ignores -> why."""


class ResponsesDecoder:
    """Turns the events of one streamed response into deltas. ``tools`` says the request asked
    for a tool call: message text that is only whitespace is then dropped."""

    def __init__(self, *, tools: bool = False) -> None:
        self._tools = tools
        # "item:<id>", "call:<call_id>", "index:<output_index>" -> call number
        self._calls: dict[str, int] = {}
        self._sent: dict[int, int] = {}  # call number -> characters of arguments given
        self._count = 0  # function calls so far
        self._seen: dict[str, str] = {}  # what was reported about the response
        self._input: dict[str, int] = {}  # custom tool call -> characters of its input given
        self._ended = False
        self.done = False
        """True once a terminal event (completed, incomplete) arrived."""

    def feed_event(self, event: str, data: str) -> list[Delta]:
        """One server-sent event: its ``event`` field (``""`` when absent) and its ``data``."""
        out = self.decode(event, data)
        return [Delta(text=out)] if isinstance(out, str) else out

    def decode(self, event: str, data: str) -> str | list[Delta]:
        """As :meth:`feed_event`, except that a delta of output text is given as its text (the
        common case: no object is made for it)."""
        if not data.startswith("{"):
            text = data.strip()
            if not text:
                return []
            if text == "[DONE]":  # not the Responses API's, but some servers end with it
                self.done = True
                return []
        payload = _object(data)
        if payload is None:
            raise TransportError(
                f"malformed stream: an event's data is not a JSON object: {data[:200]!r}",
                retryable=False,
                body=data[:2000],
            )
        kind = payload.get("type", event)
        kind = kind if isinstance(kind, str) else event
        if kind == "response.output_text.delta" and not payload.get("logprobs"):
            delta = payload.get("delta")
            if not isinstance(delta, str) or not delta or (self._tools and delta.isspace()):
                return []
            return delta
        return self.feed(kind, payload)

    """The same as :meth:`feed_event` (the read loop's name for it)."""

    def feed(self, kind: str, payload: Mapping[str, Any]) -> list[Delta]:
        """One parsed event of type ``kind``."""
        if kind == "response.output_text.delta":
            delta = payload.get("delta")
            if not isinstance(delta, str) or not delta:
                return []
            if self._tools and not delta.strip():
                return []
            tokens = payload.get("logprobs")
            tokens = tuple(tokens) if isinstance(tokens, list) and tokens else None
            return [Delta(text=delta, logprobs=tokens)]
        if kind in ("response.created", "response.in_progress"):
            return self._said(payload)
        if kind == "response.function_call_arguments.delta":
            delta = payload.get("delta")
            call = self._call_of(payload)
            if not isinstance(delta, str) or not delta or call is None:
                return []
            return [Delta(text=delta, tool_call=call)]
        if kind == "response.refusal.delta":
            delta = payload.get("delta")
            return [Delta(refusal=delta)] if isinstance(delta, str) and delta else []
        if kind in _REASONING:
            delta = payload.get("delta")
            return [Delta(reasoning=delta)] if isinstance(delta, str) and delta else []
        if kind == "response.custom_tool_call_input.delta":
            delta = payload.get("delta")
            if not isinstance(delta, str) or not delta:
                return []
            key = _custom_key(payload.get("item_id"), payload.get("output_index"))
            self._input[key] = self._input.get(key, 0) + len(delta)
            return [Delta(text=delta)]
        if kind == "response.custom_tool_call_input.done":
            key = _custom_key(payload.get("item_id"), payload.get("output_index"))
            return self._custom_input(key, payload.get("input"))
        if kind in ("response.output_item.added", "response.output_item.done"):
            item = payload.get("item")
            if isinstance(item, Mapping) and item.get("type") == "custom_tool_call":
                key = _custom_key(item.get("id"), payload.get("output_index"))
                return self._custom_input(key, item.get("input"))
            if kind == "response.output_item.done":
                return []
            return self._item_added(payload)
        if kind in ("response.completed", "response.incomplete"):
            return self._terminal(kind, payload)
        if kind == "response.failed":
            response = payload.get("response")
            error = response.get("error") if isinstance(response, Mapping) else None
            raise responses_error(error, default="the response failed", payload=payload)
        if kind == "error":
            # OpenAI nests the error ({"type": "error", "error": {"code", "message"}}); others
            # put its fields at the top level.
            nested = payload.get("error")
            error = nested if isinstance(nested, Mapping) else payload
            raise responses_error(error, default="the server sent an error event", payload=payload)
        return []

    def end(self) -> list[Delta]:
        """The body ended without a terminal event: nothing more to say (the stream layer
        judges the output it has)."""
        return []

    def _said(self, payload: Mapping[str, Any]) -> list[Delta]:
        """What the response says about itself (id, model, service tier), reported once."""
        response = payload.get("response")
        if not isinstance(response, Mapping):
            return []
        said = {
            key: value
            for key in ("id", "model", "service_tier")
            if isinstance(value := response.get(key), str)
            and value
            and self._seen.get(key) != value
        }
        self._seen.update(said)
        return [Delta(response=said)] if said else []

    def _custom_input(self, key: str, whole: object) -> list[Delta]:
        """A custom tool call's input said whole: the part that goes on from what was given."""
        if not isinstance(whole, str):
            return []
        given = self._input.get(key, 0)
        if len(whole) <= given:
            return []
        self._input[key] = len(whole)
        return [Delta(text=whole[given:])]

    def _item_added(self, payload: Mapping[str, Any]) -> list[Delta]:
        item = payload.get("item")
        if not isinstance(item, Mapping) or item.get("type") != "function_call":
            return []
        arguments = item.get("arguments")
        text = arguments if isinstance(arguments, str) else ""
        keys = [
            f"{kind}:{value}"
            for kind, value in (
                ("item", item.get("id")),
                ("call", item.get("call_id")),
                ("index", payload.get("output_index")),
            )
            if value is not None
        ]
        if keys and keys[0] in self._calls:  # the same item, said again
            call = self._calls[keys[0]]
            sent = self._sent.get(call, 0)
            # Only arguments that go on from what was given are new.
            extra = text[sent:] if len(text) > sent else ""
            self._sent[call] = sent + len(extra)
            return [Delta(text=extra, tool_call=call)] if extra else []
        call = self._count
        self._count += 1
        for key in keys:
            self._calls.setdefault(key, call)
        self._sent[call] = len(text)
        name, call_id = item.get("name"), item.get("call_id")
        return [
            Delta(
                text=text,
                tool_call=call,
                tool_name=name if isinstance(name, str) else None,
                tool_call_id=call_id if isinstance(call_id, str) else None,
            )
        ]

    def _call_of(self, payload: Mapping[str, Any]) -> int | None:
        for kind, value in (
            ("item", payload.get("item_id")),
            ("index", payload.get("output_index")),
        ):
            call = self._calls.get(f"{kind}:{value}") if value is not None else None
            if call is not None:
                delta = payload.get("delta")
                if isinstance(delta, str):
                    self._sent[call] = self._sent.get(call, 0) + len(delta)
                return call
        return None

    def _terminal(self, kind: str, payload: Mapping[str, Any]) -> list[Delta]:
        self.done = True
        if self._ended:
            return []
        self._ended = True
        response = payload.get("response")
        response = response if isinstance(response, Mapping) else {}
        empty: list[Delta] = []
        said = None
        if kind == "response.completed":
            reason = TOOL_CALLS if self._count else STOP
            # A call with no arguments text (a tool that takes none): {}.
            empty = [
                Delta(text="{}", tool_call=call)
                for call in range(self._count)
                if not self._sent.get(call)
            ]
        else:
            details = response.get("incomplete_details")
            raw = details.get("reason") if isinstance(details, Mapping) else None
            word = str(raw) if raw else _NO_REASON
            reason = finish_reason_of(STOP_REASONS, word)
            said = stop_said(word, reason)
        usage = response.get("usage")
        reported = None
        if isinstance(usage, Mapping):
            reported = responses_usage(usage)
        return [*empty, Delta(finish_reason=reason, usage=reported, response=said)]


def responses_decoder(request: GenerationRequest, server: Server | None) -> ResponsesDecoder:
    """The decoder for ``request``'s events (``server`` is not read: the backends' common
    face). Output a server writes that no JSON document begins with, under a format it was
    sent (a server not named that ignored ``text.format``, as llama.cpp's does), is told apart
    by the backend's :class:`~sdk._server_policy.ServerPolicy`
    (:func:`sdk._http.openai._cures.openai_policy`): a :class:`~sdk.ConstraintIgnored`."""
    del server
    return ResponsesDecoder(tools=calls_forced(request))


def _custom_key(item_id: object, output_index: object) -> str:
    """Which custom tool call an event is of: its item id, else its output index (a server
    that sends neither has one such call)."""
    if isinstance(item_id, str) and item_id:
        return f"item:{item_id}"
    return f"index:{output_index}"


def _object(text: str) -> dict[str, Any] | None:
    """``text`` parsed, if it is a JSON object: by pydantic-core's reader (as chunks are, see
    :mod:`sdk._http.openai._chat_decoder`), by ``json.loads`` for what that refuses."""
    try:
        value = from_json(text, cache_strings="keys")
    except (ValueError, TypeError):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return None
    return value if type(value) is dict else None
