"""Constraints beyond JSON Schema on the real model: every output of a Choice, Regex, GBNF and
Lark grammar and structural tag is one the constraint allows; jump-forward writes the same text
with it on and off; the JSON of structural-tag segments follows the engine's layout; the
special-token mask holds in free text; a rewind under a Choice rules out what was chosen."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import anyio
import pytest
from pydantic import BaseModel

from sdk import Choice, Grammar, Regex, StructuralTag, Tag
from sdk._backend import Delta
from sdk._local import LocalBackend, LocalGeneration
from sdk._local._constrain import spec_of
from sdk._local._engine import Engine
from tests.sdk.local._local_support import (
    collect,
    constrained,
    drafts_expected,
    special_token_ids,
    text_of,
)

pytestmark = pytest.mark.slow


class Weather(BaseModel):
    city: str


class Search(BaseModel):
    query: str


SENTIMENT = Choice(["positive", "negative", "neutral"])
REVIEW = "Is this review positive, negative or neutral? Review: 'I loved this film, wonderful.'"
PHONE = Regex(r"\+[0-9]{1,3}-[0-9]{3}-[0-9]{4}")
PHONE_PROMPT = "Give a phone number in the format +47-555-0123."
SQL = Grammar('root ::= "SELECT " col " FROM users"\ncol ::= "name" | "email"')
SQL_LARK = Grammar('start: "SELECT " COL " FROM users"\nCOL: "name" | "email"')
SQL_PROMPT = "Write an SQL query that selects the email column of the users table."
TAG = StructuralTag(
    [
        Tag("<function=get_weather>", Weather, "</function>"),
        Tag("<function=search>", Search, "</function>"),
    ],
    ["<function="],
    at_least_one=True,
    stop_after_first=True,
)
TAG_PROMPT = (
    "What's the weather in Paris? Call the function as "
    '<function=get_weather>{"city": ...}</function>.'
)


@pytest.mark.usefixtures("crowd")
def test_a_choice_is_one_of_the_choices(local_backend: LocalBackend) -> None:
    deltas = collect(local_backend, constrained(REVIEW, SENTIMENT, max_tokens=8))
    assert deltas[-1].finish_reason == "stop"
    assert text_of(deltas) in SENTIMENT.choices


@pytest.mark.parametrize(
    ("constraint", "prompt"), [(PHONE, PHONE_PROMPT), (SQL, SQL_PROMPT), (SQL_LARK, SQL_PROMPT)]
)
@pytest.mark.usefixtures("crowd")
def test_regex_and_grammar_outputs_match(
    local_backend: LocalBackend, constraint: Regex | Grammar, prompt: str
) -> None:
    deltas = collect(local_backend, constrained(prompt, constraint, max_tokens=24))
    assert deltas[-1].finish_reason == "stop", text_of(deltas)
    text = text_of(deltas)
    if isinstance(constraint, Regex):
        assert constraint.compiled.fullmatch(text), text
    else:
        assert text in ("SELECT name FROM users", "SELECT email FROM users")
    # The grammar forced the literal parts: jump-forward confirmed them.
    usage = deltas[-1].usage
    assert usage is not None and (usage.forced_tokens > 0) == drafts_expected(local_backend)


@pytest.mark.usefixtures("crowd")
def test_a_structural_tag_segment_follows_its_schema(local_backend: LocalBackend) -> None:
    deltas = collect(local_backend, constrained(TAG_PROMPT, TAG, max_tokens=40))
    assert deltas[-1].finish_reason == "stop"
    text = text_of(deltas)
    begin = next(t for t in TAG.structures if text.startswith(t.begin))  # at_least_one
    assert text.endswith("</function>")  # stop_after_first: the segment is the whole output
    body = text[len(begin.begin) : -len("</function>")]
    model = {"get_weather": Weather, "search": Search}[begin.begin[len("<function=") : -1]]
    model.model_validate_json(body)


@pytest.mark.parametrize(
    ("constraint", "prompt"),
    [(PHONE, PHONE_PROMPT), (TAG, TAG_PROMPT)],
    ids=["regex", "structural-tag"],
)
@pytest.mark.usefixtures("crowd")
def test_jump_forward_writes_the_same_text(
    local_backend: LocalBackend,
    plain_backend: LocalBackend,
    constraint: Regex | StructuralTag,
    prompt: str,
) -> None:
    request = constrained(prompt, constraint, max_tokens=40)
    on, off = collect(local_backend, request), collect(plain_backend, request)
    assert text_of(on) == text_of(off)
    assert on[-1].finish_reason == off[-1].finish_reason == "stop"
    assert on[-1].usage is not None and off[-1].usage is not None
    assert on[-1].usage.completion_tokens == off[-1].usage.completion_tokens
    assert (on[-1].usage.forced_tokens > 0) == drafts_expected(local_backend)
    assert off[-1].usage.forced_tokens == 0


@pytest.mark.usefixtures("crowd")
def test_segments_follow_the_engine_layout(
    layout_backends: Callable[[str], tuple[LocalBackend, LocalBackend]],
) -> None:
    compact, _ = layout_backends("compact")
    spaced, _ = layout_backends("spaced")
    for backend, expected in ((compact, '{"city":"'), (spaced, '{"city": "')):
        text = text_of(collect(backend, constrained(TAG_PROMPT, TAG, max_tokens=40)))
        assert text.startswith("<function=get_weather>" + expected), text
        json.loads(text[len("<function=get_weather>") : -len("</function>")])


def test_free_text_allows_no_special_token(engine: Engine) -> None:
    tag = StructuralTag([Tag("<w>", Weather, "</w>")])  # free text around the segments
    spec = spec_of(constrained("", tag))
    assert spec is not None
    constraint = engine.grammars.constraint_for(spec, engine.loaded.tokenizer)
    assert constraint.accept_text("Some free text ")
    allowed = constraint.allowed()
    assert len(allowed) > 1000
    assert not allowed & special_token_ids(engine)
    assert allowed & engine.stop_ids  # free text may end the output here
    assert constraint.accept_text('<w>{"city": "')
    inside = constraint.allowed()
    assert not inside & (special_token_ids(engine) | engine.stop_ids)


def test_compiled_constraints_are_cached_by_the_constraint(engine: Engine) -> None:
    grammars = engine.grammars
    first = spec_of(constrained("", Regex("[0-9]{3}")))
    other = spec_of(constrained("", Regex("[a-z]{3}")))
    assert first is not None and other is not None
    assert grammars.compile_spec(first) is grammars.compile_spec(first)
    assert grammars.compile_spec(first) is not grammars.compile_spec(other)
    constraint = grammars.constraint_for(other, engine.loaded.tokenizer)
    assert constraint.accept_text("abc") and not constraint.accept_text("1")


def test_a_rewind_under_a_choice_rules_out_the_choice(local_backend: LocalBackend) -> None:
    async def run() -> tuple[str, str, str | None, int]:
        gen = local_backend.generate(constrained(REVIEW, SENTIMENT, max_tokens=8))
        assert isinstance(gen, LocalGeneration)
        first = "".join([d.text async for d in _until_finish(gen)])
        rewound = await gen.rewind(0)
        second = "".join([d.text async for d in _until_finish(gen)])
        await gen.aclose()
        return first, second, rewound.banned, rewound.offset

    first, second, banned, offset = anyio.run(run)
    assert offset == 0 and first in SENTIMENT.choices and second in SENTIMENT.choices
    # The first choice is the first character: the token holding it is banned, so the model
    # writes another choice (the grammar forces the rest of the word once it has begun).
    assert banned is not None and first.startswith(banned) and not second.startswith(banned)
    assert second != first


def test_a_rewind_inside_a_segment_rules_out_the_value(local_backend: LocalBackend) -> None:
    async def run() -> tuple[str, str, str | None, int, int]:
        gen = local_backend.generate(constrained(TAG_PROMPT, TAG, max_tokens=40))
        assert isinstance(gen, LocalGeneration)
        first = "".join([d.text async for d in _until_finish(gen)])
        at = first.index('"', first.index(":"))  # where the city's string begins
        rewound = await gen.rewind(at)
        rest = "".join([d.text async for d in _until_finish(gen)])
        await gen.aclose()
        return first, first[: rewound.offset] + rest, rewound.banned, rewound.offset, at

    first, second, banned, offset, at = anyio.run(run)
    assert offset <= at and banned is not None
    assert first[offset:].startswith(banned) and not second[offset:].startswith(banned)
    # The new city is still a segment of the tag, in its schema.
    begin = "<function=get_weather>"
    assert second.startswith(begin) and second.endswith("</function>")
    city = Weather.model_validate_json(second[len(begin) : -len("</function>")]).city
    assert city != Weather.model_validate_json(first[len(begin) : -len("</function>")]).city


async def _until_finish(gen: LocalGeneration) -> AsyncIterator[Delta]:
    """The deltas up to the finish delta, without asking for more."""
    async for delta in gen:
        yield delta
        if delta.finish_reason is not None:
            return
