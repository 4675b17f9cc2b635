"""Rewinding a generation on the real model: the KV cache and the grammar matcher go back to a
token boundary, what came before stays, the choice that was written there is ruled out."""

from __future__ import annotations

import json
from itertools import accumulate
from typing import Any

import jsonschema
import pytest

from sdk._local._bans import RewindExhausted
from sdk._local._decode import DecodeStats, Generation
from sdk._local._engine import Engine
from tests.sdk.local._local_support import ENUM, TAGS4, request_for, value_start

pytestmark = pytest.mark.slow

PROMPT = "List four tags for a blog post about cooking."


def start(engine: Engine, schema: dict[str, Any], prompt: str, **options: Any) -> Generation:
    jump_forward = options.pop("jump_forward", True)
    request = request_for(prompt, schema, max_tokens=64, **options)
    return engine.start(
        request, jump_forward=jump_forward, default_max_tokens=64, stats=DecodeStats()
    )


def run(generation: Generation) -> list[str]:
    """Step to the end; the text each new token completed."""
    pieces = [p.text for batch in generation for p in batch.pieces if p.token_id >= 0]
    assert generation.finish_reason == "stop", generation.text
    return pieces


def test_a_rewind_keeps_the_text_before_and_rules_out_the_value(engine: Engine) -> None:
    generation = start(engine, TAGS4, PROMPT)
    first_pieces = run(generation)
    first = generation.text
    ends = list(accumulate(len(p) for p in first_pieces))
    at = value_start(first, ("tags", 1))
    rewound = engine.rewind(generation, at)

    # Back to the last token boundary at or before the offset: nothing of the value survives.
    assert rewound.requested == at
    assert rewound.offset <= at
    assert rewound.offset == 0 or rewound.offset in ends
    assert not [end for end in ends if rewound.offset < end <= at]
    assert rewound.dropped_tokens == sum(1 for end in ends if end > rewound.offset)
    assert generation.text == first[: rewound.offset]
    # What is banned is what was written there, past the forced opening quote: the value's first
    # sampled token is in it.
    assert rewound.banned is not None
    assert first[rewound.offset :].startswith(rewound.banned)
    assert len(rewound.banned) > at - rewound.offset + 1

    second_pieces = run(generation)
    second = generation.text
    assert second[: rewound.offset] == first[: rewound.offset]
    assert not second[rewound.offset :].startswith(rewound.banned)
    value = json.loads(second)
    jsonschema.validate(value, TAGS4)
    assert value["tags"][0] == json.loads(first)["tags"][0]
    stats = generation.stats
    assert stats.rewinds == 1
    assert stats.rewound_tokens == rewound.dropped_tokens
    # Usage counts every token decoded, the dropped ones included.
    kept = len(first_pieces) - rewound.dropped_tokens
    assert stats.completion_tokens == len(first_pieces) + len(second_pieces)
    assert len(generation.output) == kept + len(second_pieces)


def test_rewinding_one_place_again_adds_to_its_bans(engine: Engine) -> None:
    generation = start(engine, TAGS4, PROMPT)
    run(generation)
    texts = [generation.text]
    bans: list[tuple[int, str]] = []
    for _ in range(3):
        rewound = engine.rewind(generation, value_start(generation.text, ("tags", 1)))
        assert rewound.banned is not None
        bans.append((rewound.offset, rewound.banned))
        run(generation)
        texts.append(generation.text)
        jsonschema.validate(json.loads(generation.text), TAGS4)
    # Each rewind went back to the same place and ruled out one more continuation there.
    assert len({offset for offset, _ in bans}) == 1
    offset = bans[0][0]
    assert len({banned for _, banned in bans}) == 3
    for text in texts[1:]:
        assert text[:offset] == texts[0][:offset]
    for i, text in enumerate(texts[1:], 1):
        assert not any(text[offset:].startswith(banned) for _, banned in bans[:i])


@pytest.mark.parametrize("sampling", [{}, {"temperature": 0.9, "top_p": 0.95, "seed": 3}])
def test_jump_forward_writes_the_same_text_after_a_rewind(
    engine: Engine, sampling: dict[str, Any]
) -> None:
    outcomes = []
    for jump_forward in (True, False):
        generation = start(engine, TAGS4, PROMPT, jump_forward=jump_forward, **sampling)
        run(generation)
        first = generation.text
        rewound = engine.rewind(generation, value_start(first, ("tags", 1)))
        run(generation)
        outcomes.append((first, rewound, generation.text, generation.stats.forced_tokens))
    (first_on, rewound_on, text_on, forced_on), (first_off, rewound_off, text_off, forced_off) = (
        outcomes
    )
    assert first_on == first_off
    assert rewound_on == rewound_off
    assert text_on == text_off
    assert forced_on > 0 and forced_off == 0


def test_an_enum_runs_out_of_values_to_try(engine: Engine) -> None:
    generation = start(engine, ENUM, "How do you feel today?")
    run(generation)
    seen = [json.loads(generation.text)["mood"]]
    at = value_start(generation.text, ("mood",))
    with pytest.raises(RewindExhausted) as caught:
        for _ in range(len(ENUM["properties"]["mood"]["enum"])):
            engine.rewind(generation, at)
            run(generation)
            seen.append(json.loads(generation.text)["mood"])
    # Every value was tried once (a value the model starts with one token and goes on with
    # another is caught as early as its first token), then nothing was left.
    assert sorted(seen) == sorted(ENUM["properties"]["mood"]["enum"])
    assert caught.value.retryable
    assert at <= caught.value.offset <= len(generation.text)
    # The failed step left the generation needing a rewind, and a rewind makes it whole again.
    with pytest.raises(Exception, match="rewind it"):
        generation.step()
    engine.rewind(generation, 0, ban=False)
    run(generation)
    jsonschema.validate(json.loads(generation.text), ENUM)


NOTE = {
    "type": "object",
    "properties": {"kind": {"const": "note"}, "text": {"type": "string", "maxLength": 24}},
    "required": ["kind", "text"],
    "additionalProperties": False,
}


def test_a_value_the_grammar_forces_has_nothing_to_rule_out(engine: Engine) -> None:
    generation = start(engine, NOTE, "Write a short note about the weather.")
    run(generation)
    first = generation.text
    rewound = engine.rewind(generation, value_start(first, ("kind",)))
    assert rewound.banned is None  # "note" was forced: no choice to ban
    run(generation)
    assert generation.text == first  # greedy writes the same again


def test_a_rewind_outside_the_output_is_refused(engine: Engine) -> None:
    generation = start(engine, TAGS4, PROMPT)
    run(generation)
    text = generation.text
    for offset in (-1, len(text) + 1):
        with pytest.raises(ValueError, match="cannot rewind to character"):
            engine.rewind(generation, offset)
    assert generation.text == text
    generation.close()
    with pytest.raises(Exception, match="closed"):
        engine.rewind(generation, 0)
