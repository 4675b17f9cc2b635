"""Patterns read as ECMA-262 (``sdk._regex._ecma``), and prefixes refused only when no
continuation can match: for a :class:`~sdk.Regex`, a JSON Schema ``pattern`` and a pydantic
``Field(pattern=...)``, streamed in chunks."""

from __future__ import annotations

import itertools
import json

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdk import Regex, SchemaError, SchemaViolation, TruncatedError
from sdk._regex._ecma import EcmaRegexError, compile_ecma, no_wider_elsewhere, portable
from sdk._trackers._field import FieldTracker
from sdk._trackers._text import TextTracker


def _text(constraint: Regex, chunks: list[str]) -> str:
    tracker = TextTracker(constraint)
    for chunk in chunks:
        tracker.feed(chunk)
    result: str = tracker.close()
    return result


def _document(schema: object, chunks: list[str]) -> object:
    tracker = FieldTracker(schema)
    for chunk in chunks:
        tracker.feed(chunk)
    return tracker.close()


# ---------------------------------------------------------------- word boundaries at a chunk end


@pytest.mark.parametrize("chunks", [["$42"], ["$", "42"], ["$", "4", "2"]])
def test_a_word_boundary_at_the_end_of_a_chunk_is_left_open(chunks: list[str]) -> None:
    assert _text(Regex(r"\$\b\d+"), chunks) == "$42"


def test_a_word_boundary_that_the_next_chunk_breaks_is_refused_there() -> None:
    tracker = TextTracker(Regex(r"a\bb"))
    tracker.feed("a")  # "a" then a boundary: still possible (the text could end... or not)
    with pytest.raises(SchemaViolation) as info:
        tracker.feed("b")
    assert info.value.offset == 1


@pytest.mark.parametrize("chunks", [['"key: value"'], ['"key: ', 'value"'], ['"key: "', ""]])
def test_a_schema_pattern_with_a_boundary_streams_in_chunks(chunks: list[str]) -> None:
    schema = {"type": "string", "pattern": r"^\w+:\s\b\w+$"}
    if chunks[-1] == "":  # the boundary never got its word: refused at the end, not before
        tracker = FieldTracker(schema)
        tracker.feed(chunks[0][:-1])
        with pytest.raises(SchemaViolation):
            tracker.feed('"')
        return
    assert _document(schema, chunks) == "key: value"


def test_a_pydantic_pattern_with_a_boundary_is_accepted_at_every_cut() -> None:
    class Pair(pydantic.BaseModel):
        pair: str = pydantic.Field(pattern=r"^\w+:\s\b\w+$")

    doc = '{"pair": "key: value"}'
    for cut in range(1, len(doc)):
        result = _document(Pair, [doc[:cut], doc[cut:]])
        assert result == Pair(pair="key: value"), cut


def test_a_pydantic_pattern_pydantic_reads_more_widely_is_left_to_pydantic() -> None:
    class Digits(pydantic.BaseModel):
        wide: str = pydantic.Field(pattern=r"^\d+$")  # pydantic's \d: any Unicode digit
        flagged: str = pydantic.Field(pattern=r"(?i)^ab")  # not ECMA-262, fine for pydantic
        narrow: str = pydantic.Field(pattern=r"^[0-9]+$")  # the same in every engine

    doc = '{"wide": "\u0967\u0968", "flagged": "AB", "narrow": "12"}'
    assert _document(Digits, [doc]) == Digits(wide="\u0967\u0968", flagged="AB", narrow="12")
    tracker = FieldTracker(Digits)
    tracker.feed('{"wide": "1", "flagged": "AB", "narrow": "1')
    with pytest.raises(SchemaViolation) as info:
        tracker.feed("x")  # still refused at the first character that proves it
    assert info.value.path == ("narrow",)


# ---------------------------------------------------------------- lookbehind, empty output


def test_a_lookbehind_after_a_lazy_quantifier_does_not_refuse_a_live_prefix() -> None:
    constraint = Regex(r"[ab]*?(?<=a)")
    assert _text(constraint, ["b", "a"]) == "ba"
    tracker = TextTracker(constraint)
    tracker.feed("b")  # "ba" still matches
    with pytest.raises(TruncatedError):
        tracker.finish()  # "b" itself does not


