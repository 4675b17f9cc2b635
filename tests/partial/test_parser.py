"""Unit tests of the parser's semantics: when a value is final, where errors point, limits,
misuse, split escapes and characters, duplicate keys, bytes and str input."""

from __future__ import annotations

import copy
import json
import sys

import pytest

import partial
from partial import Key, Kind, StringDelta, ValueStart
from tests.partial._partial_support import done_pairs, feed_all, singles

# --- the public surface ---------------------------------------------------------------------

CONTRACT_NAMES = {
    "Parser",
    "MISSING",
    "Kind",
    "Event",
    "ValueStart",
    "Key",
    "StringDelta",
    "ValueDone",
    "JSONError",
    "JSONSyntaxError",
    "IncompleteJSONError",
    "JSONLimitError",
    "ParserStateError",
}


def test_all_names_exist_and_include_the_contract() -> None:
    assert len(partial.__all__) == len(set(partial.__all__))
    for name in partial.__all__:
        assert hasattr(partial, name), name
    assert set(partial.__all__) >= CONTRACT_NAMES


def test_error_tree() -> None:
    assert issubclass(partial.JSONError, ValueError)
    for cls in (partial.JSONSyntaxError, partial.IncompleteJSONError, partial.JSONLimitError):
        assert issubclass(cls, partial.JSONError)
    assert issubclass(partial.ParserStateError, RuntimeError)
    assert not issubclass(partial.ParserStateError, partial.JSONError)


# --- finality ------------------------------------------------------------------------------


def test_number_is_final_at_the_next_character() -> None:
    p = partial.Parser()
    events = p.feed('{"age": 12')
    assert done_pairs(events) == []
    assert p.snapshot() == {}
    assert done_pairs(p.feed("3")) == []
    assert p.snapshot() == {}
    events = p.feed("}")
    assert done_pairs(events) == [(("age",), 123), ((), {"age": 123})]
    assert p.done
    assert p.close() == {"age": 123}


@pytest.mark.parametrize("delimiter", [",", "]", " ", "\n", "\t", "\r"])
def test_number_in_array_final_at_any_delimiter(delimiter: str) -> None:
    p = partial.Parser()
    assert done_pairs(p.feed("[-1.5e+3")) == []
    assert p.snapshot() == []
    assert done_pairs(p.feed(delimiter))[0] == ((0,), -1500.0)
    assert p.snapshot() == [-1500.0]


def test_root_number_is_final_at_close() -> None:
    p = partial.Parser()
    assert done_pairs(p.feed("12")) == []
    assert p.snapshot() is partial.MISSING
    assert not p.done
    assert p.close() == 12


def test_root_number_is_final_at_trailing_whitespace() -> None:
    p = partial.Parser()
    p.feed("-0")
    assert done_pairs(p.feed(" ")) == [((), 0)]
    assert p.done
    value = p.close()
    assert value == 0 and type(value) is int


@pytest.mark.parametrize(("text", "value"), [("true", True), ("false", False), ("null", None)])
def test_literal_is_final_at_its_last_letter(text: str, value: object) -> None:
    p = partial.Parser()
    p.feed("[")
    for ch in text[:-1]:
        assert done_pairs(p.feed(ch)) == []
        assert p.snapshot() == []
    assert done_pairs(p.feed(text[-1])) == [((0,), value)]
    assert p.snapshot() == [value]


def test_root_literal_is_done_at_its_last_letter() -> None:
    p = partial.Parser()
    p.feed("tru")
    assert p.snapshot() is partial.MISSING
    assert not p.done
    assert done_pairs(p.feed("e")) == [((), True)]
    assert p.done
    assert p.snapshot() is True
    assert p.close() is True


def test_string_is_final_at_its_closing_quote() -> None:
    p = partial.Parser()
    events = p.feed('{"a": "xy')
    assert done_pairs(events) == []
    assert p.snapshot() == {"a": "xy"}
    events = p.feed('z"')
    assert done_pairs(events) == [(("a",), "xyz")]


