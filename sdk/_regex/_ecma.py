"""ECMA-262 regular expressions, compiled for Python: the one place a pattern is read.

JSON Schema defines ``pattern``, ``patternProperties`` and the ``regex`` format as ECMA-262
regular expressions (with Unicode semantics, the ``u`` flag), and the servers' grammar
engines read them that way; :class:`~sdk.Regex` constraints are read the same. Python's regex
engines differ in ways that change verdicts (``\\d`` takes every Unicode digit, ``$`` matches
before a final newline, ``.`` crosses ``\\r``...), so a pattern is never handed to them as it
is: :func:`compile_ecma` parses it as ECMA-262 and emits an equivalent pattern for the
``regex`` package, in which

- ``\\d``, ``\\w``, ``\\s`` (and their negations) are ECMA's sets: ASCII digits, ASCII word
  characters, ECMA's own list of white space and line terminators; ``\\b``/``\\B`` are
  boundaries of ASCII word characters;
- ``.`` excludes the four line terminators; ``$`` is the end of the text, ``^`` its start;
- ``\\uXXXX`` (surrogate pairs joined), ``\\u{X...}``, ``\\xHH``, ``\\cX``, ``\\0``, ``[^]`` and
  ``[]`` mean what ECMA says;
- ``\\p{...}``/``\\P{...}`` name exactly the properties ECMA-262 lists, spelled as it spells
  them (``sdk/_regex/_properties.py``, the table); others (``\\p{Greek}``, ``\\p{l}``) are
  refused;
- named groups ``(?<n>...)`` and ``\\k<n>``, lookahead and (variable-width) lookbehind work;
  a backreference to a group that has not matched matches the empty string; the groups inside
  a repeated atom are cleared at the start of every repetition, and past the minimum a
  repetition that matches the empty string is refused (ECMA's RepeatMatcher); a lazy
  quantifier stays lazy (inside an atomic lookahead it decides what is captured).

Refused, with :class:`EcmaRegexError` saying where: a syntax error, and the syntax of other
dialects that ECMA-262 does not have (``(?P<n>...)``, ``(?#...)``, inline flags ``(?i)``,
``\\A``, ``\\Z``, ``\\a`` and any other escaped letter or digit without an ECMA meaning). An
escaped ASCII character that is neither a letter nor a digit (``\\-``, ``\\_``, ``\\~``, ``\\@``)
is that character, as Annex B, Rust's ``regex`` and xgrammar read it (ECMA's Unicode mode
refuses those that are not syntax characters; docs/patterns.md gives the survey), and a ``{``
that does not begin a quantifier is literal.

**Prefixes.** The tracker asks, while a string streams, whether some continuation of the text
so far can still match (``could_search`` / ``could_fullmatch``). The ``regex`` package's
``partial=True`` answers that for regular constructs, but it takes the end of the text so far
for the end of the text at a word boundary, and misjudges lookbehind (``[ab]*?(?<=a)``
refuses ``"b"``). So prefixes are matched against a *relaxed* pattern whose language contains
the original's: a boundary may also hold at the end of the text so far, lookarounds are
dropped, quantifiers are greedy (which never changes whether a match exists). A pattern with
a backreference is not checked on prefixes at all. A prefix is therefore refused only when no
continuation can match; the full text is always checked with the exact pattern.

**Matching** a model's text runs under a time budget (:mod:`sdk._regex._budget`), and a final
check goes to RE2 where it decides the pattern exactly (:mod:`sdk._regex._linear`).
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field

import regex

from sdk._constants import DEFAULT_MAX_PATTERN_SIZE
from sdk._regex import _budget
from sdk._regex._linear import LinearProgram, compile_linear
from sdk._regex._properties import property_class

__all__ = [
    "EcmaRegex",
    "EcmaRegexError",
    "PatternTooLarge",
    "compile_ecma",
    "loosen_counts",
    "no_wider_elsewhere",
    "pattern_limit",
    "pattern_size",
    "portable",
]

pattern_limit: ContextVar[int | None] = ContextVar(
    "fieldstream_pattern_limit", default=DEFAULT_MAX_PATTERN_SIZE
)
"""The limit the schema compiler applies to the patterns it meets (``None``: none); set by
:func:`sdk.compile_schema` for the duration of one compilation."""

_DIGIT = "0-9"
_WORD = "A-Za-z0-9_"
# ECMA-262 WhiteSpace and LineTerminator: TAB VT FF SP NBSP ZWNBSP, Zs, LF CR LS PS.
_SPACE = (
    "\\t\\n\\x0b\\x0c\\r\\x20\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
)
_LINE_END = "\\n\\r\\u2028\\u2029"
# The same sets for other engines, in escapes that Rust's regex and xgrammar both read.
_PORTABLE_SETS = {
    "d": _DIGIT,
    "w": _WORD,
    "s": "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff",
}
_PORTABLE_DOT = f"[^{_LINE_END}]"
_SETS = {"d": _DIGIT, "w": _WORD, "s": _SPACE}
_BOUNDARY = f"(?:(?<=[{_WORD}])(?![{_WORD}])|(?<![{_WORD}])(?=[{_WORD}]))"
_NOT_BOUNDARY = f"(?:(?<=[{_WORD}])(?=[{_WORD}])|(?<![{_WORD}])(?![{_WORD}]))"
_CONTROL = {"t": 9, "n": 10, "v": 11, "f": 12, "r": 13}
_SYNTAX = frozenset("^$\\.*+?()[]{}|/")
# Escapes ECMA-262's Unicode mode refuses that every engine in use reads as the character
# (docs/patterns.md, "Escaped punctuation"): an escaped ASCII character that is neither a
# letter, a digit, a syntax character nor ``-``. ``portable`` writes them unescaped.
_LENIENT_ESCAPES = frozenset(
    c for c in map(chr, range(0x21, 0x7F)) if not c.isalnum() and c not in _SYNTAX and c != "-"
)
_FLAGS = regex.V1  # nested sets: [\D] is [[^0-9]]
_COUNTED = regex.compile(r"\{(\d+)(,(\d*))?\}")


def _bounds(quant: str) -> tuple[int, int | None]:
    """A quantifier's least and greatest counts (``None``: no limit)."""
    if quant in ("*", "+", "?"):
        return (1 if quant == "+" else 0), (1 if quant == "?" else None)
    low, comma, high = quant[1:-1].partition(",")
    return int(low), (int(high) if high else None) if comma else int(low)


