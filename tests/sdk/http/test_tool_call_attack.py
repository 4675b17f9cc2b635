"""The attack of ``tests/fuzz/attack_new_surfaces.py`` on fewer cases, as a regression test:
random tool-call streams (Chat Completions, with and without ``index``, ids and names late; the
Responses API, items added twice) read back to the calls they were made of, errors naming the
broken call, openai-python's accumulator agreeing; the hand-made hostile streams; batch files
with hostile lines over reruns and crashes, one line per id and per bad line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fuzz"))

from tests.fuzz.attack_new_surfaces import HOSTILE, attack, hostile_case


@pytest.mark.parametrize(("name", "cases"), [("chat", 400), ("responses", 400), ("batch", 12)])
def test_the_attack_finds_no_disagreement(name: str, cases: int) -> None:
    tried, found = attack(name, cases, seed=7)
    assert tried == cases
    assert found == []


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_stream_ends_as_it_should(name: str) -> None:
    assert hostile_case(name) is None