def test_event_sequence_for_a_small_document() -> None:
    p = partial.Parser()
    events = feed_all(p, singles('{"k": ["v", 1]}'))
    kinds = [(type(e).__name__, e.path) for e in events]
    assert kinds == [
        ("ValueStart", ()),
        ("Key", ("k",)),
        ("ValueStart", ("k",)),
        ("ValueStart", ("k", 0)),
        ("StringDelta", ("k", 0)),
        ("ValueDone", ("k", 0)),
        ("ValueStart", ("k", 1)),
        ("ValueDone", ("k", 1)),
        ("ValueDone", ("k",)),
        ("ValueDone", ()),
    ]
    starts = [e for e in events if isinstance(e, ValueStart)]
    assert [s.kind for s in starts] == [Kind.OBJECT, Kind.ARRAY, Kind.STRING, Kind.NUMBER]
    # A value starts at its first character.
    assert [s.offset for s in starts] == [0, 6, 7, 12]
    assert next(e for e in events if isinstance(e, Key)).path == ("k",)


def test_kind_values_are_json_schema_type_names() -> None:
    assert {k.value for k in Kind} == {"object", "array", "string", "number", "boolean", "null"}
    p = partial.Parser()
    events = p.feed('[{}, [], "", 0, -1, true, false, null]')
    kinds = [e.kind for e in events if isinstance(e, ValueStart)][1:]
    assert [k.value for k in kinds] == [
        "object",
        "array",
        "string",
        "number",
        "number",
        "boolean",
        "boolean",
        "null",
    ]


def test_events_are_frozen() -> None:
    event = partial.Parser().feed("[")[0]
    with pytest.raises(AttributeError):
        event.path = ("x",)  # type: ignore[misc]


# --- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "offset", "line", "column", "found"),
    [
        ("[1,]", 3, 1, 4, "]"),
        ('{"a" 1}', 5, 1, 6, "1"),
        ("01", 1, 1, 2, "1"),
        ("[1.]", 3, 1, 4, "]"),
        ('"\\x"', 2, 1, 3, "x"),
        ("tru e", 3, 1, 4, " "),
        ("[\n1,\n]", 5, 3, 1, "]"),
        ('{\n  "a": nul!}', 12, 2, 11, "!"),
        ("[1] x", 4, 1, 5, "x"),
        ('["a\tb"]', 3, 1, 4, "\t"),
        ("-a", 1, 1, 2, "a"),
        ("1e+x", 3, 1, 4, "x"),
    ],
)
def test_syntax_error_at_the_first_bad_character(
    text: str, offset: int, line: int, column: int, found: str
) -> None:
    p = partial.Parser()
    with pytest.raises(partial.JSONSyntaxError) as info:
        p.feed(text)
    err = info.value
    assert (err.offset, err.line, err.column, err.found) == (offset, line, column, found)
    assert err.expected
    # One character at a time: every prefix before the bad character is accepted, and the
    # feed that brings the bad character raises the same error.
    p = partial.Parser()
    for ch in text[:offset]:
        p.feed(ch)
    with pytest.raises(partial.JSONSyntaxError) as info:
        p.feed(text[offset])
    assert (info.value.offset, info.value.found) == (offset, found)


def test_expected_names_the_missing_colon() -> None:
    p = partial.Parser()
    with pytest.raises(partial.JSONSyntaxError) as info:
        p.feed('{"a" 1}')
    assert ":" in info.value.expected


def test_error_message_says_where() -> None:
    p = partial.Parser()
    with pytest.raises(partial.JSONSyntaxError) as info:
        p.feed("[\n1,\n]")
    assert "line 3 column 1" in str(info.value)


@pytest.mark.parametrize("text", ["1.", "-", "[", '{"a"', '{"a":', '"ab', '"\\u12', "[1", "tr"])
def test_truncated_document_raises_incomplete_at_close(text: str) -> None:
    p = partial.Parser()
    p.feed(text)
    with pytest.raises(partial.IncompleteJSONError) as info:
        p.close()
    assert info.value.offset == len(text)
    assert info.value.expected


