"""RE2 decides exactly what the ``regex`` package decides (``sdk/_regex/_linear.py``).

A differential test on generated patterns and strings: for every pattern RE2 takes
(``compile_linear`` is not ``None``), RE2's ``search``/``fullmatch`` verdict must be the
``regex`` package's on the ECMA-262 translation (``sdk/_regex/_ecma.py``, itself held to Node's
``RegExp`` by ``tests/fuzz/fuzz_regex.py``), on strings with the characters where the engines'
defaults differ (line terminators, Unicode spaces and digits, non-ASCII letters, astral
characters). Patterns outside the subset must be refused, never misread.
"""

from __future__ import annotations

import random

import pytest
import re2

from sdk._regex._ecma import EcmaRegexError, compile_ecma
from sdk._regex._linear import available, compile_linear, to_re2

ATOMS = [
    "a",
    "b",
    "1",
    "_",
    "-",
    " ",
    "é",
    ".",
    "\\d",
    "\\D",
    "\\w",
    "\\W",
    "\\s",
    "\\S",
    "\\.",
    "\\-",
    "\\n",
    "\\r",
    "\\t",
    "\\v",
    "\\f",
    "\\0",
    "\\x41",
    "\\u00e9",
    "\\u{1F600}",
    "\\u2028",
    "[ab]",
    "[^ab]",
    "[a-c1]",
    "[\\d_]",
    "[^\\s]",
    "[\\s-]",
    "[^\\w]",
    "[\\b]",
    "[^]",
    "[.\\-]",
    "😀",
]
ASSERTIONS = ["^", "$", "\\b", "\\B"]
QUANTS = ["*", "+", "?", "{2}", "{1,3}", "{0,}", "*?", "+?", "??", "{1,2}?"]
OUTSIDE = [
    "\\B",
    "(?=a)",
    "(?!b)",
    "(?<=a)",
    "(?<!a)",
    "\\1",
    "\\p{L}",
    "\\cJ",
    "[]",
    "a{2000}",
    "x{",
]
CHARS = [
    "a",
    "b",
    "c",
    "1",
    "_",
    "-",
    " ",
    ".",
    "é",
    "A",
    "\n",
    "\r",
    "\t",
    "\x0b",
    "\x0c",
    "\x00",
    "\x08",
    "\u2028",
    "\u2029",
    "\xa0",
    "\ufeff",
    "\u3000",
    "\u0663",  # ARABIC-INDIC DIGIT THREE: \d in some engines
    "\u00b2",
    "😀",
    "K",
    "\u212a",  # KELVIN SIGN
]


def _pattern(rng: random.Random, depth: int = 0, names: list[int] | None = None) -> str:
    names = [] if names is None else names
    parts: list[str] = []
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        if r < 0.12 and depth < 2:
            inner = "|".join(_pattern(rng, depth + 1, names) for _ in range(rng.randint(1, 3)))
            names.append(len(names))
            opener = rng.choice(["(", "(?:", f"(?<g{len(names)}>"])
            atom = opener + inner + ")"
        elif r < 0.22:
            parts.append(rng.choice(ASSERTIONS))
            continue
        else:
            atom = rng.choice(ATOMS)
        if rng.random() < 0.35:
            atom += rng.choice(QUANTS)
        parts.append(atom)
    return "".join(parts)


def _subject(rng: random.Random) -> str:
    return "".join(rng.choice(CHARS) for _ in range(rng.randint(0, 8)))


def test_re2_is_installed_for_the_tests() -> None:
    assert available()  # the dev extra carries google-re2; without it RE2 is simply not used


@pytest.mark.parametrize("seed", range(4))
def test_re2_and_the_regex_package_agree_on_generated_patterns(seed: int) -> None:
    rng = random.Random(seed)
    taken = compared = 0
    for _ in range(600):
        source = _pattern(rng)
        try:
            exact = compile_ecma(source)
        except EcmaRegexError:  # "\\0" before a digit, say: not ECMA-262
            continue
        linear = compile_linear(source)
        if linear is None:
            continue
        taken += 1
        for _ in range(15):
            text = _subject(rng)
            for whole in (False, True):
                try:
                    want = (
                        exact._exact.fullmatch(text, timeout=1.0)
                        if whole
                        else exact._exact.search(text, timeout=1.0)
                    ) is not None
                except TimeoutError:
                    continue
                got = linear.fullmatch(text) if whole else linear.search(text)
                assert got == want, (source, to_re2(source), text, whole)
                compared += 1
    assert taken >= 500 and compared >= 14_000  # the subset covers the generated patterns


@pytest.mark.parametrize("construct", OUTSIDE)
def test_constructs_outside_the_subset_stay_with_the_regex_package(construct: str) -> None:
    for pattern in (construct, f"a{construct}", f"(?:{construct}|b)c"):
        try:
            compile_ecma(pattern)
        except ValueError:
            continue
        assert to_re2(pattern) is None, pattern


def test_a_text_re2_cannot_read_is_judged_by_the_regex_package() -> None:
    compiled = compile_ecma("^[^a]$")
    assert compiled._linear is not None
    with pytest.raises(UnicodeEncodeError):
        compiled._linear.search("\ud800")
    assert compiled.search("\ud800")  # a lone surrogate is one character that is not "a"


def test_the_program_uses_re2s_binding_and_agrees_with_its_wrapper() -> None:
    program = compile_linear("^a+$")
    assert program is not None and program._native is not None  # the fast path is taken
    wrapper = re2.compile("^a+$")
    for text in ("", "a", "aa", "ab", "ba", "é", "a\n"):
        assert program.search(text) == (wrapper.search(text) is not None)
        assert program.fullmatch(text) == (wrapper.fullmatch(text) is not None)
