"""The tracker's runaway checks (``RunawayLimits``): whitespace between tokens past any layout,
a string's or an array's tail that repeats one unit; the false-alarm corpus at the defaults."""

from __future__ import annotations

import itertools
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
from sdk._trackers._runaway import (
    CHECK_EVERY,
    near,
    near_loop,
    periodic_tail,
    without_numbers,
)
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


# --- near repetition: copies up to numbers and a few characters ---------------------------------

NEAR_ONLY: dict[str, Any] = {"repeats": None}  # the exact check off: what the near check sees


def numbered(i: int) -> str:
    return f"{i}. Baked Bacon with Tomato and Garlic, with Béchamel."


PASTA = '{"title": "Bacon pasta", "steps": [' + ", ".join(
    json.dumps(numbered(i)) for i in range(2, 60)
)


@pytest.mark.parametrize("sizes", CHUNKINGS)
def test_array_items_that_differ_in_a_counter_stop_with_the_newest(sizes: list[int]) -> None:
    # SmolLM2's own loop (greedy, "Write a recipe for bacon pasta."): no two items are equal
    fed, error = fed_until_error(PASTA, sizes)
    assert isinstance(error, RepeatedOutput) and error.cure == "less_repetition"
    assert error.pointer == "/steps" and error.count == 12
    assert error.unit == [numbered(13)]  # the 12th copy, 2. to 13.: the newest item
    item = json.dumps(numbered(13))
    assert error.span >= 512 and error.offset == PASTA.index(item) + len(item) - 1
    assert fed <= error.offset + max(sizes)
    assert "up to numbers and 8 characters" in str(error)


STEPS = '{"title": "Bacon", "steps": ["' + "".join(
    f"Step {i}: Add bacon to the skillet and stir. " for i in range(1, 200)
)


@pytest.mark.parametrize("sizes", CHUNKINGS)
def test_a_string_whose_sentences_differ_in_a_counter_stops(sizes: list[int]) -> None:
    fed, error = fed_until_error(STEPS, sizes)
    assert isinstance(error, RepeatedOutput) and error.pointer == "/steps/0"
    assert error.count >= 12 and error.span >= 512
    assert isinstance(error.unit, str)  # one sentence, from where the tail happened to end
    assert without_numbers(error.unit * 2).count("Step #: Add bacon to the skillet and stir. ") == 1
    assert len(error.unit) < 50 and error.count * len(error.unit) <= error.span + error.count
    # caught within the span, the check's stride and one chunk
    start = STEPS.index("Step 1:")
    assert fed <= start + error.span + len(error.unit) + CHECK_EVERY + max(sizes)
    assert "the string repeats" in str(error) and "up to numbers" in str(error)


PANS = ["skillet", "pan", "wok", "saucepan", "griddle"]


@pytest.mark.parametrize("chunk", [1, 5, 64])
def test_copies_that_differ_in_a_few_characters_are_a_loop(chunk: int) -> None:
    items = [f"Fry the bacon in the {PANS[i % 5]} until it is crisp." for i in range(60)]
    with pytest.raises(RepeatedOutput) as info:
        run(json.dumps({"steps": items}), chunk, **NEAR_ONLY)
    assert info.value.pointer == "/steps" and info.value.count >= 12
    text = "".join(
        f"Then fry the bacon in the {PANS[i % 5]} until it is crisp. " for i in range(60)
    )
    with pytest.raises(RepeatedOutput) as info:
        run(json.dumps({"title": text}), chunk, **NEAR_ONLY)
    assert info.value.pointer == "/title" and info.value.count >= 12


def test_a_pair_of_items_that_repeats_up_to_a_counter_is_a_loop() -> None:
    items = [x for i in range(40) for x in (f"Step {i}", "Add the bacon to the pan and stir it.")]
    with pytest.raises(RepeatedOutput) as info:
        run(json.dumps({"steps": items}), 6, near_repeats=12)
    assert info.value.unit == ["Step 11", "Add the bacon to the pan and stir it."]
    assert info.value.count == 12


def test_near_copies_past_the_allowed_stretch_are_not_a_loop() -> None:
    pans = ["skillet", "saucepan", "Dutch oven", "frying pan", "stockpot"]  # up to 10 apart
    items = [f"Fry the bacon in the {pans[i % 5]} until it is crisp." for i in range(60)]
    doc = json.dumps({"steps": items})
    assert run(doc, 7, near_chars=4, **NEAR_ONLY).close() == {"steps": items}
    with pytest.raises(RepeatedOutput):
        run(doc, 7, near_chars=10, **NEAR_ONLY)