def test_an_empty_output_is_a_match_when_the_pattern_matches_the_empty_string() -> None:
    assert _text(Regex("a*"), []) == ""
    tracker = TextTracker(Regex("a+"))
    with pytest.raises(TruncatedError):
        tracker.finish()


# ---------------------------------------------------------------- property: against brute force

ALPHABET = "ab1 "
_ATOMS = ["a", "b", "1", " ", "[ab]", "[^a]", r"\w", r"\W", r"\d", r"\s", ".", r"[\Da]"]
_ASSERTIONS = [r"\b", r"\B", "^", "$", "(?=a)", "(?!b)", "(?<=a)", "(?<!b)", "(?<=a+)"]
_QUANTS = ["", "*", "+", "?", "{0,2}", "*?", "+?", "??", "{1,2}?"]


@st.composite
def _patterns(draw: st.DrawFn, depth: int = 0) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 9))
        if kind == 0 and depth < 2:
            inner = draw(_patterns(depth + 1))
            if draw(st.booleans()):
                inner += "|" + draw(_patterns(depth + 1))
            parts.append(f"({inner}){draw(st.sampled_from(_QUANTS))}")
        elif kind <= 2:
            parts.append(draw(st.sampled_from(_ASSERTIONS)))
        else:
            parts.append(draw(st.sampled_from(_ATOMS)) + draw(st.sampled_from(_QUANTS)))
    return "".join(parts)


_TAILS = ["".join(t) for n in range(4) for t in itertools.product(ALPHABET, repeat=n)]


@settings(max_examples=150, deadline=None)
@given(pattern=_patterns(), prefix=st.text(ALPHABET, max_size=4), cut=st.integers(0, 4))
def test_a_regex_refuses_a_prefix_only_when_no_continuation_matches(
    pattern: str, prefix: str, cut: int
) -> None:
    # The reference: every continuation of up to 3 characters over the alphabet, each checked
    # with a whole-text match (no partial matching involved).
    compiled = compile_ecma(pattern)
    live = any(compiled.fullmatch(prefix + tail) for tail in _TAILS)
    tracker = TextTracker(Regex(pattern))
    try:
        for chunk in (prefix[:cut], prefix[cut:]):
            tracker.feed(chunk)
    except SchemaViolation:
        assert not live, f"{pattern!r} refused {prefix!r}, which can still match"
        return
    try:
        assert tracker.close() == prefix
        assert compiled.fullmatch(prefix)
    except TruncatedError:
        assert not compiled.fullmatch(prefix)


@settings(max_examples=150, deadline=None)
@given(pattern=_patterns(), prefix=st.text(ALPHABET, max_size=4))
def test_a_schema_pattern_refuses_a_prefix_only_when_no_continuation_matches(
    pattern: str, prefix: str
) -> None:
    compiled = compile_ecma(pattern)
    live = any(compiled.search(prefix + tail) for tail in _TAILS)
    tracker = FieldTracker({"type": "string", "pattern": pattern})
    doc = json.dumps(prefix)
    try:
        tracker.feed(doc[:-1])  # the string so far, still open
    except SchemaViolation:
        assert not live, f"{pattern!r} refused {prefix!r}, which can still match"