class EcmaRegexError(ValueError):
    """A pattern that is not an ECMA-262 regular expression: ``message`` and the ``position``
    (an index into the pattern) where reading it failed."""

    def __init__(self, message: str, pattern: str, position: int) -> None:
        super().__init__(f"{message} at position {position}")
        self.message = message
        self.pattern = pattern
        self.position = position


class PatternTooLarge(EcmaRegexError):
    """A valid ECMA-262 pattern too large to compile in reasonable time: its repetitions
    expand to ``size`` elements (:func:`pattern_size`), more than ``limit``; ``position`` is
    the quantifier where the size first passes the limit."""

    def __init__(self, pattern: str, position: int, size: int, limit: int) -> None:
        super().__init__(
            f"its repetitions expand to {size:,} elements when compiled, more than the limit "
            f"of {limit:,}",
            pattern,
            position,
        )
        self.size = size
        self.limit = limit


def _char(code: int) -> str:
    """One code point as an escape both inside and outside a class of the ``regex`` package."""
    c = chr(code)
    if c.isalnum() and code < 0x80:
        return c
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


@dataclass(slots=True)
class _Out:
    """The two translations built side by side: exact, and relaxed for prefixes."""

    exact: list[str] = field(default_factory=list)
    loose: list[str] = field(default_factory=list)

    def both(self, text: str) -> None:
        self.exact.append(text)
        self.loose.append(text)


