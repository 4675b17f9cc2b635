"""Headers and query given at several levels (client defaults, ``with_options`` copies in
order, the call) reach the wire merged key by key, header names compared case-blind."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import sdk
from sdk._merge import merge_headers, merge_query

pytestmark = pytest.mark.anyio

BASE = "http://llm.test/v1"
DOC = b'data: {"choices": [{"index": 0, "delta": {"content": "{}"}, "finish_reason": "stop"}]}\n\n'


class Recorder:
    """An ``httpx.MockTransport`` handler that keeps every request it answers."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=DOC + b"data: [DONE]\n\n"
        )


def make_client(recorder: Recorder) -> sdk.Client:
    return sdk.Client(
        base_url=BASE,
        api_key="k",
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(recorder)),
        default_headers={"X-Level": "client", "X-Client": "c"},
        default_query={"level": "client", "c": "1"},
    )


async def send(client: sdk.Client, **options: Any) -> None:
    async with client.stream(
        messages=[{"role": "user", "content": "hi"}], schema={"type": "object"}, **options
    ) as s:
        assert await s.result() == {}


async def test_every_level_is_merged_key_by_key_on_the_wire() -> None:
    recorder = Recorder()
    client = make_client(recorder)
    first = client.with_options(
        extra_headers={"x-level": "first", "X-First": "1"}, extra_query={"level": "first", "f": "1"}
    )
    second = first.with_options(
        extra_headers={"X-LEVEL": "second", "X-Second": "2"},
        extra_query={"level": "second", "s": "2"},
    )
    await send(second, extra_headers={"X-Call": "3"}, extra_query={"k": "3"})
    await send(second, extra_headers={"x-Level": "call"}, extra_query={"level": "call"})
    await send(first)
    await send(client)
    by_call, overridden, first_only, plain = recorder.requests

    # The second copy kept the first copy's keys, and the client's.
    assert {k: by_call.headers[k] for k in ("X-Client", "X-First", "X-Second", "X-Call")} == {
        "X-Client": "c",
        "X-First": "1",
        "X-Second": "2",
        "X-Call": "3",
    }
    assert by_call.headers.get_list("x-level") == ["second"]  # one header, the latest level's
    assert dict(by_call.url.params) == {"level": "second", "c": "1", "f": "1", "s": "2", "k": "3"}
    # The call's own key wins over every level, the others stay.
    assert overridden.headers.get_list("x-level") == ["call"]
    assert overridden.headers["X-Second"] == "2"
    assert dict(overridden.url.params) == {"level": "call", "c": "1", "f": "1", "s": "2"}
    # A copy changes neither the client it was made from nor that client's other copies.
    assert first_only.headers.get_list("x-level") == ["first"]
    assert "X-Second" not in first_only.headers
    assert dict(first_only.url.params) == {"level": "first", "c": "1", "f": "1"}
    assert plain.headers.get_list("x-level") == ["client"]
    assert dict(plain.url.params) == {"level": "client", "c": "1"}
    # The backend's own headers are the lowest level: a call may replace them too.
    await send(client, extra_headers={"accept": "application/json"})
    assert recorder.requests[-1].headers.get_list("accept") == ["application/json"]
    await client.aclose()


def test_the_sync_client_merges_the_same_way() -> None:
    recorder = Recorder()
    with sdk.SyncClient(
        base_url=BASE,
        api_key="k",
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(recorder)),
        default_headers={"X-Level": "client"},
    ) as client:
        copy = client.with_options(extra_headers={"X-A": "a"}).with_options(
            extra_headers={"x-level": "second"}
        )
        with copy.stream(
            messages=[{"role": "user", "content": "hi"}],
            schema={"type": "object"},
            extra_headers={"X-Call": "c"},
        ) as s:
            assert s.result() == {}
    sent = recorder.requests[0]
    assert sent.headers.get_list("x-level") == ["second"]
    assert (sent.headers["X-A"], sent.headers["X-Call"]) == ("a", "c")


def test_a_wrong_value_is_refused_at_with_options() -> None:
    client = sdk.Client(base_url=BASE)
    with pytest.raises(TypeError, match="extra_headers"):
        client.with_options(extra_headers={"X-A": 1})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="extra_query"):
        client.with_options(extra_query=["a"])  # type: ignore[arg-type]


def test_merge_rules() -> None:
    assert merge_headers({"X-A": "1", "B": "1"}, None, {"x-a": "2"}, {"C": "3"}) == {
        "B": "1",
        "x-a": "2",
        "C": "3",
    }
    assert merge_query({"a": "1", "A": "1"}, {"a": "2"}) == {"a": "2", "A": "1"}
    assert json.dumps(merge_headers()) == "{}"
