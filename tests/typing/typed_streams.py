"""Checked by mypy (tests/test_typing.py), never run: what a user's type checker sees."""

from __future__ import annotations

from typing import Any, assert_type

from pydantic import BaseModel, TypeAdapter

from sdk import (
    AttemptFailed,
    Backtracked,
    BatchResult,
    Choice,
    Client,
    Event,
    FieldEvent,
    FieldPath,
    Partial,
    SchemaViolation,
    Stream,
    SyncClient,
    SyncStream,
    TextDelta,
    field_path,
    stream_structured,
)
from sdk._backend import Chunk


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
            assert_type(event, Event)
            if event.type == "field":  # the discriminator narrows, as openai's events' type
                assert_type(event, FieldEvent)
                assert_type(event.pointer, str)
                assert_type(event.value, Any)
                assert_type(event.path, tuple[str | int, ...])
            elif event.type == "text_delta":
                assert_type(event, TextDelta)
                assert_type(event.text, str)
            match event:
                case AttemptFailed():
                    assert_type(event.error, BaseException)
                case Backtracked():
                    assert_type(event.error, SchemaViolation)
                    assert_type(event.text, str)
                case _:
                    pass
            print(event.pointer)  # type: ignore[union-attr]  # not every event has a path
    async with client.stream(messages=messages, schema=Item) as only:
        async for field in only.fields():
            assert_type(field, FieldEvent)
            assert_type(field.pointer, str)
    async with client.stream(messages=messages, schema=list[Item]) as many:
        assert_type(await many.result(), list[Item])
    async with client.stream(messages=messages, schema=TypeAdapter(int)) as n:
        assert_type(await n.result(), int)
    async with client.stream(messages=messages, schema={"type": "object"}) as d:
        assert_type(await d.result(), Any)


def sync_streams(client: SyncClient) -> None:
    messages = [{"role": "user", "content": "hi"}]
    with client.stream(messages=messages, schema=Item) as s:
        for event in s:
            assert_type(event, Event)
            if event.type == "field":
                assert_type(event.value, Any)
        assert_type(s.partial, Partial[Item])
        assert_type(s.partial.get(lambda p: p.name), str | None)
        assert_type(s.partial.value, Item | None)
    with client.stream(messages=messages, schema=Item) as f:
        for field in f.fields():
            assert_type(field, FieldEvent)
    # The overloads are Client.stream's, derived (not written again): each schema kind's type.
    assert_type(client.stream(messages=messages, schema=Item), SyncStream[Item])
    assert_type(client.stream(messages=messages, schema=list[Item]), SyncStream[list[Item]])
    assert_type(client.stream(messages=messages, schema=TypeAdapter(int)), SyncStream[int])
    assert_type(client.stream(messages=messages, schema=Choice(["a", "b"])), SyncStream[str])
    assert_type(client.stream(messages=messages, schema={"type": "object"}), SyncStream[Any])
    with client.stream(messages=messages, schema=list[Item]) as many:
        assert_type(many.result(), list[Item])
    with client.batch([{"id": 1, "prompt": "hi"}], schema=Item) as results:
        for done in results:
            assert_type(done, BatchResult[Item])
            assert_type(done.value, Item | None)
    assert_type(client.with_options(max_retries=1), SyncClient)
    assert_type(SyncClient.from_backend(client.backend), SyncClient)
    client.with_options(max_retries="1")  # type: ignore[arg-type]
    client.stream(messages=messages, schema=Item, max_tokens="10")  # type: ignore[call-overload]


async def plain_streams(source: Any) -> None:
    async with stream_structured(source, schema=Item) as s:
        assert_type(await s.result(), Item)


def wrong_options(client: Client, chunk: Chunk) -> None:
    messages = [{"role": "user", "content": "hi"}]
    client.stream(messages=messages, schema=Item, max_tokens="10")  # type: ignore[call-overload]
    client.stream(messages=messages, schema=Item, stop_sequences=["x"])  # type: ignore[call-overload]


class Address(BaseModel):
    city: str


class Person(BaseModel):
    name: str
    address: Address
    tags: list[str]


async def typed_partials(client: Client) -> None:
    messages = [{"role": "user", "content": "hi"}]
    async with client.stream(messages=messages, schema=Person) as s:
        partial = s.partial
        assert_type(partial, Partial[Person])
        assert_type(partial.get(lambda p: p.address.city), str | None)
        assert_type(partial.get(lambda p: p.address), Address | None)
        assert_type(partial.get(lambda p: p.tags[0]), str | None)
        assert_type(partial.has(lambda p: p.name), bool)
        assert_type(partial.view, Any)
        name = partial.get(lambda p: p.name)
        if name is not None:
            assert_type(name.upper(), str)
        # What crashed at runtime with `Person | None` is refused now: the field may be None.
        partial.get(lambda p: p.name).upper()  # type: ignore[union-attr]
        partial.get(lambda p: p.nmae)  # type: ignore[attr-defined]
    city = field_path(Person, lambda p: p.address.city)
    assert_type(city, FieldPath[str])
    assert_type(city.pointer, str)
    assert_type(field_path(Person, lambda p: p.tags), FieldPath[list[str]])

    def on_city(event: FieldEvent) -> None:
        assert_type(city.value(event), str)

    field_path(Person, lambda p: p.adress)  # type: ignore[attr-defined]
