"""Retries, decided here: whether and when a failed attempt or request is tried again.

Two budgets, as the stream asks them (:func:`next_try`):

* **Transport** failures (a :class:`~sdk.TransportError`: an HTTP status, a connection that
  failed or broke) are retried up to ``max_retries`` times in a row per attempt (the
  client's, or the request's own), each after a wait: the server's ``retry-after-ms`` /
  ``Retry-After`` (:func:`retry_after_from`), else exponential backoff with jitter
  (:meth:`Retry.delay`). Which statuses may go away on a retry is said once
  (:func:`retryable_status`, :func:`retryable_response`, which also obeys the
  ``x-should-retry`` header as openai-python does). These retries do not count against
  :attr:`Retry.max_attempts`.
* **Output** failures (the answer broke the schema, was not JSON, was cut short) are retried
  at once, with feedback, while :attr:`Retry.max_attempts` allows: it counts answers.

Every retry is logged on the ``fieldstream`` logger at INFO: what failed (the error's class,
its status and request id; never its message, which may hold a URL with a key in its query,
nor any output), which retry it is, and the wait.

Also here: the :class:`Attempt` a source is called with, the :class:`AttemptInfo` record of
each attempt, and the feedback messages for the next attempt. A retry starts as soon as an
attempt fails, not at the end of the output: the stream aborts the failed generation at the
violating character and calls the source again with the next :class:`Attempt`, whose
``feedback`` tells the model what was wrong and where.
"""

from __future__ import annotations

import datetime
import email.utils
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sdk._backend import Message, Usage
from sdk._constants import (
    DEFAULT_BACKOFF,
    DEFAULT_JITTER,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_DELAY,
    DEFAULT_MAX_RETRY_AFTER,
    DEFAULT_MULTIPLIER,
)
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
    "answers",
    "default_feedback",
    "describe_error",
    "next_try",
    "parse_retry_after",
    "retry_after_from",
    "retryable_response",
    "retryable_status",
]

