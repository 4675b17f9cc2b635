"""The client's checks agree with xgrammar, the grammar engine of vLLM and of the local engine.

Each constraint is compiled the way the local engine will compile it (phase 2) and vLLM does:
a :class:`~sdk.Choice` as the GBNF alternation (valid xgrammar EBNF), a :class:`~sdk.Regex` with
``Grammar.from_regex``, a :class:`~sdk.Grammar` with ``from_ebnf`` / ``from_lark``, a
:class:`~sdk.StructuralTag` with ``from_structural_tag`` on :func:`xgrammar_structural_tag`.
For every sample output: what xgrammar accepts, the client accepts; what the client rejects,
xgrammar rejects (the client may accept a little more, e.g. whitespace around a segment's JSON,
which other servers' grammars allow: it never rejects what a server can produce).

Needs the ``local`` extra (xgrammar), which ``tests/run.sh`` installs; no model is loaded.
"""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, Field

from sdk import Choice, Grammar, Regex, StreamError, StructuralTag, Tag
from sdk._constraints import TextConstraint
from sdk._grammar_languages import choice_gbnf, xgrammar_structural_tag
from sdk._trackers._segments import SegmentTracker
from sdk._trackers._text import TextTracker

xgr = pytest.importorskip("xgrammar", reason="needs the local extra (xgrammar)")
xgrammar_accepts = xgr.testing._is_grammar_accept_string


def compile_text(constraint: TextConstraint) -> xgr.Grammar:
    if isinstance(constraint, Choice):
        return xgr.Grammar.from_ebnf(choice_gbnf(constraint))
    if isinstance(constraint, Regex):
        return xgr.Grammar.from_regex(constraint.pattern)
    if constraint.syntax == "lark":
        return xgr.Grammar.from_lark(constraint.text)
    return xgr.Grammar.from_ebnf(constraint.text)


def client_accepts_text(constraint: TextConstraint, text: str) -> bool:
    tracker = TextTracker(constraint)
    try:
        for c in text:  # one character at a time: the strictest chunking
            tracker.feed(c)
        tracker.close()
    except StreamError:
        return False
    return True


TEXT_CASES: list[tuple[TextConstraint, list[str]]] = [
    (
        Choice(["positive", "negative", 'say "hi"', "a\\b\n"]),
        ["positive", "negative", 'say "hi"', "a\\b\n", "pos", "positives", "Positive", ""],
    ),
    (
        Regex(r"\+?[0-9]{1,3}-[0-9]{3}-[0-9]{4}"),
        ["+47-555-0123", "1-555-0123", "+47-555-012", "1234-555-0123", "+-555-0123", "47-5550123"],
    ),
    (Regex(r"(yes|no)( because [a-z ]+)?"), ["yes", "no because it rains", "yes because", "maybe"]),
    (
        Grammar('root ::= "SELECT " col " FROM t"\ncol ::= "a" | "b"'),
        ["SELECT a FROM t", "SELECT b FROM t"],
    ),
    (Grammar('start: NUM "-" NUM\nNUM: /[0-9]+/'), ["12-3"]),
]


@pytest.mark.parametrize(("constraint", "samples"), TEXT_CASES)
def test_text_constraints_agree_with_xgrammar(
    constraint: TextConstraint, samples: list[str]
) -> None:
    grammar = compile_text(constraint)
    for text in samples:
        by_xgrammar = xgrammar_accepts(grammar, text)
        by_client = client_accepts_text(constraint, text)
        if isinstance(constraint, Grammar):
            assert by_xgrammar and by_client, text  # the client checks nothing of a grammar
        else:
            assert by_client == by_xgrammar, (text, by_client, by_xgrammar)


class Weather(BaseModel):
    city: str = Field(max_length=10)


class Search(BaseModel):
    query: str


TAGS = [
    Tag("<function=get_weather>", Weather, "</function>"),
    Tag("<function=search>", Search, "</function>"),
]
W = '<function=get_weather>{"city": "Oslo"}</function>'
S = '<function=search>{"query": "rain"}</function>'
SAMPLES = [
    "plain text",
    f"first {W} then {S} done",
    f"{W}{S}",
    f"{W} trailing",
    f"leading {W}",
    '<function=get_weather>{"city": "Ouagadougou"}</function>',  # maxLength
    '<function=get_weather>{"town": "Oslo"}</function>',  # required
    '<function=lookup>{"city": "Oslo"}</function>',  # no such tag
    '<function=search>{"query": "x"}</func>',  # wrong end
    '<function=search>{"query": "x"}',  # no end
]


@pytest.mark.parametrize(
    ("at_least_one", "stop_after_first"),
    [(False, False), (True, False), (False, True), (True, True)],
)
def test_structural_tags_agree_with_xgrammar(at_least_one: bool, stop_after_first: bool) -> None:
    tag = StructuralTag(
        TAGS, ["<function="], at_least_one=at_least_one, stop_after_first=stop_after_first
    )
    grammar = xgr.Grammar.from_structural_tag(json.dumps(xgrammar_structural_tag(tag)))
    for text in SAMPLES:
        tracker = SegmentTracker(tag)
        try:
            for c in text:
                tracker.feed(c)
            tracker.close()
            by_client = True
        except StreamError:
            by_client = False
        assert by_client == xgrammar_accepts(grammar, text), text