class _Reader:
    """A recursive-descent reader of the ECMA-262 pattern grammar (Unicode mode, lenient on
    escaped punctuation and lone braces)."""

    def __init__(self, pattern: str) -> None:
        self.src = pattern
        self.i = 0
        self.out = _Out()
        self.backrefs = False
        self.groups = 0
        self.names: set[str] = set()
        self.seen: set[str] = set()
        self.numbers: dict[str, int] = {}  # group names and their numbers
        self.has_backrefs = False  # any backreference in the pattern (from the first scan)
        self.opened = 0  # capturing groups opened so far
        self.open: list[int] = []  # the groups being read (0: not capturing)
        self.behind = False  # inside a lookbehind (the regex package matches it backwards)
        self.marks = 0  # position marks emitted (see repeat())
        self.counted: list[tuple[int, int]] = []  # where each {n}, {n,}, {n,m} is written
        self.size = 0  # what the regex package expands the pattern to (see term())
        self.max_size: int | None = None  # where the size first passes it, ``over`` says
        self.over: int | None = None
        # Constructs Python's and Rust's engines read more widely than ECMA-262 does.
        self.unicode_sets = False  # \d \w \s \b (and negations), ``.``, (?i:)
        self.dollar = False
        self._count_groups()

    # -- helpers

    def fail(self, message: str, at: int | None = None) -> EcmaRegexError:
        return EcmaRegexError(message, self.src, self.i if at is None else at)

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.src[j] if j < len(self.src) else ""

    def take(self, text: str) -> bool:
        if self.src.startswith(text, self.i):
            self.i += len(text)
            return True
        return False

    def _count_groups(self) -> None:
        """Capturing groups and names, for backreferences that come before their group."""
        s, i, in_class = self.src, 0, False
        while i < len(s):
            c = s[i]
            if c == "\\":
                if not in_class and (
                    s[i + 1 : i + 2] in tuple("123456789") or s[i + 1 : i + 2] == "k"
                ):
                    self.has_backrefs = True
                i += 2
                continue
            if in_class:
                in_class = c != "]"
            elif c == "[":
                in_class = True
            elif c == "(":
                if not s.startswith("?", i + 1):
                    self.groups += 1
                elif s.startswith("?<", i + 1) and s[i + 3 : i + 4] not in ("=", "!"):
                    self.groups += 1
                    end = s.find(">", i + 3)
                    if end > 0:
                        self.names.add(s[i + 3 : end])
                        self.numbers.setdefault(s[i + 3 : end], self.groups)
            i += 1

    # -- grammar

    def pattern(self) -> _Out:
        self.disjunction()
        if self.i < len(self.src):
            raise self.fail(f"unmatched {self.peek()!r}")
        return self.out

    def disjunction(self) -> None:
        self.alternative()
        while self.take("|"):
            self.out.both("|")
            self.alternative()

    def alternative(self) -> None:
        while self.i < len(self.src) and self.peek() not in "|)":
            self.term()

    def term(self) -> None:
        out = self.out
        mark, loose_mark, first = len(out.exact), len(out.loose), self.opened + 1
        before = self.size
        quantifiable = self.atom()
        # The size: an atom counts 1, a group what the terms inside it count, and a quantifier
        # multiplies by its least count (plus one copy for the optional rest): the regex
        # package writes out the required repetitions when it compiles (a{1000000} takes half
        # a second, ((a{1000}){1000}){1000} does not finish) and loops over the rest.
        atom_size = max(self.size - before, 1)
        self.size = before + atom_size
        at = self.i
        quant = self.quantifier()
        if quant is None:
            self._check_size(at)
            return
        if not quantifiable:
            raise self.fail("nothing to repeat", at)
        text, lazy = quant
        low, high = _bounds(text)
        self.size = before + atom_size * max(low, 1) + (atom_size if high != low else 0)
        self._check_size(at)
        out.loose.append(text)  # greedy or lazy: the same matches exist
        if self.has_backrefs and self.opened >= first:
            atom = "".join(out.exact[mark:])
            loose = "".join(out.loose[loose_mark:-1])
            out.exact[mark:] = [self.repeat(atom, loose, first, text, "?" if lazy else "")]
        else:
            out.exact.append(text + ("?" if lazy else ""))

    def _check_size(self, at: int) -> None:
        if self.over is None and self.max_size is not None and self.size > self.max_size:
            self.over = at

    def repeat(self, atom: str, loose: str, first: int, quant: str, lazy: str) -> str:
        """A repeated atom holding groups ``first``... in a pattern with backreferences, as
        ECMA-262's RepeatMatcher runs it (``lazy``: ``"?"`` or ``""``).

        ECMA clears the captures of the atom's groups at the start of every repetition; the
        regex package keeps the last ones. A group that captured "" matches as a cleared one
        does (the empty string), so each repetition first captures "" in every group inside
        (last, in a lookbehind, which the regex package matches right to left). And once the
        minimum is reached ECMA refuses a repetition that matched the empty string (which
        could clear a capture): there, a repetition of an atom that can match "" must end
        elsewhere than where it began (the text after its start is captured, and must not
        follow its end)."""
        resets = "".join(f"(?P<g{n}>)" for n in range(first, self.opened + 1))
        body = f"(?:{atom}{resets})" if self.behind else f"(?:{resets}{atom})"
        low, high = _bounds(quant)
        every = "".join(f"(?P<g{n}>)" for n in range(1, self.groups + 1))
        if high == low or regex.fullmatch(every + loose, "", _FLAGS) is None:
            return body + quant + lazy
        self.marks += 1
        here = f"e{self.marks}"
        mark, check = f"(?=(?P<{here}>[\\s\\S]*))", f"(?!(?P={here})\\Z)"
        moved = f"(?:{check}{body}{mark})" if self.behind else f"(?:{mark}{body}{check})"
        rest = moved + ("*" if high is None else f"{{0,{high - low}}}") + lazy
        fixed = f"{body}{{{low}}}" if low else ""
        # Backwards, in a lookbehind, the first repetitions are the rightmost ones.
        return rest + fixed if self.behind else fixed + rest

    def quantifier(self) -> tuple[str, bool] | None:
        c = self.peek()
        if c in ("*", "+", "?"):
            self.i += 1
            text = c
        elif c == "{":
            m = _COUNTED.match(self.src, self.i)
            if m is None:
                return None  # a literal brace, read by atom()
            low, high = int(m.group(1)), m.group(3)
            if high and int(high) < low:
                raise self.fail("numbers out of order in {} quantifier")
            self.counted.append((self.i, m.end()))
            self.i = m.end()
            text = m.group(0)
        else:
            return None
        # Lazy matters in the exact pattern: a lookahead is atomic, so what a lazy quantifier
        # inside it captures first is what a later backreference sees.
        return text, self.take("?")

    def atom(self) -> bool:
        """Read one atom; return whether a quantifier may follow it."""
        c = self.peek()
        out = self.out
        if c == "^":
            self.i += 1
            out.both("\\A")
            return False
        if c == "$":
            self.i += 1
            self.dollar = True
            out.both("\\Z")
            return False
        if c == ".":
            self.i += 1
            self.unicode_sets = True
            out.both(f"[^{_LINE_END}]")
            return True
        if c == "(":
            return self.group()
        if c == "[":
            self.char_class()
            return True
        if c == "\\":
            return self.escape()
        if c in "*+?":
            raise self.fail("nothing to repeat")
        if c == "{" and self.quantifier() is not None:
            raise self.fail("nothing to repeat")
        self.i += 1
        out.both(_char(ord(c)))
        return True

    def group(self) -> bool:
        self.i += 1  # (
        out = self.out
        look = None
        number = 0  # a capturing group's number
        if self.take("?:"):
            out.both("(?:")
        elif self.take("?="):
            look = "(?="
        elif self.take("?!"):
            look = "(?!"
        elif self.take("?<="):
            look = "(?<="
        elif self.take("?<!"):
            look = "(?<!"
        elif self.take("?<"):
            m = regex.match(r"[A-Za-z_$][A-Za-z0-9_$]*>", self.src[self.i :])
            if m is None:
                raise self.fail("invalid group name")
            name = m.group(0)[:-1]
            if name in self.seen:
                raise self.fail(f"duplicate group name {name!r}")
            self.seen.add(name)
            self.opened += 1
            number = self.numbers[name] = self.opened
            self.i += m.end()
            out.exact.append(f"(?P<g{number}>")
            out.loose.append("(")
        elif (m := regex.match(r"\?(i?)(?:-(i?))?:", self.src[self.i :])) and m.group(0) != "?:":
            # ES2025 modifiers, ``i`` only (``m`` and ``s`` would change ``^``, ``$`` and
            # ``.``). ECMA folds case simply, not fully: -f keeps "ß" from matching "SS".
            if (m.group(1) and m.group(2)) or m.group(0) == "?-:":
                raise self.fail("invalid modifiers group")
            self.i += m.end()
            self.unicode_sets = True
            out.both("(?i-f:" if m.group(1) else "(?-i:")
        elif self.peek() == "?":
            raise self.fail(
                "unsupported group syntax (ECMA-262 has (?:...), (?=...), (?!...), (?<=...), "
                "(?<!...), (?i:...) and (?<name>...); not Python's (?P...), (?#...) or inline "
                "flags)"
            )
        else:
            self.opened += 1
            number = self.opened
            out.exact.append(f"(?P<g{number}>")  # every group by a name: see term()
            out.loose.append("(")
        if look is None:
            self.open.append(number)
            self.disjunction()
            self.open.pop()
            if not self.take(")"):
                raise self.fail("missing )")
            out.both(")")
            return True
        # A lookaround: exact in the full pattern, dropped (always true) in the relaxed one.
        out.exact.append(look)
        loose = out.loose
        out.loose = []
        behind = self.behind
        self.behind = look.startswith("(?<")  # a lookahead inside a lookbehind runs forwards
        self.disjunction()
        self.behind = behind
        out.loose = loose
        if not self.take(")"):
            raise self.fail("missing )")
        out.exact.append(")")
        loose.append("(?:)")
        return look in ("(?=", "(?!")  # Annex B lets a lookahead be quantified

    def escape(self) -> bool:
        start = self.i
        self.i += 1  # backslash
        c = self.peek()
        out = self.out
        if not c:
            raise self.fail("\\ at end of pattern", start)
        if c in ("b", "B"):
            self.i += 1
            self.unicode_sets = True
            exact = _BOUNDARY if c == "b" else _NOT_BOUNDARY
            out.exact.append(exact)
            out.loose.append(f"(?:{exact}|\\Z)")  # the text so far may go on
            return False
        if c in "123456789":
            m = regex.match(r"\d+", self.src[self.i :])
            assert m is not None
            number = int(m.group(0))
            if number > self.groups:
                raise self.fail(f"backreference \\{number} to a group that does not exist", start)
            self.i += m.end()
            self.backref(number)
            return True
        if c == "k":
            m = regex.match(r"k<([A-Za-z_$][A-Za-z0-9_$]*)>", self.src[self.i :])
            if m is None or m.group(1) not in self.names:
                raise self.fail("\\k must name a group of the pattern: \\k<name>", start)
            self.i += m.end()
            self.backref(self.numbers[m.group(1)])
            return True
        item = self.class_escape(start, in_class=False)
        out.both(item)
        return True

    def backref(self, group: int) -> None:
        """A backreference to group number ``group``."""
        self.backrefs = True
        if group in self.open:  # inside its own group: ECMA has it empty there
            self.out.both("(?:)")
            return
        # ECMA: a group that has not matched (yet) matches the empty string; Python fails.
        self.out.both(f"(?(g{group})(?P=g{group})|)")

    def class_escape(self, start: int, *, in_class: bool) -> str:
        """An escape after its backslash, as a class item (a char, a set, a property)."""
        c = self.peek()
        self.i += 1
        low = c.lower()
        if low in _SETS:
            self.unicode_sets = True
            body = _SETS[low]
            if c.islower():
                return body if in_class else f"[{body}]"
            return f"[^{body}]"
        if c in ("p", "P"):
            m = regex.match(r"\{([A-Za-z0-9_=]+)\}", self.src[self.i :])
            if m is None:
                raise self.fail(f"\\{c} needs a property name in braces", start)
            item = property_class(m.group(1), negated=c == "P")
            if item is None:
                raise self.fail(
                    f"\\{c}{m.group(0)} is not a Unicode property ECMA-262 has (General_Category,"
                    " Script, Script_Extensions or a binary property, spelled exactly)",
                    start,
                )
            self.i += m.end()
            return item
        return _char(self.char_escape(c, start, in_class=in_class))

    def char_escape(self, c: str, start: int, *, in_class: bool) -> int:
        """The code point of a character escape (after ``\\`` and ``c``)."""
        if c in _CONTROL:
            return _CONTROL[c]
        if c == "b" and in_class:
            return 8
        if c == "0" and not self.peek().isdigit():
            return 0
        if c == "c":
            letter = self.peek()
            if not (letter.isascii() and letter.isalpha()):
                raise self.fail("\\c must be followed by a letter", start)
            self.i += 1
            return ord(letter) % 32
        if c == "x":
            m = regex.match(r"[0-9A-Fa-f]{2}", self.src[self.i :])
            if m is None:
                raise self.fail("\\x needs two hex digits", start)
            self.i += 2
            return int(m.group(0), 16)
        if c == "u":
            return self.unicode_escape(start)
        if c == "-" and in_class:
            return ord("-")
        if c and c.isascii() and not c.isalnum():
            return ord(c)  # an escaped ASCII punctuation character (or "_") is itself
        raise self.fail(f"\\{c} is not an ECMA-262 escape", start)

    def unicode_escape(self, start: int) -> int:
        rest = self.src[self.i :]
        m = regex.match(r"\{([0-9A-Fa-f]+)\}", rest)
        if m is not None:
            code = int(m.group(1), 16)
            if code > 0x10FFFF:
                raise self.fail("\\u{...} beyond U+10FFFF", start)
            self.i += m.end()
            return code
        m = regex.match(r"[0-9A-Fa-f]{4}", rest)
        if m is None:
            raise self.fail("\\u needs four hex digits or {hex}", start)
        self.i += 4
        code = int(m.group(0), 16)
        if 0xD800 <= code < 0xDC00:  # a surrogate pair written as two escapes is one character
            m = regex.match(r"\\u(d[c-f][0-9a-f]{2})", self.src[self.i :], regex.IGNORECASE)
            if m is not None:
                self.i += m.end()
                code = 0x10000 + ((code - 0xD800) << 10) + (int(m.group(1), 16) - 0xDC00)
        return code

    def char_class(self) -> None:
        start = self.i
        self.i += 1  # [
        negated = self.take("^")
        items: list[str] = []
        while True:
            c = self.peek()
            if not c:
                raise self.fail("unterminated character class", start)
            if c == "]":
                self.i += 1
                break
            first, code = self.class_atom()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                second, code2 = self.class_atom()
                if code is None or code2 is None:
                    items.extend((first, "\\-", second))  # Annex B: a set in a range is literal
                elif code > code2:
                    raise self.fail("range out of order in character class", start)
                else:
                    items.append(f"{first}-{second}")
            else:
                items.append(first)
        if not items:
            self.out.both("[\\s\\S]" if negated else "(?!)")  # [^] is any character, [] none
            return
        self.out.both(("[^" if negated else "[") + "".join(items) + "]")

    def class_atom(self) -> tuple[str, int | None]:
        """One class atom: its translation and, for a single character, its code point."""
        c = self.peek()
        if c != "\\":
            self.i += 1
            return _char(ord(c)), ord(c)
        start = self.i
        self.i += 1
        e = self.peek()
        if e.lower() in _SETS or e in ("p", "P"):
            item = self.class_escape(start, in_class=True)
            return item, None
        self.i += 1
        code = self.char_escape(e, start, in_class=True)
        return _char(code), code


