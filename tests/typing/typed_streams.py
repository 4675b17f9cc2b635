"""Checked by mypy (tests/test_typing.py), never run: what a user's type checker sees."""

from __future__ import annotations

from typing import Any, assert_type

from pydantic import BaseModel, TypeAdapter

from sdk import Client, FieldEvent, Stream, StreamEvent, stream_structured
from sdk._source import Chunk


class Item(BaseModel):
    name: str


async def chunks() -> Any:
    yield "{}"


async def client_streams(client: Client) -> None:
    messages = [{"role": "user", "content": "hi"}]
    async with client.stream(messages=messages, schema=Item) as s:
        assert_type(s, Stream[Item])
        assert_type(await s.result(), Item)
        assert_type(await s.results(), list[Item])
        async for event in s:
            assert_type(event, StreamEvent)
            if isinstance(event, FieldEvent):
                assert_type(event.path, tuple[str | int, ...])
    async with client.stream(messages=messages, schema=list[Item]) as many:
        assert_type(await many.result(), list[Item])
    async with client.stream(messages=messages, schema=TypeAdapter(int)) as n:
        assert_type(await n.result(), int)
    async with client.stream(messages=messages, schema={"type": "object"}) as d:
        assert_type(await d.result(), Any)


async def plain_streams(source: Any) -> None:
    async with stream_structured(source, schema=Item) as s:
        assert_type(await s.result(), Item)


def wrong_options(client: Client, chunk: Chunk) -> None:
    messages = [{"role": "user", "content": "hi"}]
    client.stream(messages=messages, schema=Item, max_tokens="10")  # type: ignore[call-overload]
    client.stream(messages=messages, schema=Item, stop=["x"])  # type: ignore[call-overload]
