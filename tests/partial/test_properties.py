"""Differential property tests: ``partial`` against ``json.loads`` on random documents.

- Random JSON values, dumped with varied indent, separators and ``ensure_ascii``, cut at random
  places (as str, or as UTF-8 bytes cut anywhere): the final value is json.loads's; every value
  gets one ValueStart (right kind) and one ValueDone (right value), in document order, children
  before parents; the StringDeltas of a path add up to its string; every snapshot is consistent
  with the final value.
- Every prefix ``doc[:i]`` is accepted by ``feed``; its snapshot agrees with the whole document;
  ``close()`` gives json.loads(doc[:i]) when that is a document, else IncompleteJSONError.
- Fuzz: any text or bytes either parses to json.loads's value or raises a JSONError subclass.
- Lenient mode: prose before, a ```json fence, text after, raw control characters in strings.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import partial
from tests.partial._partial_support import (
    OpenStrings,
    consistent,
    done_pairs,
    feed_all,
    kind_of,
    reference,
    reference_bytes,
    same,
    same_pairs,
    walk,
)


def examples(n: int) -> settings:
    return settings(
        max_examples=n,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# Any character but lone surrogates (UTF-8 cannot carry them, and the i_ files cover them):
# control characters, astral characters, quotes and backslashes included.
CHARS = st.characters(codec="utf-8")
TEXT = st.one_of(
    st.text(CHARS, max_size=12),
    st.sampled_from(["", '"', "\\", "\\u", "\n", "\x00\x1f", "é", "€", "\U0001f600", "a.b"]),
)
NUMBERS = st.one_of(
    st.integers(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, -0.0, 0.0, 1e-300, 1.5e300, 123456789.125, -1]),
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, TEXT)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(TEXT, children, max_size=5)
    ),
    max_leaves=25,
)
CONTAINERS = st.one_of(st.lists(VALUES, max_size=4), st.dictionaries(TEXT, VALUES, max_size=4))
WHITESPACE = st.text(" \t\r\n", max_size=3)
SEPARATORS = [(",", ":"), (", ", ": "), (" , ", " : "), (",\n", ":\t"), (",", ": ")]


@st.composite
def documents(draw: st.DrawFn, values: st.SearchStrategy[Any] = VALUES) -> str:
    value = draw(values)
    text = json.dumps(
        value,
        indent=draw(st.sampled_from([None, 0, 2, "\t"])),
        separators=draw(st.sampled_from(SEPARATORS)),
        ensure_ascii=draw(st.booleans()),
    )
    return draw(WHITESPACE) + text + draw(WHITESPACE)


@st.composite
def chunked(draw: st.DrawFn, doc: str) -> list[str] | list[bytes]:
    """``doc`` as str or UTF-8 bytes, cut at random places (empty pieces possible)."""
    data: str | bytes = doc.encode() if draw(st.booleans()) else doc
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=12)))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]  # type: ignore[return-value]


def check_stream(doc: str, chunks: list[str] | list[bytes]) -> None:
    expected = reference(doc)
    p = partial.Parser()
    events: list[partial.Event] = []
    tracker = OpenStrings()
    for chunk in chunks:
        new = p.feed(chunk)
        events.extend(new)
        tracker.update(new)
        assert consistent(p.snapshot(), expected, tracker.current), (p.snapshot(), expected)
    events.extend(p.finish())
    assert same(p.close(), expected)
    assert p.done

    values = walk(expected)
    # ValueDone: once per value, right value, document order, children before parents.
    assert same_pairs(done_pairs(events), values)
    # ValueStart: once per value, right kind, before that value's ValueDone.
    starts = {e.path: i for i, e in enumerate(events) if isinstance(e, partial.ValueStart)}
    dones = {e.path: i for i, e in enumerate(events) if isinstance(e, partial.ValueDone)}
    assert sum(isinstance(e, partial.ValueStart) for e in events) == len(values)
    kinds = {e.path: e.kind for e in events if isinstance(e, partial.ValueStart)}
    for path, value in values:
        assert kinds[path] is kind_of(value), path
        assert starts[path] < dones[path], path
    # Key: once per object member.
    keys = [e.path for e in events if isinstance(e, partial.Key)]
    members = [path for path, _ in values if path and isinstance(path[-1], str)]
    assert sorted(keys, key=repr) == sorted(members, key=repr)
    # StringDelta: never empty, only for string values, adding up to the string.
    deltas: dict[tuple[str | int, ...], list[str]] = defaultdict(list)
    for e in events:
        if isinstance(e, partial.StringDelta):
            assert e.text
            deltas[e.path].append(e.text)
    strings = {path: v for path, v in values if isinstance(v, str)}
    assert set(deltas) <= set(strings)
    for path, v in strings.items():
        assert "".join(deltas.get(path, [])) == v, path


@examples(250)
@given(st.data())
def test_random_documents_random_chunks(data: st.DataObject) -> None:
    doc = data.draw(documents())
    check_stream(doc, data.draw(chunked(doc)))


@examples(60)
@given(documents())
def test_random_documents_one_character_at_a_time(doc: str) -> None:
    check_stream(doc, [doc[i : i + 1] for i in range(len(doc))])
    data = doc.encode()
    check_stream(doc, [data[i : i + 1] for i in range(len(data))])


@examples(80)
@given(documents())
def test_every_prefix_is_accepted(doc: str) -> None:
    final = reference(doc)
    step = max(1, len(doc) // 150)  # keep long documents affordable: ~150 prefixes each
    for i in [*range(0, len(doc), step), len(doc)]:
        prefix = doc[:i]
        p = partial.Parser()
        tracker = OpenStrings()
        tracker.update(p.feed(prefix))  # must not raise: doc[:i] is a prefix of valid JSON
        assert consistent(p.snapshot(), final, tracker.current), (prefix, p.snapshot())
        try:
            whole = reference(prefix)
        except ValueError:
            with pytest.raises(partial.IncompleteJSONError):
                p.close()
        else:
            assert same(p.close(), whole), prefix


# --- fuzz: our answer or our error, never anything else ---------------------------------------

JSONISH = '[]{}",:0123456789.-+eEtrufalsn \t\n\\/u\x00é\U0001f600'


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """A valid document with a few characters inserted, deleted or replaced."""
    doc = list(draw(documents()))
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(doc)))
        op = draw(st.sampled_from(["insert", "delete", "replace"]))
        ch = draw(st.sampled_from(JSONISH))
        if op == "insert":
            doc.insert(i, ch)
        elif i < len(doc):
            if op == "delete":
                del doc[i]
            else:
                doc[i] = ch
    return "".join(doc)


FUZZ_TEXT = st.one_of(st.text(), st.text(JSONISH, max_size=40), mutated(), documents())


def oracle(text: str | bytes) -> tuple[bool, Any]:
    try:
        return True, reference_bytes(text) if isinstance(text, bytes) else reference(text)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return False, None


def fuzz_once(chunks: list[str] | list[bytes], ok: bool, expected: Any) -> None:
    p = partial.Parser()
    try:
        feed_all(p, chunks)
        got = p.close()
    except partial.JSONError:
        assert not ok, f"rejected valid input {chunks!r}"
    else:
        assert ok, f"accepted invalid input {chunks!r} as {got!r}"
        assert same(got, expected)


@examples(400)
@pytest.mark.timeout(120)  # a hang is a failure
@given(st.data())
def test_fuzz_text(data: st.DataObject) -> None:
    text = data.draw(FUZZ_TEXT)
    ok, expected = oracle(text)
    fuzz_once([text], ok, expected)
    fuzz_once(data.draw(chunked(text)), ok, expected)


@examples(300)
@pytest.mark.timeout(120)
@given(st.data())
def test_fuzz_bytes(data: st.DataObject) -> None:
    raw = data.draw(
        st.one_of(
            st.binary(max_size=40),
            mutated().map(lambda s: s.encode("utf-8", "surrogatepass")),
            st.binary(max_size=4).flatmap(
                lambda junk: documents().map(lambda d: d.encode()[:5] + junk + d.encode()[5:])
            ),
        )
    )
    ok, expected = oracle(raw)
    fuzz_once([raw], ok, expected)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=8)))
    bounds = [0, *cuts, len(raw)]
    fuzz_once([raw[a:b] for a, b in itertools.pairwise(bounds)], ok, expected)


# --- lenient mode ------------------------------------------------------------------------------


def dump_raw(value: Any) -> str:
    """JSON text whose strings keep their control characters raw (what a model constrained
    by llama.cpp's grammar may write); json.loads(strict=False) reads it back."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(dump_raw(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{dump_raw(k)}: {dump_raw(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


PROSE = st.text(st.characters(codec="utf-8", exclude_characters="{["), max_size=30)


@st.composite
def lenient_documents(draw: st.DrawFn) -> tuple[str, Any]:
    value = draw(CONTAINERS)
    core = (
        dump_raw(value)
        if draw(st.booleans())
        else json.dumps(value, indent=draw(st.sampled_from([None, 2])))
    )
    if draw(st.booleans()):
        core = "```json\n" + core + "\n```"
    text = draw(PROSE) + core + draw(st.text(CHARS, max_size=30))
    return text, value


@examples(200)
@given(st.data())
def test_lenient_documents(data: st.DataObject) -> None:
    text, value = data.draw(lenient_documents())
    chunks = data.draw(chunked(text))
    p = partial.Parser(lenient=True)
    events = feed_all(p, chunks)
    assert p.done  # a container root is final at its bracket; the tail is skipped
    events.extend(p.finish())
    assert same(p.close(), value)
    assert same_pairs(done_pairs(events), walk(value))


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('Sure! Here is the JSON you asked for:\n{"a": 1}', {"a": 1}),
        ('```json\n{"a": [1, 2]}\n```', {"a": [1, 2]}),
        ('```json\n[true]\n```\nHope this helps! {"not": "this"}', [True]),
        ('{"a": 1} and that is all.', {"a": 1}),
        ('{"text": "line one\nline two\ttab"}', {"text": "line one\nline two\ttab"}),
        ("The answer: [1, 2, 3] (three numbers)", [1, 2, 3]),
    ],
)
def test_lenient_cases(text: str, value: Any) -> None:
    for chunks in ([text], [text[i : i + 1] for i in range(len(text))]):
        p = partial.Parser(lenient=True)
        feed_all(p, chunks)
        assert same(p.close(), value)
    strict = partial.Parser()
    with pytest.raises(partial.JSONSyntaxError):
        feed_all(strict, [text])
        strict.close()


def test_lenient_snapshot_of_an_unfinished_fenced_document() -> None:
    p = partial.Parser(lenient=True)
    p.feed('Here you go:\n```json\n{"name": "Ad')
    assert p.snapshot() == {"name": "Ad"}
    p.feed('a", "tags": ["x"')
    assert p.snapshot() == {"name": "Ada", "tags": ["x"]}


def test_lenient_prose_only_is_incomplete() -> None:
    p = partial.Parser(lenient=True)
    p.feed("I cannot help with that.")
    assert p.snapshot() is partial.MISSING
    with pytest.raises(partial.IncompleteJSONError):
        p.close()


@pytest.mark.parametrize("tail", [b"\xff", b" \xe2", b"\n```\n\xc0\xaf"])
def test_lenient_ignores_bytes_after_the_root_even_invalid_utf8(tail: bytes) -> None:
    # "Anything after the root value ends" is skipped in lenient mode, so bytes there are not
    # decoded into errors either: the document was complete and final.
    p = partial.Parser(lenient=True)
    p.feed(b'{"a": 1}')
    assert p.done
    p.feed(tail)
    assert p.close() == {"a": 1}