class EcmaRegex:
    """An ECMA-262 pattern compiled for Python (see the module docstring). Immutable."""

    __slots__ = ("_exact", "_linear", "_loose", "source")

    def __init__(
        self,
        source: str,
        exact: regex.Pattern[str],
        loose: regex.Pattern[str] | None,
        linear: LinearProgram | None = None,
    ):
        self.source = source
        """The pattern as written."""
        self._exact = exact
        self._loose = loose
        self._linear = linear  # RE2's program, when it decides this pattern (sdk._regex._linear)

    def __repr__(self) -> str:
        return f"EcmaRegex({self.source!r})"

    def search(self, text: str) -> bool:
        """Whether the pattern matches somewhere in ``text`` (JSON Schema's ``pattern``), within
        the time budget in force (:mod:`sdk._regex._budget`: ``BudgetSpent`` when it runs out)."""
        return _budget.search(self._exact, self.source, text, self._linear)

    def fullmatch(self, text: str) -> bool:
        """Whether the pattern matches the whole of ``text`` (a :class:`~sdk.Regex`), within
        the time budget in force (``BudgetSpent`` when it runs out)."""
        return _budget.fullmatch(self._exact, self.source, text, self._linear)

    def could_search(self, prefix: str) -> bool:
        """False only when no text that starts with ``prefix`` has a match (:meth:`search`);
        True when the time budget runs out (the final check decides)."""
        loose = self._loose
        return loose is None or _budget.could(loose, prefix, whole=False, linear=self._linear)

    def could_fullmatch(self, prefix: str) -> bool:
        """False only when no text that starts with ``prefix`` is a full match; True when the
        time budget runs out (the final check decides)."""
        loose = self._loose
        return loose is None or _budget.could(loose, prefix, whole=True, linear=self._linear)


