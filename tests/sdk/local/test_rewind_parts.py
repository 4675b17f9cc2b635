"""The bookkeeping of rewinds without a model: token offsets, text bans, first choices."""

from __future__ import annotations

import pytest

from sdk._local._bans import Bans, VocabIndex, forbidden_tokens
from sdk._local._choice import content_ranges, first_choice
from sdk._local._output import Output

SNOWMAN = "☃".encode()  # three bytes
VOCAB = [b'{"', b"a", b'":"', SNOWMAN[:2], SNOWMAN[2:], b'"}', b"ab", b"abc", b"b", b'"', b"ba"]


def written(tokens: list[int]) -> Output:
    output = Output()
    for token in tokens:
        output.append(token, VOCAB[token])
    return output


def test_offsets_and_clean_boundaries() -> None:
    output = written([0, 1, 2, 3, 4, 5])  # {"a":"☃"}, the snowman split over two tokens
    assert output.text == '{"a":"☃"}'
    assert output.chars == 9
    # Character 7 (after the snowman) is where token 4 ends; token 3 ends inside the snowman,
    # with no character of its own: no rewind can stop there.
    assert output.boundary(7) == 5
    assert output.boundary(6) == 3
    assert output.boundary(5) == 2
    assert output.char_end(3) == 6 and output.byte_end(3) == 6
    assert output.byte_offset(7) == 9  # three bytes for one character
    assert output.token_at(5) == 2 and output.token_at(6) == 3 and output.token_at(8) == 4
    output.truncate(3)
    assert output.text == '{"a":"' and len(output) == 3 and bytes(output.data) == b'{"a":"'
    assert output.append(8, b"b") == "b"  # the UTF-8 decoder started afresh


def test_an_incomplete_character_at_the_end_is_flushed() -> None:
    output = written([0, 3])
    assert output.text == '{"'
    assert output.flush() == "\ufffd"
    assert output.text == '{"\ufffd' and output.chars == 3
    assert output.boundary(3) == 1  # not after the half character
    output.truncate(1)
    assert output.text == '{"'


def test_vocab_index_finds_tokens_by_prefix() -> None:
    index = VocabIndex(VOCAB)
    assert sorted(index.starting_with(b"a")) == [1, 6, 7]
    assert sorted(index.starting_with(b"ab")) == [6, 7]
    assert index.starting_with(b"abcd") == []
    assert sorted(index.starting_with(b'"')) == [2, 5, 9]
    assert index.exactly(b"ab") == [6]
    assert index.exactly(b"zz") == []


def test_a_ban_forbids_completing_its_text_from_any_split() -> None:
    index = VocabIndex(VOCAB)
    bans = Bans()
    bans.add(2, b'":"ab')
    # At the ban's offset: anything that completes '":"ab' is out; shorter pieces stay.
    rests = bans.rests(b'{"')
    assert rests == [b'":"ab']
    assert forbidden_tokens(rests, index) == []  # no token holds it all
    # After '":"' was written: "ab" and "abc" complete it, "a" does not.
    assert bans.rests(b'{"":"') == [b"ab"]
    assert sorted(forbidden_tokens(bans.rests(b'{"":"'), index)) == [6, 7]
    assert sorted(forbidden_tokens(bans.rests(b'{"":"a'), index)) == [8, 10]
    # Spent once the output has left the banned text, or gone past its length.
    assert bans.rests(b'{"":"b') == []
    assert bans.rests(b'{"":"x') == []
    assert bans.rests(b"{") == []  # not there yet


def test_a_prefix_that_forces_the_rest_is_forbidden_too() -> None:
    index = VocabIndex(VOCAB)
    # A grammar after which "a" can only go on as "b" (an enum with one value starting "a").
    forced = {1: b"bc"}

    def forces(token: int, text: bytes) -> bool:
        return forced.get(token, b"").startswith(text)

    assert sorted(forbidden_tokens([b"ab"], index, forces)) == [1, 6, 7]
    assert sorted(forbidden_tokens([b"ab"], index)) == [6, 7]


def test_bans_add_up_at_one_place_and_go_with_the_text_after_a_rewind() -> None:
    bans = Bans()
    bans.add(2, b"ab")
    bans.add(2, b"b")
    bans.add(2, b"b")  # once
    bans.add(5, b"a")
    bans.add(5, b"")  # nothing to ban
    assert bans.texts_at(2) == [b"ab", b"b"] and len(bans) == 3
    bans.keep_until(4)
    assert [ban.at for ban in bans] == [2, 2]
    bans.keep_until(2)
    assert len(bans) == 2


@pytest.mark.parametrize("offset", [0, 1, 9])
def test_boundary_at_the_ends(offset: int) -> None:
    output = written([0, 1, 2, 3, 4, 5])
    keep = output.boundary(offset)
    assert output.char_end(keep) <= offset
    assert output.text[: output.char_end(keep)] == '{"a":"☃"}'[: output.char_end(keep)]


def test_content_ranges_are_the_scalars_of_the_value_only() -> None:
    text = '[\n  "ab",\n  12, {"k": ""}, true\n], "next"'
    ranges, end = content_ranges(text)
    # "ab" with its closing quote, 12 with the comma that ends it, "" (its closing quote), true.
    assert [text[lo:hi] for lo, hi in ranges] == ['ab"', "12,", '"', "true"]
    assert text[:end] == '[\n  "ab",\n  12, {"k": ""}, true\n]'
    cut = '{"a": "xy'  # cut short: the open string runs to the end
    assert content_ranges(cut) == ([(7, 9)], 9)
    assert content_ranges("]") == ([], 1)


def test_the_first_choice_skips_forced_and_structural_bytes() -> None:
    data = b'{"t": [\n  "blog", "x"]}'
    at = data.index(b"[")  # the value: the array
    ranges, end = content_ranges(data[at:].decode())
    shifted = [(at + lo, at + hi) for lo, hi in ranges]
    # No grammar: the first content byte, past the bracket, the whitespace and the quote.
    assert first_choice(data, 0, at, shifted, at + end, None) == data.index(b"blog")

    # A grammar that forces "bl" after the opening quote: the choice is the "o".
    def forced(text: bytes) -> bytes:
        return b"bl" if text.endswith(b'"') else b""

    assert first_choice(data, 0, at, shifted, at + end, forced) == data.index(b"og")


def test_a_value_with_nothing_chosen_has_no_first_choice() -> None:
    data = b'{"kind": "note", "text": "hi"}'
    at = data.index(b'"note"')
    ranges, end = content_ranges(data[at:].decode())
    assert [data[at + lo : at + hi] for lo, hi in ranges] == [b'note"']

    def forced(text: bytes) -> bytes:  # a const: everything up to the next key is forced
        return b'"note", "text": "'[len(text) - at :] if len(text) >= at else b""

    shifted = [(at + lo, at + hi) for lo, hi in ranges]
    assert first_choice(data, 0, at, shifted, at + end, forced) is None
    # Without the grammar, the note's first letter was a choice.
    assert first_choice(data, 0, at, shifted, at + end, None) == at + 1


def test_the_choice_of_an_empty_container_is_to_close_it() -> None:
    data = b'{"t": [ \n ], "u": 1}'
    at = data.index(b"[")
    ranges, end = content_ranges(data[at:].decode())
    assert ranges == []
    assert first_choice(data, 0, at, [], at + end, None) == data.index(b"]")
