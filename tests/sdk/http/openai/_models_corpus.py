"""Real-world pydantic models, for the strict-schema tests: nested, optional, recursive,
discriminated unions, enums, dates, constrained types, non-object roots."""

from __future__ import annotations

import datetime as dt
import enum
import uuid
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter


class Color(enum.Enum):
    red = "red"
    green = "green"


class Address(BaseModel):
    street: str = Field(description="Street and number")
    city: str
    zip_code: str | None = None
    country: Literal["US", "FR", "DE"] = "US"


class Person(BaseModel):
    """A person, as an extraction pipeline would want it."""

    name: str = Field(min_length=1, max_length=80)
    age: int = Field(ge=0, le=150)
    email: str | None = Field(default=None, description="Work email if known")
    address: Address = Field(description="Where they live")
    previous: list[Address] = Field(default_factory=list, max_length=5)
    favourite: Color | None = None
    tags: list[str] = []


class Node(BaseModel):
    value: int
    children: list[Node] = []
    next: Node | None = Field(default=None, description="The following node")


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int = 9


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool = True


class Pet(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]
    owner: str | None = None


class Invoice(BaseModel):
    id: uuid.UUID
    issued: dt.date
    paid_at: dt.datetime | None = None
    total: Decimal
    lines: list[tuple[str, int]] = Field(max_length=20)
    currency: Annotated[str, Field(pattern=r"^[A-Z]{3}$")] = "EUR"


class Step(BaseModel):
    explanation: str
    output: str


class Reasoning(BaseModel):
    steps: list[Step]
    final_answer: str


class Event(BaseModel):
    title: str
    when: dt.datetime
    attendees: list[Person] = Field(default_factory=list)
    metadata: dict[str, str] = {}  # a map: cannot be made strict


class Item(BaseModel):
    name: str
    qty: int = Field(gt=0)


OBJECT_ROOTS: dict[str, Any] = {
    "address": Address,
    "person": Person,
    "node (recursive)": Node,
    "pet (discriminated union)": Pet,
    "invoice (dates, uuid, decimal, tuple, pattern)": Invoice,
    "reasoning (nested list of models)": Reasoning,
}
"""Object roots that can be made strict."""

MAP_ROOTS: dict[str, Any] = {"event (a dict field)": Event}
"""Object roots with a map somewhere: sent as they are, not strict."""

OTHER_ROOTS: dict[str, Any] = {
    "list[Item]": list[Item],
    "str": str,
    "Literal": Literal["yes", "no"],
    "Cat | Dog": Annotated[Cat | Dog, Field(discriminator="kind")],
    "int": int,
    "list[Node]": list[Node],
}
"""Roots that are not objects: wrapped for a strict server."""


def json_schema(model: Any) -> dict[str, Any]:
    return TypeAdapter(model).json_schema()
