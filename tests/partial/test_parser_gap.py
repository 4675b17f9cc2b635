"""The parser's bound on whitespace between tokens (``max_gap``, ``gap_per_level``): a run
longer than the bound raises :class:`partial.JSONRunawayError` at its first character past it,
however the input is cut; after the root value each run is bounded by ``max_gap`` itself;
whitespace inside strings and before a lenient document is not counted."""

from __future__ import annotations

import json
import random

import pytest

import partial


def feed_cut(parser: partial.Parser, text: str, cuts: list[int]) -> None:
    last = 0
    for cut in [*cuts, len(text)]:
        parser.feed(text[last:cut])
        last = cut


def chunkings(text: str) -> list[list[int]]:
    rng = random.Random(7)
    return [
        [],
        list(range(1, len(text))),
        *(sorted(rng.sample(range(1, len(text)), min(6, len(text) - 1))) for _ in range(5)),
    ]


RUNAWAY = '{"a": [1, 2' + "\n" * 30 + "]}"


@pytest.mark.parametrize("cuts", chunkings(RUNAWAY))
def test_a_run_past_the_bound_raises_at_its_first_character_past_it(cuts: list[int]) -> None:
    parser = partial.Parser(max_gap=10, gap_per_level=4)
    with pytest.raises(partial.JSONRunawayError) as info:
        feed_cut(parser, RUNAWAY, cuts)
    error = info.value
    start = RUNAWAY.index("\n")
    assert (error.start, error.value, error.length) == (start, 18, 19)  # depth 2: 10 + 2 * 4
    assert error.offset == start + 18
    assert (error.path, error.depth, error.limit) == (("a",), 2, "max_gap")
    assert isinstance(error, partial.JSONLimitError)
    with pytest.raises(partial.JSONRunawayError):  # sticky
        parser.feed("]")


@pytest.mark.parametrize("indent", [2, 4, 8, "\t"])
def test_a_pretty_printed_document_fits_the_bound_at_every_depth(indent: int | str) -> None:
    value: object = "leaf"
    for i in range(30):
        value = {"k": [value, i]}
    text = json.dumps(value, indent=indent).replace("\n", "\r\n")
    parser = partial.Parser(max_gap=32, gap_per_level=8)
    for i in range(0, len(text), 3):
        parser.feed(text[i : i + 3])
    assert parser.close() == value


def test_whitespace_inside_strings_and_before_a_lenient_document_is_free() -> None:
    blank = " " * 100
    parser = partial.Parser(max_gap=4, lenient=True)
    parser.feed(f'Here it is:{blank}\n{{"a": "x{blank}y"}}')
    assert parser.close() == {"a": f"x{blank}y"}


AFTER = '{"a": [1, 2]}' + "\r\n" * 20


@pytest.mark.parametrize("lenient", [False, True])
@pytest.mark.parametrize("cuts", chunkings(AFTER))
def test_a_run_after_the_root_value_is_bounded_by_max_gap(cuts: list[int], lenient: bool) -> None:
    parser = partial.Parser(max_gap=10, gap_per_level=4, lenient=lenient)
    with pytest.raises(partial.JSONRunawayError) as info:
        feed_cut(parser, AFTER, cuts)
    error = info.value
    start = AFTER.index("}") + 1
    assert (error.start, error.value, error.length, error.offset) == (start, 10, 11, start + 10)
    assert (error.path, error.depth, error.after_root) == ((), 0, True)
    assert "after the root value" in str(error)
    with pytest.raises(partial.JSONRunawayError):  # sticky
        parser.feed("\n")


TRAILER = '{"a": 1}\n```\n\nI hope this helps!' + " " * 8 + "Bye." + "\n" * 3


@pytest.mark.parametrize("cuts", chunkings(TRAILER))
def test_a_lenient_trailer_is_bounded_run_by_run(cuts: list[int]) -> None:
    fits = partial.Parser(max_gap=8, lenient=True)
    feed_cut(fits, TRAILER, cuts)
    assert fits.close() == {"a": 1}
    tight = partial.Parser(max_gap=7, lenient=True)  # the 8 spaces between the two sentences
    with pytest.raises(partial.JSONRunawayError) as info:
        feed_cut(tight, TRAILER, cuts)
    assert (info.value.start, info.value.after_root) == (TRAILER.index("  "), True)


@pytest.mark.parametrize("cuts", chunkings(AFTER))
def test_a_short_run_after_the_root_and_no_bound_pass(cuts: list[int]) -> None:
    fits = partial.Parser(max_gap=40)
    feed_cut(fits, AFTER, cuts)
    assert fits.close() == {"a": [1, 2]}
    free = partial.Parser()
    feed_cut(free, AFTER + " " * 10_000, cuts)
    assert free.close() == {"a": [1, 2]}


def test_the_key_of_a_gap_after_a_colon_is_its_path() -> None:
    parser = partial.Parser(max_gap=3)
    with pytest.raises(partial.JSONRunawayError) as info:
        parser.feed('{"k":      1}')
    assert info.value.path == ("k",)


def test_no_bound_by_default_and_negative_bounds_are_refused() -> None:
    parser = partial.Parser()
    parser.feed("[" + " " * 10_000 + "]")
    assert parser.close() == []
    with pytest.raises(ValueError, match="must not be negative"):
        partial.Parser(max_gap=-1)
    with pytest.raises(ValueError, match="must not be negative"):
        partial.Parser(gap_per_level=-1)