def _read(pattern: str, max_size: int | None = None) -> _Reader:
    reader = _Reader(pattern)
    reader.max_size = max_size
    reader.pattern()
    return reader


def translate(pattern: str) -> tuple[str, str | None]:
    """The ``regex``-package pattern with ECMA-262's meaning, and the relaxed one for prefixes
    (``None`` when prefixes cannot be checked: a backreference). Raises :class:`EcmaRegexError`."""
    return _translation(_read(pattern))


def _translation(reader: _Reader) -> tuple[str, str | None]:
    """What a finished ``reader`` wrote: the exact pattern, and the relaxed one (or None)."""
    out = reader.out
    return "".join(out.exact), None if reader.backrefs else "".join(out.loose)


def loosen_counts(pattern: str, max_count: int) -> str:
    """``pattern`` (valid ECMA-262) with every counted repetition whose bound passes
    ``max_count`` loosened to ``{k,}`` (``k``: its least count, at most ``max_count``): a pattern
    that matches every string ``pattern`` matches, for an engine that pays for large counts
    (xgrammar's JSON-schema compile grows with the square of each count). Raises
    :class:`EcmaRegexError` for an invalid pattern."""
    reader = _read(pattern)
    out: list[str] = []
    done = 0
    for start, end in reader.counted:
        low, _, high = pattern[start + 1 : end - 1].partition(",")
        if max(int(low), int(high or 0)) > max_count:
            out += (pattern[done:start], f"{{{min(int(low), max_count)},}}")
            done = end
    return "".join(out) + pattern[done:] if out else pattern