_RNG = random.Random(11)
WORDS = [
    _RNG.choice("fry chop boil stir bake wash peel dice mix whisk".split()) for _ in range(300)
]


@pytest.mark.parametrize(
    "items",
    [
        [f"2024-01-{i % 28 + 1:02d}T10:{i % 60:02d}:00Z" for i in range(200)],  # dates
        [f"https://example.com/docs/page/{i}" for i in range(200)],  # links
        [f"CC-BY-NC-ND-{i}.0" for i in range(200)],  # ids
        [f"Item {i}" for i in range(200)],  # short: under the span at 64 copies
        [f"{i}. {word} the bacon, then wait." for i, word in enumerate(["fry", "chop"] * 4)],
        [numbered(i) for i in range(2, 13)],  # 11 copies: one short of the default
        [f"Step {i}: {w}" for i, w in enumerate(WORDS)],  # the same but for a word
    ],
)
def test_lists_that_differ_in_numbers_but_are_data_pass(items: list[str]) -> None:
    doc = json.dumps({"title": ", ".join(items), "steps": items})
    assert run(doc, 4, **NEAR_ONLY).close() == {"title": ", ".join(items), "steps": items}
    assert run(doc, 4, near_repeats=12).close()["steps"] == items  # and at the defaults


def test_records_that_differ_in_a_number_are_data() -> None:
    points = [{"name": "Weather station reading", "t": i, "celsius": 20.5} for i in range(300)]
    assert run(json.dumps(points), 9, schema={}, **NEAR_ONLY).close() == points


def test_a_drift_is_not_a_loop() -> None:
    # each item differs from the one before in one word, so a chain of near neighbours runs
    # through them all; each copy is compared with the newest, and those differ more and more
    words = "the quick brown fox jumps over the lazy dog near the river bank today".split()
    items = [" ".join(w.upper() if k <= i else w for k, w in enumerate(words)) for i in range(14)]
    assert all(near(a, b, 8) for a, b in itertools.pairwise(items))
    doc = json.dumps({"steps": items})
    assert run(doc, 3, near_repeats=4, near_span=64, **NEAR_ONLY).close() == {"steps": items}


def test_near_is_one_short_stretch_after_the_numbers() -> None:
    base = "Fry the bacon in the skillet until it is crisp."
    assert near(base, base.replace("skillet", "pan"), 8)
    assert near(base, base.replace("skillet", "saucepan"), 8)
    assert not near(base, base.replace("skillet", "frying pan"), 8)
    assert not near(base, base.replace("Fry", "Boil").replace("crisp", "soft"), 8)  # two
    assert not near("Fry the bacon.", "Fry the beans.", 8)  # short: numbers alone
    assert near(without_numbers("Step 9: fry."), without_numbers("Step 10: fry."), 0)
    assert without_numbers("12 eggs, 3.5 cups") == "# eggs, #.# cups"


def test_near_loop_finds_the_copies_and_passes_prose() -> None:
    text = without_numbers("".join(f"Step {i}: stir the sauce well. " for i in range(40)))
    unit, count, length = near_loop(text, 16, 256, 256, 4, 8) or (0, 0, 0)
    # every copy but the first: a copy is cut where the tail's last characters recur
    assert unit == len("Step #: stir the sauce well. ") and count == 39 and length == 39 * unit
    rng = random.Random(5)
    prose = " ".join(
        rng.choice(["the", "cat", "sat", "on", "a", "mat", "by", "it"]) for _ in range(900)
    )
    assert near_loop(prose, 16, 256, 256, 4, 8) is None


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
        {"near_repeats": 1},
        {"near_span": 4},
        {"near_chars": -1},
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
            caught[prompt] = (exc.pointer, exc.unit, round((exc.offset or 0) / len(text), 2))
        except StreamError:
            pass  # cut by the token limit: the check did not judge it a loop
    assert caught == {
        "Write a recipe for a bacon omelette, with ten steps.": ("/ingredients", ["Bacon"], 0.21),
        "List the steps to make a bacon sandwich.": ("/ingredients", ["Bacon"], 0.2),
        # steps that differ by their number ("2. Baked Bacon...", "3. Baked Bacon..."): the
        # near check, at the 12th copy (the recording stops at the token limit)
        "Write a recipe for bacon pasta.": ("/steps", [numbered(13)], 0.54),
    }
