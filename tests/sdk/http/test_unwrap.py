"""A non-object root, wrapped for a strict server, is unwrapped invisibly: the unwrapper under
every chunking, then the whole client over the wire (events, paths, snapshot, result, errors
speak of the caller's schema)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import respx
from pydantic import BaseModel, Field

from sdk._backend import Delta
from sdk._client import Client
from sdk._errors import SchemaViolation
from sdk._events import FieldEvent
from sdk._http._unwrap import DeltaUnwrapper, Unwrapper
from tests.sdk._http_support import Body

BASE = "http://llm.test/v1"
MESSAGES = [{"role": "user", "content": "List two items."}]

INNER = [
    "[1, 2]",
    '"a } string with } braces"',
    "12",
    "-0.5e3",
    "true",
    "null",
    '[{"a": 1}, {"b": [2, {"c": "}"}]}]',
    '{"a": {"b": 1}}',  # a root union of objects: the document itself may be an object
    '""',
]
WRAPPERS = ['{{"value":{}}}', '{{ "value" : {} }}\n', '\n{{\n  "value": {}\n}}  ']


def unwrap_all(pieces: list[str]) -> str:
    u = Unwrapper()
    return "".join(u.feed(p) for p in pieces) + u.end()


@pytest.mark.parametrize("inner", INNER)
@pytest.mark.parametrize("wrapper", WRAPPERS)
def test_unwraps_under_every_two_way_split_and_char_by_char(inner: str, wrapper: str) -> None:
    text = wrapper.format(inner)
    assert unwrap_all([text]) == inner
    assert unwrap_all(list(text)) == inner
    for i in range(len(text) + 1):
        assert unwrap_all([text[:i], text[i:]]) == inner, i


@pytest.mark.parametrize("text", ["[1, 2]", '{"other": 1}', '  "plain"', "{ }"])
def test_output_without_the_wrapper_passes_through(text: str) -> None:
    for i in range(len(text) + 1):
        assert unwrap_all([text[:i], text[i:]]) == text


def test_a_truncated_wrapper_leaves_the_document_so_far() -> None:
    assert unwrap_all(['{"value": [1, 2']) == "[1, 2"
    # Not yet the wrapper, nor anything else: passed on as it came, for the tracker to judge.
    assert unwrap_all(['{"val']) == '{"val'
    assert unwrap_all(['{"value": "a}']) == '"a'  # the tracker will say it was cut short


def test_nothing_is_held_back_but_a_trailing_brace() -> None:
    u = Unwrapper()
    assert u.feed('{"value": [{"a": 1}') == '[{"a": 1'
    assert u.feed(", 2") == "}, 2"
    assert u.feed("]}") == "]"
    assert u.end() == ""


def test_tool_calls_are_unwrapped_each_on_its_own() -> None:
    d = DeltaUnwrapper()
    out: list[Delta] = []
    for delta in [
        Delta('{"value": [1', tool_call=0, tool_name="f"),
        Delta('{"value": "x', tool_call=1, tool_name="g"),
        Delta("]}", tool_call=0),
        Delta('"}', tool_call=1),
        Delta(finish_reason="tool_calls"),
    ]:
        out.extend(d.feed(delta))
    texts: dict[int | None, str] = {}
    for delta in out:
        texts[delta.tool_call] = texts.get(delta.tool_call, "") + delta.text
    assert texts == {0: "[1]", 1: '"x"', None: ""}
    assert out[-1].finish_reason == "tool_calls"
    assert [(x.tool_call, x.tool_name) for x in out if x.tool_name] == [(0, "f"), (1, "g")]


# -- over the wire ------------------------------------------------------------------------------


class Item(BaseModel):
    name: str = Field(max_length=10)
    qty: int


def chunk(content: str | None = None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    payload = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def served(*texts: str) -> httpx.Response:
    parts = [chunk(t) for t in texts] + [chunk(finish="stop"), b"data: [DONE]\n\n"]
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Body(parts))


def pieces(text: str, size: int = 3) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@pytest.mark.anyio
async def test_a_list_root_is_sent_wrapped_and_read_unwrapped() -> None:
    doc = [{"name": "apple", "qty": 2}, {"name": "pear", "qty": 1}]
    wrapped = json.dumps({"value": doc})
    with respx.mock(base_url=BASE) as router:
        route = router.post("/chat/completions").mock(return_value=served(*pieces(wrapped)))
        async with Client(base_url=BASE, api_key="k") as client:
            async with client.stream(messages=MESSAGES, schema=list[Item]) as s:
                events = [ev async for ev in s if isinstance(ev, FieldEvent)]
                result = await s.result()
                snapshot = s.snapshot
    sent = json.loads(route.calls[0].request.content)["response_format"]["json_schema"]
    assert sent["strict"] is True
    assert sent["schema"]["required"] == ["value"]
    assert sent["schema"]["properties"]["value"]["type"] == "array"
    assert result == [Item(name="apple", qty=2), Item(name="pear", qty=1)]
    assert snapshot == doc
    assert [ev.pointer for ev in events] == [
        "/0/name",
        "/0/qty",
        "/0",
        "/1/name",
        "/1/qty",
        "/1",
        "",
    ]
    assert events[-1].value == doc
    assert s.attempts[0].text == json.dumps(doc)


@pytest.mark.anyio
async def test_a_violation_inside_a_wrapped_root_speaks_of_the_callers_paths() -> None:
    bad = json.dumps({"value": [{"name": "a name far too long", "qty": 1}]})
    with respx.mock(base_url=BASE) as router:
        router.post("/chat/completions").mock(return_value=served(*pieces(bad)))
        async with Client(base_url=BASE, api_key="k") as client:
            async with client.stream(messages=MESSAGES, schema=list[Item]) as s:
                with pytest.raises(SchemaViolation) as info:
                    await s.result()
    assert info.value.path == (0, "name")
    assert info.value.keyword == "maxLength"
    # The offset counts in the caller's document, which the attempt's text is.
    text = s.attempts[0].text
    assert info.value.offset is not None and text[: info.value.offset].startswith('[{"name": "')


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("schema", "doc", "expected"),
    [(str, '"hello"', "hello"), (int, "42", 42), (bool, "false", False)],
)
async def test_scalar_roots_round_trip(schema: Any, doc: str, expected: Any) -> None:
    wrapped = '{"value": ' + doc + "}"
    with respx.mock(base_url=BASE) as router:
        router.post("/chat/completions").mock(return_value=served(*pieces(wrapped, 2)))
        async with Client(base_url=BASE, api_key="k") as client:
            async with client.stream(messages=MESSAGES, schema=schema) as s:
                assert await s.result() == expected


@pytest.mark.anyio
async def test_without_strict_the_root_is_sent_as_it_is() -> None:
    doc = json.dumps([{"name": "apple", "qty": 2}])
    with respx.mock(base_url=BASE) as router:
        route = router.post("/chat/completions").mock(return_value=served(*pieces(doc)))
        async with Client(base_url=BASE, api_key="k", strict=False) as client:
            async with client.stream(messages=MESSAGES, schema=list[Item]) as s:
                assert await s.result() == [Item(name="apple", qty=2)]
    sent = json.loads(route.calls[0].request.content)["response_format"]["json_schema"]
    assert sent["strict"] is False
    assert sent["schema"]["type"] == "array"
