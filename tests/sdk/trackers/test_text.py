"""The text tracker (Choice, Regex, Grammar), sans-I/O, under every chunking: the whole text
at once, one character at a time, and random splits; the same result and the same violation at
the same offset whichever way the text arrives."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st

from sdk import Choice, FieldEvent, Grammar, Regex, SchemaViolation, TextDelta, TruncatedError
from sdk._constraints import TextConstraint
from sdk._trackers._text import TextTracker

SENTIMENT = Choice(["positive", "negative", "neutral", "mixed feelings"])
PHONE = Regex(r"\+?[0-9]{1,3}-[0-9]{3}-[0-9]{4}")
SQL = Grammar('root ::= "SELECT " col " FROM t"\ncol ::= "a" | "b"')


def chunkings(text: str, seeds: int = 8) -> Iterator[list[str]]:
    """The text whole, char by char, and ``seeds`` random splits (seeded: reproducible)."""
    yield [text] if text else []
    yield list(text)
    for seed in range(seeds):
        rng = random.Random(seed)
        cuts = (
            sorted(rng.sample(range(1, len(text)), k=min(len(text) - 1, rng.randint(1, 5))))
            if len(text) > 1
            else []
        )
        yield [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def run(
    constraint: TextConstraint, pieces: list[str]
) -> tuple[list[TextDelta], FieldEvent, object]:
    tracker = TextTracker(constraint, attempt=2)
    deltas: list[TextDelta] = []
    for piece in pieces:
        for ev in tracker.feed(piece):
            assert isinstance(ev, TextDelta)
            deltas.append(ev)
    last = tracker.finish()
    assert len(last) == 1 and isinstance(last[0], FieldEvent)
    return deltas, last[0], tracker.close()


def violation(constraint: TextConstraint, pieces: list[str]) -> SchemaViolation:
    tracker = TextTracker(constraint)
    with pytest.raises(SchemaViolation) as info:
        for piece in pieces:
            tracker.feed(piece)
        tracker.finish()
    # Sticky: the same error again.
    with pytest.raises(SchemaViolation) as again:
        tracker.feed("x")
    assert again.value is info.value
    return info.value


@pytest.mark.parametrize(
    ("constraint", "text"),
    [
        (SENTIMENT, "negative"),
        (SENTIMENT, "mixed feelings"),
        (PHONE, "+47-555-0123"),
        (PHONE, "1-555-0123"),
        (SQL, "SELECT b FROM t"),
        (Grammar("start: /.*/"), "anything at all, the client checks nothing"),
    ],
)
def test_a_valid_text_streams_as_deltas_then_one_field_event(
    constraint: TextConstraint, text: str
) -> None:
    for pieces in chunkings(text):
        deltas, final, result = run(constraint, pieces)
        assert [d.text for d in deltas] == [p for p in pieces if p]
        assert all(d.path == () and d.attempt == 2 for d in deltas)
        assert (final.path, final.value, final.offset, final.attempt) == (
            (),
            text,
            len(text) - 1,
            2,
        )
        assert result == text


@pytest.mark.parametrize(
    ("constraint", "text", "bad"),
    [
        # "ne" starts negative and neutral; "neg" only negative; "negt" nothing.
        (SENTIMENT, "negtive", 3),
        (SENTIMENT, "x", 0),
        (SENTIMENT, "positives", 8),  # a whole choice, then more
        (SENTIMENT, "mixed  feelings", 6),
        (PHONE, "+47-5x5-0123", 5),
        (PHONE, "+47-555-01234", 12),  # one digit too many
        (PHONE, "++47", 1),
        (PHONE, "1234-555-0123", 3),  # at most 3 digits before the dash
    ],
)
def test_the_violation_is_at_the_first_character_that_no_continuation_can_save(
    constraint: Choice | Regex, text: str, bad: int
) -> None:
    keyword = "enum" if isinstance(constraint, Choice) else "pattern"
    for pieces in chunkings(text):
        exc = violation(constraint, pieces)
        assert (exc.offset, exc.keyword, exc.path) == (bad, keyword, ())
        assert exc.value == text[: bad + 1]
    # One character earlier nothing is wrong yet.
    tracker = TextTracker(constraint)
    assert tracker.feed(text[:bad]) == ([TextDelta((), text[:bad])] if bad else [])


def test_the_chunk_that_breaks_the_text_returns_no_events_and_keeps_what_passed() -> None:
    tracker = TextTracker(PHONE)
    tracker.feed("+47-")
    with pytest.raises(SchemaViolation):
        tracker.feed("55x")
    assert tracker.snapshot == "+47-55"


@pytest.mark.parametrize(
    ("constraint", "text"),
    [(SENTIMENT, ""), (SENTIMENT, "neu"), (PHONE, "+47-555-01"), (PHONE, "")],
)
def test_a_text_that_could_still_have_become_valid_is_truncated(
    constraint: TextConstraint, text: str
) -> None:
    tracker = TextTracker(constraint)
    tracker.feed(text)
    with pytest.raises(TruncatedError) as info:
        tracker.finish()
    assert info.value.reason == "eof"
    assert info.value.snapshot == (text or None)
    assert info.value.open_paths == [()]


def test_a_grammar_accepts_an_empty_output_the_server_allowed() -> None:
    tracker = TextTracker(Grammar('root ::= "" | "a"'))
    assert tracker.finish()[0].value == ""
    assert tracker.close() == ""


def test_forced_characters_are_counted() -> None:
    tracker = TextTracker(SENTIMENT)
    tracker.feed("neg")
    tracker.feed("ative", forced=True)
    assert tracker.finish()[0].forced == 5


def test_feed_after_finish_is_misuse_and_finish_twice_is_nothing() -> None:
    tracker = TextTracker(SENTIMENT)
    tracker.feed("neutral")
    assert tracker.finish()
    assert tracker.finish() == []
    with pytest.raises(RuntimeError, match="after finish"):
        tracker.feed("x")


@given(st.sampled_from(SENTIMENT.choices), st.data())
def test_any_choice_under_any_chunking(choice: str, data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(choice) - 1)))))
    pieces = [choice[a:b] for a, b in zip([0, *cuts], [*cuts, len(choice)], strict=True)]
    assert run(SENTIMENT, pieces)[2] == choice


@given(st.text(alphabet="0123456789-+x", max_size=16), st.data())
def test_a_regex_is_checked_as_the_regex_package_would_check_the_whole_text(
    text: str, data: st.DataObject
) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(text) - 1))))) if text else []
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    pattern = regex.compile(PHONE.pattern)  # the same meaning in Python as in ECMA-262
    tracker = TextTracker(PHONE)
    try:
        for piece in pieces:
            tracker.feed(piece)
        result = tracker.close()
    except SchemaViolation as exc:
        assert exc.offset is not None
        # No continuation of the text up to the offending character can match; before it, one can.
        assert pattern.fullmatch(text[: exc.offset + 1], partial=True) is None
        assert pattern.fullmatch(text[: exc.offset], partial=True) is not None
    except TruncatedError:
        assert pattern.fullmatch(text) is None
        assert pattern.fullmatch(text, partial=True) is not None
    else:
        assert result == text and pattern.fullmatch(text) is not None
