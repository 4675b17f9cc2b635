"""Pieces: an attempt's text as it came, folded into blocks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sdk._stream._pieces import FOLD, Pieces


@given(st.lists(st.text(max_size=4), max_size=5 * FOLD))
def test_the_joined_text_is_every_piece_in_order(pieces: list[str]) -> None:
    texts = Pieces()
    for piece in pieces:
        texts.add(piece)
    assert texts.joined() == "".join(pieces)
    assert len(texts) < FOLD
    assert len(texts.blocks) == len(pieces) // FOLD


def test_an_empty_text() -> None:
    assert Pieces().joined() == ""
