"""The tracker's runaway checks (``RunawayLimits``): whitespace between tokens past any layout,
a string's or an array's tail that repeats one unit; the false-alarm corpus at the defaults."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from sdk import (
    FieldTracker,
    RepeatedOutput,
    RunawayLimits,
    RunawayOutput,
    RunawayWhitespace,
    StreamError,
)
from sdk._trackers._runaway import CHECK_EVERY, periodic_tail
from tests.benchmarks.runaway_corpus import false_alarms

RECIPE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "steps": {"type": "array", "items": {"type": "string"}},
    },
}


def run(text: str, chunk: int, schema: Any = RECIPE, **limits: Any) -> FieldTracker:
    """Feed ``text`` in chunks of ``chunk`` characters (0: whole) under ``RunawayLimits(**limits)``,
    or no runaway check at all when no limit is given."""
    tracker = FieldTracker(schema, runaway=RunawayLimits(**limits) if limits else None)
    size = chunk or len(text)
    for i in range(0, len(text), size):
        tracker.feed(text[i : i + size])
    return tracker


def fed_until_error(text: str, sizes: list[int], schema: Any = RECIPE) -> tuple[int, StreamError]:
    """Feed ``text`` cut at ``sizes`` (cycled) under the default limits: how many characters
    had been fed when the tracker raised, and the error."""
    tracker = FieldTracker(schema)
    i = 0
    k = 0
    while i < len(text):
        piece = text[i : i + sizes[k % len(sizes)]]
        k += 1
        try:
            tracker.feed(piece)
        except StreamError as exc:
            return i + len(piece), exc
        i += len(piece)
    raise AssertionError("no error")


CHUNKINGS = [[1], [3], [7, 1, 2], [64]]

# --- whitespace -------------------------------------------------------------------------------


@pytest.mark.parametrize("sizes", CHUNKINGS)
def test_newlines_without_end_stop_within_the_bound_of_their_depth(sizes: list[int]) -> None:
    head = '{"title": "Pasta", "steps": ["Boil water.",'
    fed, error = fed_until_error(head + "\n" * 10_000, sizes)
    assert isinstance(error, RunawayWhitespace) and isinstance(error, RunawayOutput)
    # depth 2: 32 + 2 * 8 characters allowed, the 49th raises
    assert (error.bound, error.length, error.offset) == (48, 49, len(head) + 48)
    assert error.pointer == "/steps" and error.cure == "compact_whitespace"
    assert fed <= len(head) + 48 + max(sizes)  # nothing pulled past the chunk that passed it
    assert "/steps: 49 whitespace characters in a row" in str(error)


def test_spaces_after_a_colon_name_the_key() -> None:
    with pytest.raises(RunawayWhitespace) as info:
        run('{"title":' + " " * 200, 5, whitespace=32)
    assert info.value.pointer == "/title"


@pytest.mark.parametrize("indent", [2, 4, 8, "\t"])
def test_pretty_printed_documents_never_reach_the_default_bound(indent: int | str) -> None:
    value: Any = {"title": "x", "steps": ["a"]}
    for _ in range(40):
        value = {"steps": [json.dumps(value)[:20]], "title": "nested", "more": [value]}
    text = json.dumps(value, indent=indent).replace("\n", "\r\n\r\n")  # CRLF, blank lines
    tracker = FieldTracker({})
    for i in range(0, len(text), 4):
        tracker.feed(text[i : i + 4])
    assert tracker.close() == value


def test_whitespace_inside_a_string_is_no_gap() -> None:
    text = '{"title": "' + " " * 200 + '"}\n'
    assert run(text, 3, whitespace=32).close() == {"title": " " * 200}


@pytest.mark.parametrize("sizes", CHUNKINGS)
def test_blanks_after_the_finished_document_stop_at_the_root_bound(sizes: list[int]) -> None:
    doc = '{"title": "Pasta", "steps": ["Boil water."]}'
    fed, error = fed_until_error(doc + " \n" * 5_000, sizes)
    assert isinstance(error, RunawayWhitespace) and error.cure == "compact_whitespace"
    assert (error.bound, error.length, error.offset, error.pointer) == (32, 33, len(doc) + 32, "")
    assert fed <= len(doc) + 32 + max(sizes)
    assert "33 whitespace characters in a row after the finished document" in str(error)
    # a document with a line end or two after it is fine, and no bound is no bound
    assert run(doc + "\r\n" * 16, 3, whitespace=32).close()["title"] == "Pasta"
    assert run(doc + "\n" * 10_000, 64).close()["title"] == "Pasta"


def test_off_when_asked() -> None:
    text = '{"title":' + " " * 1000 + '"x"}'
    assert run(text, 7, whitespace=None).close() == {"title": "x"}
    tracker = FieldTracker(RECIPE, runaway=None)
    tracker.feed(text)
    assert tracker.close() == {"title": "x"}


# --- repetition: strings ------------------------------------------------------------------------

BACON = '{"title": "Bacon pasta", "steps": ["Serve with bacon' + " and bacon" * 400


@pytest.mark.parametrize("sizes", CHUNKINGS)
def test_a_string_that_loops_stops_and_says_what_repeated(sizes: list[int]) -> None:
    fed, error = fed_until_error(BACON, sizes)
    assert isinstance(error, RepeatedOutput)
    assert error.pointer == "/steps/0" and error.cure == "less_repetition"
    assert error.unit in {" and bacon", "bacon and ", " bacon and"}
    assert error.count >= 8 and error.span >= 256
    assert error.count * len(error.unit) <= error.span
    # caught within the span, the check's stride and one chunk: not at the token limit
    assert fed <= BACON.index(" and") + 256 + len(" and bacon") + CHECK_EVERY + max(sizes)
    assert "the string repeats" in str(error)


def test_newlines_inside_a_string_are_a_repetition() -> None:
    with pytest.raises(RepeatedOutput) as info:
        run('{"title": "' + "\\n" * 500, 4, repeats=8)
    assert info.value.unit == "\n"  # the decoded text


@pytest.mark.parametrize(
    "text",
    [
        "ha " * 20,  # short: under the span
        "-" * 200,  # a divider
        "Serve with bacon and bacon.",  # SmolLM2's last step: odd, not a loop
        "Add bacon to the skillet. " * 3,
        "lorem ipsum dolor sit amet, " * 9,  # 9 copies but only 252 characters
    ],
)
def test_short_or_few_repeats_pass(text: str) -> None:
    doc = json.dumps({"title": text, "steps": [text, text]})
    assert run(doc, 4, repeats=8).close() == {"title": text, "steps": [text, text]}


def test_periodic_tail_finds_the_smallest_period_and_the_whole_run() -> None:
    text = "Once upon a time: " + "abcab" * 100
    assert periodic_tail(text, 8, 256, 256) == (5, 500)
    assert periodic_tail("x" * 300, 8, 256, 256) == (1, 300)
    rng = random.Random(3)
    prose = " ".join(rng.choice(["the", "cat", "sat", "on", "a", "mat"]) for _ in range(400))
    assert periodic_tail(prose, 8, 256, 256) is None
    assert periodic_tail("ab" * 100, 8, 256, 256) is None  # shorter than the span


# --- repetition: arrays -------------------------------------------------------------------------


def test_an_array_that_repeats_an_item_stops_with_the_item() -> None:
    text = '{"steps": [' + '"Add bacon to the skillet.", ' * 100
    with pytest.raises(RepeatedOutput) as info:
        run(text, 5, repeats=8)
    error = info.value
    assert error.pointer == "/steps"
    assert error.unit == ["Add bacon to the skillet."] and error.count == 9
    assert error.span >= 256


def test_an_array_that_repeats_two_objects_stops_with_both() -> None:
    pair = '{"step": "Fry the bacon until crisp"}, {"step": "Drain it on paper"}, '
    with pytest.raises(RepeatedOutput) as info:
        run("[" + pair * 50, 3, schema={}, repeats=8)
    assert info.value.unit == [{"step": "Fry the bacon until crisp"}, {"step": "Drain it on paper"}]


def test_numbers_booleans_and_nulls_repeated_are_data() -> None:
    for item in ("0", "1.5", "true", "null"):
        doc = "[" + ", ".join([item] * 2000) + "]"
        assert len(run(doc, 4, schema={}, repeats=8).close()) == 2000


def test_smollm2s_recipe_with_two_equal_steps_passes() -> None:
    # The shape SmolLM2-135M wrote, greedy, on the local engine (issue 39): steps 5 and 6 are
    # the same, the last step repeats a word. Nothing loops: it is an answer.
    recipe = {
        "title": "Bacon pasta",
        "steps": [
            "Cook the pasta.",
            "Chop the bacon.",
            "Heat the skillet.",
            "Whisk the eggs.",
            "Add bacon to the skillet.",
            "Add bacon to the skillet.",
            "Serve with bacon and bacon.",
        ],
    }
    assert run(json.dumps(recipe, indent=2), 3, repeats=8).close() == recipe


# --- options --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"whitespace": -1},
        {"whitespace_per_level": -1},
        {"repeats": 1},
        {"repeat_span": 8},
        {"max_unit": 0},
        {"max_unit_items": 0},
        {"whitespace": True},
    ],
)
def test_bad_limits_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="RunawayLimits"):
        RunawayLimits(**kwargs)


# --- the false-alarm corpus ---------------------------------------------------------------------


def test_no_false_alarm_on_the_corpus_at_the_defaults() -> None:
    seen, alarms = false_alarms(chunk=61)
    assert seen > 15_000
    assert alarms == []


# --- SmolLM2's own loops ------------------------------------------------------------------------

LOOPS = Path(__file__).with_name("smollm2_loops.json")
"""What SmolLM2-135M wrote on the local engine, greedy, 600 tokens, without the check
(``tests/benchmarks/bench_runaway.py --local --max-tokens 600 --record ...``): prompt -> text."""


@pytest.mark.parametrize("chunk", [1, 3, 16])
def test_smollm2s_recorded_loops_stop_in_the_array_they_loop_in(chunk: int) -> None:
    recorded = json.loads(LOOPS.read_text("utf-8"))
    caught = {}
    for prompt, text in recorded.items():
        tracker = FieldTracker(RECIPE)
        try:
            for i in range(0, len(text), chunk):
                tracker.feed(text[i : i + chunk])
            tracker.close()
        except RepeatedOutput as exc:
            caught[prompt] = (exc.pointer, exc.unit, exc.offset < len(text) // 4)
        except StreamError:
            pass  # cut by the token limit: the check did not judge it a loop
    assert caught == {
        "Write a recipe for a bacon omelette, with ten steps.": ("/ingredients", ["Bacon"], True),
        "List the steps to make a bacon sandwich.": ("/ingredients", ["Bacon"], True),
    }
    # Steps that differ by their number ("2. Baked Bacon...", "3. Baked Bacon...") are not
    # copies of one unit: that loop runs to the limit (a TruncatedError), as before.
    assert "Write a recipe for bacon pasta." in recorded
