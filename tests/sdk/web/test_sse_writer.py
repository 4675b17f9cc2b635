"""sdk.format_sse and sdk.sse_events: stream events as server-sent events for a browser."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import partial
from sdk import (
    APITimeoutError,
    AttemptFailed,
    AttemptStarted,
    BackendError,
    Backtracked,
    Client,
    FieldEvent,
    InternalServerError,
    NotFoundError,
    ReasoningDelta,
    RefusedError,
    RetriesExhausted,
    Retry,
    SchemaViolation,
    StreamEnded,
    TextDelta,
    TransportError,
    TruncatedError,
    Usage,
    UsageReported,
    format_sse,
    sse_events,
    stream_structured,
)
from tests._json_texts import DOCUMENTS, STRINGS, canonical, no_constants

pytestmark = pytest.mark.anyio


def parse(message: str) -> tuple[str, Any]:
    """One SSE message read back as a browser's EventSource reads it."""
    assert message.endswith("\n\n") and message.count("\n") == 3, repr(message)
    name, data = message[:-2].split("\n")
    assert name.startswith("event: ") and data.startswith("data: ")
    return name[len("event: ") :], json.loads(data[len("data: ") :])


def test_a_field_event_is_one_message_with_its_path_and_value() -> None:
    event = FieldEvent(("a/b", 0), {"x": "line\nbreak"}, offset=9, attempt=2)
    name, data = parse(format_sse(event))
    assert name == "field"
    assert data == {
        "path": ["a/b", 0],
        "pointer": "/a~1b/0",
        "value": {"x": "line\nbreak"},  # a newline in a value stays inside the one data line
        "attempt": 2,
        "forced": 0,
    }


def test_a_tool_calls_event_says_which_call() -> None:
    event = FieldEvent(("city",), "Oslo", offset=3, tool_call=1, tool_name="get_weather")
    _, data = parse(format_sse(event))
    assert data["tool_call"] == 1 and data["tool_name"] == "get_weather"
    assert "tool_call_id" not in data and "segment" not in data


def test_every_progress_event_has_its_name() -> None:
    usage = Usage(prompt_tokens=5, completion_tokens=7)
    error = SchemaViolation("not one of the choices", path=("mood",), keyword="enum", offset=4)
    events = {
        "text": TextDelta((), "neg"),
        "reasoning": ReasoningDelta("hmm"),
        "attempt": AttemptStarted(2),
        "attempt_failed": AttemptFailed(1, error, True, usage),
        "backtracked": Backtracked(("mood",), '"sad"', error, 9, 1),
        "usage": UsageReported(1, usage),
        "end": StreamEnded(2, usage),
    }
    for expected, event in events.items():
        name, _ = parse(format_sse(event))
        assert name == expected
    _, failed = parse(format_sse(events["attempt_failed"]))
    assert failed["error"] == {
        "type": "SchemaViolation",
        "message": "not one of the choices",
        "pointer": "/mood",
        "keyword": "enum",
        "offset": 4,
    }
    assert failed["usage"]["completion_tokens"] == 7 and failed["retrying"] is True
    _, back = parse(format_sse(events["backtracked"]))
    assert back == {
        "path": ["mood"],
        "pointer": "/mood",
        "text": '"sad"',
        "offset": 9,
        "attempt": 1,
        "error": failed["error"],
    }


def test_something_else_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="takes a stream event, not dict"):
        format_sse({"path": []})  # type: ignore[arg-type]


class Person(BaseModel):
    name: str
    mood: str


async def pieces(*chunks: str) -> AsyncIterator[str]:
    for chunk in chunks:
        yield chunk


async def test_sse_events_runs_the_stream_then_sends_the_result() -> None:
    stream = stream_structured(pieces('{"name": "Ada", ', '"mood": "calm"}'), schema=Person)
    messages = [parse(m) async for m in sse_events(stream)]
    assert [name for name, _ in messages] == ["field", "field", "field", "result"]
    assert [data.get("pointer") for _, data in messages[:3]] == ["/name", "/mood", ""]
    assert messages[-1][1] == {"name": "Ada", "mood": "calm"}  # the model, as JSON


async def test_a_failed_stream_ends_with_its_error_not_an_exception() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 9}}}
    stream = stream_structured(pieces('{"n": 42}'), schema=schema, progress=True)
    messages = [parse(m) async for m in sse_events(stream)]
    names = [name for name, _ in messages]
    assert names == ["attempt", "attempt_failed", "failed"]
    assert messages[-1][1]["type"] == "SchemaViolation"
    assert messages[-1][1]["pointer"] == "/n" and messages[-1][1]["keyword"] == "maximum"


async def test_a_retry_shows_as_attempts() -> None:
    sources = iter([pieces('{"n": 42}'), pieces('{"n": 4}')])
    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 9}}}
    stream = stream_structured(
        lambda attempt: next(sources), schema=schema, retry=Retry(max_attempts=2), progress=True
    )
    names = [parse(m)[0] async for m in sse_events(stream)]
    assert names == ["attempt", "attempt_failed", "attempt", "field", "field", "end", "result"]