# ---------------------------------------------------------------- what the translation means


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        (r"^\d$", ["0", "9"], ["\u07c0", "\u0967"]),
        (r"^\D$", ["\u07c0", "a"], ["0"]),
        (r"^\w$", ["a", "_", "Z"], ["\u00e9"]),
        (r"^\W$", ["\u00e9", "-"], ["a"]),
        (r"^\s$", [" ", "\t", "\u000b", "\u00a0", "\ufeff", "\u2029", "\u2003"], ["\u0085", "a"]),
        (r"^\S$", ["\u0085", "\u200b"], ["\u3000"]),
        (r"^abc$", ["abc"], ["abc\n"]),
        (r"^.$", ["a", "\u0085"], ["\n", "\r", "\u2028"]),
        (r"^\cC\x41\u0042\u{43}\0$", ["\x03ABC\x00"], ["cCABC0"]),
        (r"^\uD83D\uDC32+$", ["\U0001f432\U0001f432"], ["\ud83d"]),
        (r"^[^]$", ["\n", "x"], [""]),
        (r"^[]", [], ["", "a"]),
        (r"^[\D5]$", ["x", "5"], ["4"]),
        (r"^[^\d\s]$", ["x"], ["4", " "]),
        (r"^[\b]$", ["\b"], ["b"]),
        (r"\bab\b", ["ab", "x ab", "\u00e9ab"], ["xab", "abc"]),  # ASCII word characters
        (r"^(?<x>a)\k<x>$", ["aa"], ["ab"]),
        (r"^(a)\1$", ["aa"], ["ab"]),
        (r"(?<=a+)b", ["aab"], ["b"]),
        (r"^\p{Lu}\P{Lu}$", ["\u00c9a"], ["aa"]),
        (r"^(?i:straße)$", ["STRAßE"], ["STRASSE"]),  # simple case folding, as ECMA
        (r"^a{2}\{\}x\]$", ["aa{}x]"], []),
        (r"^x{,2}$", ["x{,2}"], ["xx"]),  # not a quantifier: literal
    ],
)
def test_ecma_262_meaning(pattern: str, yes: list[str], no: list[str]) -> None:
    compiled = compile_ecma(pattern)
    for text in yes:
        assert compiled.search(text), (pattern, text)
    for text in no:
        assert not compiled.search(text), (pattern, text)


@pytest.mark.parametrize(
    ("pattern", "where"),
    [
        ("(?P<n>x)", 1),
        ("(?i)abc", 1),
        ("(?#c)a", 1),
        (r"\a", 0),
        (r"\Z", 0),
        ("^(abc]", 6),
        ("[a", 0),
        ("a**", 2),
        (r"\k<nope>", 0),
        (r"(a)\2", 3),
        ("[z-a]", 0),
        ("(?<=a)*", 6),
        (r"\u12", 0),
    ],
)
def test_what_is_not_ecma_262_is_refused_with_its_position(pattern: str, where: int) -> None:
    with pytest.raises(EcmaRegexError) as info:
        compile_ecma(pattern)
    assert info.value.position == where
    with pytest.raises(SchemaError, match="not a valid regular expression"):
        Regex(pattern)
    with pytest.raises(SchemaError):
        FieldTracker({"pattern": pattern})


def test_engines_get_the_shorthand_classes_spelled_out() -> None:
    assert portable(r"\d+\.\w[\d_]") == r"[0-9]+\.[A-Za-z0-9_][0-9_]"
    assert portable("a.b") == "a[^\\n\\r\\u2028\\u2029]b"
    assert portable(r"[.\D]") == r"[.\D]"  # inside a class: as written
    spelled = compile_ecma(portable(r"^\s\S$"))
    assert spelled.search("\u3000x") and not spelled.search("  ")


@pytest.mark.parametrize(
    ("pattern", "value"),
    [
        (r"^[[a-z]]$", "b"),  # Rust's nested class: one letter; ECMA-262 would need "b]"
        (r"^[[:alpha:]]+$", "abc"),  # a POSIX class inside a class
        (r"^[a-z&&[^x]]+$", "ab"),  # class intersection
    ],
)
def test_a_pydantic_pattern_in_rust_set_syntax_is_left_to_pydantic(
    pattern: str, value: str
) -> None:
    # pydantic's default engine (Rust's regex) reads these classes otherwise than ECMA-262:
    # the tracker must not refuse, early or at the end, what pydantic accepts.
    class Model(pydantic.BaseModel):
        s: str = pydantic.Field(pattern=pattern)

    document = json.dumps({"s": value})
    assert Model.model_validate_json(document).s == value
    tracker = FieldTracker(Model)
    for ch in document:
        tracker.feed(ch)
    assert tracker.close() == Model(s=value)


# ---------------------------------------------------------------- against Node (issue 29.2)

