"""Retry(backtrack=True) on the real model: a violation rewinds the local generation to where the
offending value began and the same generation goes on; what came before is kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field, model_validator

from sdk import (
    AttemptFailed,
    AttemptStarted,
    Backtracked,
    Client,
    FieldEvent,
    Retry,
    SchemaViolation,
    StreamEnded,
)
from sdk._backend import GenerationRequest, Message
from sdk._cli._schema_source import load_schema
from sdk._local import LocalBackend
from sdk._local._model import Runtime
from tests.sdk.local._local_support import alone_first, as_alone, beside_others

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


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
            # The prompts that make the model break these schemas, as they were written: shown
            # the schema, the model writes five different fruits at once (no repair to test).
            show_schema=False,
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


def _demo_person() -> Any:
    """The demo's schema (examples/models.py: Person, with unique hobbies), loaded as the
    command loads it."""
    return load_schema(f"{EXAMPLES / 'models.py'}:Person")


DEMO_PROMPT = (
    "Invent a fictional person who loves reading: name, age, occupation, mood and three hobbies."
)


@pytest.mark.parametrize(
    ("prompt", "schema"),
    [("List five fruits that are red.", Tags), (DEMO_PROMPT, None)],
    ids=["fruits", "demo"],
)
@pytest.mark.usefixtures("crowd")  # rewinds, bans, events and usage in a full batch too
async def test_each_repair_is_one_backtracked_event(
    local_backend: LocalBackend, prompt: str, schema: Any
) -> None:
    async def alone() -> str:
        return str((await _repaired(local_backend, prompt, schema))[1].attempts[-1].text)

    await alone_first(local_backend, f"repaired {prompt}", alone)
    async with beside_others(local_backend):
        events, s, backend = await _repaired(local_backend, prompt, schema)
    # Greedy: the same repairs and the same final text as alone.
    as_alone(local_backend, f"repaired {prompt}", s.attempts[-1].text)
    back = [ev for ev in events if isinstance(ev, Backtracked)]
    assert back, "the model wrote no repeated item this time"
    assert backend.requests == 1  # every repair was in place
    assert len(back) == len(s.attempts) - 1  # one event per rewind
    fields = [ev for ev in events if isinstance(ev, FieldEvent)]
    for b in back:
        i = events.index(b)
        assert isinstance(events[i - 1], AttemptFailed) and events[i - 1].attempt == b.attempt
        assert isinstance(events[i + 1], AttemptStarted) and events[i + 1].attempt == b.attempt + 1
        failed = s.attempts[b.attempt - 1]
        assert b.error is failed.error and b.path == b.error.path
        start = b.error.start
        assert start is not None and b.offset <= start
        # The rejected text is what the model wrote there; the rewrite kept what came before.
        assert failed.text[start:].startswith(b.text)
        if b.error.keyword == "uniqueItems":
            assert json.loads(b.text) == b.error.value
        assert s.attempts[b.attempt].text[: b.offset] == failed.text[: b.offset]
        # Neither the rejected value nor a container holding it had a field event.
        assert all(ev.offset < start for ev in fields if ev.attempt == b.attempt)
    # Exactly once: each place in the document has one event.
    assert len({ev.path for ev in fields}) == len(fields)
    # Usage: every token decoded, counted once, split between the attempts.
    ended = events[-1]
    assert isinstance(ended, StreamEnded) and ended.usage == s.usage
    assert not s.usage.estimated
    assert s.usage.completion_tokens == sum(a.usage.completion_tokens for a in s.attempts)
    assert backend.last_stats is not None
    assert s.usage.completion_tokens == backend.last_stats.completion_tokens


async def _repaired(
    local_backend: LocalBackend, prompt: str, schema: Any
) -> tuple[list[Any], Any, Counting]:
    """The stream of ``prompt`` under ``schema`` repaired in place (``Retry(backtrack=True)``):
    its events, the stream and the backend that served it."""
    messages: list[Message] = [{"role": "user", "content": prompt}]
    # The demo's request as the command sends it: the client shows the schema in a system
    # message of its own (show_schema=None on the local engine); the fruits as they were
    # written, with no system message.
    show = None if schema is None else False
    if schema is None:
        schema = _demo_person()
    backend = Counting(local_backend.runtime)
    async with Client.from_backend(backend, max_retries=0) as client:
        async with client.stream(
            messages=messages,
            schema=schema,
            retry=Retry(max_attempts=6, backtrack=True),
            progress=True,
            max_tokens=160,
            temperature=0,
            show_schema=show,
        ) as s:
            events = [ev async for ev in s]
            await s.result()
    return events, s, backend
