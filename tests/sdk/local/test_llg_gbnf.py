"""GBNF escapes on the llama.cpp runtime (``sdk._local._llg_gbnf``): the same grammar takes the
same texts under llguidance as under xgrammar (the torch runtime), ``\\uXXXX`` and
``\\UXXXXXXXX`` escapes included, in string literals and character classes; a Choice holding
control characters compiles and forces exactly its strings. Each text is fed token by token
(its canonical tokens, each checked against the mask), then the end-of-sequence token. Needs
llguidance and xgrammar; no model is loaded."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sdk import Choice
from sdk._backend import GenerationRequest
from sdk._local._constrain import GrammarSpec, spec_of
from sdk._local._llg_gbnf import portable_escapes
from sdk._local._llg_masks import LlgGrammars
from sdk._local._xgr_masks import Grammars
from tests.sdk.local._local_support import import_llguidance_hf

llguidance_hf = import_llguidance_hf()
pytest.importorskip("xgrammar", reason="needs xgrammar (the torch extra)")

ESCAPES: list[tuple[str, list[str]]] = [
    # below U+0100, in literals
    ('root ::= "\\u0041bc"', ["Abc", "\u41bc", "A"]),
    ('root ::= "\\u00e9t\\u00e9"', ["été", "ete", "\u00e9t"]),
    ('root ::= "\\u0022" "\\u005c"', ['"\\', '"', "\\"]),
    ('root ::= "\\\\u0041"', ["\\u0041", "A"]),
    ('root ::= "\\x41\\u0042"', ["AB", "A"]),
    # U+0100 .. U+0FFF, U+1000 .. U+FFFF, astral, in literals
    ('root ::= "\\u0100\\u0fff"', ["\u0100\u0fff", "\u0100", "\u100f"]),
    ('root ::= "\\u1234x" | "\\u2028"', ["\u1234x", "\u2028", "\u1234"]),
    ('root ::= "\\U0001F600" "\\U00000041"', ["\U0001f600A", "\U0001f600", "A"]),
    # in classes: ranges, negation, escaped metacharacters
    ("root ::= [\\u0020-\\u007e]+", ["hello", "a b~", "é", "tab\t"]),
    ("root ::= [^\\u0000-\\u001f]+", ["ok", "é😀", "a\nb", "\x01"]),
    ("root ::= [\\u0100-\\u0101]", ["\u0100", "\u0101", "\u0102", "A"]),
    ("root ::= [\\u00e0-\\u00ff]+", ["éàÿ", "e", "\u0100"]),
    ("root ::= [\\U0001F600-\\U0001F602]+", ["😀😁😂", "😃", "A"]),
    ("root ::= [a\\u002dz]+", ["a-z", "m", "-"]),
    ("root ::= [\\u005d\\u005e]+", ["]^", "]", "^", "\\"]),
    ("root ::= [\\u005c\\u0022]+", ['\\"', "a"]),
    ("root ::= [\\u1000-\\u10ff] [\\u0fff]", ["\u1000\u0fff", "\u10ff\u0fff", "\u0fff"]),
]
"""(GBNF grammar, texts): each text taken by both engines or by neither."""

CONTROLS = ["\x01", "\x1f", "\x7f", "\x0b", "a\x00b"]


@pytest.fixture(scope="module")
def engines(tokenizer: Any) -> tuple[Grammars, LlgGrammars]:
    stop = [tokenizer.eos_token_id]
    ll = llguidance_hf.from_tokenizer(tokenizer)
    return (
        Grammars(tokenizer, len(tokenizer), stop_token_ids=stop),
        LlgGrammars(ll, len(tokenizer), [], stop_token_ids=stop),
    )


def takes(grammars: Grammars | LlgGrammars, spec: GrammarSpec, text: str, tokenizer: Any) -> bool:
    """``text``'s canonical tokens, then the end-of-sequence token, each allowed by the mask."""
    constraint = grammars.constraint_for(spec, tokenizer)
    for token in [*tokenizer.encode(text, add_special_tokens=False), tokenizer.eos_token_id]:
        if token not in constraint.allowed():
            return False
        constraint.accept(token)
    return True


@pytest.mark.parametrize(("grammar", "texts"), ESCAPES, ids=[g for g, _ in ESCAPES])
def test_escapes_take_the_same_texts_on_both_engines(
    grammar: str, texts: list[str], engines: tuple[Grammars, LlgGrammars], tokenizer: Any
) -> None:
    xgr, llg = engines
    spec = GrammarSpec("ebnf", grammar)
    on_xgrammar = [takes(xgr, spec, t, tokenizer) for t in texts]
    on_llguidance = [takes(llg, spec, t, tokenizer) for t in texts]
    assert on_llguidance == on_xgrammar
    assert on_xgrammar[0]  # the first text is one the grammar means


def test_a_structural_tags_grammar_reads_escapes_as_xgrammar_does(
    engines: tuple[Grammars, LlgGrammars], tokenizer: Any
) -> None:
    grammar = 'root ::= "\\u0041" [\\u00e9]'
    tag = {"type": "tag", "begin": "<a>", "content": {"type": "grammar", "grammar": grammar}}
    fmt = {"type": "structural_tag", "format": {**tag, "end": "</a>"}}
    spec = GrammarSpec("structural_tag", json.dumps(fmt))
    for text, taken in (("<a>Aé</a>", True), ("<a>\u41e9</a>", False), ("<a>A</a>", False)):
        assert [takes(g, spec, text, tokenizer) for g in engines] == [taken, taken], text


@pytest.mark.parametrize("option", CONTROLS, ids=repr)
def test_a_choice_with_control_characters_forces_exactly_its_strings(
    option: str, engines: tuple[Grammars, LlgGrammars], tokenizer: Any
) -> None:
    spec = spec_of(
        GenerationRequest(
            messages=({"role": "user", "content": "x"},),
            schema=None,
            constraint=Choice([option, "zzz"]),
        )
    )
    assert spec is not None
    xgr, llg = engines
    for text in (option, "zzz", option + option, option[:-1] + "?", "\x02"):
        expected = text in (option, "zzz")
        assert takes(llg, spec, text, tokenizer) is expected, repr(text)
        assert takes(xgr, spec, text, tokenizer) is expected, repr(text)
    # Once the choice is made by its first character, the rest is forced.
    constraint = llg.constraint_for(spec, tokenizer)
    assert constraint.accept_text(option[0])
    assert constraint.forced_text() == option[1:]


def test_portable_escapes_rewrites_only_unicode_escapes() -> None:
    assert portable_escapes('a ::= "\\u0041\\u0100\\u1234\\U0001F600" [\\u005d-\\u00ff]') == (
        'a ::= "\\x41\u0100\\u1234\U0001f600" [\\x5d-\\xff]'
    )
    # An escaped backslash before "u0041", other escapes, a surrogate, past U+10FFFF: unchanged.
    unchanged = 'a ::= "\\\\u0041\\n\\x41\\"" [\\]] "\\ud800" "\\U00110000"'
    assert portable_escapes(unchanged) == unchanged
