"""OpenAI applies a text constraint itself (issue 40, item 1): a ``Choice``, ``Regex`` or
``Grammar`` goes as a forced custom tool whose input follows the grammar, and the input is the
output. The bodies are checked against openai-python's request types
(``tests/sdk/http/test_server_bodies.py`` holds every row; here the grammar each kind becomes),
the streams against its event types (each recorded-shape event validated by openai's own
models, which also give the text the stream must produce), replayed whole, byte by byte and
in random splits, the first text arriving before the last byte. And every event type of the
Responses API is read or ignored for a stated reason."""

from __future__ import annotations

import copy
import json
import random
import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai
import pytest
import respx
from openai._models import construct_type
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import (
    ResponseCustomToolCallInputDeltaEvent,
    ResponseCustomToolCallInputDoneEvent,
    ResponseStreamEvent,
)
from openai.types.shared_params.custom_tool_input_format import Grammar as GrammarFormat

from sdk import (
    Choice,
    Client,
    Grammar,
    Regex,
    SchemaViolation,
    TextDelta,
    UnsupportedConstraint,
)
from sdk._backend import GenerationRequest
from sdk._constraints import Constraint
from sdk._http.openai._chat_request import chat_body
from sdk._http.openai._flavours import check_request
from sdk._http.openai._responses_decoder import IGNORED, READ, ResponsesDecoder
from sdk._http.openai._responses_request import responses_body
from tests.sdk._http_support import Body
from tests.sdk.http.openai._openai_types import openai_errors

BASE = "http://llm.test/v1"
SSE = {"content-type": "text/event-stream"}
MESSAGES = [{"role": "user", "content": "Call me: a phone number."}]
DATA = Path(__file__).resolve().parents[3] / "data" / "openai_responses"
PHONE = Regex(r"\d{3}-\d{4}")
PIECES = ["555", "-", "01", "23"]
GBNF = Grammar('root ::= "SELECT " col\ncol ::= "a" | [0-9]+')


def request(constraint: Constraint) -> GenerationRequest:
    return GenerationRequest(
        messages=tuple(MESSAGES), schema={"type": "string"}, constraint=constraint
    )


@pytest.mark.parametrize(
    ("constraint", "syntax", "definition"),
    [
        (PHONE, "regex", "[0-9]{3}-[0-9]{4}"),  # \d spelled as ECMA-262 reads it
        (Choice(["yes", "no (not yet)"]), "regex", r"(?:yes|no \(not yet\))"),
        (Grammar("start: NUM\nNUM: /[0-9]+/"), "lark", "start: NUM\nNUM: /[0-9]+/"),
        (Grammar("%llguidance {}\nstart: /x/"), "lark", "start: /x/"),  # llguidance's header
    ],
)
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_each_text_constraint_is_a_grammar_of_openais(
    constraint: Constraint, syntax: str, definition: str, api: str
) -> None:
    build = chat_body if api == "chat" else responses_body
    body = build(request(constraint), model="gpt-5", server="openai")
    (tool,) = body["tools"]
    fmt = tool["custom"]["format"] if api == "chat" else tool["format"]
    if api == "chat":
        assert fmt == {"type": "grammar", "grammar": {"syntax": syntax, "definition": definition}}
    else:
        assert fmt == {"type": "grammar", "syntax": syntax, "definition": definition}
        assert openai_errors(fmt, GrammarFormat) == []
    assert "response_format" not in body and "text" not in body


@pytest.mark.local
def test_a_gbnf_grammar_is_converted_to_lark() -> None:
    body = responses_body(request(GBNF), model="gpt-5", server="openai")
    definition = body["tools"][0]["format"]["definition"]
    assert "::=" not in definition and not definition.lstrip().startswith("%llguidance")
    assert 'start: "SELECT " COL' in definition
    import llguidance

    # llguidance (OpenAI's engine for Lark) reads the converted grammar.
    llguidance.LLMatcher.grammar_from_lark(definition)


def test_without_llguidance_a_gbnf_grammar_is_refused_before_any_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "llguidance.gbnf_to_lark", None)  # import fails
    with pytest.raises(UnsupportedConstraint, match=r"Lark.*fieldstream\[local\]"):
        check_request(request(GBNF), server="openai", api="chat")


# --- The Responses API: response.custom_tool_call_input.delta / .done ------------------------


def recorded_response(status: str, output: list[Any]) -> dict[str, Any]:
    """A response object of the recorded shape (tests/data/openai_responses), for this call."""
    first = (DATA / "json_output.sse").read_text().split("\n\n")[0]
    response = copy.deepcopy(json.loads(first.split("data: ", 1)[1])["response"])
    grammar = {"type": "grammar", "syntax": "regex", "definition": "[0-9]{3}-[0-9]{4}"}
    response.update(
        status=status,
        output=output,
        text={"format": {"type": "text"}, "verbosity": "medium"},
        tool_choice={"type": "custom", "name": "response"},
        tools=[{"type": "custom", "name": "response", "format": grammar}],
    )
    if status == "completed":
        response["usage"] = {
            "input_tokens": 20,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": 6,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 26,
        }
    return response