def pattern_size(pattern: str) -> int:
    """What the ``regex`` package expands ``pattern`` (valid ECMA-262) to when it compiles it,
    which is what its compile time and memory grow with: each atom counts 1, a group what the
    terms inside it count, alternatives add up, and a quantifier multiplies what it repeats by
    its least count, plus one copy when more may follow (``\\d{4}-\\d{2}`` is 7,
    ``[a-z]{1,65535}`` 2, ``(a{1000}){1000}`` a million). Raises :class:`EcmaRegexError`."""
    return _read(pattern).size


def no_wider_elsewhere(pattern: str, *, python_re: bool = False) -> bool:
    """Whether every string Rust's ``regex`` (pydantic's default engine) or, with
    ``python_re``, Python's ``re`` matches with ``pattern`` is matched by its ECMA-262 reading
    too: it is valid ECMA-262 and has none of the constructs those engines read more widely
    (``\\d``, ``\\w``, ``\\s``, ``\\b`` and their negations, ``.``, case-insensitive groups; for
    ``re``, ``$`` too). A pydantic ``Field(pattern=...)`` is checked early only when this holds,
    so that the tracker never refuses what pydantic accepts."""
    if _set_syntax_elsewhere(pattern):
        return False
    reader = _Reader(pattern)
    try:
        reader.pattern()
    except EcmaRegexError:
        return False
    return not reader.unicode_sets and not (python_re and reader.dollar)


