"""Constrained decoding with the real model: every finished output parses and validates."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

from sdk._errors import BackendError
from sdk._local import LocalBackend
from tests.sdk.local._local_support import (
    CASES,
    ENUM,
    NESTED,
    PERSON,
    collect,
    drafts_expected,
    greedy_case,
    request_for,
    text_of,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("crowd")]


@pytest.mark.parametrize("case", list(CASES))
def test_greedy_output_parses_and_validates(local_backend: LocalBackend, case: str) -> None:
    deltas = greedy_case(local_backend, case)
    assert deltas[-1].finish_reason == "stop", text_of(deltas)
    jsonschema.validate(json.loads(text_of(deltas)), CASES[case][0])


@pytest.mark.parametrize("seed", [1, 2])
def test_sampled_output_parses_and_validates(local_backend: LocalBackend, seed: int) -> None:
    request = request_for("Describe a book as JSON.", NESTED, temperature=1.0, top_p=0.9, seed=seed)
    deltas = collect(local_backend, request)
    assert deltas[-1].finish_reason == "stop", text_of(deltas)
    jsonschema.validate(json.loads(text_of(deltas)), NESTED)


def test_seeded_sampling_is_reproducible(local_backend: LocalBackend) -> None:
    request = request_for("Describe a book.", NESTED, temperature=1.2, seed=7, max_tokens=12)
    assert text_of(collect(local_backend, request)) == text_of(collect(local_backend, request))


def test_last_delta_carries_finish_and_usage(local_backend: LocalBackend) -> None:
    deltas = collect(local_backend, request_for("How do you feel?", ENUM))
    *body, last = deltas
    assert last.text == "" and last.finish_reason == "stop"
    assert all(d.finish_reason is None and d.usage is None for d in body)
    assert last.usage is not None
    assert last.usage.prompt_tokens > 0
    assert last.usage.completion_tokens >= len(body) > 0
    assert local_backend.last_stats is not None
    assert last.usage.forced_tokens == local_backend.last_stats.forced_tokens
    assert (last.usage.forced_tokens > 0) == drafts_expected(local_backend)


def test_max_tokens_ends_with_length(local_backend: LocalBackend) -> None:
    deltas = collect(local_backend, request_for("Invent a person.", PERSON, max_tokens=4))
    assert deltas[-1].finish_reason == "length"
    assert deltas[-1].usage is not None and deltas[-1].usage.completion_tokens == 4
    with pytest.raises(json.JSONDecodeError):
        json.loads(text_of(deltas))


def test_tool_mode_tags_the_deltas(local_backend: LocalBackend) -> None:
    deltas = collect(local_backend, request_for("How do you feel?", ENUM, mode="tool"))
    body = [d for d in deltas if d.text]
    assert body[0].tool_name == "response"
    assert all(d.tool_call == 0 for d in body)
    assert all(d.tool_name is None for d in body[1:])
    jsonschema.validate(json.loads(text_of(deltas)), ENUM)


def test_unconstrained_mode_writes_prose(local_backend: LocalBackend) -> None:
    deltas = collect(local_backend, request_for("Say hello.", {}, mode="none", max_tokens=8))
    assert deltas[-1].finish_reason in ("stop", "length")
    assert text_of(deltas).strip()
    assert not any(d.forced for d in deltas)
    assert deltas[-1].usage is not None and deltas[-1].usage.forced_tokens == 0


@pytest.mark.timeout(60)  # a regression is a hang (two minutes in xgrammar), not a slow figure
def test_a_pattern_with_a_huge_count_compiles_at_once_and_still_holds(
    local_backend: LocalBackend,
) -> None:
    # xgrammar's compile of a pattern grows with the square of each count (this one took 114 s
    # alone); the torch runtime gives it the count loosened, llguidance reads it lazily.
    schema = {
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": "^[a-z]{1,32768}$"}},
        "required": ["code"],
        "additionalProperties": False,
    }
    text = text_of(
        collect(local_backend, request_for("Invent a code word.", schema, max_tokens=16))
    )
    value = re.search(r'"code":\s*"([^"]*)', text)
    assert value is not None, text
    assert re.fullmatch("[a-z]*", value.group(1)), text  # the mask still allows letters only


def test_a_prompt_that_fills_the_context_is_a_clear_error(local_backend: LocalBackend) -> None:
    # It gave an empty output that ended with "length", read as a truncated answer.
    context = local_backend.load().context_length
    assert context is not None
    words = " ".join(["word"] * (context + 100))
    with pytest.raises(BackendError, match=rf"tokens and the model's context holds {context}"):
        collect(local_backend, request_for(words, PERSON))
