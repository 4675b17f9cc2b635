"""The segment tracker (structural tags) and the JSON extent scanner, sans-I/O, under every
chunking: the same events (field events with their segment, tag and output offset; the free
text, however it was split), the same result, the same error at the same offset."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from pydantic import BaseModel, Field, field_validator

from sdk import (
    FieldEvent,
    OutputSyntaxError,
    SchemaViolation,
    StreamError,
    StructuralTag,
    Tag,
    TaggedText,
    TextDelta,
    TruncatedError,
    ValidationFailed,
)
from sdk._trackers._extent import JsonExtent
from sdk._trackers._segments import SegmentTracker
from tests.sdk.trackers.test_text import chunkings


class Weather(BaseModel):
    city: str = Field(max_length=12)
    days: int = 1


class Search(BaseModel):
    query: str

    @field_validator("query")
    @classmethod
    def not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a query must not be blank")
        return value


TOOLS = StructuralTag(
    [
        Tag("<function=get_weather>", Weather, "</function>"),
        Tag("<function=search>", Search, "</function>"),
    ],
    triggers=["<function="],
)


def run(
    tag: StructuralTag, pieces: list[str], *, deltas: bool = False
) -> tuple[list[Any], str, TaggedText]:
    """Field events (and segment text deltas), the free text joined, and the result."""
    tracker = SegmentTracker(tag, attempt=3, deltas=deltas)
    events: list[Any] = []
    for piece in pieces:
        events.extend(tracker.feed(piece))
    events.extend(tracker.finish())
    free = "".join(e.text for e in events if isinstance(e, TextDelta) and e.segment is None)
    kept = [e for e in events if isinstance(e, FieldEvent) or e.segment is not None]
    if deltas:  # string deltas inside segments are split as the chunks were: join them
        kept = [e for e in kept if isinstance(e, FieldEvent)]
    return kept, free, tracker.close()


def error_of(tag: StructuralTag, pieces: list[str]) -> StreamError:
    tracker = SegmentTracker(tag)
    with pytest.raises(StreamError) as info:
        for piece in pieces:
            tracker.feed(piece)
        tracker.close()
    return info.value


OUTPUT = (
    'Let me check. <function=get_weather>{"city": "Oslo", "days": 2}</function> and '
    '<function=search> {"query": "a \\"quoted\\" </function> inside"}\n</function> done <fun'
)


def test_segments_are_tracked_against_their_own_tags_under_every_chunking() -> None:
    expected = None
    for pieces in chunkings(OUTPUT, seeds=16):
        events, free, result = run(TOOLS, pieces)
        got = (events, free, result)
        if expected is None:
            expected = got
        assert got == expected
    assert expected is not None
    events, free, result = expected
    assert free == "Let me check.  and  done <fun"
    assert result.free_text == free
    assert result.text == OUTPUT
    assert [(s.index, s.tag, s.value) for s in result.segments] == [
        (0, "Weather", Weather(city="Oslo", days=2)),
        (1, "Search", Search(query='a "quoted" </function> inside')),
    ]
    for seg in result.segments:
        assert OUTPUT[seg.start :].startswith("<function=")
        assert OUTPUT[: seg.end].endswith("</function>")
    roots = [e for e in events if e.path == ()]
    assert [(e.segment, e.tag, e.attempt) for e in roots] == [(0, "Weather", 3), (1, "Search", 3)]
    # Offsets count from the start of the output: each root ends at its closing brace.
    assert [OUTPUT[e.offset] for e in roots] == ["}", "}"]
    city = next(e for e in events if e.path == ("city",))
    assert OUTPUT[city.offset] == '"' and OUTPUT[: city.offset + 1].endswith('"Oslo"')


def test_string_deltas_inside_segments_carry_the_segment() -> None:
    tracker = SegmentTracker(TOOLS, deltas=True)
    events = tracker.feed('<function=search>{"query": "ab')
    assert [(e.path, e.text, e.segment, e.tag) for e in events if isinstance(e, TextDelta)] == [
        (("query",), "ab", 0, "Search")
    ]
    assert tracker.snapshot == [{"query": "ab"}]
    assert tracker.open_paths == [(), ("query",)]


def test_text_that_may_begin_a_trigger_is_held_back_until_it_cannot() -> None:
    tracker = SegmentTracker(TOOLS)
    assert [e.text for e in tracker.feed("a <func")] == ["a "]  # type: ignore[union-attr]
    assert [e.text for e in tracker.feed("k and")] == ["<funck and"]  # type: ignore[union-attr]
    assert [e.text for e in tracker.feed(" <")] == [" "]  # type: ignore[union-attr]
    assert [e.text for e in tracker.finish()] == ["<"]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("tag", "schema", "body"),
    [
        ("<n>", {"type": "integer", "maximum": 99}, "42"),
        ("<n>", {"type": "number"}, "-1.5e3"),
        ("<s>", {"type": "string"}, '"a } ] \\" b"'),
        ("<b>", {"type": "boolean"}, "true"),
        ("<l>", {"type": "array", "items": {"type": "array"}}, '[[1, [2]], [], ["]"]]'),
    ],
)
def test_any_json_value_can_be_a_segment(tag: str, schema: dict[str, Any], body: str) -> None:
    st = StructuralTag([Tag(tag, schema, "</x>")])
    output = f"x {tag}{body}</x> y {tag} {body} </x>"
    for pieces in chunkings(output):
        events, free, result = run(st, pieces)
        assert free == "x  y "
        assert [s.value for s in result.segments] == [json.loads(body)] * 2
        assert [e.value for e in events if e.path == ()] == [json.loads(body)] * 2


@pytest.mark.parametrize(
    ("output", "offset", "match"),
    [
        # The begin goes wrong at "x" (after "<function=" both tags were possible, then "s").
        ('<function=sx{"query": "a"}</function>', 11, "go on with a tag's begin"),
        ('ok <function=foo>{"query": "a"}</function>', 13, "got '<function=f'"),
        # After the JSON, only whitespace and the end.
        ('<function=search>{"query": "a"} </functionx', 42, "must end with '</function>'"),
        ('<function=search>{"query": "a"}x', 31, "must end with"),
    ],
)
def test_a_broken_structure_is_an_output_syntax_error_at_its_first_character(
    output: str, offset: int, match: str
) -> None:
    for pieces in chunkings(output):
        exc = error_of(TOOLS, pieces)
        assert isinstance(exc, OutputSyntaxError), exc
        assert exc.offset == offset, (pieces, str(exc))
        assert match in str(exc)


def test_a_violation_inside_a_segment_names_the_segment_and_counts_from_the_output_start() -> None:
    output = (
        'a <function=search>{"query": "x"}</function> '
        '<function=get_weather>{"city": "Ouagadougou, BF"'
    )
    bad = output.index("Ouagadougou") + 12  # the 13th character breaks maxLength 12
    for pieces in chunkings(output):
        exc = error_of(TOOLS, pieces)
        assert isinstance(exc, SchemaViolation) and not isinstance(exc, ValidationFailed)
        assert (exc.path, exc.keyword, exc.offset) == (("city",), "maxLength", bad)
        assert "in tagged segment 1 ('Weather')" in str(exc)


def test_a_violation_inside_a_segment_starts_where_its_value_does_in_the_output() -> None:
    # Retry(backtrack=True) rewinds to ``start``: it must point at the value, not into the
    # text before the segment.
    output = 'a <function=get_weather>{"city": "Ouagadougou, BF"'
    for pieces in chunkings(output):
        exc = error_of(TOOLS, pieces)
        assert isinstance(exc, SchemaViolation)
        assert exc.start == output.index('"Ouagadougou')


def test_a_segment_is_validated_whole_when_it_ends_not_at_the_end_of_the_output() -> None:
    tracker = SegmentTracker(TOOLS)
    # (The field validator runs when its field is final, before the segment ends.)
    with pytest.raises(SchemaViolation, match="a query must not be blank") as info:
        tracker.feed('<function=search>{"query": "  "}')
    assert "in tagged segment 0 ('Search')" in str(info.value)


def test_a_json_syntax_error_inside_a_segment_is_placed_in_the_output() -> None:
    output = 'hi <function=search>{"query" "x"}</function>'
    exc = error_of(TOOLS, [output])
    assert isinstance(exc, OutputSyntaxError)
    assert exc.offset == output.index('"x"')


def test_at_least_one_means_the_output_starts_with_a_segment() -> None:
    st = StructuralTag(TOOLS.structures, TOOLS.triggers, at_least_one=True)
    exc = error_of(st, ["Sure! <function=search>"])
    assert isinstance(exc, OutputSyntaxError) and exc.offset == 0
    assert "must begin with a tagged segment" in str(exc)
    _, free, result = run(st, ['<function=search>{"query": "q"}</function> then text'])
    assert free == " then text" and len(result.segments) == 1


def test_stop_after_first_means_the_output_ends_with_the_first_segment() -> None:
    st = StructuralTag(TOOLS.structures, TOOLS.triggers, stop_after_first=True)
    output = 'text <function=search>{"query": "q"}</function> more'
    exc = error_of(st, list(output))
    assert isinstance(exc, OutputSyntaxError) and exc.offset == output.index(" more")
    _, free, result = run(st, [output[: output.index(" more")]])
    assert free == "text " and [s.tag for s in result.segments] == ["Search"]


@pytest.mark.parametrize(
    ("output", "where", "open_paths"),
    [
        ("x <function=sea", "inside the begin of a tag", [()]),
        ('<function=search>{"query": "ab', "inside tagged segment 0 ('Search')", [(), ("query",)]),
        ('<function=search>{"query": "ab"} </func', "before the end '</function>'", [()]),
    ],
)
def test_an_output_that_ends_inside_a_segment_is_truncated(
    output: str, where: str, open_paths: list[Any]
) -> None:
    tracker = SegmentTracker(TOOLS)
    tracker.feed(output)
    with pytest.raises(TruncatedError, match=re.escape(where)) as info:
        tracker.finish()
    assert info.value.open_paths == open_paths
    assert info.value.reason == "eof"


def test_under_at_least_one_an_empty_output_is_truncated() -> None:
    st = StructuralTag(TOOLS.structures, TOOLS.triggers, at_least_one=True)
    with pytest.raises(TruncatedError, match="before its first tagged segment"):
        SegmentTracker(st).finish()


def test_free_text_alone_is_a_result_with_no_segments() -> None:
    _, free, result = run(TOOLS, ["no tools needed"])
    assert free == "no tools needed" and result.segments == () and result.free_text == free


@pytest.mark.parametrize(
    ("text", "end"),
    [
        ('{"a": "}"} tail', 10),
        ('  [1, {"b": [2]}]]', 17),
        ('"x\\"y" z', 6),
        ("12</n>", 2),
        ("null,", 4),
        ("-0.5e+3 ", 7),
    ],
)
def test_the_extent_ends_right_after_the_value_whatever_the_chunks(text: str, end: int) -> None:
    for pieces in chunkings(text):
        extent, at, found = JsonExtent(), 0, None
        for piece in pieces:
            stop = extent.scan(piece)
            if stop is not None:
                found = at + stop
                break
            at += len(piece)
        assert found == end, pieces
        assert extent.ended


def test_a_bare_number_at_the_end_of_the_text_is_not_ended_yet() -> None:
    extent = JsonExtent()
    assert extent.scan("  42") is None
    assert extent.scalar and not extent.ended
