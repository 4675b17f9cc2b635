"""Typed access for UIs and callbacks: a nested model's instance on its event, and a typed
partial view of the snapshot."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field, field_validator

from sdk import FieldEvent, stream_structured
from sdk._stream._partial_view import partial_view

pytestmark = pytest.mark.anyio


class Item(BaseModel):
    name: str
    qty: int = 1

    @field_validator("name")
    @classmethod
    def shout(cls, v: str) -> str:
        return v.upper()


class Cart(BaseModel):
    owner: str
    items: list[Item] = Field(max_length=5)
    note: str | None = None


async def text(doc: str, size: int = 3) -> AsyncIterator[str]:
    for i in range(0, len(doc), size):
        yield doc[i : i + size]


async def test_a_list_item_callback_receives_the_validated_model() -> None:
    got: list[Item] = []
    doc = json.dumps({"owner": "ann", "items": [{"name": "pen"}, {"name": "ink", "qty": 2}]})
    async with stream_structured(
        text(doc), schema=Cart, on_field={"/items/*": lambda ev: got.append(ev.instance)}
    ) as s:
        cart = await s.result()
    assert got == [Item(name="PEN"), Item(name="INK", qty=2)]  # validators ran
    assert cart.items == got


async def test_scalars_and_the_root_carry_no_instance() -> None:
    doc = json.dumps({"owner": "ann", "items": []})
    async with stream_structured(text(doc), schema=Cart) as s:
        events = [ev async for ev in s if isinstance(ev, FieldEvent)]
    assert {ev.pointer: ev.instance for ev in events} == {"/owner": None, "/items": None, "": None}


async def test_the_partial_view_grows_with_the_stream() -> None:
    doc = json.dumps({"owner": "ann", "items": [{"name": "pen", "qty": 3}], "note": "fragile"})
    views: list[Cart | None] = []
    async with stream_structured(text(doc, 5), schema=Cart, deltas=True) as s:
        async for _ in s:
            views.append(s.partial.view)  # noqa: PERF401 - read while the stream runs
    first, last = views[0], views[-1]
    assert isinstance(first, Cart)
    assert first.items is None and "items" not in first.model_fields_set
    assert isinstance(last, Cart) and last.note == "fragile"
    assert last.items is not None and isinstance(last.items[0], Item)
    # Not validated: the validator has not run on the view (the result has it).
    assert last.items[0].name == "pen"
    assert any(v is not None and v.owner is not None and v.items is None for v in views)


def test_partial_view_of_unions_tuples_and_maps() -> None:
    class Cat(BaseModel):
        kind: Literal["cat"]
        lives: int

    class Dog(BaseModel):
        kind: Literal["dog"]
        good: bool

    Pet = Annotated[Cat | Dog, Field(discriminator="kind")]
    dog = partial_view(Pet, {"kind": "dog"})
    assert isinstance(dog, Dog) and dog.good is None
    pair = partial_view(tuple[Item, int], [{"name": "a"}, 3])
    assert isinstance(pair[0], Item) and pair[1] == 3
    table = partial_view(dict[str, Item], {"x": {"name": "b"}})
    assert isinstance(table["x"], Item) and table["x"].qty is None
    assert partial_view(list[Item], None) is None
    plain: Any = partial_view(dict, {"a": 1})
    assert plain == {"a": 1}


class _Address(BaseModel):
    city: str
    street: str


class _Person(BaseModel):
    name: str
    address: _Address
    tags: list[str] = []
    nick: str | None = Field(default=None, alias="nickName")


async def test_a_partial_gives_only_what_arrived_and_never_a_model_missing_a_field() -> None:
    doc = json.dumps(
        {"name": "Ada", "address": {"city": "London", "street": "Main"}, "tags": ["x"]}
    )
    seen: list[tuple[Any, Any, Any, Any, bool]] = []
    async with stream_structured(text(doc, 3), schema=_Person, deltas=True) as s:
        assert s.partial.get(lambda p: p.name) is None and s.partial.value is None
        async for _ in s:
            partial = s.partial
            seen.append(
                (
                    partial.get(lambda p: p.name),
                    partial.get(lambda p: p.address.city),
                    partial.get(lambda p: p.address),
                    partial.value,
                    partial.has(lambda p: p.address),
                )
            )
        person = await s.result()
    for name, city, address, value, has_address in seen:
        assert name is None or "Ada".startswith(name)  # an open string: a prefix, a str
        if address is not None:  # a model comes back only with every required field
            assert address.city is not None and address.street is not None
        if city is not None:
            assert has_address
        if value is not None:
            assert value.address is not None and value.name is not None
    assert any(city is not None and address is None for _, city, address, _, _ in seen)
    assert seen[-1][3] == person
    assert s.partial.get(lambda p: p.tags[0]) == "x"
    assert s.partial.get(lambda p: p.tags[5]) is None


def test_a_selector_may_only_read_attributes_and_items() -> None:
    from sdk import Partial

    partial: Partial[_Person] = Partial(None, None)
    with pytest.raises(TypeError, match="only read attributes and items"):
        partial.get(lambda p: len(p.tags))  # type: ignore[arg-type,misc]
    with pytest.raises(TypeError, match="only read attributes"):
        partial.get(lambda p: p.name + "!")


def test_field_paths_are_typed_pointers() -> None:
    from sdk import field_path

    city = field_path(_Person, lambda p: p.address.city)
    assert city.pointer == "/address/city"
    assert field_path(_Person, lambda p: p.tags[0]).pointer == "/tags/0"
    assert field_path(_Person, lambda p: p.nick).pointer == "/nickName"  # the key sent
    event = FieldEvent(path=("address", "city"), value="London", offset=0)
    assert city.value(event) == "London"
    with pytest.raises(ValueError, match="'/name', not at this path's '/address/city'"):
        city.value(FieldEvent(path=("name",), value="Ada", offset=0))
    with pytest.raises(AttributeError, match="no field 'adress'"):
        field_path(_Person, lambda p: p.adress.city)  # type: ignore[attr-defined]
