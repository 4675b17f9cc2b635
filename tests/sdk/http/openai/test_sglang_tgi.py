"""SGLang and TGI as named servers (``server="sglang"`` / ``"tgi"``): what each is sent for
each constraint it documents, what is refused before any request, and their streams replayed
whole, byte by byte and in random splits, the first text or field arriving before the last
byte. (Each whole body is held to the server's documented shape in
``tests/sdk/http/test_server_bodies.py``.)"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx
from pydantic import BaseModel

from sdk import (
    Choice,
    Client,
    FieldEvent,
    Grammar,
    Regex,
    StructuralTag,
    Tag,
    TextDelta,
    UnsupportedConstraint,
)
from sdk._backend import GenerationRequest
from sdk._constraints import Constraint
from sdk._grammar_languages import choice_regex
from sdk._http.openai._chat_request import chat_body
from sdk._http.openai._flavours import check_request, check_server
from tests.sdk._http_support import Body

BASE = "http://llm.test/v1"
SSE = {"content-type": "text/event-stream"}
MESSAGES = [{"role": "user", "content": "hi"}]
GBNF = Grammar('root ::= "SELECT " col\ncol ::= "a" | "b"')
LARK = Grammar("start: NUM\nNUM: /[0-9]+/")


class Weather(BaseModel):
    city: str
    temperature_c: float


TAG = StructuralTag([Tag("<w>", Weather, "</w>")], triggers=["<w>"])


def request(constraint: Constraint | None = None) -> GenerationRequest:
    return GenerationRequest(
        messages=tuple(MESSAGES), schema={"type": "string"}, constraint=constraint
    )


def test_both_are_servers_a_client_may_name() -> None:
    for server in ("sglang", "tgi"):
        check_server(server, "chat")
    with pytest.raises(ValueError, match="'sglang', 'tgi'"):
        check_server("sglan", "chat")


# SGLang, docs/advanced_features/structured_outputs: `extra_body={"regex": "(Paris|London)"}`,
# `extra_body={"ebnf": ebnf_grammar}` (GGML BNF, `root ::= city | description`), and
# `response_format={"type": "structural_tag", "structures": [...], "triggers": [...]}` or
# xgrammar's newer `{"type": "structural_tag", "format": {"type": "triggered_tags", ...}}`.
@pytest.mark.parametrize(
    ("constraint", "fields"),
    [
        (Choice(["Paris", "London"]), {"ebnf": 'root ::= "Paris" | "London"\n'}),
        (Regex(r"\d{3}"), {"regex": "[0-9]{3}"}),  # \d spelled as ECMA-262 reads it
        (GBNF, {"ebnf": GBNF.text}),
    ],
)
def test_sglang_reads_regex_and_ebnf_at_the_top_level(
    constraint: Constraint, fields: dict[str, Any]
) -> None:
    body = chat_body(request(constraint), model="m", server="sglang")
    assert {k: body[k] for k in fields} == fields
    assert "response_format" not in body and "structured_outputs" not in body


def test_sglang_structural_tag_goes_as_its_response_format() -> None:
    body = chat_body(request(TAG), model="m", server="sglang")
    assert body["response_format"] == {
        "type": "structural_tag",
        "structures": [{"begin": "<w>", "schema": Weather.model_json_schema(), "end": "</w>"}],
        "triggers": ["<w>"],
    }
    tag = StructuralTag([Tag("<w>", Weather, "</w>")], ["<w>"], at_least_one=True)
    form = chat_body(request(tag), model="m", server="sglang")["response_format"]
    assert form["type"] == "structural_tag"
    assert form["format"]["type"] == "triggered_tags"
    assert form["format"]["at_least_one"] is True


# TGI, router/src/lib.rs: ChatRequest.response_format is a GrammarType, `#[serde(tag = "type",
# content = "value")]` with "json" (a JSON Schema) and "regex" (a string); its docs
# (basic_tutorials/using_guidance.md): `grammar={"type": "regex", "value": regexp}`.
def test_tgi_reads_a_regex_as_its_grammar_type() -> None:
    body = chat_body(request(Regex(r"\d{3}-\d{4}")), model="m", server="tgi")
    assert body["response_format"] == {"type": "regex", "value": "[0-9]{3}-[0-9]{4}"}


CHOICES = ["a.b", "(x|y)", "1+1=2?", "$5 [off]", "back\\slash", "two\nlines", "^^"]


def test_a_choice_goes_to_tgi_as_a_regex_of_exactly_its_choices() -> None:
    pattern = chat_body(request(Choice(CHOICES)), model="m", server="tgi")["response_format"]
    assert pattern["type"] == "regex"
    compiled = re.compile(pattern["value"])
    for text in CHOICES:
        assert compiled.fullmatch(text), text
    for text in ["aXb", "x|y", "x", "11=2", "$5 o", "back\\\\slash", "two", "", "a.b(x|y)"]:
        assert not compiled.fullmatch(text), text
    assert choice_regex(Choice(["a", "b"])) == "(?:a|b)"


def test_a_schema_goes_to_tgi_as_json_and_value() -> None:
    req = GenerationRequest(messages=tuple(MESSAGES), schema=Weather.model_json_schema())
    form = chat_body(req, model="m", server="tgi")["response_format"]
    assert set(form) == {"type", "value"} and form["type"] == "json"
    assert form["value"]["properties"] == Weather.model_json_schema()["properties"]


@pytest.mark.parametrize(
    ("server", "constraint", "api", "message"),
    [
        ("tgi", GBNF, "chat", "TGI cannot be sent a Grammar"),
        ("tgi", TAG, "chat", "TGI cannot be sent a StructuralTag"),
        ("sglang", LARK, "chat", "SGLang reads grammars as EBNF"),
        ("sglang", Regex("a"), "responses", "on Chat Completions only"),
        ("tgi", Choice(["a"]), "responses", "on Chat Completions only"),
    ],
)
def test_what_they_cannot_take_is_refused_before_any_request(
    server: Any, constraint: Constraint, api: Any, message: str
) -> None:
    with pytest.raises(UnsupportedConstraint, match=message) as info:
        check_request(request(constraint), server=server, api=api)
    assert "mode='none'" in str(info.value)


# Their streams: SGLang's and TGI's chunks are Chat Completions chunks (TGI's carry
# "system_fingerprint": "<version>-native" and its usage in the finishing chunk).
def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        **extra,
    }


def sse(chunks: list[dict[str, Any]]) -> bytes:
    events = [f"data: {json.dumps(c)}\n\n".encode() for c in chunks]
    return b"".join([*events, b"data: [DONE]\n\n"])


def text_stream(pieces: list[str], server: str) -> bytes:
    extra = {"system_fingerprint": "3.0.1-native"} if server == "tgi" else {}
    chunks = [chunk({"role": "assistant", "content": p}, **extra) for p in pieces]
    usage = {"prompt_tokens": 3, "completion_tokens": len(pieces), "total_tokens": 3}
    chunks.append(chunk({}, "stop", usage=usage, **extra))
    return sse(chunks)


def splits(raw: bytes, how: str) -> list[bytes]:
    if how == "whole":
        return [raw]
    if how == "bytes":
        return [raw[i : i + 1] for i in range(len(raw))]
    rng = random.Random(int(how.removeprefix("random")))
    cuts = sorted(rng.sample(range(1, len(raw)), 12))
    return [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]


@pytest.fixture
def mock() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE, assert_all_called=False) as router:
        yield router


HOW = ["whole", "bytes", "random1", "random2", "random3"]


@pytest.mark.anyio
@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("server", ["sglang", "tgi"])
async def test_a_regex_stream_in_any_split(mock: respx.MockRouter, server: str, how: str) -> None:
    raw = text_stream(["555", "-01", "23"], server)
    route = mock.post("/chat/completions").mock(
        return_value=httpx.Response(200, headers=SSE, stream=Body(splits(raw, how)))
    )
    pattern = Regex(r"\d{3}-\d{4}")
    async with (
        Client(base_url=BASE, model="m", server=server) as c,  # type: ignore[arg-type]
        c.stream(messages=MESSAGES, schema=pattern) as s,
    ):
        texts = [e.text async for e in s if isinstance(e, TextDelta)]
        assert await s.result() == "555-0123"
    assert "".join(texts) == "555-0123"
    sent = json.loads(route.calls.last.request.content)
    if server == "sglang":
        assert sent["regex"] == "[0-9]{3}-[0-9]{4}"
    else:
        assert sent["response_format"] == {"type": "regex", "value": "[0-9]{3}-[0-9]{4}"}


@pytest.mark.anyio
@pytest.mark.parametrize("server", ["sglang", "tgi"])
async def test_the_first_text_arrives_before_the_last_byte(
    mock: respx.MockRouter, server: str
) -> None:
    raw = text_stream(["555", "-01", "23"], server)
    body = Body(splits(raw, "bytes"))
    mock.post("/chat/completions").mock(return_value=httpx.Response(200, headers=SSE, stream=body))
    async with (
        Client(base_url=BASE, model="m", server=server) as c,  # type: ignore[arg-type]
        c.stream(messages=MESSAGES, schema=Regex(r"\d{3}-\d{4}")) as s,
    ):
        async for event in s:
            if isinstance(event, TextDelta):
                first = body.pulled
                break
        await s.result()
    assert first < len(raw) // 2  # the first piece's chunk, not the end of the body


@pytest.mark.anyio
async def test_tgis_json_stream_gives_the_first_field_before_the_last_byte(
    mock: respx.MockRouter,
) -> None:
    doc = '{"city": "Oslo", "temperature_c": 4.5}'
    raw = text_stream([doc[i : i + 5] for i in range(0, len(doc), 5)], "tgi")
    body = Body(splits(raw, "bytes"))
    route = mock.post("/chat/completions").mock(
        return_value=httpx.Response(200, headers=SSE, stream=body)
    )
    at: dict[tuple[Any, ...], int] = {}
    async with (
        Client(base_url=BASE, model="m", server="tgi") as c,
        c.stream(messages=MESSAGES, schema=Weather) as s,
    ):
        async for event in s:
            if isinstance(event, FieldEvent):
                at[event.path] = body.pulled
        assert await s.result() == Weather(city="Oslo", temperature_c=4.5)
    assert at[("city",)] < at[("temperature_c",)] < len(raw)
    assert json.loads(route.calls.last.request.content)["response_format"]["type"] == "json"
