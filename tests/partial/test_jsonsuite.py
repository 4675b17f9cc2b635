"""JSONTestSuite (nst/JSONTestSuite, vendored in ``tests/data``) against ``partial``.

- ``y_`` files: ``json.loads``'s value and the matching ``ValueDone`` events, whatever the
  chunking: whole, one character at a time, random splits, and bytes cut anywhere (inside
  multibyte UTF-8 characters too).
- ``n_`` files: a ``partial.JSONError`` at ``feed`` or ``close``, never another exception, at the
  same offset whatever the chunking.
- ``i_`` files: the behaviour we chose for each, in ``I_FILES`` below, with the reason.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import partial
from tests.partial._partial_support import (
    OpenStrings,
    consistent,
    done_pairs,
    feed_all,
    has_duplicate_keys,
    kind_of,
    random_chunks,
    reference,
    reference_bytes,
    same,
    same_pairs,
    singles,
    suite_files,
    walk,
)

Y_FILES = list(suite_files("y_"))
N_FILES = list(suite_files("n_"))
I_PATHS = list(suite_files("i_"))


def test_corpus_is_there() -> None:
    # The counts of nst/JSONTestSuite@1ef36fa: an empty glob must not pass silently.
    assert (len(Y_FILES), len(N_FILES), len(I_PATHS)) == (95, 188, 35)


def chunkings(data: bytes, seed: str) -> dict[str, list[str] | list[bytes]]:
    """Every way we feed a valid document: str whole / by character / random splits, and bytes
    by byte / random splits (which cut multibyte characters wherever they fall)."""
    text = data.decode("utf-8")
    rng = random.Random(seed)
    ways: dict[str, list[str] | list[bytes]] = {
        "str-whole": [text],
        "str-chars": singles(text),
        "bytes-whole": [data],
        "bytes-single": singles(data),
    }
    for i in range(3):
        ways[f"str-random{i}"] = random_chunks(text, rng)
        ways[f"bytes-random{i}"] = random_chunks(data, rng)
    return ways


def run_valid(
    chunks: list[str] | list[bytes], expected: Any, snapshots: bool = True
) -> tuple[Any, list[partial.Event]]:
    """Feed ``chunks``, checking after each that the snapshot agrees with ``expected`` (not
    with duplicate keys, where an earlier value is shown until the later one arrives)."""
    p = partial.Parser()
    events: list[partial.Event] = []
    tracker = OpenStrings()
    for chunk in chunks:
        new = p.feed(chunk)
        events.extend(new)
        tracker.update(new)
        if snapshots:
            assert consistent(p.snapshot(), expected, tracker.current), (p.snapshot(), expected)
    # finish() gives the last events (a root number is final only at the end); close() the value.
    events.extend(p.finish())
    return p.close(), events


@pytest.mark.parametrize("path", Y_FILES, ids=lambda p: p.name)
def test_y_file(path: Path) -> None:
    data = path.read_bytes()
    text = data.decode("utf-8")
    expected = reference(text)
    pairs = walk(expected)
    duplicates = has_duplicate_keys(text)
    for how, chunks in chunkings(data, path.name).items():
        value, events = run_valid(chunks, expected, snapshots=not duplicates)
        assert same(value, expected), how
        got = done_pairs(events)
        if duplicates:
            # Last one wins, yet every occurrence is reported: compare the last report of each
            # path with json.loads's value.
            last = dict(got)
            assert set(last) == {p for p, _ in pairs}, how
            assert all(same(last[p], v) for p, v in pairs), how
        else:
            assert same_pairs(got, pairs), how
            starts = [(e.path, e.kind) for e in events if isinstance(e, partial.ValueStart)]
            assert sorted(starts, key=repr) == sorted(
                ((p, kind_of(v)) for p, v in walk(expected)), key=repr
            ), how


def reject(chunks: list[str] | list[bytes]) -> partial.JSONError:
    p = partial.Parser()
    with pytest.raises(partial.JSONError) as info:
        feed_all(p, chunks)
        p.close()
    return info.value


@pytest.mark.parametrize("path", N_FILES, ids=lambda p: p.name)
def test_n_file(path: Path) -> None:
    data = path.read_bytes()
    with pytest.raises((ValueError, RecursionError)):
        reference_bytes(data)  # the oracle agrees the file is invalid
    rng = random.Random(path.name)
    ways: dict[str, list[str] | list[bytes]] = {
        "bytes-whole": [data],
        "bytes-single": [*singles(data[:2000]), data[2000:]],
        "bytes-random": random_chunks(data, rng),
    }
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        ways["str-whole"] = [text]
        ways["str-chars"] = [*singles(text[:2000]), text[2000:]]
    errors = {how: reject(chunks) for how, chunks in ways.items()}
    # The error is found at the first bad character, so the chunking cannot move it. (Bytes
    # and str may differ: a leading UTF-8 BOM is skipped in bytes, an error in str.)
    for kind in ("bytes", "str"):
        offsets = {
            how: (type(e), e.offset, e.line, e.column)
            for how, e in errors.items()
            if how.startswith(kind)
        }
        assert len(set(offsets.values())) <= 1, offsets


@dataclass(frozen=True)
class Value:
    """Parses (str and bytes input alike, where the file is UTF-8) to ``value``."""

    value: Any
    why: str


@dataclass(frozen=True)
class Rejected:
    """Bytes input: ``feed`` raises ``error`` at character ``offset``."""

    error: type[partial.JSONError]
    offset: int
    why: str


SURROGATE = "lone surrogates from \\u escapes are kept, as json.loads keeps them on str input"
BAD_UTF8 = "bytes input must be UTF-8: the first invalid byte is a JSONSyntaxError"

I_FILES: dict[str, Value | Rejected] = {
    "i_number_double_huge_neg_exp.json": Value([0.0], "float() underflows to 0.0 (json.loads)"),
    "i_number_huge_exp.json": Value([float("inf")], "float() overflows to inf (json.loads)"),
    "i_number_neg_int_huge_exp.json": Value([float("-inf")], "float overflow, as json.loads"),
    "i_number_pos_double_huge_exp.json": Value([float("inf")], "float overflow, as json.loads"),
    "i_number_real_neg_overflow.json": Value([float("-inf")], "float overflow, as json.loads"),
    "i_number_real_pos_overflow.json": Value([float("inf")], "float overflow, as json.loads"),
    "i_number_real_underflow.json": Value([0.0], "float underflow, as json.loads"),
    "i_number_too_big_neg_int.json": Value(
        [-123123123123123123123123123123], "Python ints are exact below the 4300-digit limit"
    ),
    "i_number_too_big_pos_int.json": Value([100000000000000000000], "exact int, as json.loads"),
    "i_number_very_big_negative_int.json": Value(
        [-237462374673276894279832749832423479823246327846], "exact int, as json.loads"
    ),
    "i_object_key_lone_2nd_surrogate.json": Value({"\udfaa": 0}, SURROGATE),
    "i_string_1st_surrogate_but_2nd_missing.json": Value(["\udada"], SURROGATE),
    "i_string_1st_valid_surrogate_2nd_invalid.json": Value(["\ud888\u1234"], SURROGATE),
    "i_string_incomplete_surrogate_and_escape_valid.json": Value(["\ud800\n"], SURROGATE),
    "i_string_incomplete_surrogate_pair.json": Value(["\udd1ea"], SURROGATE),
    "i_string_incomplete_surrogates_escape_valid.json": Value(["\ud800\ud800\n"], SURROGATE),
    "i_string_invalid_lonely_surrogate.json": Value(["\ud800"], SURROGATE),
    "i_string_invalid_surrogate.json": Value(["\ud800abc"], SURROGATE),
    "i_string_inverted_surrogates_U+1D11E.json": Value(["\udd1e\ud834"], SURROGATE),
    "i_string_lone_second_surrogate.json": Value(["\udfaa"], SURROGATE),
    "i_string_UTF-16LE_with_BOM.json": Rejected(
        partial.JSONSyntaxError, 0, "UTF-16 is not accepted: its BOM FF FE is invalid UTF-8"
    ),
    "i_string_UTF-8_invalid_sequence.json": Rejected(partial.JSONSyntaxError, 4, BAD_UTF8),
    "i_string_UTF8_surrogate_U+D800.json": Rejected(
        partial.JSONSyntaxError, 2, "an encoded surrogate (ED A0 80) is invalid UTF-8"
    ),
    "i_string_invalid_utf-8.json": Rejected(partial.JSONSyntaxError, 2, BAD_UTF8),
    "i_string_iso_latin_1.json": Rejected(partial.JSONSyntaxError, 2, "Latin-1 is not UTF-8"),
    "i_string_lone_utf8_continuation_byte.json": Rejected(partial.JSONSyntaxError, 2, BAD_UTF8),
    "i_string_not_in_unicode_range.json": Rejected(
        partial.JSONSyntaxError, 2, "F4 BF.. encodes past U+10FFFF: invalid UTF-8"
    ),
    "i_string_overlong_sequence_2_bytes.json": Rejected(
        partial.JSONSyntaxError, 2, "overlong encodings are invalid UTF-8"
    ),
    "i_string_overlong_sequence_6_bytes.json": Rejected(
        partial.JSONSyntaxError, 2, "overlong encodings are invalid UTF-8"
    ),
    "i_string_overlong_sequence_6_bytes_null.json": Rejected(
        partial.JSONSyntaxError, 2, "overlong encodings are invalid UTF-8"
    ),
    "i_string_truncated-utf-8.json": Rejected(
        partial.JSONSyntaxError, 2, "E0 needs two continuation bytes; FF is not one"
    ),
    "i_string_utf16BE_no_BOM.json": Rejected(
        partial.JSONSyntaxError, 0, "read as UTF-8, the first character is NUL: not JSON"
    ),
    "i_string_utf16LE_no_BOM.json": Rejected(
        partial.JSONSyntaxError, 1, "read as UTF-8, '[' is followed by NUL: not JSON"
    ),
    "i_structure_500_nested_arrays.json": Value(
        json.loads("[" * 500 + "]" * 500), "500 levels are within the default max_depth=512"
    ),
    "i_structure_UTF-8_BOM_empty_object.json": Value(
        {}, "a UTF-8 BOM at the start of bytes input is skipped (str input: see below)"
    ),
}


def test_i_table_covers_the_corpus() -> None:
    assert sorted(I_FILES) == [p.name for p in I_PATHS]


@pytest.mark.parametrize("path", I_PATHS, ids=lambda p: p.name)
def test_i_file(path: Path) -> None:
    data = path.read_bytes()
    decided = I_FILES[path.name]
    if isinstance(decided, Value):
        ways: dict[str, list[str] | list[bytes]] = {
            "bytes-whole": [data],
            "bytes-single": singles(data),
            "bytes-random": random_chunks(data, random.Random(path.name)),
        }
        if not data.startswith(b"\xef\xbb\xbf"):
            text = data.decode("utf-8")
            ways["str-whole"] = [text]
            ways["str-chars"] = singles(text)
            # The table agrees with json.loads wherever json.loads has an answer.
            assert same(reference(text), decided.value)
        for how, chunks in ways.items():
            value, _ = run_valid(chunks, decided.value)
            assert same(value, decided.value), how
    else:
        for chunks in ([data], singles(data)):
            p = partial.Parser()
            with pytest.raises(decided.error) as info:
                feed_all(p, chunks)
            assert info.value.offset == decided.offset


def test_bom_in_str_input_is_rejected_like_json_loads() -> None:
    # On str input the parser mirrors json.loads, which refuses U+FEFF before the document
    # ("Unexpected UTF-8 BOM"): only bytes input gets the BOM skipped.
    text = "\ufeff{}"
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    p = partial.Parser()
    with pytest.raises(partial.JSONSyntaxError) as info:
        p.feed(text)
    assert info.value.offset == 0


def test_bom_split_across_byte_chunks_is_skipped() -> None:
    p = partial.Parser()
    events = feed_all(p, [b"\xef", b"\xbb", b"\xbf[", b"1]"])
    assert done_pairs(events)[-1] == ((), [1])
    assert p.close() == [1]
