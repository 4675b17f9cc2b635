"""What the model is told about a failed attempt: :func:`default_feedback` (the messages of the
next attempt) and :func:`describe_error` (one paragraph: what was wrong, where, with which
value).

What the model is told fits what happened: only a reply cut by the token limit (or one that
simply stopped mid-document) is asked to be shorter; a reply a provider stopped for a reason of
its own (a :class:`~sdk.TruncatedError` whose ``reason`` is that word: ``"pause_turn"``,
``"OTHER"``...) is told the reason, and one the provider could not read (an
:class:`~sdk.OutputSyntaxError` after ``finish_reason == "malformed"``) is told that it is not
valid JSON, as any syntax error is (``docs/errors.md`` draws each provider's table).

A retry starts as soon as an attempt fails, not at the end of the output: the stream aborts
the failed generation at the violating character and calls the source again with the next
:class:`~sdk.Attempt`, whose ``feedback`` tells the model what was wrong and where.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from sdk._backend import LENGTH, Message
from sdk._errors import (
    AnswerInReasoning,
    OutputSyntaxError,
    RepeatedOutput,
    RunawayOutput,
    SchemaViolation,
    TransportError,
    TruncatedError,
)
from sdk._records import JSON_DOCUMENT, AttemptInfo, ToolCallText

__all__ = ["FeedbackBuilder", "default_feedback", "describe_error"]

_EOF = "eof"  # TruncatedError.reason for a source that ended mid-document

FeedbackBuilder = Callable[["AttemptInfo"], Sequence[Message]]
"""Builds the messages that tell the model about a failed attempt (see :func:`default_feedback`)."""


def _describe(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 200 else text[:200] + "…"


def _excerpt(text: str, offset: int | None) -> str | None:
    """The output's last few characters up to and including ``offset``."""
    if offset is None or not text:
        return None
    end = min(len(text), offset + 1)
    start = max(0, end - 60)
    piece = text[start:end]
    return ("…" if start else "") + piece if piece.strip() else None


def describe_error(error: BaseException, text: str = "", expected: str = JSON_DOCUMENT) -> str:
    """One paragraph for the model: what was wrong, where, with which value, and (given the
    attempt's output ``text``) the output just up to the point where it went wrong.
    ``expected`` names what the output should be (``"the JSON document"``, ``"the text the
    Regex asks for"``...)."""
    json_output = expected == JSON_DOCUMENT
    if isinstance(error, SchemaViolation):
        where = error.pointer or "the root (/)"
        parts = [f"At {where}: {error.message}." if json_output else f"{error.message}."]
        if error.which_call:
            parts.insert(0, f"In {error.which_call}:")
        if error.keyword and json_output:
            parts.append(f"The JSON Schema keyword broken is {error.keyword!r}.")
        if error.value is not None:
            parts.append(f"The offending value was {_describe(error.value)}.")
        excerpt = _excerpt(text, error.offset)
        if excerpt is not None:
            parts.append(f"Your output went wrong at the last character of `{excerpt}`.")
        return " ".join(parts)
    if isinstance(error, TruncatedError):
        which = f" ({error.which_call})" if error.which_call else ""
        if error.reason == LENGTH:
            return (
                f"Your reply was cut off before {expected}{which} ended (the token limit was "
                "reached). Reply with a complete, shorter one."
            )
        if error.reason == _EOF:
            return (
                f"Your reply was cut off before {expected}{which} ended. Reply with a "
                "complete, shorter one."
            )
        # The provider stopped it for a reason of its own: no limit was hit, so "shorter" is
        # no fix; the reason is said as the provider said it.
        return (
            f"Your reply ended before {expected}{which} did: the provider stopped it "
            f"(its reason: {error.reason!r})."
        )
    if isinstance(error, AnswerInReasoning):  # the server's routing: the model is told plainly
        return (
            f"Your reply was empty: {expected} came in your reasoning. Write it as the reply "
            "itself."
        )
    if isinstance(error, RunawayOutput):
        which = f" ({error.which_call})" if error.which_call else ""
        if isinstance(error, RepeatedOutput):
            return (
                f"Your reply{which} went into a loop at {error.pointer or 'the root (/)'}: it "
                f"repeated the same text {error.count} times. Write each value once, without "
                "repeating yourself."
            )
        return (
            f"Your reply{which} wrote whitespace without end between JSON tokens (at "
            f"{error.pointer or 'the root (/)'}). Write the JSON compactly, on one line."
        )
    if isinstance(error, OutputSyntaxError):
        excerpt = _excerpt(text, error.offset)
        tail = f" It went wrong at the last character of `{excerpt}`." if excerpt else ""
        what = "valid JSON" if json_output else expected
        return f"Your reply is not {what}: {error}.{tail}"
    return str(error)


def default_feedback(info: AttemptInfo) -> tuple[Message, ...]:
    """The feedback for a failed attempt: the assistant's output so far (as an assistant
    message; for a tool-call stream, the arguments texts, each under its tool's name, call
    index and id when there are several), then a user message stating the violation (which
    call broke, where, what) and asking for a corrected document. Empty for a transport error
    (nothing the model did wrong). A runaway (:class:`~sdk.RunawayOutput`) gets the user
    message alone: shown its own loop, a model tends to continue it."""
    error = info.error
    if error is None or isinstance(error, TransportError):
        return ()
    output = info.text
    shown = output
    if not output and info.tool_calls:
        if len(info.tool_calls) == 1:
            output = shown = info.tool_calls[0].arguments
        else:
            # Each call's arguments under its name: the model sees which is which.
            output = "\n".join(f"{_call_label(c)}: {c.arguments}" for c in info.tool_calls)
            broken = getattr(error, "tool_call", None)
            # Offsets in a call's error are offsets in that call's own arguments.
            shown = next((c.arguments for c in info.tool_calls if c.index == broken), "")
    messages: list[Message] = []
    # A runaway's output is not shown back: the model would read its own loop and continue it.
    if output and not isinstance(error, RunawayOutput):
        messages.append({"role": "assistant", "content": output})
    expected = info.expected
    required = "the required JSON schema" if expected == JSON_DOCUMENT else "what is required"
    messages.append(
        {
            "role": "user",
            "content": f"Your previous reply does not match {required}. "
            + describe_error(error, shown, expected)
            + f" Reply again with {expected.replace('the ', 'the whole ', 1)}, corrected, "
            "and nothing else.",
        }
    )
    return tuple(messages)


def _call_label(call: ToolCallText) -> str:
    """``"search (call 1, id call_b)"``: a call's name, index and id, for feedback."""
    where = f"call {call.index}" + (f", id {call.id}" if call.id else "")
    return f"{call.name or 'unnamed tool'} ({where})"
