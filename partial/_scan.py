"""Character classes, compiled patterns and the number automaton the parser scans with.

Kept apart from the parser's state machine so that the machine reads as transitions only.
"""

from __future__ import annotations

import re

__all__ = [
    "ESCAPES",
    "HEX",
    "LITERALS",
    "NUMBER",
    "NUMBER_CHARS",
    "NUM_ACCEPTING",
    "NUM_START",
    "NUM_TRANS",
    "ROOT_START",
    "STRING_STOP",
    "STRING_STOP_LENIENT",
    "WHITESPACE",
]

WHITESPACE = re.compile(r"[ \t\n\r]+")
"""A run of JSON whitespace (RFC 8259 allows exactly these four)."""

STRING_STOP = re.compile(r'["\\\x00-\x1f]')
"""The next character inside a string that is not plain content: a quote, a backslash, or a raw
control character (an error in strict mode)."""

STRING_STOP_LENIENT = re.compile(r'["\\]')
"""The same, for lenient mode, which takes raw control characters as content
(``json.loads(strict=False)``)."""

ROOT_START = re.compile(r"[{\[]")
"""Lenient mode skips everything before the first of these."""

NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
"""A whole number; the fast path when a number and its delimiter arrive in one chunk."""

NUMBER_CHARS = frozenset("0123456789+-.eE")
"""Characters that may continue a number: after one of these the number is not final yet."""

ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}
"""Single-character escapes and what they stand for (``\\u`` is handled on its own)."""

HEX = frozenset("0123456789abcdefABCDEF")

LITERALS = {"t": ("true", True), "f": ("false", False), "n": ("null", None)}
"""First letter -> (the literal's text, its value)."""

# The number automaton, for numbers split across chunks. States:
#   0 start  1 after '-'  2 after a leading '0'  3 in integer digits  4 after '.'
#   5 in fraction digits  6 after 'e'  7 after the exponent's sign  8 in exponent digits
_DIGITS = "0123456789"
_NONZERO = "123456789"


def _trans(**edges: str) -> dict[str, int]:
    table: dict[str, int] = {}
    for target, chars in edges.items():
        for ch in chars:
            table[ch] = int(target[1:])
    return table


NUM_TRANS: tuple[dict[str, int], ...] = (
    _trans(s1="-", s2="0", s3=_NONZERO),
    _trans(s2="0", s3=_NONZERO),
    _trans(s4=".", s6="eE"),
    _trans(s3=_DIGITS, s4=".", s6="eE"),
    _trans(s5=_DIGITS),
    _trans(s5=_DIGITS, s6="eE"),
    _trans(s7="+-", s8=_DIGITS),
    _trans(s8=_DIGITS),
    _trans(s8=_DIGITS),
)
"""``NUM_TRANS[state][char]`` is the next state; a missing entry ends the number."""

NUM_ACCEPTING = frozenset({2, 3, 5, 8})
"""States in which the characters read so far are a whole number."""

NUM_START = 0

NUM_EXPECTED = {
    0: "a digit or '-'",
    1: "a digit",
    4: "a digit after '.'",
    6: "a digit or sign in the exponent",
    7: "a digit in the exponent",
}
"""What a number needs next, in the states where it cannot end."""
