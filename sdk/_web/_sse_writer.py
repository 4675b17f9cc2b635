"""Stream events as server-sent events (``text/event-stream``), for a web page.

A page that shows each field the moment it is final needs the stream's events in the browser.
:func:`format_sse` turns one event into one SSE message (an ``event:`` name and one JSON
``data:`` line); :func:`sse_events` runs a whole stream and yields its messages, then the
validated result (``event: result``) or why the stream failed (``event: failed``; not
``error``, which a browser's ``EventSource`` fires for its own connection errors). Both are
framework-free strings: hand the iterator to any ASGI streaming response (Starlette's
``StreamingResponse(..., media_type="text/event-stream")``, FastAPI's, Django's
``StreamingHttpResponse``).

Every ``data:`` line is one line of valid JSON that encodes as UTF-8, whatever the value (see
:func:`frame_json`), and an error that is not about the output reaches the page without the
server's details (:mod:`sdk._web._error_payload`).

Sans-I/O: nothing here imports anyio or httpx; :func:`sse_events` only iterates the stream it
is given.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from sdk._errors import StreamError, TransportError, pointer
from sdk._events import (
    AttemptFailed,
    AttemptStarted,
    Backtracked,
    FieldEvent,
    ReasoningDelta,
    StreamEnded,
    StreamEvent,
    TextDelta,
    UsageReported,
)
from sdk._web._error_payload import error_data, is_public, new_request_id

if TYPE_CHECKING:
    from sdk._stream._stream import Stream

logger = logging.getLogger("fieldstream")

# A JSON string as json.dumps writes it, or (group 1) a number JSON cannot write, which
# json.dumps writes bare outside strings.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|(-?Infinity|NaN)')
_NON_FINITE = {"Infinity": "1e999", "-Infinity": "-1e999", "NaN": "null"}
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _finite(match: re.Match[str]) -> str:
    return match[0] if match[1] is None else _NON_FINITE[match[1]]


def frame_json(data: Any) -> str:
    """``data`` as one line of JSON that is valid in every browser and encodes as UTF-8.

    ``json.dumps`` with two repairs, both keeping the value: a surrogate code point in a
    string (a lone ``"\\ud83d"`` is valid JSON, and the parser keeps it) is written as its
    ``\\uXXXX`` escape, which ``JSON.parse`` and ``json.loads`` read back as the same code
    unit (a raw one cannot be encoded as UTF-8); an infinite float (``1e400`` in a document is
    valid JSON and reads as ``inf``) is written ``1e999`` / ``-1e999``, which both read back as
    infinity (``Infinity`` is not JSON). NaN, which no JSON document holds, is written
    ``null``, as ``JSON.stringify`` writes it. Other characters are written as they are;
    control characters, ``\\r`` and ``\\n`` are escaped, so the line cannot end early.
    """
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=_jsonable)
    if "Infinity" in body or "NaN" in body:  # maybe in a string; then the match keeps it
        body = _TOKEN.sub(_finite, body)
    if not body.isascii() and _SURROGATE.search(body):  # only inside strings
        body = _SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}", body)
    return body


def _message(name: str, data: Any) -> str:
    return f"event: {name}\ndata: {frame_json(data)}\n\n"


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


def _attempt_failed(event: AttemptFailed, error: dict[str, Any]) -> str:
    data = {"attempt": event.attempt, "retrying": event.retrying, "error": error}
    return _message("attempt_failed", {**data, "usage": asdict(event.usage)})


def format_sse(event: StreamEvent, *, error_details: bool = False) -> str:
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
      a transport error; `request_id` for an error that is not about the output) and `usage`;
    - [`Backtracked`][sdk.Backtracked]: `backtracked`, with `path`, `pointer`, `text` (the
      rejected value as written), `offset` (where the output was rewound to), `attempt` and
      `error` (as in `attempt_failed`);
    - [`UsageReported`][sdk.UsageReported]: `usage`, with `attempt`, `usage`;
    - [`StreamEnded`][sdk.StreamEnded]: `end`, with `attempts`, `usage`.

    `usage` is `{"prompt_tokens", "completion_tokens", "forced_tokens", "estimated",
    "prompt_tokens_details", "completion_tokens_details"}`. In a
    browser: `new EventSource(url).addEventListener("field", e => JSON.parse(e.data))`.

    The `data:` line is valid JSON and valid UTF-8 for every value: a lone surrogate in a
    string is written as its `\\ud83d` escape (`JSON.parse` gives back the same string), an
    infinite number (`1e400` in the output) as `1e999` (`JSON.parse` gives `Infinity`).

    An error about the model's output (a violation, a syntax error, a truncation, a refusal)
    is sent with its message. Any other error (a transport error, whose message holds the
    upstream's body and URL; a callback's or a backend's) is sent with a generic message, its
    `status` and the upstream's `request_id`, unless `error_details=True` asks for its whole
    message: a page is shown to visitors.
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
        return _attempt_failed(event, error_data(event.error, details=error_details))
    if isinstance(event, Backtracked):
        data = {"path": list(event.path), "pointer": pointer(event.path), "text": event.text}
        error = error_data(event.error, details=error_details)
        return _message(
            "backtracked",
            {**data, "offset": event.offset, "attempt": event.attempt, "error": error},
        )
    if isinstance(event, UsageReported):
        return _message("usage", {"attempt": event.attempt, "usage": asdict(event.usage)})
    if isinstance(event, StreamEnded):
        return _message("end", {"attempts": event.attempts, "usage": asdict(event.usage)})
    raise TypeError(f"format_sse takes a stream event, not {type(event).__name__}")


def _withheld(error: BaseException) -> dict[str, Any]:
    """``error`` as a visitor may see it; the whole error to the server's log, under the id
    the page shows (a traceback too where it tells of a bug: a callback's, a backend's)."""
    request_id = getattr(error, "request_id", None) or new_request_id()
    request = getattr(error, "request", None)  # a status error's message leaves the URL out
    where = f" ({request.method} {request.url})" if request is not None else ""
    logger.warning(
        "sse_events: %s sent to the page without its details (request id %s)%s: %s",
        type(error).__name__,
        request_id,
        where,
        error,
        exc_info=None if isinstance(error, TransportError) else error,
    )
    return error_data(error, details=False, request_id=request_id)


async def sse_events(stream: Stream[Any], *, error_details: bool = False) -> AsyncIterator[str]:
    """Run `stream` and yield it as server-sent events: one message per event it yields (see
    [`format_sse`][sdk.format_sse]), then `event: result` with the validated value as JSON
    (a pydantic model as `model_dump(mode="json")` would write it; a list, one per tool call,
    for a stream of several tool calls), or `event: failed` with the error's `type`, `message`
    (and `pointer`, `keyword`, `offset` for a violation; `status` for a transport error;
    `request_id` for an error that is not about the output) when the stream fails. (Not
    `event: error`: a browser's `EventSource` fires `error` for its own connection errors.)

    Give it a stream as `client.stream(...)` returns it, not yet entered: it enters it
    (`async with`) and closes it when the stream ends, fails, or the iterator is closed (a
    browser that goes away cancels the response, which closes the generation). Create the
    stream with `progress=True` for the page to see each attempt start and fail
    (`attempt`, `attempt_failed`: a violation, a retry; `backtracked`: a value rewritten in
    place, under `Retry(backtrack=True)`) and the usage.

    A page is shown to visitors, so an error that is not about the model's output (an HTTP
    status error, whose message holds the upstream's body and the server's URL; a connection
    failure; a callback's or a backend's error) reaches it, in `attempt_failed` and `failed`,
    as a generic message (`"the model server refused the request (HTTP 401)"`), its `status`
    and a `request_id`: the upstream's `x-request-id`, or an id made here (`fs-...`). The whole
    error goes to the server's log, under that id: a WARNING on the `fieldstream` logger.
    `error_details=True` sends the whole message to the page instead (and logs nothing).

    A [`StreamError`][sdk.StreamError] (what the model or the server did) becomes the
    `failed` message and ends the iterator normally, so the page can show it; any other
    exception (a bug, misuse) propagates.
    """

    sent: dict[int, tuple[BaseException, dict[str, Any]]] = {}  # logged once, one id

    def error(failure: BaseException) -> dict[str, Any]:
        if error_details or is_public(failure):
            return error_data(failure)
        if id(failure) not in sent:  # the last attempt's error is also the stream's
            sent[id(failure)] = (failure, _withheld(failure))
        return sent[id(failure)][1]

    try:
        async with stream:
            async for event in stream:
                if isinstance(event, AttemptFailed):
                    yield _attempt_failed(event, error(event.error))
                else:
                    yield format_sse(event)
            values = await stream.results()
    except StreamError as failure:
        yield _message("failed", error(failure))
        return
    yield _message("result", values[0] if len(values) == 1 else values)