async def test_closing_the_iterator_early_closes_the_stream() -> None:
    closed: list[bool] = []

    async def endless() -> AsyncIterator[str]:
        try:
            yield '{"name": "Ada", '
            while True:
                yield " "
        finally:
            closed.append(True)

    messages = sse_events(stream_structured(endless(), schema=Person))
    name, _ = parse(await messages.__anext__())
    assert name == "field"
    await messages.aclose()  # a browser that went away: the response is cancelled
    assert closed == [True]


# ---------------------------------------------------------------- frames any browser reads

FRAME = re.compile(r"event: [a-z_]+\ndata: [^\r\n]*\n\n")


def strict_json(data: str) -> Any:
    """``data`` read as JSON by a reader as strict as ``JSON.parse`` (no NaN, no Infinity),
    and by the strict partial parser too."""
    value = json.loads(data, parse_constant=no_constants)
    parser = partial.Parser()
    parser.feed(data)
    assert canonical(parser.close()) == canonical(value)
    return value


@settings(max_examples=400, deadline=None)
@given(DOCUMENTS, st.sampled_from([1, 2, 7]))
def test_every_frame_is_utf8_and_json_for_any_value_the_parser_accepts(doc: str, size: int) -> None:
    # The values as the stream sees them: fed in pieces to the parser, read back from each
    # event's frame exactly (a lone surrogate, a number too big for a double: as JSON.parse
    # would hold them).
    parser = partial.Parser()
    done = [e for i in range(0, len(doc), size) for e in parser.feed(doc[i : i + size])]
    values = [(e.path, e.value) for e in done if isinstance(e, partial.ValueDone)]
    root = parser.close()
    if not values or values[-1][0] != ():  # a number at the root ends with the input
        values.append(((), root))
    assert canonical(root) == canonical(json.loads(doc))  # Python's own reading of it
    for path, value in values:
        event = FieldEvent(path, value, offset=0)
        frame = format_sse(event)
        frame.encode("utf-8")  # strict: a raw surrogate raises here
        assert FRAME.fullmatch(frame), repr(frame)  # one data line: nothing ends it early
        data = strict_json(frame.split("\n")[1].removeprefix("data: "))
        assert canonical(data["value"]) == canonical(value)
        assert canonical(data["path"]) == canonical(list(path))


@settings(max_examples=100, deadline=None)
@given(STRINGS)
def test_an_error_message_with_any_characters_is_one_json_line(text: str) -> None:
    error = RefusedError(text)  # about the output: its message goes to the page as it is
    frame = format_sse(AttemptFailed(1, error, False, Usage()))
    frame.encode("utf-8")
    assert FRAME.fullmatch(frame), repr(frame)
    data = strict_json(frame.split("\n")[1].removeprefix("data: "))
    assert canonical(data["error"]["message"]) == canonical(str(error))


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("\ud83d", r'"\ud83d"'),  # a lone surrogate: its escape, as JSON.parse reads it
        ("a\ude00b", r'"a\ude00b"'),
        ("\ud83d\ude00", r'"\ud83d\ude00"'),  # two code points: JSON.parse makes them one
        ("😀é", '"😀é"'),  # everything else as it is
        (float("inf"), "1e999"),  # JSON.parse and json.loads: Infinity
        (float("-inf"), "-1e999"),
        (float("nan"), "null"),  # as JSON.stringify writes it (no JSON document holds one)
        (["Infinity", "NaN", float("inf")], '["Infinity","NaN",1e999]'),
        (
            {"k\ud800": [1e-400, -0.0, 10**30]},
            r'{"k\ud800":[0.0,-0.0,1000000000000000000000000000000]}',
        ),
    ],
)
def test_how_surrogates_and_non_finite_numbers_are_written(value: Any, written: str) -> None:
    frame = format_sse(FieldEvent((), value, offset=0))
    assert (
        frame.split("\n")[1]
        == f'data: {{"path":[],"pointer":"","value":{written},"attempt":1,"forced":0}}'
    )


async def test_a_lone_surrogate_or_a_huge_number_in_the_output_reaches_the_result() -> None:
    doc = '{"name": "\\ud83d", "mood": "1e400", "n": 1e400}'
    schema = {"type": "object", "properties": {"n": {"type": "number"}}}
    stream = stream_structured(pieces(doc), schema=schema)
    messages = [m async for m in sse_events(stream)]
    for message in messages:
        message.encode("utf-8")
    name, result = parse(messages[-1])
    assert name == "result"
    assert result == {"name": "\ud83d", "mood": "1e400", "n": float("inf")}


# ---------------------------------------------------------------- what a visitor is told


def upstream_401(request: httpx.Request) -> httpx.Response:
    """A server that echoes the caller's API key in its error (some do)."""
    key = request.headers["authorization"]
    return httpx.Response(
        401, json={"error": {"message": f"Incorrect API key: {key}"}}, headers=REQUEST_ID
    )


REQUEST_ID = {"x-request-id": "req_abc123"}
SECRET = "sk-secret-4242"
BASE_URL = "http://models.internal:9000/v1"