@pytest.mark.parametrize("text", ["", "  \n"])
def test_empty_document_is_incomplete(text: str) -> None:
    p = partial.Parser()
    p.feed(text)
    assert p.snapshot() is partial.MISSING
    with pytest.raises(partial.IncompleteJSONError):
        p.close()


def test_errors_are_sticky() -> None:
    p = partial.Parser()
    p.feed("[1, ")
    with pytest.raises(partial.JSONSyntaxError) as first:
        p.feed("}")
    for _ in range(2):
        with pytest.raises(partial.JSONSyntaxError) as again:
            p.feed("2]")
        assert again.value.offset == first.value.offset
        with pytest.raises(partial.JSONSyntaxError):
            p.feed("")
        with pytest.raises(partial.JSONSyntaxError):
            p.close()


def test_nan_and_infinity_are_rejected() -> None:
    for text in ("NaN", "[Infinity]", "-Infinity", '{"a": nan}'):
        p = partial.Parser()
        with pytest.raises(partial.JSONSyntaxError):
            feed_all(p, [text])
            p.close()


# --- limits ---------------------------------------------------------------------------------


@pytest.mark.timeout(60)  # a hang guard, not a speed assertion
def test_a_million_open_brackets_is_a_limit_error_not_recursion() -> None:
    p = partial.Parser()
    with pytest.raises(partial.JSONLimitError) as info:
        p.feed("[" * 10**6)
    assert info.value.limit == "max_depth"
    assert info.value.value == 512
    assert info.value.offset == 512  # the 513th bracket is one level too deep
    with pytest.raises(partial.JSONLimitError):  # sticky
        p.feed("]")


def test_max_depth_boundary() -> None:
    p = partial.Parser(max_depth=3)
    p.feed("[[[")
    with pytest.raises(partial.JSONLimitError):
        p.feed("{")
    p = partial.Parser(max_depth=3)
    assert p.feed("[[[]]]") and p.close() == [[[]]]


def test_deep_documents_within_the_limit_need_no_recursion() -> None:
    # Deeper than Python's recursion limit; not deeper, because every event carries its whole
    # path, so opening d levels costs O(d^2) in path tuples.
    depth = 5 * sys.getrecursionlimit()
    p = partial.Parser(max_depth=depth)
    p.feed('{"a":' * (depth - 1) + "[")
    snap = p.snapshot()  # must not recurse either
    for _ in range(depth - 1):
        snap = snap["a"]
    assert snap == []
    p.feed("]" + "}" * (depth - 1))
    value = p.close()
    for _ in range(depth - 1):
        value = value["a"]
    assert value == []


def test_max_bytes() -> None:
    p = partial.Parser(max_bytes=10)
    p.feed("[1,2,")
    p.feed("3,44]")  # exactly 10
    with pytest.raises(partial.JSONLimitError) as info:
        p.feed(" ")
    assert (info.value.limit, info.value.value) == ("max_bytes", 10)
    p = partial.Parser(max_bytes=10)
    with pytest.raises(partial.JSONLimitError):
        p.feed("[1,2,3,4,5,6]")


def test_max_bytes_counts_bytes_of_bytes_input() -> None:
    p = partial.Parser(max_bytes=4)
    p.feed('"é"'.encode())  # 4 bytes
    assert p.close() == "é"
    p = partial.Parser(max_bytes=4)
    with pytest.raises(partial.JSONLimitError):
        p.feed('"éé"'.encode())


def test_int_past_pythons_digit_limit_is_a_limit_error() -> None:
    p = partial.Parser()
    with pytest.raises(partial.JSONLimitError):
        feed_all(p, ["[" + "9" * 5000 + "]"])
        p.close()
    p = partial.Parser()
    assert p.feed("[" + "9" * 4300 + "]")
    assert p.close() == [int("9" * 4300)]


