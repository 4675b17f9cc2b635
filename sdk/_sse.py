"""Stream events as server-sent events (``text/event-stream``), for a web page.

A page that shows each field the moment it is final needs the stream's events in the browser.
:func:`format_sse` turns one event into one SSE message (an ``event:`` name and one JSON
``data:`` line); :func:`sse_events` runs a whole stream and yields its messages, then the
validated result (``event: result``) or why the stream failed (``event: failed``; not
``error``, which a browser's ``EventSource`` fires for its own connection errors). Both are
framework-free strings: hand the iterator to any ASGI streaming response (Starlette's
``StreamingResponse(..., media_type="text/event-stream")``, FastAPI's, Django's
``StreamingHttpResponse``).

Sans-I/O: nothing here imports anyio or httpx; :func:`sse_events` only iterates the stream it
is given.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from sdk._errors import SchemaViolation, StreamError, TransportError, pointer
from sdk._events import (
    AttemptFailed,
    AttemptStarted,
    FieldEvent,
    ReasoningDelta,
    StreamEnded,
    StreamEvent,
    TextDelta,
    UsageReported,
)

if TYPE_CHECKING:
    from sdk._stream import Stream


def _message(name: str, data: Any) -> str:
    # One data line: json.dumps never writes a raw newline (they are escaped in strings), so
    # the payload cannot end the message early.
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=_jsonable)
    return f"event: {name}\ndata: {body}\n\n"


def _jsonable(value: Any) -> Any:
    """What ``json.dumps`` cannot write itself: a pydantic model or any type pydantic knows."""
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value)


def _call(event: FieldEvent | TextDelta) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("tool_call", "tool_name", "tool_call_id", "segment", "tag"):
        value = getattr(event, key)
        if value is not None:
            out[key] = value
    return out


def error_data(error: BaseException) -> dict[str, Any]:
    """An error as JSON: its type and message, and where it is when it says so."""
    data: dict[str, Any] = {"type": type(error).__name__, "message": str(error)}
    if isinstance(error, SchemaViolation):  # its message without the pointer and offset
        data.update(message=error.message, pointer=error.pointer, keyword=error.keyword)
        data.update(offset=error.offset)
    if isinstance(error, TransportError):
        data.update(status=error.status)
    return data


def format_sse(event: StreamEvent) -> str:
    """One stream event as one server-sent event: `event: <name>`, one `data:` line of JSON,
    and the blank line that ends the message. The name and the data's keys, per event:

    - [`FieldEvent`][sdk.FieldEvent]: `field`, with `path` (a list), `pointer`, `value`,
      `attempt`, `forced`, and `tool_call`, `tool_name`, `tool_call_id`, `segment`, `tag`
      where the event has them;
    - [`TextDelta`][sdk.TextDelta]: `text`, with `path`, `pointer`, `text`, `attempt` (and the
      call's or segment's fields);
    - [`ReasoningDelta`][sdk.ReasoningDelta]: `reasoning`, with `text`, `attempt`;
    - [`AttemptStarted`][sdk.AttemptStarted]: `attempt`, with `attempt`;
    - [`AttemptFailed`][sdk.AttemptFailed]: `attempt_failed`, with `attempt`, `retrying`,
      `error` (`type`, `message`; `pointer`, `keyword`, `offset` for a violation; `status` for
      a transport error) and `usage`;
    - [`UsageReported`][sdk.UsageReported]: `usage`, with `attempt`, `usage`;
    - [`StreamEnded`][sdk.StreamEnded]: `end`, with `attempts`, `usage`.

    `usage` is `{"prompt_tokens", "completion_tokens", "forced_tokens", "estimated",
    "prompt_tokens_details", "completion_tokens_details"}`. In a
    browser: `new EventSource(url).addEventListener("field", e => JSON.parse(e.data))`.
    Raises `TypeError` for an object that is not a stream event.
    """
    if isinstance(event, FieldEvent):
        return _message(
            "field",
            {
                "path": list(event.path),
                "pointer": pointer(event.path),
                "value": event.value,
                "attempt": event.attempt,
                "forced": event.forced,
                **_call(event),
            },
        )
    if isinstance(event, TextDelta):
        data = {"path": list(event.path), "pointer": pointer(event.path), "text": event.text}
        return _message("text", {**data, "attempt": event.attempt, **_call(event)})
    if isinstance(event, ReasoningDelta):
        return _message("reasoning", {"text": event.text, "attempt": event.attempt})
    if isinstance(event, AttemptStarted):
        return _message("attempt", {"attempt": event.attempt})
    if isinstance(event, AttemptFailed):
        return _message(
            "attempt_failed",
            {
                "attempt": event.attempt,
                "retrying": event.retrying,
                "error": error_data(event.error),
                "usage": asdict(event.usage),
            },
        )
    if isinstance(event, UsageReported):
        return _message("usage", {"attempt": event.attempt, "usage": asdict(event.usage)})
    if isinstance(event, StreamEnded):
        return _message("end", {"attempts": event.attempts, "usage": asdict(event.usage)})
    raise TypeError(f"format_sse takes a stream event, not {type(event).__name__}")


async def sse_events(stream: Stream[Any]) -> AsyncIterator[str]:
    """Run `stream` and yield it as server-sent events: one message per event it yields (see
    [`format_sse`][sdk.format_sse]), then `event: result` with the validated value as JSON
    (a pydantic model as `model_dump(mode="json")` would write it; a list, one per tool call,
    for a stream of several tool calls), or `event: failed` with the error's `type`, `message`
    (and `pointer`, `keyword`, `offset` for a violation) when the stream fails. (Not
    `event: error`: a browser's `EventSource` fires `error` for its own connection errors.)

    Give it a stream as `client.stream(...)` returns it, not yet entered: it enters it
    (`async with`) and closes it when the stream ends, fails, or the iterator is closed (a
    browser that goes away cancels the response, which closes the generation). Create the
    stream with `progress=True` for the page to see each attempt start and fail
    (`attempt`, `attempt_failed`: a violation, a retry) and the usage.

    A [`StreamError`][sdk.StreamError] (what the model or the server did) becomes the
    `failed` message and ends the iterator normally, so the page can show it; any other
    exception (a bug, misuse) propagates.
    """
    try:
        async with stream:
            async for event in stream:
                yield format_sse(event)
            values = await stream.results()
    except StreamError as error:
        yield _message("failed", error_data(error))
        return
    yield _message("result", values[0] if len(values) == 1 else values)
