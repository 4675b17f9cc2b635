"""Schemas the examples and the ``fieldstream`` command's demo use.

Small on purpose: short strings, enums and ``max_length`` lists keep a small local model's
answers short and let the grammar force most of the text (keys, quotes, brackets)::

    fieldstream --schema examples/models.py:Person "Describe a fictional person"
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

Name = Annotated[str, Field(min_length=1, max_length=40)]


class Person(BaseModel):
    """A fictional person."""

    # The docstring and the descriptions go to the model with the schema: the descriptions
    # steer a small model away from writing the name again as a job or a hobby. uniqueItems is
    # a check it does trip (it repeats a hobby), which --backtrack repairs in place
    # (examples/demo.sh).
    name: Annotated[Name, Field(description="first and last name")]
    age: int = Field(ge=0, le=120)
    occupation: Annotated[str, Field(max_length=40, description="their job, e.g. nurse")]
    mood: Literal["happy", "calm", "curious", "grumpy"]
    hobbies: list[Annotated[str, Field(max_length=30)]] = Field(
        max_length=3,
        description="what they do for fun, e.g. chess, hiking",
        json_schema_extra={"uniqueItems": True},
    )


Country = Literal[
    "Austria",
    "France",
    "Germany",
    "Greece",
    "Italy",
    "Netherlands",
    "Portugal",
    "Spain",
    "Switzerland",
    "United Kingdom",
]


class City(BaseModel):
    """A city and the country it is in."""

    name: Annotated[str, Field(min_length=1, max_length=20)]
    country: Country


class Trip(BaseModel):
    """A short itinerary: two or three cities to visit, in order."""

    cities: list[City] = Field(min_length=2, max_length=3)


class Review(BaseModel):
    """A short product review, with a free-text summary to show as it streams."""

    product: Annotated[str, Field(max_length=40)]
    rating: int = Field(ge=1, le=5)
    summary: Annotated[str, Field(max_length=160)]