def test_huge_numbers_follow_json_loads() -> None:
    for text in ("1e400", "-1e400", "1e-400", "123456789012345678901234567890", "1.0", "-0.0"):
        p = partial.Parser()
        p.feed(text)
        got, want = p.close(), json.loads(text)
        assert type(got) is type(want) and str(got) == str(want)


# --- misuse --------------------------------------------------------------------------------


def test_feed_after_close_is_misuse() -> None:
    p = partial.Parser()
    p.feed("[]")
    assert p.close() == []
    with pytest.raises(partial.ParserStateError):
        p.feed("1")


def test_feed_of_a_wrong_type_is_misuse() -> None:
    p = partial.Parser()
    with pytest.raises(partial.ParserStateError):
        p.feed(1)  # type: ignore[arg-type]


def test_bytes_after_str_is_misuse() -> None:
    p = partial.Parser()
    p.feed("[")
    with pytest.raises(partial.ParserStateError):
        p.feed(b"1")


# --- escapes and characters split across chunks ----------------------------------------------


def string_deltas(events: list[partial.Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, StringDelta)]


def test_surrogate_pair_split_across_chunks_is_never_emitted_half() -> None:
    doc = '["a\\ud83d\\ude00b"]'
    p = partial.Parser()
    deltas: list[str] = []
    for ch in doc:
        deltas += string_deltas(p.feed(ch))
        snap = p.snapshot()
        shown = snap[0] if isinstance(snap, list) and snap else ""
        assert not any(0xD800 <= ord(c) <= 0xDFFF for c in shown), shown
        assert not any(0xD800 <= ord(c) <= 0xDFFF for d in deltas for c in d), deltas
    assert "".join(deltas) == "a\U0001f600b"
    assert all(deltas)
    assert p.close() == ["a\U0001f600b"]


def test_high_surrogate_is_held_until_the_next_character_decides() -> None:
    p = partial.Parser()
    p.feed('"x\\ud83d')
    assert p.snapshot() == "x"
    p.feed("\\u")
    assert p.snapshot() == "x"
    p.feed("0041")  # not a low surrogate: the high one stays lone, as json.loads keeps it
    assert p.snapshot() == "x\ud83dA"
    p.feed('"')
    assert p.close() == json.loads('"x\\ud83d\\u0041"')


def test_lone_high_surrogate_before_the_closing_quote() -> None:
    p = partial.Parser()
    events = feed_all(p, ['"\\ud800', '"'])
    assert "".join(string_deltas(events)) == "\ud800"
    assert p.close() == "\ud800"


def test_unicode_escape_split_is_not_shown_half_decoded() -> None:
    p = partial.Parser()
    p.feed('"ab\\u00')
    assert p.snapshot() == "ab"
    p.feed("e")
    assert p.snapshot() == "ab"
    p.feed('9"')
    assert p.snapshot() == "abé"
    assert p.close() == "abé"


def test_simple_escape_split_is_not_shown_half() -> None:
    p = partial.Parser()
    p.feed('"a\\')
    assert p.snapshot() == "a"
    p.feed('n"')
    assert p.close() == "a\n"


@pytest.mark.parametrize("char", ["é", "€", "\U0001f600"])
def test_multibyte_utf8_split_at_every_byte(char: str) -> None:
    data = json.dumps([char], ensure_ascii=False).encode()
    p = partial.Parser()
    deltas: list[str] = []
    for b in singles(data):
        deltas += string_deltas(p.feed(b))
        snap = p.snapshot()
        assert snap in (partial.MISSING, [], [""], [char])
    assert "".join(deltas) == char
    assert p.offset == len(json.dumps([char], ensure_ascii=False))
    assert p.close() == [char]


def test_truncated_utf8_at_close_is_incomplete() -> None:
    # The input ended inside a string (and inside a character): the document is unfinished,
    # which is what IncompleteJSONError says (a truncated stream, not a malformed one).
    p = partial.Parser()
    p.feed(b'"\xe2\x82')
    assert p.snapshot() == ""
    with pytest.raises(partial.IncompleteJSONError):
        p.close()


