"""Chat Completions stream chunks -> :class:`~sdk._backend.Delta` values (sans-I/O).

:class:`ChunkDecoder` is fed one server-sent event at a time (or one already-parsed chunk, for
the ``openai`` SDK path) and hands back the deltas it carries. It owns the little state a stream
has: the ``finish_reason`` and ``usage`` waiting to be reported together, the tool calls already
named, whether ``[DONE]`` arrived. No I/O, no event loop: tests feed it strings.

What it relies on and what it reports:

- ``choices[0].delta.content`` -> ``Delta(text=...)``; ``delta.refusal`` -> ``Delta(refusal=...)``;
  ``delta.reasoning_content`` (vLLM, SGLang, llama.cpp, DeepSeek) or ``delta.reasoning``
  (OpenRouter, newer vLLM) -> ``Delta(reasoning=...)``;
  ``delta.tool_calls[i].function.arguments`` -> ``Delta(text=..., tool_call=index)``, the call's
  ``function.name`` on the first delta that has it (not always the call's first), and, when
  ids are asked for (``ids=True``), its ``id`` likewise. Arguments sent as a JSON object
  rather than its text are taken as that object's text. With ids asked for, a call's deltas
  wait until its id arrives (some servers send it after the call's first entry), so every
  event of the call can carry it; a call that never gets one is let go, without an id, when
  another call starts, the finish reason arrives, or the stream ends.
- ``choices[0].logprobs.content`` (asked for by ``logprobs=True``) goes with its content:
  ``Delta(text=..., logprobs=(...))``; the chunk's ``id``, ``system_fingerprint``, ``model``
  and ``service_tier`` are reported once each, as ``Delta(response={...})`` (again if one
  changes). Other fields are ignored.
- Which call a ``tool_calls`` entry belongs to: its ``index`` when it has one. Without one
  (Gemini's OpenAI-compatible endpoint sends none), its ``id`` decides: an id seen before is
  that call's, a new id starts a new call (the next index), except that an id for a call that
  has none yet is the current call's own id arriving late. Without an id, a name other than
  the current call's starts a new call too (the same name again continues it: two calls of
  one tool in a row are told apart only by an index or an id). An entry with none of them
  continues the current call (the first entry of a chunk) or follows the entry before it in
  the same chunk.
- ``finish_reason`` and ``usage`` end the stream as one last ``Delta(finish_reason, usage)``;
  content or tool calls sent after the finish reason are not output and are dropped. The
  finish reason is read by :data:`STOP_REASONS` (openai-python's ``finish_reason`` values, and
  the words OpenAI-compatible servers add): the deprecated ``function_call`` is
  ``"tool_calls"``, Mistral's ``model_length`` (the context window is full) is ``"length"``;
  another word (Mistral's ``error``...) stays as it is (an unfinished document is then a
  :class:`~sdk.TruncatedError` with that ``reason``), and the finishing delta keeps the
  server's word (``Delta.response["stop_reason"]``) when it is not the finish reason.
  The usage chunk (``"choices": []``, asked for by ``stream_options.include_usage``) follows the
  finish chunk, so the last delta is sent once both are known, at ``[DONE]``, or at the end of
  the stream, whichever comes first.
- An ``event: error`` event, or a chunk that is an error object (``{"error": {...}}``), raises
  :class:`~sdk.TransportError`; a payload that is not a JSON object raises it too.
- A chunk for a second choice (``index > 0``) raises :class:`~sdk.BackendError`: one stream reads
  one choice (``n > 1`` is refused when the request is built).
- A stream that ends without ``[DONE]`` and without ``finish_reason`` is not an error here: the
  stream layer sees the end of the source and decides (a complete document is fine; an
  incomplete one is a :class:`~sdk.TruncatedError`).

Speed (this runs once per token): the data is parsed by pydantic-core's ``from_json`` (about
2.5x faster than ``json.loads`` on a chunk; ``json.loads`` still reads what it refuses, such as
a lone surrogate escape, so the values are the same; only keys go to its string cache, so
ids and tokens do not fill it), and a chunk of the common shape (one choice, index 0, a
non-empty ``content``, nothing else that matters) takes a short path that makes the same
delta as the general one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic_core import from_json

from sdk._backend import CONTENT_FILTER, LENGTH, STOP, TOOL_CALLS, Delta, GenerationRequest, Usage
from sdk._errors import BackendError, TransportError
from sdk._http._json_message import loads
from sdk._http._request_checks import calls_forced
from sdk._http._stop_reasons import finish_reason_of, stop_said
from sdk._http.openai._errors import error_from_payload
from sdk._http.openai._flavours import Server, custom_tool, emulated_call
from sdk._http.openai._usage import chat_usage

__all__ = [
    "HOLD_FOR_ID",
    "STOP_REASONS",
    "ChunkDecoder",
    "CustomInputDecoder",
    "EmulatedCallDecoder",
    "ToolIdDecoder",
    "chat_decoder",
    "error_from_payload",
]

STOP_REASONS: Mapping[str, str] = {
    "stop": STOP,
    "length": LENGTH,
    "tool_calls": TOOL_CALLS,
    "content_filter": CONTENT_FILTER,
    "function_call": TOOL_CALLS,  # the deprecated functions API's word for a call
    "model_length": LENGTH,  # Mistral's: the model's context window is full
}
"""A chunk's ``finish_reason`` (openai-python's ``ChatCompletionChunk`` values, and words
OpenAI-compatible servers add) -> the finish reason the stream reads
(:mod:`sdk._http._stop_reasons`); another passes through as it is."""

# What a chunk says about the response, reported once each (Delta.response).
_RESPONSE_KEYS = ("id", "system_fingerprint", "model", "service_tier")

# How many of a tool call's entries wait for its id, when the id did not come with the first
# (a server may send it a chunk later): enough for the usual one-chunk lag, few enough that a
# server that never sends ids delays the call's checks by no more than this.
HOLD_FOR_ID = 3


class ChunkDecoder:
    """Turns the chunks of one streamed completion into deltas.

    ``tools`` says the request forced a tool call: message ``content`` that is only whitespace
    is then dropped (some servers send a newline before the call), while any other content is
    passed on as it is, for the stream layer to judge. ``ids``: each tool call's ``id`` is put
    on the first delta that carries it (``Delta.tool_call_id``).
    """

    def __init__(self, *, tools: bool = False, ids: bool = False) -> None:
        self._tools = tools
        self._report_ids = ids
        self._named: dict[int, str] = {}  # call index -> its name, once seen
        self._ids: dict[int, str] = {}  # call index -> its id, once seen
        self._by_id: dict[str, int] = {}
        self._current: int | None = None  # the call the last tool_calls entry went to
        # With ids asked for: calls whose id has not come yet -> (their text, their name).
        self._waiting: dict[int, tuple[list[str], str | None]] = {}
        self._no_id: set[int] = set()  # calls whose text stopped waiting for an id
        self._argued: set[int] = set()  # calls some arguments text came for
        self._finish_reason: str | None = None
        self._stop_said: dict[str, str] | None = None  # the server's own word for it
        self._said: dict[str, Any] = {}  # what was reported about the response (id...)
        self._usage: Usage | None = None
        self._ended = False
        self.done = False
        """True once ``[DONE]`` arrived: nothing more is expected."""

    @property
    def finished(self) -> bool:
        """True once a ``finish_reason`` was received."""
        return self._finish_reason is not None

    def feed_event(self, event: str, data: str) -> list[Delta]:
        """One server-sent event (its ``event`` field, ``""`` when absent, and its ``data``)."""
        out = self.decode(event, data)
        return [Delta(text=out)] if isinstance(out, str) else out

    def decode(self, event: str, data: str) -> str | list[Delta]:
        """As :meth:`feed_event`, except that a delta of text alone is given as its text (the
        common case: no object is made for it)."""
        if event and event != "message":
            if event == "error":
                raise error_from_payload(
                    _loads_or_text(data), default="the server sent an error event"
                )
            return []  # an event type this API does not define: ignored, as the SSE spec says
        if not data.startswith("{"):  # anything but a chunk object: [DONE], keep-alive, junk
            stripped = data.strip()
            if stripped == "[DONE]":
                self.done = True
                return self.end()
            if not stripped:
                return []  # a keep-alive
        try:
            chunk = from_json(data, cache_strings="keys")
        except (ValueError, TypeError):
            chunk = loads(data, "an event's data")  # refused by pydantic-core: json.loads decides
        if type(chunk) is not dict:
            raise TransportError(
                f"malformed stream: a chunk is not a JSON object: {data[:200]!r}",
                retryable=False,
                body=data[:2000],
            )
        # The short path: a content token and nothing else (see the module docstring).
        choices = chunk.get("choices")
        if (
            type(choices) is list
            and len(choices) == 1
            and type(choice := choices[0]) is dict
            and type(delta := choice.get("delta")) is dict
            and type(content := delta.get("content")) is str
            and content
            and choice.get("index", 0) == 0
            and self._said
            and choice.get("logprobs") is None
            and choice.get("finish_reason") is None
            and self._finish_reason is None
            and chunk.get("usage") is None
            and chunk.get("error") is None
            # A delta with nothing but its content (what OpenAI streams for a token) needs
            # none of the four look-ups after ``len``.
            and (
                len(delta) == 1
                or not (
                    delta.get("refusal")
                    or delta.get("tool_calls")
                    or delta.get("reasoning_content")
                    or delta.get("reasoning")
                )
            )
            and not (self._tools and content.isspace())
        ):
            return content
        return self.feed_chunk(chunk)

    def feed_chunk(self, chunk: Mapping[str, Any]) -> list[Delta]:
        """One parsed ``chat.completion.chunk`` object."""
        if chunk.get("error") is not None:
            raise error_from_payload(chunk, default="the server reported an error mid-stream")
        out: list[Delta] = []
        said = {
            key: value
            for key in _RESPONSE_KEYS
            if isinstance(value := chunk.get(key), str) and value and self._said.get(key) != value
        }
        if said:
            self._said.update(said)
            out.append(Delta(response=said))
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            self._usage = chat_usage(usage)
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise TransportError(
                f"malformed chunk: choices is {type(choices).__name__}", retryable=False
            )
        for choice in choices:
            if not isinstance(choice, Mapping):
                continue
            index = choice.get("index", 0)
            if index not in (0, None):
                raise BackendError(
                    f"the server sent choice {index}: a structured stream reads one choice "
                    "(do not ask for n > 1)"
                )
            delta = choice.get("delta") or {}
            # After the finish reason only usage may come (the attempt reads nothing more);
            # the last delta waits for the usage, so what follows is dropped here.
            if isinstance(delta, Mapping) and self._finish_reason is None:
                out.extend(self._delta(delta, choice.get("logprobs")))
            reason = choice.get("finish_reason")
            if reason:
                self._finish_reason = finish_reason_of(STOP_REASONS, str(reason))
                self._stop_said = stop_said(str(reason), self._finish_reason)
                out.extend(self._let_go())
                out.extend(self._no_arguments())
        if self._finish_reason is not None and self._usage is not None:
            out.extend(self.end())
        return out

    def end(self) -> list[Delta]:
        """The stream is over (``[DONE]`` or end of body): the last delta, if not sent yet."""
        waited = self._let_go()
        if self._ended or (self._finish_reason is None and self._usage is None):
            return waited
        self._ended = True
        last = Delta(finish_reason=self._finish_reason, usage=self._usage, response=self._stop_said)
        return [*waited, last]

    def _no_arguments(self) -> list[Delta]:
        """At the finish reason, each call that had no arguments text: ``{}`` (a tool that takes
        none, sent with ``"arguments": ""``), unless the output was cut off (``length``: its
        arguments are unfinished, not empty)."""
        if self._finish_reason == LENGTH:  # cut off: a call's arguments are unfinished
            return []
        empty = sorted({*self._named, *self._ids} - self._argued)
        self._argued.update(empty)
        return [Delta(text="{}", tool_call=index) for index in empty]

    def _let_go(self, but: int | None = None) -> list[Delta]:
        """The calls still waiting for their id (all of them, or all but call ``but``): their
        text and name, without an id."""
        out = []
        for index in [i for i in self._waiting if i != but]:
            texts, name = self._waiting.pop(index)
            out.append(Delta(text="".join(texts), tool_call=index, tool_name=name))
        return out

    def _delta(self, delta: Mapping[str, Any], logprobs: Any = None) -> list[Delta]:
        out: list[Delta] = []
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            out.append(Delta(reasoning=reasoning))
        content = delta.get("content")
        tokens = logprobs.get("content") if isinstance(logprobs, Mapping) else None
        tokens = tuple(tokens) if isinstance(tokens, list) and tokens else None
        if isinstance(content, str) and content and not (self._tools and not content.strip()):
            out.append(Delta(text=content, logprobs=tokens))
        elif tokens is not None:
            out.append(Delta(logprobs=tokens))
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            out.append(Delta(refusal=refusal))
        calls = delta.get("tool_calls") or []
        if isinstance(calls, list):
            for position, call in enumerate(calls):
                if isinstance(call, Mapping):
                    out.extend(self._tool_delta(position, call))
        return out

    def _tool_delta(self, position: int, call: Mapping[str, Any]) -> list[Delta]:
        raw_id = call.get("id")
        call_id = raw_id if isinstance(raw_id, str) and raw_id else None
        index = call.get("index")
        function = call.get("function") or {}
        name = function.get("name") if isinstance(function, Mapping) else None
        name = name if isinstance(name, str) and name else None
        if isinstance(index, bool) or not isinstance(index, int):
            index = self._index_of(position, call_id, name)
        self._current = index
        new_id = None
        if call_id is not None and index not in self._ids:
            self._ids[index] = call_id
            self._by_id.setdefault(call_id, index)
            new_id = call_id if self._report_ids else None
        arguments = function.get("arguments") if isinstance(function, Mapping) else None
        if isinstance(arguments, Mapping):  # an object, not its text: some servers send one
            arguments = json.dumps(arguments, ensure_ascii=False)
        text = arguments if isinstance(arguments, str) else ""
        if text:
            self._argued.add(index)
        new_name = None
        if index not in self._named and name is not None:
            self._named[index] = name
            new_name = name
        out = self._let_go(but=index) if self._waiting else []
        if self._report_ids and index not in self._ids and index not in self._no_id:
            texts, held_name = self._waiting.setdefault(index, ([], None))
            if len(texts) < HOLD_FOR_ID:
                texts.append(text)
                if new_name is not None:
                    self._waiting[index] = (texts, new_name)
                return out  # waits for its id
            # A server that sends no id (or sends it late) must not delay the call's checks:
            # its text goes on without one; an id that comes later still marks later events.
            self._no_id.add(index)
        if index in self._waiting:
            texts, held_name = self._waiting.pop(index)
            text = "".join(texts) + text
            new_name = held_name or new_name
        if not text and new_name is None and new_id is None:
            return out
        out.append(Delta(text=text, tool_call=index, tool_name=new_name, tool_call_id=new_id))
        return out

    def _index_of(self, position: int, call_id: str | None, name: str | None) -> int:
        """The call an entry without an ``index`` belongs to (see the module docstring)."""
        current = self._current
        if call_id is not None:
            known = self._by_id.get(call_id)
            if known is not None:
                return known
            if current is not None and current not in self._ids and position == 0:
                return current  # the current call's id, sent after its first entry
            return self._next_index()
        if current is None:
            return position
        if position == 0 and name is not None and self._named.get(current, name) != name:
            return self._next_index()  # another tool's name: another call
        return current if position == 0 else current + 1

    def _next_index(self) -> int:
        seen = [*self._named, *self._ids]
        if self._current is not None:
            seen.append(self._current)
        return max(seen) + 1 if seen else 0


def _loads_or_text(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return data


class ToolIdDecoder(ChunkDecoder):
    """A :class:`ChunkDecoder` that reports ``delta.tool_calls[i].id``: the first delta of a
    call that carries its id has it (``Delta.tool_call_id``; usually the call's first delta,
    with its name, but a server may send the id later), so a tool call's events say which call
    they belong to. Used for requests that call tools; a plain document stream keeps the plain
    decoder."""

    def __init__(self, *, tools: bool = True) -> None:
        super().__init__(tools=tools, ids=True)


class EmulatedCallDecoder(ChunkDecoder):
    """A :class:`ChunkDecoder` for a call llama.cpp was asked to write as its whole answer
    (:func:`~sdk._http.openai._flavours.emulated_call`): the message ``content`` is the call's
    arguments, reported as tool call 0 of tool ``name`` (the server sends no id: the call's id
    is then ``"call_0"``, as for any call without one)."""

    def __init__(self, name: str) -> None:
        super().__init__(tools=True)
        self._call_name = name

    def decode(self, event: str, data: str) -> str | list[Delta]:
        out = super().decode(event, data)
        return self._as_call(out) if isinstance(out, str) else out  # the short path's text

    def _delta(self, delta: Mapping[str, Any], logprobs: Any = None) -> list[Delta]:
        content = delta.get("content")
        if not isinstance(content, str) or not content:
            return super()._delta(delta, logprobs)
        rest = {k: v for k, v in delta.items() if k != "content"}
        return [*super()._delta(rest, logprobs), *self._as_call(content)]

    def _as_call(self, arguments: str) -> list[Delta]:
        call = {"index": 0, "function": {"name": self._call_name, "arguments": arguments}}
        return self._tool_delta(0, call)


class CustomInputDecoder(ChunkDecoder):
    """A :class:`ChunkDecoder` for a constraint OpenAI applies to a forced custom tool's input
    (:func:`~sdk._http.openai._flavours.custom_tool`): each ``delta.tool_calls[i].custom.input``
    (``{"index", "id", "type": "custom", "custom": {"name", "input"}}``, the shape OpenAI streams
    though openai-python's chunk type names only ``function``) is output text, and the
    finish reason ``"tool_calls"`` is ``"stop"`` (the call is the answer, not a call to make).
    Message text that is only whitespace is dropped, as under any forced call."""

    def __init__(self) -> None:
        super().__init__(tools=True)

    def _tool_delta(self, position: int, call: Mapping[str, Any]) -> list[Delta]:
        custom = call.get("custom")
        if not isinstance(custom, Mapping):
            return super()._tool_delta(position, call)
        text = custom.get("input")
        return [Delta(text=text)] if isinstance(text, str) and text else []

    def end(self) -> list[Delta]:
        if self._finish_reason == TOOL_CALLS:
            self._finish_reason = STOP
            self._stop_said = stop_said(TOOL_CALLS, STOP)  # the server's own word, kept
        return super().end()


def chat_decoder(request: GenerationRequest, server: Server | None) -> ChunkDecoder:
    """The decoder of a Chat Completions stream for ``request`` sent to ``server``: a call
    llama.cpp writes as its answer (:class:`EmulatedCallDecoder`), tool calls with their ids
    (:class:`ToolIdDecoder`), or a plain document."""
    call = emulated_call(request, api="chat", server=server)
    if call is not None:
        return EmulatedCallDecoder(call)
    if custom_tool(request, server) is not None:
        return CustomInputDecoder()
    if request.mode == "tool":
        return ToolIdDecoder(tools=calls_forced(request))
    return ChunkDecoder()
