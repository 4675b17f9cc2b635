"""A linear-time matcher for the patterns it can decide exactly: RE2 (``google-re2``, the
``re2`` extra), when installed.

RE2 never backtracks, so ``^(a|aa)+$`` costs O(length) there; :mod:`sdk._regex._budget` uses
it for a final check when :func:`compile_linear` gave a program, and the ``regex`` package
(under its time budget) otherwise. :func:`to_re2` reads the ECMA-262 pattern itself (not the
``regex``-package translation of :mod:`sdk._regex._ecma`) and emits RE2 syntax only for a subset
whose meaning is the same in both, by construction:

- literal characters (each emitted as ``\\x{...}``), ``^`` and ``$`` (start and end of the
  text: RE2 without the ``m`` flag, like ECMA-262 without it), groups (named or not; captures
  do not change whether a match exists), alternation, the quantifiers ``* + ? {n} {n,}
  {n,m}`` and their lazy forms (up to RE2's 1000);
- ``\\d \\D \\w \\W \\b`` (ASCII in both), ``\\s \\S`` and ``.`` (spelled as ECMA's sets),
  the character escapes ``\\t \\n \\v \\f \\r \\0 \\xHH \\uHHHH \\u{H...}`` (no surrogate) and an
  escaped syntax character;
- classes of those, with ranges of single characters, and ``[^]``.

Anything else — lookarounds, backreferences, ``\\B`` (RE2 reads UTF-8 bytes, and finds a
"non-boundary" inside a multi-byte character: ``\\B`` matches in ``"a\\ufeffK"`` there, not in
ECMA-262; the differential test found it), ``\\p{...}``, ``\\cX``, a ``{`` that is no
quantifier, an empty class, a surrogate, a syntax error — gives ``None``: the pattern stays
with the ``regex`` package. A text RE2 cannot take (a lone surrogate, which UTF-8 cannot
encode) is matched by the ``regex`` package too. The differential test
(``tests/sdk/regex/test_linear.py``) holds the two engines to the same verdicts.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LinearProgram", "available", "compile_linear", "to_re2"]

try:  # the ``re2`` extra
    import re2 as _re2  # type: ignore[import-not-found,import-untyped,unused-ignore]
except ImportError:  # pragma: no cover - depends on the environment
    _re2 = None
try:  # its binding, without the wrapper's Match objects (2-8x faster for a yes/no)
    from re2 import _re2 as _binding  # type: ignore[import-not-found,import-untyped,unused-ignore]
except ImportError:  # pragma: no cover - depends on the environment
    _binding = None

_SPACE = (
    "\\x{9}\\x{a}\\x{b}\\x{c}\\x{d}\\x{20}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}"
    "\\x{2029}\\x{202f}\\x{205f}\\x{3000}\\x{feff}"
)
_DOT = "[^\\x{a}\\x{d}\\x{2028}\\x{2029}]"
_CONTROL = {"t": 9, "n": 10, "v": 11, "f": 12, "r": 13}
_SYNTAX = frozenset("^$\\.*+?()[]{}|/-")
_MAX_REPEAT = 1000


class _Unsupported(Exception):
    """The pattern is outside the subset."""


class LinearProgram:
    """RE2's program for one pattern: :meth:`search` and :meth:`fullmatch` answer yes or no.
    A ``str`` RE2 cannot encode (a lone surrogate) raises ``UnicodeEncodeError``."""

    __slots__ = ("_both", "_compiled", "_native", "_none")

    def __init__(self, compiled: Any) -> None:
        self._compiled = compiled  # the wrapper's object (kept: it owns the program)
        native = getattr(compiled, "_regexp", None)
        anchor = getattr(_binding, "RE2", None) and _binding.RE2.Anchor
        if native is None or not anchor or not hasattr(native, "Match"):
            native = None  # pragma: no cover - another google-re2 layout: the wrapper's calls
        self._native = native
        self._none = anchor.UNANCHORED if anchor else None
        self._both = anchor.ANCHOR_BOTH if anchor else None

    def search(self, text: str) -> bool:
        """Whether the pattern matches somewhere in ``text``."""
        native = self._native
        if native is None:  # pragma: no cover
            return self._compiled.search(text) is not None
        data = text.encode("utf-8")
        return bool(native.Match(self._none, data, 0, len(data))[0][0] != -1)

    def fullmatch(self, text: str) -> bool:
        """Whether the pattern matches the whole of ``text``."""
        native = self._native
        if native is None:  # pragma: no cover
            return self._compiled.fullmatch(text) is not None
        data = text.encode("utf-8")
        return bool(native.Match(self._both, data, 0, len(data))[0][0] != -1)


def available() -> bool:
    """Whether ``google-re2`` is installed."""
    return _re2 is not None


def compile_linear(pattern: str) -> LinearProgram | None:
    """RE2's program for the ECMA-262 ``pattern``, or ``None`` (RE2 not installed, or the
    pattern outside the subset, or too large for RE2)."""
    if _re2 is None:
        return None
    source = to_re2(pattern)
    if source is None:
        return None
    options = _re2.Options()
    options.log_errors = False
    try:
        return LinearProgram(_re2.compile(source, options=options))
    except _re2.error:
        return None


def to_re2(pattern: str) -> str | None:
    """``pattern`` (ECMA-262, ``u`` flag) in RE2 syntax with the same meaning, or ``None``."""
    try:
        return _Emitter(pattern).run()
    except _Unsupported:
        return None


def _hex(code: int) -> str:
    if 0xD800 <= code <= 0xDFFF:
        raise _Unsupported
    return f"\\x{{{code:x}}}"


class _Emitter:
    __slots__ = ("depth", "i", "out", "src")

    def __init__(self, src: str) -> None:
        self.src = src
        self.i = 0
        self.depth = 0
        self.out: list[str] = []

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.src[j] if j < len(self.src) else ""

    def run(self) -> str:
        atom = False  # whether a quantifier may follow
        while self.i < len(self.src):
            c = self.src[self.i]
            if c in "*+?":
                if not atom:
                    raise _Unsupported
                self.i += 1
                self.out.append(c)
                self._lazy()
                atom = False
            elif c == "{":
                if not atom:
                    raise _Unsupported
                self._braces()
                atom = False
            elif c == "(":
                self._open()
                atom = False
            elif c == ")":
                if self.depth == 0:
                    raise _Unsupported
                self.depth -= 1
                self.i += 1
                self.out.append(")")
                atom = True
            elif c == "|":
                self.i += 1
                self.out.append("|")
                atom = False
            elif c in "^$":
                self.i += 1
                self.out.append(c)
                atom = False  # a quantified assertion is refused, as ECMA-262 does with u
            elif c == ".":
                self.i += 1
                self.out.append(_DOT)
                atom = True
            elif c == "[":
                self.out.append(self._class())
                atom = True
            elif c == "\\":
                item, atom = self._escape()
                self.out.append(item)
            elif c in "]}":
                raise _Unsupported  # a syntax error with the u flag
            else:
                self.i += 1
                self.out.append(_hex(ord(c)))
                atom = True
        if self.depth:
            raise _Unsupported
        return "".join(self.out)

    def _lazy(self) -> None:
        if self.peek() == "?":
            self.i += 1
            self.out.append("?")

    def _braces(self) -> None:
        j = self.src.find("}", self.i)
        body = self.src[self.i + 1 : j] if j > 0 else ""
        low, comma, high = body.partition(",")
        if not low.isdigit() or (high and not high.isdigit()) or not low.isascii():
            raise _Unsupported  # a literal "{" (Annex B), or a syntax error with u
        if int(low) > _MAX_REPEAT or (high and int(high) > _MAX_REPEAT):
            raise _Unsupported
        if high and int(high) < int(low):
            raise _Unsupported
        self.out.append("{" + str(int(low)) + comma + (str(int(high)) if high else "") + "}")
        self.i = j + 1
        self._lazy()

    def _open(self) -> None:
        src, i = self.src, self.i
        if src.startswith("(?:", i):
            self.i += 3
        elif src.startswith("(?<", i) and not src.startswith(("(?<=", "(?<!"), i):
            j = src.find(">", i)
            name = src[i + 3 : j] if j > 0 else ""
            if not name or not all(ch.isascii() and (ch.isalnum() or ch in "_$") for ch in name):
                raise _Unsupported
            self.i = j + 1
        elif src.startswith("(?", i):
            raise _Unsupported  # lookarounds and anything else
        else:
            self.i += 1
        self.out.append("(?:")
        self.depth += 1

    def _escape(self) -> tuple[str, bool]:
        """An escape outside a class: its RE2 form, and whether it is an atom."""
        e = self.peek(1)
        self.i += 2
        if e in "dDwW":
            return "\\" + e, True
        if e == "s":
            return f"[{_SPACE}]", True
        if e == "S":
            return f"[^{_SPACE}]", True
        if e == "b":
            return "\\b", False
        return _hex(self._char_escape(e)), True

    def _char_escape(self, e: str) -> int:
        """The code point of the character escape ``\\e`` (``self.i`` is after ``e``)."""
        if e in _CONTROL:
            return _CONTROL[e]
        if e == "0":
            if self.peek().isdigit():
                raise _Unsupported
            return 0
        if e == "x":
            h = self.src[self.i : self.i + 2]
            if len(h) != 2 or not _is_hex(h):
                raise _Unsupported
            self.i += 2
            return int(h, 16)
        if e == "u":
            if self.peek() == "{":
                j = self.src.find("}", self.i)
                h = self.src[self.i + 1 : j] if j > 0 else ""
                if not h or not _is_hex(h) or int(h, 16) > 0x10FFFF:
                    raise _Unsupported
                self.i = j + 1
                return int(h, 16)
            h = self.src[self.i : self.i + 4]
            if len(h) != 4 or not _is_hex(h):
                raise _Unsupported
            self.i += 4
            return int(h, 16)
        if e and e in _SYNTAX:
            return ord(e)
        raise _Unsupported  # backreferences, \p, \c, \k and the rest

    def _class(self) -> str:
        self.i += 1
        negated = self.peek() == "^"
        if negated:
            self.i += 1
        items: list[str] = []
        while True:
            c = self.peek()
            if not c:
                raise _Unsupported
            if c == "]":
                self.i += 1
                break
            first, code = self._class_atom()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                second, code2 = self._class_atom()
                if code is None or code2 is None or code > code2:
                    raise _Unsupported
                items.append(f"{first}-{second}")
            else:
                items.append(first)
        if not items:
            if negated:  # [^]: any character
                return "[\\x{0}-\\x{10ffff}]"
            raise _Unsupported  # []: nothing
        return ("[^" if negated else "[") + "".join(items) + "]"

    def _class_atom(self) -> tuple[str, int | None]:
        c = self.peek()
        if c != "\\":
            self.i += 1
            return _hex(ord(c)), ord(c)
        e = self.peek(1)
        if e in "dDwW":
            self.i += 2
            return "\\" + e, None
        if e == "s":
            self.i += 2
            return _SPACE, None
        if e == "b":
            self.i += 2
            return _hex(8), 8
        if e == "-":
            self.i += 2
            return _hex(ord("-")), ord("-")
        self.i += 2
        code = self._char_escape(e)
        return _hex(code), code


def _is_hex(text: str) -> bool:
    return all(ch in "0123456789abcdefABCDEF" for ch in text)