# --- misc semantics --------------------------------------------------------------------------


def test_duplicate_keys_last_wins_and_both_are_reported() -> None:
    p = partial.Parser()
    events = p.feed('{"a": 1, "a": [2]}')
    assert done_pairs(events) == [
        (("a",), 1),
        (("a", 0), 2),
        (("a",), [2]),
        ((), {"a": [2]}),
    ]
    assert p.close() == {"a": [2]} == json.loads('{"a": 1, "a": [2]}')


def test_snapshot_before_anything_is_missing() -> None:
    p = partial.Parser()
    assert p.snapshot() is partial.MISSING
    p.feed("  ")
    assert p.snapshot() is partial.MISSING
    p.feed("[")
    assert p.snapshot() == []


def test_snapshot_is_not_changed_by_later_feeds() -> None:
    p = partial.Parser()
    p.feed('{"a": ["x", "y')
    snap = p.snapshot()
    kept = copy.deepcopy(snap)
    p.feed('z"], "b": 1}')
    assert snap == kept


def test_offset_counts_characters() -> None:
    p = partial.Parser()
    p.feed("[1, ")
    assert p.offset == 4
    p2 = partial.Parser()
    p2.feed('["é", '.encode())
    assert p2.offset == 6


def test_bytes_and_str_give_the_same_events() -> None:
    doc = '{"name": "Zoë \\"Z\\" 🙂", "tags": ["a", "b"], "n": [1, 2.5, -3e2, true, null]}'
    p1, p2 = partial.Parser(), partial.Parser()
    e1 = feed_all(p1, singles(doc))
    e2 = feed_all(p2, singles(doc.encode()))
    assert [(type(e), e.path) for e in e1] == [(type(e), e.path) for e in e2]
    assert done_pairs(e1) == done_pairs(e2)
    assert "".join(string_deltas(e1)) == "".join(string_deltas(e2))
    assert p1.close() == p2.close() == json.loads(doc)


def test_value_done_containers_are_the_result() -> None:
    p = partial.Parser()
    events = p.feed('{"a": [1]}')
    root = done_pairs(events)[-1][1]
    assert root == {"a": [1]}
    assert p.close() == root


def test_empty_chunks_are_harmless() -> None:
    p = partial.Parser()
    assert p.feed("") == []
    p = partial.Parser()
    events = feed_all(p, ["", "[", "", "1", "", "]", ""])
    assert done_pairs(events) == [((0,), 1), ((), [1])]


def test_keys_do_not_stream() -> None:
    p = partial.Parser()
    events = feed_all(p, singles('{"key": "v"}'))
    deltas = [e for e in events if isinstance(e, StringDelta)]
    assert {e.path for e in deltas} == {("key",)}
    assert [e.path for e in events if isinstance(e, Key)] == [("key",)]


def test_key_with_a_dot_is_one_path_element() -> None:
    p = partial.Parser()
    events = p.feed('{"a.b": {"c": 1}}')
    assert (("a.b", "c"), 1) in done_pairs(events)


# --- introspection: open paths, depth, the sticky error --------------------------------------


def test_open_paths_depth_and_error() -> None:
    p = partial.Parser()
    p.feed('{"a": [1, {"b": "x')
    assert p.depth == 3
    assert p.open_paths() == [(), ("a",), ("a", 1), ("a", 1, "b")]
    p.feed('"}, 2')  # an open number is open too
    assert p.open_paths() == [(), ("a",), ("a", 2)]
    assert p.error is None
    with pytest.raises(partial.JSONSyntaxError) as info:
        p.feed("x")
    assert p.error is info.value
    # 'x' ended the number 2 before it was found to be wrong: 2 is final, and in the snapshot
    assert [type(e).__name__ for e in info.value.events] == ["ValueDone"]
    assert p.snapshot() == {"a": [1, {"b": "x"}, 2]}
