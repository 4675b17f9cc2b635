"""``format``, when the caller asks for it to be asserted.

Draft 2020-12 makes ``format`` an annotation: by default the tracker ignores it (as jsonschema
does without a format checker). With ``formats="assert"`` a string whose format has a checker
is checked when it closes, with jsonschema's own checkers (``FORMAT_CHECKER``: ``date``,
``email``, ``idn-email``, ``ipv4``, ``ipv6``, ``regex``, ``uuid`` always; ``hostname``,
``idn-hostname``, ``uri``, ``iri``, ``duration``, ``json-pointer``... when the libraries of
``jsonschema[format]`` are installed), plus ``date-time`` and ``time`` as RFC 3339 defines them
(the grammar and day-of-month rule of ``rfc3339-validator``, which jsonschema uses when it is
installed, so the verdict does not depend on it). A format no checker knows stays an annotation.

Some formats are also checked while the string streams: ``date``, ``time``, ``date-time``,
``uuid`` and ``ipv4`` each have a *prefix grammar*, a regular language that contains every
prefix of every string the checker accepts; a prefix outside it proves the string can never
conform. The grammars are deliberately loose where the checkers are (``uuid`` follows Python's
``UUID()``, which also takes braces, ``urn:uuid:``, underscores and a sign), so they never
reject a string the final check would accept.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable

import regex

from sdk._schema._validators import format_conforms, known_formats

__all__ = ["FormatCheck", "format_check"]

# RFC 3339 as rfc3339-validator reads it (after upper-casing the string).
_RFC3339 = re.compile(
    r"^(\d{4})-(0[1-9]|1[0-2])-(\d{2})T(?:[01]\d|2[0123]):[0-5]\d:[0-5]\d(?:\.\d+)?"
    r"(?:Z|[+-](?:[01]\d|2[0123]):[0-5]\d)$",
    re.ASCII,
)


def _date_time(value: str) -> bool:
    m = _RFC3339.match(value.upper())
    if m is None:
        return False
    year, month, day = (int(g) for g in m.groups())
    if not year:
        return False
    return 1 <= day <= calendar.monthrange(year, month)[1]


def _time(value: str) -> bool:
    return _date_time("1970-01-01T" + value)


_OWN: dict[str, Callable[[str], bool]] = {"date-time": _date_time, "time": _time}

# Prefix grammars: matched with partial=True against the string received so far; ``upper``
# says whether the checker upper-cases the string first.
_TIME = r"(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)\n?"
# Python's UUID() parses hex with int(..., 16), which also takes any Unicode decimal digit and
# strips Unicode whitespace: the grammar must too (it is matched without re.ASCII).
_UUID_CHAR = r"[0-9A-Fa-f{}:_+xXurnid\s\p{Nd}-]"
_PREFIX: dict[str, tuple[str, bool]] = {
    "date": (r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])", False),
    "date-time": (r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T" + _TIME, True),
    "time": (_TIME, True),
    "uuid": (
        rf"{_UUID_CHAR}{{8}}-{_UUID_CHAR}{{4}}-{_UUID_CHAR}{{4}}-{_UUID_CHAR}{{4}}-"
        rf"{_UUID_CHAR}*",
        False,
    ),
    "ipv4": (r"\d{1,3}(?:\.\d{1,3}){3}", False),
}


class FormatCheck:
    """One asserted format: the final check and, for some, a prefix check."""

    __slots__ = ("_prefix", "_upper", "check", "name")

    def __init__(self, name: str, check: Callable[[str], bool]) -> None:
        self.name = name
        self.check = check
        """True when a complete string conforms."""
        grammar = _PREFIX.get(name)
        flags = 0 if name == "uuid" else regex.ASCII
        self._prefix = None if grammar is None else regex.compile(grammar[0], flags)
        self._upper = grammar is not None and grammar[1]

    @property
    def streams(self) -> bool:
        """Whether a prefix can be refuted before the string closes."""
        return self._prefix is not None

    def prefix_ok(self, prefix: str) -> bool:
        """False only when no string that starts with ``prefix`` conforms."""
        if self._prefix is None:
            return True
        text = prefix.upper() if self._upper else prefix
        return self._prefix.fullmatch(text, partial=True) is not None


_checks: dict[str, FormatCheck | None] = {}


def format_check(name: str) -> FormatCheck | None:
    """The check for format ``name``, or ``None`` when no checker knows it (an annotation)."""
    if name in _checks:
        return _checks[name]
    found: FormatCheck | None = None
    if name in known_formats():
        found = FormatCheck(name, lambda value: format_conforms(value, name))
    elif name in _OWN:
        found = FormatCheck(name, _OWN[name])
    _checks[name] = found
    return found