def responses_events(pieces: list[str]) -> list[dict[str, Any]]:
    whole = "".join(pieces)
    item = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_1", "name": "response"}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": recorded_response("in_progress", [])},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "input": "", "status": "in_progress"},
        },
    ]
    events += [
        {
            "type": "response.custom_tool_call_input.delta",
            "item_id": "ctc_1",
            "output_index": 0,
            "delta": p,
        }
        for p in pieces
    ]
    done_item = {**item, "input": whole, "status": "completed"}
    events += [
        {
            "type": "response.custom_tool_call_input.done",
            "item_id": "ctc_1",
            "output_index": 0,
            "input": whole,
        },
        {"type": "response.output_item.done", "output_index": 0, "item": done_item},
        {"type": "response.completed", "response": recorded_response("completed", [done_item])},
    ]
    for n, event in enumerate(events):
        event["sequence_number"] = n
    return events


def sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def event_models() -> dict[str, Any]:
    """Each event type of openai-python's ``ResponseStreamEvent`` -> its model."""
    union = typing.get_args(ResponseStreamEvent)[0]  # Annotated[Union[...], discriminator]
    return {
        typing.get_args(m.model_fields["type"].annotation)[0]: m for m in typing.get_args(union)
    }


def test_the_recorded_shape_is_openais_and_its_text_is_the_input() -> None:
    models = event_models()
    parsed = [models[e["type"]].model_validate(e) for e in responses_events(PIECES)]
    deltas = [e.delta for e in parsed if isinstance(e, ResponseCustomToolCallInputDeltaEvent)]
    (done,) = [e for e in parsed if isinstance(e, ResponseCustomToolCallInputDoneEvent)]
    assert "".join(deltas) == done.input == "555-0123"
    # What the decoder makes of the same events: the input as text, then "stop".
    decoder = ResponsesDecoder()
    out = [d for e in responses_events(PIECES) for d in decoder.feed(e["type"], e)]
    assert "".join(d.text for d in out) == done.input
    assert all(d.tool_call is None for d in out)
    assert out[-1].finish_reason == "stop"


def test_input_said_only_whole_is_read_once() -> None:
    events = [e for e in responses_events(PIECES) if not e["type"].endswith("input.delta")]
    decoder = ResponsesDecoder()
    out = [d for e in events for d in decoder.feed(e["type"], e)]
    assert "".join(d.text for d in out) == "555-0123"


def splits(raw: bytes, how: str) -> list[bytes]:
    if how == "whole":
        return [raw]
    if how == "bytes":
        return [raw[i : i + 1] for i in range(len(raw))]
    rng = random.Random(int(how.removeprefix("random")))
    cuts = sorted(rng.sample(range(1, len(raw)), 16))
    return [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]


HOW = ["whole", "bytes", "random1", "random2", "random3"]


@pytest.fixture
def mock() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE, assert_all_called=False) as router:
        yield router


def client(api: str) -> Client:
    return Client(
        base_url=BASE, api_key="sk-test", model="gpt-5", server="openai", api=api, max_retries=0
    )  # type: ignore[arg-type]


# --- Chat Completions: delta.tool_calls[i].custom.input --------------------------------------


def chat_chunks(pieces: list[str]) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-5",
            "choices": [choice],
        }

    calls = [
        {"index": 0, "id": "call_1", "type": "custom", "custom": {"name": "response", "input": ""}}
    ]
    calls += [{"index": 0, "custom": {"input": p}} for p in pieces]
    chunks = [chunk({"role": "assistant", "content": None, "tool_calls": [calls[0]]})]
    chunks += [chunk({"tool_calls": [c]}) for c in calls[1:]]
    chunks.append(chunk({}, "tool_calls"))
    usage = {"prompt_tokens": 20, "completion_tokens": 6, "total_tokens": 26}
    chunks.append({**chunk({}), "choices": [], "usage": usage})
    return chunks


