"""Retries: the :class:`Retry` policy, the :class:`Attempt` a source is called with, the
:class:`AttemptInfo` record of each attempt, and the feedback messages for the next attempt.

A retry starts as soon as an attempt fails, not at the end of the output: the stream aborts the
failed generation at the violating character and calls the source again with the next
:class:`Attempt`, whose ``feedback`` tells the model what was wrong and where.
"""

from __future__ import annotations

import json
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sdk._backend import Message, Usage
from sdk._errors import (
    OutputSyntaxError,
    RetriesExhausted,
    SchemaViolation,
    StreamError,
    TransportError,
    TruncatedError,
)

__all__ = [
    "Attempt",
    "AttemptInfo",
    "FeedbackBuilder",
    "Retry",
    "ToolCallText",
    "default_feedback",
    "describe_error",
]

FeedbackBuilder = Callable[["AttemptInfo"], Sequence[Message]]
"""Builds the messages that tell the model about a failed attempt (see :func:`default_feedback`)."""


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

    @property
    def tokens_per_second(self) -> float | None:
        """Completion tokens per second of generation (from the first text to the end), or
        ``None`` when there is nothing to measure."""
        if self.first_output is None or self.usage.completion_tokens == 0:
            return None
        generating = self.seconds - self.first_output
        return self.usage.completion_tokens / generating if generating > 0 else None


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
        return (
            f"Your reply was cut off before {expected}{which} ended"
            + (" (the token limit was reached)" if error.reason == "length" else "")
            + ". Reply with a complete, shorter one."
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
    (nothing the model did wrong)."""
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
    if output:
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


async def _sleep(seconds: float) -> None:
    """``anyio.sleep``, imported when first needed: a policy is a plain value."""
    import anyio

    await anyio.sleep(seconds)


@dataclass(frozen=True, slots=True)
class Retry:
    """When and how fast to retry.

    An error is retried only if it is a :class:`~sdk.StreamError` whose ``retryable`` is true
    (schema violations, syntax errors, truncation; transport errors: connection failures and
    408/409/429/5xx) and attempts are left; refusals, content filters, callback errors and other
    4xx are not. With ``output_errors=False`` only transport errors are retried (the policy a
    :class:`~sdk.Client` applies when ``retry`` is not given).

    Output errors (the model wrote something wrong) are retried at once. Transport errors wait:
    the server's ``retry_after`` when it sent one, else ``backoff * multiplier ** (n - 1)``
    seconds after the n-th attempt, capped at ``max_delay``, of which a ``jitter`` fraction is
    drawn at random (``jitter=0.5``: between half and all of it). A ``retry_after`` longer than
    ``max_delay`` is not waited for: the error is raised.
    """

    max_attempts: int = 3
    """Attempts in all, the first included (1 means no retry)."""
    backoff: float = 0.5
    """Seconds before the first retry of a transport error."""
    multiplier: float = 2.0
    """Growth of the delay per attempt."""
    max_delay: float = 30.0
    """The longest wait, in seconds."""
    jitter: float = 0.5
    """Fraction (0..1) of each delay that is random."""
    output_errors: bool = True
    """Retry errors in the model's output (violations, syntax, truncation) too; ``False``:
    transport errors only."""
    backtrack: bool = False
    """Repair in place: on a schema violation, a generation that can go back on its output (the
    local engine's) rewinds to where the offending value began, rules out what it wrote there,
    and goes on; what came before stays, and its fields are not dispatched again. Each rewind
    counts as an attempt. Where it cannot (a server, a violation with no place to go back to,
    no other continuation left), the next attempt starts afresh, with feedback, as without
    it."""
    feedback: FeedbackBuilder = default_feedback
    """Builds the messages that report a failed attempt to the model."""
    sleep: Callable[[float], Awaitable[None]] = field(default=_sleep, compare=False)
    """How to wait (inject a fake in tests)."""
    rng: Callable[[], float] = field(default=random.random, compare=False, repr=False)
    """Uniform random numbers in [0, 1) for the jitter."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.backoff < 0 or self.max_delay < 0 or self.multiplier < 1:
            raise ValueError("backoff and max_delay must be >= 0 and multiplier >= 1")
        if not 0 <= self.jitter <= 1:
            raise ValueError("jitter must be between 0 and 1")

    def covers(self, error: BaseException) -> bool:
        """Whether this policy retries errors like ``error`` (attempts left or not)."""
        if not isinstance(error, StreamError) or not error.retryable:
            return False
        return self.output_errors or isinstance(error, TransportError)

    def should_retry(self, error: BaseException, attempt: int) -> bool:
        """Whether to start another attempt after attempt number ``attempt`` failed with
        ``error``."""
        if attempt >= self.max_attempts or not self.covers(error):
            return False
        return not (
            isinstance(error, TransportError)
            and error.retry_after is not None
            and error.retry_after > self.max_delay
        )

    def final_error(self, error: BaseException, attempts: Sequence[AttemptInfo]) -> BaseException:
        """What a stream that will not retry after ``error`` fails with: the error itself, or
        :class:`~sdk.RetriesExhausted` (every attempt's error, ``error`` as its cause) when the
        attempts ran out on an error this policy retries."""
        if self.max_attempts > 1 and len(attempts) >= self.max_attempts and self.covers(error):
            exhausted = RetriesExhausted([a.error for a in attempts if a.error is not None])
            exhausted.__cause__ = error
            return exhausted
        return error

    def delay(self, error: BaseException, attempt: int) -> float:
        """Seconds to wait before the attempt after number ``attempt``, which failed with
        ``error``: 0 for an output error, else the backoff (see the class docstring)."""
        if not isinstance(error, TransportError):
            return 0.0
        if error.retry_after is not None:
            return max(0.0, error.retry_after)
        base = min(self.max_delay, self.backoff * self.multiplier ** (attempt - 1))
        return base * (1.0 - self.jitter * self.rng())
