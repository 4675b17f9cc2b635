"""What each attempt was: the :class:`Attempt` a callable source is called with, and the
:class:`AttemptInfo` record of each attempt (``Stream.attempts``), with the tool calls'
texts (:class:`ToolCallText`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sdk._backend import Message, Usage

__all__ = ["JSON_DOCUMENT", "Attempt", "AttemptInfo", "ToolCallText"]


JSON_DOCUMENT = "the JSON document"
"""What a JSON output is called in feedback (``AttemptInfo.expected``)."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """What a callable source is given for each attempt."""

    number: int
    """1 for the first attempt, 2 for the first retry, and so on."""
    feedback: tuple[Message, ...] = ()
    """Messages to append to the conversation for this attempt (empty for the first): for each
    earlier attempt that failed because of its output, the assistant's failed output and a user
    message saying what was wrong, where (JSON Pointer) and the offending value. An attempt
    that failed for a transport reason adds nothing: the request is simply sent again."""
    previous_error: BaseException | None = None
    """The error that ended the previous attempt (``None`` for the first)."""
    cures: frozenset[str] = frozenset()
    """What this attempt's request should change (:attr:`sdk.StreamError.cure` of each
    earlier attempt's error that named one): each backend applies those its server has."""


@dataclass(frozen=True, slots=True)
class ToolCallText:
    """The raw arguments text of one tool call in an attempt."""

    index: int
    """The tool call's index (``Delta.tool_call``)."""
    name: str | None
    """The function name, if the source sent one."""
    arguments: str
    """The arguments text received (a JSON document, perhaps cut short)."""
    id: str | None = None
    """The id the server gave the call, if it sent one."""


def _call_id(call: ToolCallText) -> str:
    """A call's id: the server's, else ``call_<index>`` (both turns must name it the same)."""
    return call.id or f"call_{call.index}"


@dataclass(frozen=True, slots=True)
class AttemptInfo:
    """The record of one attempt, in ``Stream.attempts``."""

    number: int
    """The attempt's number (1-based)."""
    error: BaseException | None
    """What ended it; ``None`` for the attempt that succeeded."""
    usage: Usage
    """Its token usage: what the backend reported, or, for an attempt aborted before the
    backend reported any, the stream's own count (``usage.estimated``)."""
    text: str
    """The message text received (for an aborted attempt: up to the abort)."""
    tool_calls: tuple[ToolCallText, ...] = ()
    """The tool calls' arguments texts, by index, for a tool-call stream."""
    seconds: float = 0.0
    """Wall-clock seconds from the attempt's start (its request) to its end."""
    first_output: float | None = None
    """Seconds from the attempt's start to its first text (``None``: it wrote none); the time
    to first token, prompt processing included."""
    expected: str = JSON_DOCUMENT
    """What the output had to be, in words for the model's feedback (``"the JSON document"``,
    ``"the text the Regex asks for"``, ``"tagged text"``...)."""
    reasoning: str = ""
    """The model's reasoning in this attempt (reasoning deltas, or a ``<think>`` block in
    lenient mode); empty when there was none."""
    finish_reason: str | None = None
    """Why the generation ended, as the backend said (``"stop"``, ``"length"``,
    ``"tool_calls"``...); ``None`` when it said nothing (an aborted attempt)."""
    response_id: str | None = None
    """The response's id, as the server gave it (``chatcmpl-...``, ``resp_...``)."""
    system_fingerprint: str | None = None
    """The backend configuration the server reported (Chat Completions'
    ``system_fingerprint``)."""
    logprobs: tuple[Mapping[str, Any], ...] = ()
    """The log probabilities of the message's tokens, in order, when ``logprobs=True`` asked for
    them (the server's entries: ``token``, ``logprob``, ``bytes``, ``top_logprobs``)."""

    def assistant_message(self) -> dict[str, Any]:
        """This attempt's reply as the assistant message of the next Chat Completions turn:
        ``{"role": "assistant", "content": <its text, or None>, "tool_calls": [{"id",
        "type": "function", "function": {"name", "arguments"}}]}`` (``tool_calls`` only when
        it called tools; a call the server gave no id is ``"call_<index>"``, the id to answer
        it with). Append it, then one ``{"role": "tool", "tool_call_id", "content"}`` per
        call."""
        text = self.text if self.text.strip() else None
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": _call_id(call),
                    "type": "function",
                    "function": {"name": call.name or "", "arguments": call.arguments},
                }
                for call in self.tool_calls
            ]
        return message

    def output_items(self) -> list[dict[str, Any]]:
        """This attempt's reply as Responses API input items for the next turn: the message
        text as ``{"role": "assistant", "content"}`` (when there is text), then one
        ``{"type": "function_call", "call_id", "name", "arguments"}`` per call. Append them,
        then one ``{"type": "function_call_output", "call_id", "output"}`` per call."""
        items: list[dict[str, Any]] = []
        if self.text.strip():
            items.append({"role": "assistant", "content": self.text})
        items.extend(
            {
                "type": "function_call",
                "call_id": _call_id(call),
                "name": call.name or "",
                "arguments": call.arguments,
            }
            for call in self.tool_calls
        )
        return items

    @property
    def tokens_per_second(self) -> float | None:
        """Completion tokens per second of generation (from the first text to the end), or
        ``None`` when there is nothing to measure."""
        if self.first_output is None or self.usage.completion_tokens == 0:
            return None
        generating = self.seconds - self.first_output
        return self.usage.completion_tokens / generating if generating > 0 else None