def chat_sse(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


def test_openais_chunk_model_reads_the_same_input() -> None:
    # openai-python's chunk type names only function calls; what it builds from the bytes (its
    # construct_type, as its stream does) keeps the custom call, the oracle for the text.
    text = ""
    for raw in chat_chunks(PIECES):
        chunk = construct_type(type_=ChatCompletionChunk, value=raw)
        for choice in chunk.choices:
            for call in choice.delta.tool_calls or []:
                text += call.model_extra["custom"]["input"]  # type: ignore[index]
    assert text == "555-0123"


@pytest.mark.anyio
@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_a_regex_applied_by_openai_in_any_split(
    mock: respx.MockRouter, api: str, how: str
) -> None:
    raw = chat_sse(chat_chunks(PIECES)) if api == "chat" else sse(responses_events(PIECES))
    path = "/chat/completions" if api == "chat" else "/responses"
    route = mock.post(path).mock(
        return_value=httpx.Response(200, headers=SSE, stream=Body(splits(raw, how)))
    )
    async with client(api) as c, c.stream(messages=MESSAGES, schema=PHONE) as s:
        texts = [e.text async for e in s if isinstance(e, TextDelta)]
        assert await s.result() == "555-0123"
    assert "".join(texts) == "555-0123"
    assert s.attempts[-1].finish_reason == "stop"
    sent = json.loads(route.calls.last.request.content)
    assert sent["tools"][0]["type"] == "custom"


@pytest.mark.anyio
@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_the_first_text_arrives_before_the_last_byte(
    mock: respx.MockRouter, api: str
) -> None:
    raw = chat_sse(chat_chunks(PIECES)) if api == "chat" else sse(responses_events(PIECES))
    body = Body(splits(raw, "bytes"))
    path = "/chat/completions" if api == "chat" else "/responses"
    mock.post(path).mock(return_value=httpx.Response(200, headers=SSE, stream=body))
    async with client(api) as c, c.stream(messages=MESSAGES, schema=PHONE) as s:
        async for event in s:
            if isinstance(event, TextDelta):
                first = body.pulled
                break
        await s.result()
    # The first piece's event, well before the completed response (the biggest event) ends.
    assert first < len(raw) * 3 // 4


@pytest.mark.anyio
async def test_a_text_that_breaks_the_regex_is_stopped_at_its_first_wrong_byte(
    mock: respx.MockRouter,
) -> None:
    raw = sse(responses_events(["555", "-x", "0123"]))
    body = Body(splits(raw, "bytes"))
    mock.post("/responses").mock(return_value=httpx.Response(200, headers=SSE, stream=body))
    async with client("responses") as c, c.stream(messages=MESSAGES, schema=PHONE) as s:
        with pytest.raises(SchemaViolation, match="'555-x' cannot begin a match") as info:
            await s.result()
    assert info.value.offset == 4
    assert body.closed and body.pulled < len(raw)


# --- Every event type of the Responses API ----------------------------------------------------


def test_every_event_type_is_read_or_ignored_for_a_reason() -> None:
    types = set(event_models())
    assert len(types) >= 59  # openai 3.57's union; a later one may add
    assert not READ & set(IGNORED)
    assert types - READ - set(IGNORED) == set(), "a new event type: read it or say why not"
    assert (READ | set(IGNORED)) - types == set(), "an event type the API no longer has"
    assert all(reason.strip() for reason in IGNORED.values())


@pytest.mark.parametrize("kind", sorted(IGNORED))
def test_an_ignored_event_gives_nothing_and_breaks_nothing(kind: str) -> None:
    decoder = ResponsesDecoder()
    assert decoder.feed(kind, {"type": kind, "delta": "x", "sequence_number": 3}) == []
    assert not decoder.done


@pytest.mark.anyio
@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_through_the_callers_openai_client_the_same_body_and_text(
    mock: respx.MockRouter, api: str
) -> None:
    raw = chat_sse(chat_chunks(PIECES)) if api == "chat" else sse(responses_events(PIECES))
    path = "/chat/completions" if api == "chat" else "/responses"
    sent: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return httpx2.Response(200, headers=SSE, content=raw)

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    vendor = openai.AsyncOpenAI(api_key="sk-test", base_url=BASE, http_client=http)
    c = Client.from_openai(vendor, model="gpt-5", api=api, server="openai")  # type: ignore[arg-type]
    async with c.stream(messages=MESSAGES, schema=PHONE) as s:
        assert await s.result() == "555-0123"
    route = mock.post(path).mock(return_value=httpx.Response(200, headers=SSE, content=raw))
    async with client(api) as direct, direct.stream(messages=MESSAGES, schema=PHONE) as s:
        await s.result()
    assert json.loads(sent[0].content) == json.loads(route.calls.last.request.content)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("how", ["whole", "bytes", "random4"])
@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_openai_python_reads_the_same_bytes_as_the_same_text(api: str, how: str) -> None:
    # The oracle: openai-python's own SSE reader and event models over the same bytes, split
    # the same way. (asyncio only: under trio openai-python's chat stream, which stops at
    # [DONE], leaves its byte iterator to the garbage collector, a ResourceWarning.)
    raw = chat_sse(chat_chunks(PIECES)) if api == "chat" else sse(responses_events(PIECES))

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers=SSE, stream=Parts(splits(raw, how)))

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    vendor = openai.AsyncOpenAI(api_key="sk-test", base_url=BASE, http_client=http)
    text = ""
    if api == "chat":
        chunks = await vendor.chat.completions.create(model="gpt-5", messages=[], stream=True)
        async with chunks:
            async for chunk in chunks:
                for choice in chunk.choices:
                    for call in choice.delta.tool_calls or []:
                        text += call.model_extra["custom"]["input"]  # type: ignore[index]
    else:
        events = await vendor.responses.create(model="gpt-5", input="hi", stream=True)
        async with events:
            async for event in events:
                if isinstance(event, ResponseCustomToolCallInputDeltaEvent):
                    text += event.delta
    assert text == "555-0123"  # what fieldstream reads from them, in every split: above


class Parts(httpx2.AsyncByteStream):
    def __init__(self, parts: list[bytes]) -> None:
        self.parts = parts

    async def __aiter__(self) -> Any:
        for part in self.parts:
            yield part