def _set_syntax_elsewhere(pattern: str) -> bool:
    """Whether ``pattern`` may hold syntax Rust's ``regex`` (and Python's ``re``, with a
    warning) reads as something else than ECMA-262 does: a ``[`` inside a class (nested classes,
    ``[[:alpha:]]``), a ``]`` outside one, or the set operators ``&&``, ``--``, ``~~``.
    Conservative: a pattern that only looks like it is merely not checked early."""
    if "&&" in pattern or "--" in pattern or "~~" in pattern:
        return True
    if "\\<" in pattern or "\\>" in pattern:  # word boundaries in Rust's regex
        return True
    in_class = escaped = False
    for ch in pattern:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "[":
            if in_class:
                return True
            in_class = True
        elif ch == "]":
            if not in_class:
                return True
            in_class = False
    return False


def compile_ecma(pattern: str, *, max_size: int | None = DEFAULT_MAX_PATTERN_SIZE) -> EcmaRegex:
    """Compile an ECMA-262 pattern. Raises :class:`EcmaRegexError` (a ``ValueError``) for one
    that is not valid ECMA-262 (its ``position`` says where), or, should one ever be, that the
    ``regex`` package cannot compile (every property of ECMA-262's table compiles: a test
    checks each spelling); :class:`PatternTooLarge` (one too) for a valid one whose
    :func:`pattern_size` is over ``max_size`` (``None``: no limit), before any time is spent
    compiling it."""
    if not isinstance(pattern, str):
        raise TypeError(f"a pattern must be a str, not {type(pattern).__name__}")
    reader = _read(pattern, max_size)
    if reader.over is not None and max_size is not None:
        raise PatternTooLarge(pattern, reader.over, reader.size, max_size)
    exact, loose = _translation(reader)
    try:
        return EcmaRegex(
            pattern,
            regex.compile(exact, _FLAGS),
            None if loose is None else regex.compile(loose, _FLAGS),
            compile_linear(pattern),
        )
    except regex.error as exc:
        raise EcmaRegexError(str(exc).split(" at position ")[0], pattern, 0) from None


def portable(pattern: str) -> str:
    """``pattern`` (valid ECMA-262) with ``\\d``, ``\\w``, ``\\s``, their negations and ``.``
    spelled as explicit classes, so that an engine with other defaults (Rust's ``regex``,
    where ``\\d`` is any Unicode digit) reads it as ECMA-262 does. Everything else is left as
    written."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            e = pattern[i + 1]
            body = _PORTABLE_SETS.get(e.lower())
            if body is not None and in_class and e.islower():
                out.append(body)
            elif body is not None and not in_class:
                out.append(f"[{'' if e.islower() else '^'}{body}]")
            elif e in _LENIENT_ESCAPES and not (in_class and e in "&~"):
                out.append(e)  # Rust reads \< and \> as word boundaries, GBNF refuses \_
            else:  # a negated set inside a class would need nesting, which not all engines read
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == ".":
            c = _PORTABLE_DOT
        out.append(c)
        i += 1
    return "".join(out)
