"""GBNF (llama.cpp's EBNF, what xgrammar reads) -> llguidance's Lark, for the llama.cpp runtime.

llguidance's converter (``llguidance.gbnf_to_lark.any_to_lark``, 1.9.1) copies a ``\\uXXXX`` or
``\\UXXXXXXXX`` escape with its leading zeros stripped: ``"\\u0041bc"`` becomes ``"\\u41bc"``
(U+41BC), and any code point under U+1000 or above U+FFFF comes out as an escape Lark's lexer
refuses. So before converting, :func:`gbnf_lark` rewrites each such escape, in string literals
and character classes alike, into a form the converter copies unchanged and Lark reads as the
same code point:

=====================  ===================================================================
code point             written as
=====================  ===================================================================
below U+0100           ``\\xHH`` (a code point in Lark's literals and regexes, not a byte;
                       so ``"``, ``\\``, ``]``, ``-``, ``^`` stay literal where they were)
U+0100 .. U+0FFF       the character itself (never a GBNF or regex metacharacter)
U+1000 .. U+FFFF       ``\\uXXXX`` (four digits, no leading zero to strip)
above U+FFFF           the character itself (Lark has no eight-digit escape)
=====================  ===================================================================

Surrogates stay ``\\uXXXX`` (llguidance refuses them); an escape past U+10FFFF is left as
written (refused downstream). A backslash and the character after it are copied as a pair, so
``\\\\u0041`` (an escaped backslash, then ``u0041``) is left alone.
"""

from __future__ import annotations

import re

__all__ = ["gbnf_lark", "portable_escapes"]

_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|.)", re.DOTALL)


def _rewrite(match: re.Match[str]) -> str:
    digits = match.group(1) or match.group(2)
    if digits is None:
        return match.group(0)
    code = int(digits, 16)
    if code < 0x100:
        return f"\\x{code:02x}"
    if 0xD800 <= code <= 0xDFFF or 0x1000 <= code <= 0xFFFF:
        return f"\\u{code:04x}"
    if code <= 0x10FFFF:
        return chr(code)
    return match.group(0)


def portable_escapes(gbnf: str) -> str:
    """``gbnf`` with every ``\\uXXXX`` / ``\\UXXXXXXXX`` escape rewritten as the module
    docstring says (the grammar is otherwise unchanged)."""
    return _ESCAPE.sub(_rewrite, gbnf)


def gbnf_lark(gbnf: str) -> str:
    """``gbnf`` as llguidance's Lark (its escapes made portable first; text the converter takes
    for Lark already is returned as it is). Raises ValueError with the converter's reason when
    it cannot read the grammar."""
    from llguidance.gbnf_to_lark import gbnf_to_lark, is_lark_syntax

    if is_lark_syntax(gbnf):
        return gbnf
    try:
        return gbnf_to_lark(portable_escapes(gbnf))
    except Exception as exc:  # its parser raises its own error and assertion errors
        raise ValueError(f"llguidance cannot read the EBNF grammar: {exc}") from exc