logger = logging.getLogger("fieldstream")

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

    An output error (the model wrote something wrong: schema violations, syntax errors,
    truncation) is retried at once while answers are left (``max_attempts``); refusals,
    content filters and callback errors are not. With ``output_errors=False`` none is.

    Transport errors (connection failures and 408/409/429/5xx) are not counted here: they are
    retried up to the client's ``max_retries`` times (or the request's own ``max_retries=``)
    per attempt, whatever ``max_attempts`` says. This policy says how long each of those
    waits, as openai-python's ``_calculate_retry_timeout`` does: the server's
    ``retry_after`` when it asked for more than 0 and at most ``max_retry_after`` seconds
    (that wait, exactly: it may be longer than ``max_delay``), else the policy's own backoff,
    ``backoff * multiplier ** (n - 1)`` seconds before the n-th retry in a row, capped at
    ``max_delay``, of which a ``jitter`` fraction is drawn at random (``jitter=0.5``: between
    half and all of it) — so ``Retry-After: 0`` (or a date already past) waits the backoff,
    not nothing. A ``retry_after`` longer than ``max_retry_after`` is not retried: the error
    is raised at once (openai-python's ``_should_retry`` refuses it the same way).
    """

    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    """Answers in all, the first included (1 means no retry): how many times the model may
    write an answer that fails. Transport failures (no answer) do not count."""
    backoff: float = DEFAULT_BACKOFF
    """Seconds before the first retry of a transport error."""
    multiplier: float = DEFAULT_MULTIPLIER
    """Growth of the delay per attempt."""
    max_delay: float = DEFAULT_MAX_DELAY
    """The longest wait of the policy's own backoff, in seconds."""
    max_retry_after: float = DEFAULT_MAX_RETRY_AFTER
    """The longest wait a server may ask for and be waited for, in seconds; a longer one is
    not retried."""
    jitter: float = DEFAULT_JITTER
    """Fraction (0..1) of each delay that is random."""
    output_errors: bool = True
    """Retry errors in the model's output (violations, syntax, truncation); ``False``: none
    (the waits still apply to transport retries)."""
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
        if not self.max_retry_after >= 0:
            raise ValueError("max_retry_after must be >= 0")
        if not 0 <= self.jitter <= 1:
            raise ValueError("jitter must be between 0 and 1")

    def covers(self, error: BaseException) -> bool:
        """Whether this policy retries output errors like ``error`` (answers left or not);
        never a transport error (``max_retries`` covers those)."""
        if not isinstance(error, StreamError) or not error.retryable:
            return False
        return self.output_errors and not isinstance(error, TransportError)

    def should_retry(self, error: BaseException, attempt: int) -> bool:
        """Whether to ask for another answer after answer number ``attempt`` failed with the
        output error ``error``."""
        return attempt < self.max_attempts and self.covers(error)

    def final_error(self, error: BaseException, attempts: Sequence[AttemptInfo]) -> BaseException:
        """What a stream that will not retry after ``error`` fails with: the error itself, or
        :class:`~sdk.RetriesExhausted` (every attempt's error, ``error`` as its cause) when the
        answers ran out on an output error this policy retries. A transport error is always
        raised as itself, whatever came before it."""
        if self.max_attempts > 1 and answers(attempts) >= self.max_attempts and self.covers(error):
            exhausted = RetriesExhausted([a.error for a in attempts if a.error is not None])
            exhausted.__cause__ = error
            return exhausted
        return error

    def delay(self, error: BaseException, attempt: int) -> float:
        """Seconds to wait before the retry that follows ``attempt`` failures in a row, the
        last with ``error``: 0 for an output error, else the backoff (see the class
        docstring)."""
        if not isinstance(error, TransportError):
            return 0.0
        if error.retry_after is not None and 0 < error.retry_after <= self.max_retry_after:
            return error.retry_after  # what the server asked, as openai-python waits it
        base = min(self.max_delay, self.backoff * self.multiplier ** (attempt - 1))
        return base * (1.0 - self.jitter * self.rng())


NO_RETRY = Retry(max_attempts=1)
"""The policy of a stream given none: one answer; its waits time the transport retries."""


def answers(attempts: Sequence[AttemptInfo]) -> int:
    """How many of ``attempts`` were answers (ended by anything but a transport error)."""
    return sum(1 for a in attempts if not isinstance(a.error, TransportError))


def _transport_run(attempts: Sequence[AttemptInfo]) -> list[TransportError]:
    """The transport errors that ended the last attempts in a row (oldest first)."""
    run: list[TransportError] = []
    for info in reversed(attempts):
        if not isinstance(info.error, TransportError):
            break
        run.append(info.error)
    run.reverse()
    return run


def next_try(
    error: BaseException,
    attempts: Sequence[AttemptInfo],
    *,
    retry: Retry | None,
    max_retries: int,
) -> float | None:
    """Whether to try again after ``error`` ended the last of ``attempts`` (every attempt so
    far, recorded), and after how many seconds; ``None``: fail now.

    A transport error is retried while fewer than ``max_retries`` transport errors ended the
    attempts just before it (its ``retryable``, which :func:`retryable_response` decided,
    and a ``retry_after`` no longer than ``retry.max_retry_after``, permitting); it then holds the
    earlier ones in ``retries``. An output error is retried, at once, while ``retry`` has
    answers left (:meth:`Retry.should_retry`). Each retry is logged (see the module
    docstring)."""
    policy = retry if retry is not None else NO_RETRY
    if isinstance(error, TransportError):
        run = _transport_run(attempts)
        error.retries = tuple(run[:-1])
        taken = len(run) - 1  # the retries already made in this row
        if not error.retryable or taken >= max_retries:
            return None
        if error.retry_after is not None and error.retry_after > policy.max_retry_after:
            logger.info(
                "not retrying %s: the server asked to wait %.1f s, more than max_retry_after "
                "(%.1f s)",
                _reason(error),
                error.retry_after,
                policy.max_retry_after,
            )
            return None
        wait = policy.delay(error, taken + 1)
        logger.info(
            "retrying the request after %s in %.2f seconds (retry %d of %d)",
            _reason(error),
            wait,
            taken + 1,
            max_retries,
        )
        return wait
    if retry is None:
        return None
    given = answers(attempts)
    if not retry.should_retry(error, given):
        return None
    logger.info(
        "asking for a new answer after %s (answer %d of %d failed)",
        _reason(error),
        given,
        retry.max_attempts,
    )
    return 0.0


def _reason(error: BaseException) -> str:
    """What failed, for a log line: the class, a status, a request id, a JSON Pointer and a
    keyword; nothing the server or the model wrote."""
    parts = [type(error).__name__]
    if isinstance(error, TransportError):
        if error.status is not None:
            parts.append(f"HTTP {error.status}")
        if error.request_id:
            parts.append(f"request id {error.request_id}")
    elif isinstance(error, SchemaViolation):
        parts.append(f"at {error.pointer or '/'}")
        if error.keyword:
            parts.append(f"keyword {error.keyword!r}")
    return " ".join(parts)


def retryable_status(status: int) -> bool:
    """Whether an HTTP status may go away on a new request: 408 (timeout), 409 (conflict), 429
    (rate limited) and 5xx do, as openai-python judges them; other statuses will not."""
    return status in (408, 409, 429) or status >= 500


def retryable_response(status: int, headers: Mapping[str, str]) -> bool:
    """Whether a response with ``status`` and ``headers`` is worth a new request: the server's
    own ``x-should-retry: true`` / ``false`` when it sent one (as openai-python obeys it),
    else :func:`retryable_status`."""
    said = headers.get("x-should-retry")
    if said == "true":
        return True
    if said == "false":
        return False
    return retryable_status(status)


def retry_after_from(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait, from a response's headers: ``retry-after-ms`` (what OpenAI sends, in
    milliseconds) when present and readable, else ``Retry-After``."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            seconds = float(millis) / 1000
        except ValueError:
            seconds = float("nan")
        if 0 <= seconds < float("inf"):
            return seconds
    return parse_retry_after(headers.get("retry-after"))


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait, from a ``Retry-After`` header: delta-seconds or an HTTP date.

    ``None`` when absent or unreadable; never negative (a date in the past gives ``0.0``).
    ``now`` (a Unix time) is for tests.
    """
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # RFC 9110 dates are GMT; a date without a zone is read so too
            when = when.replace(tzinfo=datetime.UTC)
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds or seconds in (float("inf"), float("-inf")):  # NaN, inf
        return None
    return max(0.0, seconds)