def secret_client(handler: Any) -> Client:
    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return Client(base_url=BASE_URL, api_key=SECRET, model="m", http_client=http, max_retries=0)


async def run_401(**options: Any) -> list[tuple[str, Any]]:
    async with secret_client(upstream_401) as client:
        stream = client.stream(
            messages=[{"role": "user", "content": "hi"}], schema={}, progress=True
        )
        return [parse(m) async for m in sse_events(stream, **options)]


async def test_an_upstream_error_reaches_the_page_as_status_and_request_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="fieldstream"):
        messages = await run_401()
    assert [name for name, _ in messages] == ["attempt", "attempt_failed", "failed"]
    page = json.dumps(messages)
    assert SECRET not in page and "models.internal" not in page and "Incorrect" not in page
    expected = {
        "type": "AuthenticationError",
        "message": "the model server refused the request (HTTP 401)",
        "status": 401,
        "request_id": "req_abc123",
    }
    assert messages[1][1]["error"] == expected
    assert messages[2][1] == expected
    # The details went to the server's log, once, under the id the page shows.
    [record] = [r for r in caplog.records if r.name == "fieldstream"]
    assert record.levelno == logging.WARNING
    assert "req_abc123" in record.getMessage() and SECRET in record.getMessage()
    assert BASE_URL in record.getMessage()


async def test_the_details_go_to_the_page_when_asked_for(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="fieldstream"):
        messages = await run_401(error_details=True)
    failed = messages[-1][1]
    assert failed["status"] == 401 and failed["request_id"] == "req_abc123"
    # The error's own message, whole (a status error's message leaves the URL out: its
    # ``request.url`` has it).
    assert failed["message"] == "HTTP 401: Incorrect API key: Bearer " + SECRET
    assert not [r for r in caplog.records if r.name == "fieldstream"]


async def test_without_an_upstream_request_id_one_is_made_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"cannot reach {request.url} with {SECRET}")

    with caplog.at_level(logging.WARNING, logger="fieldstream"):
        async with secret_client(down) as client:
            stream = client.stream(messages=[{"role": "user", "content": "hi"}], schema={})
            [(name, failed)] = [parse(m) async for m in sse_events(stream)]
    assert name == "failed" and SECRET not in json.dumps(failed)
    assert failed["type"] == "APIConnectionError" and failed["status"] is None
    assert failed["message"] == "the connection to the model server failed"
    assert re.fullmatch(r"fs-[0-9a-f]{16}", failed["request_id"])
    [record] = [r for r in caplog.records if r.name == "fieldstream"]
    assert failed["request_id"] in record.getMessage() and SECRET in record.getMessage()


async def test_a_callbacks_error_is_withheld_with_its_traceback_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def on_field(event: FieldEvent) -> None:
        raise RuntimeError("db password is hunter2")

    stream = stream_structured(
        pieces('{"name": "Ada", "mood": "calm"}'), schema=Person, on_field=on_field
    )
    with caplog.at_level(logging.WARNING, logger="fieldstream"):
        messages = [parse(m) async for m in sse_events(stream)]
    name, failed = messages[-1]
    assert name == "failed" and failed["type"] == "CallbackError"
    assert failed["message"] == "a field callback on the server failed"
    assert "hunter2" not in json.dumps(messages)
    [record] = [r for r in caplog.records if r.name == "fieldstream"]
    assert record.exc_info is not None and "hunter2" in caplog.text


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (
            InternalServerError("HTTP 503 from http://x", status=503),
            "the model server failed (HTTP 503)",
        ),
        (
            NotFoundError("HTTP 404 from http://x", status=404),
            "the model server refused the request (HTTP 404)",
        ),
        (APITimeoutError("read timeout on http://x"), "the model server did not answer in time"),
        (TransportError("http://x said: {...}", status=500), "the model server failed (HTTP 500)"),
        (BackendError("/srv/models/x.gguf: corrupt"), "the model backend failed"),
        (
            RetriesExhausted(
                [SchemaViolation("too big", path=("n",)), TransportError("at http://x")]
            ),
            "all 2 attempts failed; last error: the model server failed",
        ),
    ],
)
def test_what_a_visitor_is_told(error: BaseException, message: str) -> None:
    _, data = parse(format_sse(AttemptFailed(1, error, False, Usage())))
    assert data["error"]["message"] == message and "http://x" not in json.dumps(data)
    assert "request_id" in data["error"]
    _, detailed = parse(format_sse(AttemptFailed(1, error, False, Usage()), error_details=True))
    assert detailed["error"]["message"] == str(error)


def test_an_error_about_the_output_keeps_its_message() -> None:
    for error in (
        SchemaViolation("not one of the choices", path=("mood",), keyword="enum"),
        RefusedError("I cannot help with that"),
        TruncatedError("the output stopped at max_tokens"),
        RetriesExhausted([SchemaViolation("too big", path=("n",))]),
    ):
        _, data = parse(format_sse(AttemptFailed(1, error, False, Usage())))
        assert "request_id" not in data["error"]
        assert data["error"]["message"] in (str(error), getattr(error, "message", None))
