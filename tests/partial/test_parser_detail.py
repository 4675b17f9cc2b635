"""``Parser(detail=True)``: a key's opening quote, a key as it grows, and each comma.

The detail events are extra: without them every other event is identical (same values, paths,
offsets, order), and they follow their own contract under every chunking: one ``KeyStart`` at
each key's opening quote, ``KeyDelta``s that add up to the key and come before its ``Key``, one
``Comma`` per separator, with its offset.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import partial
from partial import Comma, Key, KeyDelta, KeyStart

DETAIL = (Comma, KeyDelta, KeyStart)

keys = st.text(st.characters(codec="utf-8"), max_size=6)
values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=20,
)


@st.composite
def chunked(draw: st.DrawFn) -> tuple[str, list[str]]:
    value = draw(values)
    doc = json.dumps(
        value, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 1]))
    )
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(doc) - 1)), max_size=12)))
    bounds = [0, *(c for c in cuts if c < len(doc)), len(doc)]
    return doc, [doc[a:b] for a, b in itertools.pairwise(bounds)]


def events(chunks: list[str], *, detail: bool) -> list[partial.Event]:
    p = partial.Parser(detail=detail)
    out: list[partial.Event] = []
    for c in chunks:
        out += p.feed(c)
    return out + p.finish()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=chunked())
def test_detail_events_add_to_the_plain_ones_and_keep_their_contract(
    case: tuple[str, list[str]],
) -> None:
    doc, chunks = case
    plain = events(chunks, detail=False)
    rich = events(chunks, detail=True)
    assert [e for e in rich if not isinstance(e, DETAIL)] == plain
    key_text: str | None = None
    commas = 0
    for e in rich:
        if isinstance(e, KeyStart):
            assert key_text is None and doc[e.offset] == '"'
            key_text = ""
        elif isinstance(e, KeyDelta):
            assert key_text is not None and e.text
            key_text += e.text
        elif isinstance(e, Key):
            assert key_text == e.path[-1]
            key_text = None
        elif isinstance(e, Comma):
            assert doc[e.offset] == ","
            commas += 1
    assert key_text is None
    assert commas == _commas(json.loads(doc))


def _commas(value: Any) -> int:
    n, todo = 0, [value]
    while todo:
        v = todo.pop()
        if isinstance(v, (list, dict)):
            n += max(len(v) - 1, 0)
            todo.extend(v.values() if isinstance(v, dict) else v)
    return n


def test_detail_events_by_example() -> None:
    p = partial.Parser(detail=True)
    got = p.feed('{"ab') + p.feed('c": [1, 2], "d": {}}')
    assert [type(e).__name__ for e in got] == [
        "ValueStart", "KeyStart", "KeyDelta", "KeyDelta", "Key", "ValueStart",
        "ValueStart", "ValueDone", "Comma", "ValueStart", "ValueDone", "ValueDone",
        "Comma", "KeyStart", "KeyDelta", "Key", "ValueStart", "ValueDone", "ValueDone",
    ]  # fmt: skip
    assert got[1] == KeyStart((), 1)
    assert (got[2], got[3]) == (KeyDelta((), 4, "ab"), KeyDelta((), 5, "c"))
    assert got[8] == Comma(("abc",), 10)
    assert got[12] == Comma((), 14)


def test_an_escaped_key_grows_decoded() -> None:
    p = partial.Parser(detail=True)
    got = [
        e for e in p.feed('{"\\u00e9\\ud83d') + p.feed('\\ude00x": 1}') if isinstance(e, KeyDelta)
    ]
    assert "".join(e.text for e in got) == "é\U0001f600x"
    assert all("\ud83d" not in e.text for e in got)  # a surrogate pair is never split


def test_a_chunk_wholly_inside_a_key_grows_it_as_the_scanner_does() -> None:
    # '{"', 'na', 'me', '": 1}': the middle chunks lie inside the key (the parser's short path
    # for them); the events are the ones the scanner gives when a chunk also holds the quote.
    short = partial.Parser(detail=True)
    got = [e for c in ('{"', "na", "me", '": 1}') for e in short.feed(c)]
    assert got[1:5] == [
        KeyStart((), 1),
        KeyDelta((), 4, "na"),
        KeyDelta((), 6, "me"),
        Key(("name",), 6),
    ]
    scanned = partial.Parser(detail=True)
    whole = [e for c in ('{"n', "a", 'me": 1}') for e in scanned.feed(c)]
    assert [e for e in got if not isinstance(e, KeyDelta)] == [
        e for e in whole if not isinstance(e, KeyDelta)
    ]
    assert short.close() == scanned.close() == {"name": 1}
    plain = partial.Parser()  # without detail: no key events but the Key itself
    assert [e for c in ('{"', "na", "me", '": 1}') for e in plain.feed(c)] == [
        e for e in got if not isinstance(e, (KeyStart, KeyDelta))
    ]


def test_raw_newlines_inside_a_key_count_in_positions_under_lenient() -> None:
    # Lenient mode takes raw control characters in strings, keys included: a later error's
    # line and column count the newlines of a key that came in chunks of its own.
    for chunks in (['{"a\nb\nc": 1 x'], ['{"', "a\nb", "\nc", '": 1 x']):
        p = partial.Parser(lenient=True, detail=True)
        try:
            for c in chunks:
                p.feed(c)
        except partial.JSONSyntaxError as exc:
            assert (exc.line, exc.column) == (3, 7), chunks
        else:
            raise AssertionError("no error")