# Verdicts of Node 20's ``new RegExp(pattern, "u").test(text)`` (v20.20.2, ICU 78, Unicode 17),
# copied from its output: the tests do not need Node to run.
NODE_VERDICTS = [
    # A repeated group's captures are cleared at the start of every repetition, and once the
    # minimum is reached a repetition that matches "" is refused.
    (r"^(?:(a)|b)+\1c$", {"abc": True, "aac": True, "bac": False, "abac": False}),
    (r"^(?:\1(a))+$", {"aa": True, "a": True, "aaa": True, "aaaa": True}),
    (r"^(?:(a)|)+\1$", {"a": False, "aa": True, "": True}),
    (r"^(?:(a)|b)+\1$", {"aba": False, "ab": True, "aa": True, "abaa": True}),
    (r"^(?:(?<x>a)|b){2}\k<x>$", {"abb": False, "baa": True, "ab": True, "aba": False}),
    (r"^(?:(a)|){2,3}?\1$", {"aa": True, "a": True, "aaa": True}),
    (r"^(?:(a)(b)?)+\2$", {"aba": True, "abab": False, "abaa": True, "ab": False}),
    (r"(?<=\1(?:(a)|b)+)c", {"babc": True, "abc": True, "c": False, "bc": True}),
    # A lookahead is atomic: what a lazy quantifier captured first is what \1 sees.
    (r"^(?=(a+?))\1b", {"aab": False, "ab": True, "b": False}),
    (r"^(?=(a*?))\1a", {"a": True, "aa": True}),
    (r"^(?=(\d+?))\1\d$", {"12": True, "123": False, "1": False}),
    (r"^(?=(a{1,3}?))\1b", {"ab": True, "aab": False}),
    # Unicode properties as ECMA-262 names them.
    (
        r"^\p{Changes_When_NFKC_Casefolded}$",
        {"A": True, "a": False, "\u212a": True, "\u00a0": True, "1": False},
    ),
    (r"^\p{CWKCF}$", {"A": True, "a": False}),
    (r"^\p{scx=Grek}+$", {"\u03a9\u0345": True, "a": False}),
    (r"^\p{Script_Extensions=Greek}$", {"\u03a9": True, "a": False}),
    (r"^\p{sc=Latn}\P{Script=Latin}$", {"a1": True, "ab": False}),
    (r"^\p{digit}$", {"\u0663": True, "a": False}),
    (r"^\p{Lowercase}\p{Any}$", {"a\x00": True, "A1": False}),
    (r"^[\p{Lu}\P{Cn}]$", {"A": True, "\u0378": False}),
    (r"^\p{Combining_Mark}$", {"\u0301": True, "a": False}),
]


@pytest.mark.parametrize(("pattern", "verdicts"), NODE_VERDICTS)
def test_verdicts_are_node_s(pattern: str, verdicts: dict[str, bool]) -> None:
    compiled = compile_ecma(pattern)
    assert {text: compiled.search(text) for text in verdicts} == verdicts
    schema = {"type": "string", "pattern": pattern}
    for text, want in verdicts.items():  # and the same through the tracker, in one-char chunks
        tracker = FieldTracker(schema)
        try:
            for ch in json.dumps(text):
                tracker.feed(ch)
            tracker.close()
        except SchemaViolation:
            assert not want, (pattern, text)
        else:
            assert want, (pattern, text)


# Each refused by Node (SyntaxError with the u flag): loose spellings, other engines' names,
# a value under the wrong property, and Katakana_Or_Hiragana, which V8 does not list.
NOT_ECMA_PROPERTIES = [
    r"\p{Greek}",
    r"\p{IsGreek}",
    r"\p{InGreek}",
    r"\p{l}",
    r"\p{Word}",
    r"\p{Digit}",
    r"\p{Block=Greek}",
    r"\p{script=Latin}",
    r"\p{Script=Hrkt}",
    r"\p{Alpha=Yes}",
    r"\p{L&}",
    r"\p{Lowercase_letter}",
    r"\p{sc=latn}",
    r"\p{gc=Latin}",
    r"\p{Script=L}",
    r"[\P{Greek}]",
]


