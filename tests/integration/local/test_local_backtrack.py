"""Retry(backtrack=True) on the real model: a violation rewinds the local generation to where the
offending value began and the same generation goes on; what came before is kept."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field, model_validator

from sdk import Client, Retry, SchemaViolation
from sdk._backend import GenerationRequest
from sdk._local import LocalBackend
from sdk._local._model import Runtime

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


class Tags(BaseModel):
    tags: list[Annotated[str, Field(max_length=24)]] = Field(
        min_length=5, max_length=8, json_schema_extra={"uniqueItems": True}
    )


class Character(BaseModel):
    name: Annotated[str, Field(max_length=30)]
    age: int = Field(ge=1, le=120)

    @model_validator(mode="after")
    def not_a_placeholder(self) -> Character:
        if self.name.lower() in {"john", "jane", "john doe", "jane doe"}:
            raise ValueError("a placeholder name")
        return self


class Story(BaseModel):
    hero: Character
    city: Annotated[str, Field(max_length=30)]


class Counting(LocalBackend):
    """The session's weights (shared, on its runtime), counting the generations started."""

    def __init__(self, runtime: Runtime | None) -> None:
        super().__init__(threads=1, runtime=runtime)
        self.requests = 0

    def generate(self, request: GenerationRequest) -> Any:
        self.requests += 1
        return super().generate(request)


@pytest.mark.parametrize(
    ("prompt", "schema", "keyword"),
    [
        ("List five fruits that are red.", Tags, "uniqueItems"),
        # "a person for documentation" gets John Doe from torch, John Smith from llama.cpp.
        (
            "Give a sample JSON of a person called John Doe, for documentation.",
            Story,
            "value_error",
        ),
    ],
)
async def test_a_violation_is_repaired_in_the_same_generation(
    local_backend: LocalBackend, prompt: str, schema: Any, keyword: str
) -> None:
    backend = Counting(local_backend.runtime)
    async with Client.from_backend(backend, max_retries=0) as client:
        async with client.stream(
            messages=[{"role": "user", "content": prompt}],
            schema=schema,
            retry=Retry(max_attempts=6, backtrack=True),
            max_tokens=160,
            temperature=0,
        ) as s:
            result = await s.result()
    assert isinstance(result, schema)
    first = s.attempts[0]
    assert isinstance(first.error, SchemaViolation) and keyword in first.error.keyword
    assert backend.requests == 1  # rewound, never sent again
    start = first.error.start
    assert start is not None
    # What came before the offending value is kept, to the last token boundary.
    kept = s.attempts[-1].text
    assert kept[: start - 8] == first.text[: start - 8]
    assert not s.usage.estimated  # the engine counts every token, rewound ones included
