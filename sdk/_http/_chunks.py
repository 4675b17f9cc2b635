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
  ``function.name`` on the first delta of that index. Logprobs and other fields are ignored.
- ``finish_reason`` and ``usage`` end the stream as one last ``Delta(finish_reason, usage)``.
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

from sdk._backend import Delta, Usage
from sdk._errors import BackendError, TransportError, status_error_class
from sdk._retry import retryable_status

__all__ = ["ChunkDecoder", "error_from_payload"]


class ChunkDecoder:
    """Turns the chunks of one streamed completion into deltas.

    ``tools`` says the request forced a tool call: message ``content`` that is only whitespace
    is then dropped (some servers send a newline before the call), while any other content is
    passed on as it is, for the stream layer to judge.
    """

    def __init__(self, *, tools: bool = False) -> None:
        self._tools = tools
        self._named: set[int] = set()
        self._finish_reason: str | None = None
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
            chunk = _loads_chunk(data)  # refused by pydantic-core: json.loads decides
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
            and choice.get("finish_reason") is None
            and chunk.get("usage") is None
            and chunk.get("error") is None
            and not delta.get("refusal")
            and not delta.get("tool_calls")
            and not delta.get("reasoning_content")
            and not delta.get("reasoning")
            and not (self._tools and content.isspace())
        ):
            return content
        return self.feed_chunk(chunk)

    def feed_chunk(self, chunk: Mapping[str, Any]) -> list[Delta]:
        """One parsed ``chat.completion.chunk`` object."""
        if chunk.get("error") is not None:
            raise error_from_payload(chunk, default="the server reported an error mid-stream")
        out: list[Delta] = []
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            self._usage = Usage(
                prompt_tokens=_int(usage.get("prompt_tokens")),
                completion_tokens=_int(usage.get("completion_tokens")),
            )
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
            if isinstance(delta, Mapping):
                out.extend(self._delta(delta))
            reason = choice.get("finish_reason")
            if reason:
                self._finish_reason = str(reason)
        if self._finish_reason is not None and self._usage is not None:
            out.extend(self.end())
        return out

    def end(self) -> list[Delta]:
        """The stream is over (``[DONE]`` or end of body): the last delta, if not sent yet."""
        if self._ended or (self._finish_reason is None and self._usage is None):
            return []
        self._ended = True
        return [Delta(finish_reason=self._finish_reason, usage=self._usage)]

    def _delta(self, delta: Mapping[str, Any]) -> list[Delta]:
        out: list[Delta] = []
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            out.append(Delta(reasoning=reasoning))
        content = delta.get("content")
        if isinstance(content, str) and content and not (self._tools and not content.strip()):
            out.append(Delta(text=content))
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
        index = call.get("index")
        if not isinstance(index, int):
            index = position  # some servers leave out the index of a lone call
        function = call.get("function") or {}
        name = function.get("name") if isinstance(function, Mapping) else None
        arguments = function.get("arguments") if isinstance(function, Mapping) else None
        text = arguments if isinstance(arguments, str) else ""
        if index not in self._named and isinstance(name, str) and name:
            self._named.add(index)
            return [Delta(text=text, tool_call=index, tool_name=name)]
        if not text:
            return []
        return [Delta(text=text, tool_call=index)]


def error_from_payload(payload: Any, *, default: str) -> TransportError:
    """A :class:`~sdk.TransportError` for an error the server sent inside the stream.

    ``payload`` is ``{"error": {"message", "type", "code"}}``, ``{"error": "text"}``, the inner
    error object itself, or plain text. A numeric ``code`` is read as an HTTP status (llama.cpp
    and vLLM send one); 429 and 5xx are retryable, other 4xx and ``invalid_request_error`` are
    not; an error without either (a server failing mid-generation) is retryable.
    """
    error = payload.get("error", payload) if isinstance(payload, Mapping) else payload
    message: str = default
    status: int | None = None
    kind: str | None = None
    if isinstance(error, Mapping):
        if isinstance(error.get("message"), str) and error["message"]:
            message = error["message"]
        code = error.get("code", error.get("status"))
        if isinstance(code, int) or (isinstance(code, str) and code.isdigit()):
            status = int(code)
        if isinstance(error.get("type"), str):
            kind = error["type"]
    elif isinstance(error, str) and error:
        message = error
    if status is not None:
        retryable = retryable_status(status)
    else:
        retryable = kind != "invalid_request_error"
    body = payload if isinstance(payload, Mapping) else str(payload)[:2000]
    if status is not None and status >= 400:  # a status in the stream: its family's class
        return status_error_class(status)(message, status=status, retryable=retryable, body=body)
    return TransportError(message, status=status, retryable=retryable, body=body)


def _loads_chunk(data: str) -> Any:
    """``data`` read by ``json.loads`` (what pydantic-core refuses, such as a lone surrogate
    escape, it may still read; its error is worded for the stream)."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise TransportError(
            f"malformed stream: an event's data is not JSON: {data[:200]!r}",
            retryable=False,
            body=data[:2000],
        ) from exc


def _loads_or_text(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return data


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0