@pytest.mark.parametrize("pattern", NOT_ECMA_PROPERTIES)
def test_a_property_ecma_262_does_not_name_is_refused_everywhere(pattern: str) -> None:
    with pytest.raises(EcmaRegexError, match="property") as info:
        compile_ecma(pattern)
    assert info.value.position == pattern.index("\\")
    with pytest.raises(SchemaError, match="not a valid regular expression"):
        Regex(pattern)
    with pytest.raises(SchemaError):
        FieldTracker({"pattern": pattern})
    tracker = FieldTracker({"format": "regex"}, formats="assert")
    with pytest.raises(SchemaViolation):
        tracker.feed(json.dumps(pattern) + " ")


def test_every_property_of_the_table_compiles_in_each_of_its_spellings() -> None:
    from sdk._regex._properties import BINARY, GENERAL_CATEGORY, SCRIPT

    spellings = [a for row in BINARY for a in row]
    spellings += [f"{k}={a}" for row in GENERAL_CATEGORY for a in row for k in ("gc", "")]
    spellings += [f"{k}={a}" for row in SCRIPT for a in row for k in ("sc", "scx")]
    for spelling in spellings:
        for letter in "pP":
            item = f"\\{letter}{{{spelling.lstrip('=')}}}"
            assert compile_ecma(f"{item}[{item}a]").search("\x00\x00") in (True, False)


# ---------------------------------------------------------------- escaped punctuation


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        # Node without the u flag (Annex B) reads each as the character; with it, refuses all
        # three outside a class. Rust's regex, xgrammar and llama.cpp's converter read them
        # alike: one rule, "an escaped ASCII punctuation character or _ is that character".
        (r"^a\_b$", ["a_b"], ["ab", "a\\_b"]),
        (r"^[\_]$", ["_"], ["\\"]),
        (r"^\~\@\-$", ["~@-"], ["~@"]),
        (r"^[\w\-\_]+$", ["a-_"], ["a b"]),
    ],
)
def test_an_escaped_punctuation_character_or_underscore_is_itself(
    pattern: str, yes: list[str], no: list[str]
) -> None:
    compiled = compile_ecma(pattern)
    assert all(compiled.search(t) for t in yes) and not any(compiled.search(t) for t in no)
    assert _document({"type": "string", "pattern": pattern}, [json.dumps(yes[0])]) == yes[0]
    formats = FieldTracker({"format": "regex"}, formats="assert")
    formats.feed(json.dumps(pattern))
    assert formats.close() == pattern
    assert _text(Regex(pattern), [yes[0]]) == yes[0]


@pytest.mark.parametrize("pattern", [r"\q", r"\_\e", r"\A", r"[\z]"])
def test_an_escaped_letter_without_a_meaning_is_still_refused(pattern: str) -> None:
    with pytest.raises(EcmaRegexError, match="not an ECMA-262 escape"):
        compile_ecma(pattern)


def test_other_engines_get_escaped_punctuation_as_the_character() -> None:
    # Rust's regex reads \< and \> as word boundaries, llama.cpp's GBNF refuses \_ and \~.
    assert portable(r"a\_b\~c\<d\>\@") == "a_b~c<d>@"
    assert portable(r"[\_\~\&\-\]]") == r"[_\~\&\-\]]"  # ~~ && -- are set operators in Rust
    assert portable(r"\.\-\/") == r"\.\-\/"


def test_a_pydantic_pattern_rust_reads_as_a_word_boundary_is_left_to_pydantic() -> None:
    # \< is "<" here and a word start in Rust's regex (pydantic's engine): not checked early.
    assert not no_wider_elsewhere(r"^a\<b$")
    assert no_wider_elsewhere(r"^a\_b$")  # "_" in both

    class Model(pydantic.BaseModel):
        s: str = pydantic.Field(pattern=r"^a\_b$")

    tracker = FieldTracker(Model)
    tracker.feed('{"s": "a')
    with pytest.raises(SchemaViolation):
        tracker.feed("-")  # refused at the first character that proves it
