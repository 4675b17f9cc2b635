"""Typed access for UIs and callbacks: a nested model's instance on its event, and a typed
partial view of the snapshot."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field, field_validator

from sdk import FieldEvent, stream_structured
from sdk._partial_view import partial_view

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
            views.append(s.partial)  # noqa: PERF401 - read while the stream runs
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
