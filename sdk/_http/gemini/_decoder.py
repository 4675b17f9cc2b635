"""Gemini's streamed ``GenerateContentResponse`` records -> :class:`~sdk._backend.Delta` values
(sans-I/O).

With ``?alt=sse`` each server-sent event's data is one response record. :class:`GeminiDecoder`
has the face every provider's decoder has (``decode``, ``end``, ``done``):

- ``candidates[0].content.parts``: a ``text`` part -> ``Delta(text=...)`` (only whitespace is
  dropped when a call was forced); a part with ``thought: true`` -> ``Delta(reasoning=...)``; a
  ``functionCall`` part that comes whole -> one ``Delta(text=<its args' JSON text>,
  tool_call=k, tool_name=name, tool_call_id=id)``, ``k`` counting the calls.
- A call streamed in parts (Vertex AI with ``functionCallingConfig.streamFunctionCallArguments``:
  see :class:`StreamedCall`) -> its arguments' JSON text, written piece by piece as the
  ``partialArgs`` arrive, each piece one ``Delta(text=..., tool_call=k)`` (the first with its
  name and id), so each field is final as early as the wire says it is.
- ``finishReason`` (on the record that ends the candidate) -> the finish reason the stream
  reads, by :data:`STOP_REASONS` (every value of google-genai's ``FinishReason``): ``STOP`` is
  ``"stop"`` (``"tool_calls"`` when the model called a function), ``MAX_TOKENS`` and
  ``CONTINUATION`` are ``"length"`` (a :class:`~sdk.TruncatedError` when unfinished), the
  safety family (``SAFETY``, ``RECITATION``, ``BLOCKLIST``, ``PROHIBITED_CONTENT``, ``SPII``,
  ``LANGUAGE``, ``MODEL_ARMOR``, image ones...) is ``"content_filter"``
  (:class:`~sdk.ContentFilteredError`), ``MALFORMED_FUNCTION_CALL``, ``UNEXPECTED_TOOL_CALL``
  and ``MALFORMED_RESPONSE`` are ``"malformed"`` (an unfinished document is an
  :class:`~sdk.OutputSyntaxError` naming the reason and the candidate's ``finishMessage``);
  another (``OTHER``, ``TOO_MANY_TOOL_CALLS``, ``FINISH_REASON_UNSPECIFIED``...) stays as it
  is, so an unfinished document is a :class:`~sdk.TruncatedError` with that ``reason``. The
  finishing delta keeps Gemini's own word (``Delta.response["stop_reason"]``) and its
  ``finishMessage`` (``stop_message``).
- ``promptFeedback.blockReason`` with no candidate: the prompt was blocked ->
  ``"content_filter"``.
- ``usageMetadata`` (a later record replaces an earlier one): ``promptTokenCount`` is the
  prompt (cached tokens included), ``candidatesTokenCount`` + ``thoughtsTokenCount`` the
  completion; each new report is given at once, as ``Delta(usage=...)``, so that a stream
  aborted before its end keeps what it was reported.
- A record ``{"error": {...}}`` raises its :class:`~sdk.APIStatusError` class
  (:func:`~sdk._http.gemini._errors.gemini_error`); one for a second candidate raises
  :class:`~sdk.BackendError`.

The last delta (finish reason and usage) is given at the end of the body: Gemini sends no
end-of-stream marker, and the usage may follow the finish reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sdk._backend import CONTENT_FILTER, LENGTH, MALFORMED, STOP, TOOL_CALLS, Delta, Usage
from sdk._errors import BackendError
from sdk._http._json_message import json_object
from sdk._http._stop_reasons import AS_IS, finish_reason_of, stop_said
from sdk._http.gemini._errors import gemini_error
from sdk._http.gemini._partial_args import StreamedCall

__all__ = ["FILTERED", "STOP_REASONS", "GeminiDecoder"]

STOP_REASONS: Mapping[str, str] = {
    "STOP": STOP,  # "tool_calls" when the model called a function
    "MAX_TOKENS": LENGTH,
    # The per-request token limit, the answer not done (a continuation token could go on).
    "CONTINUATION": LENGTH,
    "SAFETY": CONTENT_FILTER,
    "RECITATION": CONTENT_FILTER,
    "LANGUAGE": CONTENT_FILTER,
    "BLOCKLIST": CONTENT_FILTER,
    "PROHIBITED_CONTENT": CONTENT_FILTER,
    "SPII": CONTENT_FILTER,
    "IMAGE_SAFETY": CONTENT_FILTER,
    "IMAGE_PROHIBITED_CONTENT": CONTENT_FILTER,
    "IMAGE_RECITATION": CONTENT_FILTER,
    "MODEL_ARMOR": CONTENT_FILTER,  # Vertex AI's Model Armor blocked the response
    "ESCALATION": CONTENT_FILTER,  # an escalation rule filtered the request
    "PUP_LIMITED_DISABLED": CONTENT_FILTER,  # the account is limited for policy violations
    # What the model wrote, Gemini could not read (or would not take): it is not passed on.
    "MALFORMED_FUNCTION_CALL": MALFORMED,
    "UNEXPECTED_TOOL_CALL": MALFORMED,  # a call of a function not declared, or not enabled
    "MALFORMED_RESPONSE": MALFORMED,
    # Passed on as they are: nothing here says the output was cut, filtered or malformed.
    "TOO_MANY_TOOL_CALLS": AS_IS,  # the server-side tool loop stopped before an answer
    "MISSING_THOUGHT_SIGNATURE": AS_IS,  # the request lacked a thought signature
    "NO_IMAGE": AS_IS,
    "IMAGE_OTHER": AS_IS,
    "OTHER": AS_IS,
    "FINISH_REASON_UNSPECIFIED": AS_IS,
}
"""Gemini's ``finishReason`` (google-genai's ``FinishReason``, every value) -> the finish
reason the stream reads (:mod:`sdk._http._stop_reasons`)."""

FILTERED = frozenset(k for k, v in STOP_REASONS.items() if v == CONTENT_FILTER)
"""The ``finishReason`` values that mean a filter stopped the output."""


class GeminiDecoder:
    """Turns the records of one streamed generation into deltas. ``tools``: the request forced
    a function call, so text that is only whitespace is not the answer."""

    def __init__(self, *, tools: bool = False) -> None:
        self._tools = tools
        self._calls = 0
        self._streamed: StreamedCall | None = None  # a call whose arguments are still coming
        self._finish: str | None = None
        self._said: dict[str, str] | None = None  # Gemini's own word and finishMessage
        self._usage: Usage | None = None
        self._ended = False
        self.done = False  # Gemini sends no end marker: the body's end is the stream's
        self.thoughts_tokens = 0
        """Of the completion tokens, those spent thinking (``thoughtsTokenCount``)."""
        self.cached_tokens = 0
        """Of the prompt tokens, those read from the cache (``cachedContentTokenCount``)."""

    def decode(self, event: str, data: str) -> str | list[Delta]:
        """The deltas of one record (the SSE event's data)."""
        if not data.strip():
            return []
        record = json_object(data, "a record", "a record")
        if record.get("error") is not None:
            raise gemini_error(record)
        out: list[Delta] = []
        if self._read_usage(record.get("usageMetadata")):
            # Given as it comes, not only at the end: an aborted stream keeps what it was told.
            out.append(Delta(usage=self._usage))
        candidates = record.get("candidates")
        if isinstance(candidates, list):
            for candidate in candidates:
                if isinstance(candidate, Mapping):
                    out.extend(self._candidate(candidate))
        feedback = record.get("promptFeedback")
        if not candidates and isinstance(feedback, Mapping) and feedback.get("blockReason"):
            self._finish = CONTENT_FILTER
        if len(out) == 1 and type(out[0].text) is str and out[0] == Delta(text=out[0].text):
            return out[0].text  # the common record: text alone
        return out

    def end(self) -> list[Delta]:
        """The body ended: the last delta (finish reason and usage), if any came."""
        if self._ended or (self._finish is None and self._usage is None):
            return []
        self._ended = True
        return [Delta(finish_reason=self._finish, usage=self._usage, response=self._said)]

    def _candidate(self, candidate: Mapping[str, Any]) -> list[Delta]:
        index = candidate.get("index", 0)
        if index not in (0, None):
            raise BackendError(
                f"the server sent candidate {index}: a structured stream reads one candidate "
                "(do not ask for candidateCount > 1)"
            )
        out: list[Delta] = []
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, Mapping) else None
        if isinstance(parts, list) and self._finish is None:
            for part in parts:
                if isinstance(part, Mapping):
                    out.extend(self._part(part))
        reason = candidate.get("finishReason")
        if isinstance(reason, str) and reason and self._finish is None:
            finish = finish_reason_of(STOP_REASONS, reason)
            streamed = self._streamed
            if streamed is not None and finish == STOP:
                # Vertex may end a streamed call with the candidate, sending no part that says
                # so: a normal stop ends it (at another reason it stays unfinished).
                self._streamed = None
                out.extend(streamed.end())
            self._finish = TOOL_CALLS if finish == STOP and self._calls else finish
            self._said = stop_said(reason, self._finish, candidate.get("finishMessage"))
        return out

    def _part(self, part: Mapping[str, Any]) -> list[Delta]:
        text = part.get("text")
        if isinstance(text, str) and text:
            if part.get("thought"):
                return [Delta(reasoning=text)]
            if self._tools and text.isspace():
                return []
            return [Delta(text=text)]
        call = part.get("functionCall")
        if isinstance(call, Mapping):
            streamed = self._streamed
            if streamed is None and StreamedCall.begins(call):
                streamed = self._streamed = StreamedCall(self._calls, call)
                self._calls += 1
            if streamed is not None:
                out = streamed.read(call)
                if streamed.ended:
                    self._streamed = None
                return out
            if StreamedCall.is_end_marker(call):
                return []  # `{}` after a streamed call that its last part ended already
            name = call.get("name")
            call_id = call.get("id")
            number = self._calls
            self._calls += 1
            return [
                Delta(
                    text=json.dumps(call.get("args") or {}, ensure_ascii=False),
                    tool_call=number,
                    tool_name=name if isinstance(name, str) else None,
                    tool_call_id=call_id if isinstance(call_id, str) else None,
                )
            ]
        return []

    def _read_usage(self, usage: Any) -> bool:
        """Read a record's ``usageMetadata``; whether it said something new."""
        if not isinstance(usage, Mapping):
            return False
        before = self._usage
        thoughts = _int(usage.get("thoughtsTokenCount"))
        self.thoughts_tokens = thoughts
        self.cached_tokens = _int(usage.get("cachedContentTokenCount"))
        self._usage = Usage(
            prompt_tokens=_int(usage.get("promptTokenCount")),
            completion_tokens=_int(usage.get("candidatesTokenCount")) + thoughts,
            prompt_tokens_details=(
                {"cached_tokens": self.cached_tokens} if self.cached_tokens else {}
            ),
            completion_tokens_details={"reasoning_tokens": thoughts} if thoughts else {},
        )
        return self._usage != before


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
