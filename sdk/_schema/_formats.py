"""``format``, when the caller asks for it to be asserted.

Draft 2020-12 makes ``format`` an annotation: by default the tracker ignores it (as jsonschema
does without a format checker). With ``formats="assert"`` a string whose format is in
:data:`CHECKED` is checked when it closes, by the checkers of this module (not jsonschema's,
whose verdicts depend on which optional packages are installed and half-check some formats):

- ``date``, ``time``, ``date-time``: RFC 3339 (ASCII digits, real calendar days, a leap second
  only at 23:59:60 UTC, ``T``/``Z`` in either case);
- ``duration``: RFC 3339 Appendix A; ``uuid``: RFC 9562's hex-and-hyphens form;
- ``ipv4``, ``ipv6``: Python's ``ipaddress`` (dotted quad without leading zeros; no zone id);
- ``hostname``: RFC 1123 labels, A-labels checked by ``idna`` (IDNA 2008); ``idn-hostname``:
  each label through ``idna``;
- ``email``, ``idn-email``: RFC 5321 / 6531 mailboxes (a dot-atom or a quoted local part, a
  host name or an address literal);
- ``json-pointer``, ``relative-json-pointer``: RFC 6901 and its relative form;
- ``regex``: an ECMA-262 pattern (``sdk._regex._ecma``);
- ``uri``, ``uri-reference``, ``iri``, ``iri-reference``: RFC 3986 / RFC 3987 syntax (an IP
  literal's IPv6 by ``ipaddress``); ``uri-template``: RFC 6570 syntax, any level.

Any other format stays an annotation even when asserted: it is not checked.

Some formats are also checked while the string streams: ``date``, ``time``, ``date-time``,
``uuid`` and ``ipv4`` each have a *prefix grammar*, a regular language that contains every
prefix of every string the final check accepts; a prefix outside it proves the string can never
conform, so the early check never refuses what the final one would accept.
"""

from __future__ import annotations

import calendar
import ipaddress
import re
import unicodedata
from collections.abc import Callable

import regex

from sdk._regex._budget import MAX_EXPANSION
from sdk._regex._ecma import EcmaRegexError, PatternTooLarge, compile_ecma
from sdk._schema._vocabulary import VOCABULARIES

__all__ = ["CHECKED", "FormatCheck", "format_check"]

_D = "[0-9]"
_RFC3339_TIME = (
    rf"({_D}{{2}}):({_D}{{2}}):({_D}{{2}})(?:\.{_D}+)?(?:(Z)|([+-])({_D}{{2}}):({_D}{{2}}))"
)
_DATE = re.compile(rf"({_D}{{4}})-({_D}{{2}})-({_D}{{2}})")
_TIME_RE = re.compile(_RFC3339_TIME)


def _date(value: str) -> bool:
    m = _DATE.fullmatch(value)
    if m is None:
        return False
    year, month, day = (int(g) for g in m.groups())
    return 1 <= month <= 12 and 1 <= day <= calendar.monthrange(year, month)[1]


def _time(value: str) -> bool:
    m = _TIME_RE.fullmatch(value.upper())
    if m is None:
        return False
    hour, minute, second = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if hour > 23 or minute > 59 or second > 60:
        return False
    if m.group(4) is None:
        off_h, off_m = int(m.group(6)), int(m.group(7))
        if off_h > 23 or off_m > 59:
            return False
        if second == 60:  # a leap second is 23:59:60 in UTC
            sign = -1 if m.group(5) == "+" else 1
            utc = (hour * 60 + minute + sign * (off_h * 60 + off_m)) % (24 * 60)
            return utc == 23 * 60 + 59
    return second < 60 or (hour, minute) == (23, 59)


def _date_time(value: str) -> bool:
    date, sep, time = value.partition("T" if "T" in value else "t")
    return bool(sep) and _date(date) and _time(time)


_DUR_TIME = r"T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)"
_DUR_DATE = r"(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?)"
_DURATION = re.compile(rf"P(?:[0-9]+W|{_DUR_DATE}(?:{_DUR_TIME})?|{_DUR_TIME})")
_UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")
_POINTER = r"(?:/(?:[^~/]|~[01])*)*"
_JSON_POINTER = re.compile(_POINTER)
_RELATIVE_POINTER = re.compile(rf"(?:0|[1-9][0-9]*)(?:#|{_POINTER})")
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


def _ipv4(value: str) -> bool:
    try:
        ipaddress.IPv4Address(value)
    except ValueError:
        return False
    return value.isascii()


def _ipv6(value: str) -> bool:
    try:
        address = ipaddress.IPv6Address(value)
    except ValueError:
        return False
    return value.isascii() and not address.scope_id


def _a_label_ok(label: str) -> bool:
    import idna  # a dependency of httpx, always installed; imported only when needed

    try:
        idna.decode(label)
    except (idna.IDNAError, UnicodeError, ValueError):
        return False
    return True


def _hostname(value: str, *, idna: bool = True) -> bool:
    """RFC 1123 host name; with ``idna`` (draft-07 on), a label with ``--`` at positions 3-4
    must be a valid A-label (IDNA 2008, RFC 5891 4.2.3.1)."""
    if not value or len(value) > 253 or not value.isascii():
        return False
    for label in value.split("."):
        if _LABEL.fullmatch(label) is None:
            return False
        if idna and label[2:4] == "--":  # only an A-label may have hyphens there
            if label[:2].lower() != "xn" or not _a_label_ok(label):
                return False
    return True


_IDN_DOTS = re.compile("[.\u3002\uff0e\uff61]")


def _idn_hostname(value: str) -> bool:
    import idna

    if not value or value.isascii():
        return _hostname(value)
    labels = _IDN_DOTS.split(value)
    try:
        encoded = idna.encode(".".join(labels), uts46=False)
        # RFC 5893: in a domain name with a right-to-left label, every label keeps the rule.
        if any(idna.check_bidi(label) and _rtl(label) for label in labels):
            for label in labels:
                idna.check_bidi(label, check_ltr=True)
    except (idna.IDNAError, UnicodeError, ValueError):
        return False
    return all(labels) and len(encoded) <= 253


def _rtl(label: str) -> bool:
    return any(unicodedata.bidirectional(c) in ("R", "AL", "AN") for c in label)


_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
_DOT_ATOM = re.compile(rf"{_ATEXT}+(?:\.{_ATEXT}+)*")
_QUOTED = re.compile(r'"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*"')
_IDN_ATEXT = r"(?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]|[^\x00-\x7f])"
_IDN_DOT_ATOM = re.compile(rf"{_IDN_ATEXT}+(?:\.{_IDN_ATEXT}+)*")
_IDN_QUOTED = re.compile(r'"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|[^\x00-\x7f]|\\[\x20-\x7e])*"')


def _mailbox(value: str, *, idn: bool, idna: bool = True) -> bool:
    local, at, domain = value.rpartition("@")
    if not at or not local or not domain:
        return False
    atoms, quoted = (_IDN_DOT_ATOM, _IDN_QUOTED) if idn else (_DOT_ATOM, _QUOTED)
    if atoms.fullmatch(local) is None and quoted.fullmatch(local) is None:
        return False
    if domain.startswith("[") and domain.endswith("]"):
        literal = domain[1:-1]
        if literal[:5].lower() == "ipv6:":
            return _ipv6(literal[5:])
        return _ipv4(literal)
    # RFC 6531 does not ask a domain to be in NFC; IDNA 2008 does: normalise before checking.
    if idn:
        return _idn_hostname(unicodedata.normalize("NFC", domain))
    return _hostname(domain, idna=idna)


# RFC 3986 (URIs) and RFC 3987 (IRIs: ``ucschar`` where URIs have unreserved characters,
# ``iprivate`` in the query), composed from their ABNF; an IP literal's IPv6 by ``ipaddress``.
_UCS = (
    "\xa0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef"
    + "".join(f"{chr(plane << 16)}-{chr((plane << 16) + 0xFFFD)}" for plane in range(1, 14))
    + "\U000e1000-\U000efffd"
)
_PRIVATE = "\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"


def _uri_grammar(iri: bool) -> tuple[re.Pattern[str], re.Pattern[str]]:
    unreserved = "A-Za-z0-9._~\\-" + (_UCS if iri else "")
    pct = "%[0-9A-Fa-f]{2}"
    sub = "!$&'()*+,;="
    pchar = f"(?:[{unreserved}{sub}:@]|{pct})"
    segment, nz = f"{pchar}*", f"{pchar}+"
    nz_nc = f"(?:[{unreserved}{sub}@]|{pct})+"
    userinfo = f"(?:[{unreserved}{sub}:]|{pct})*"
    host = f"(?:\\[[^\\]/?#@]*\\]|(?:[{unreserved}{sub}]|{pct})*)"
    authority = f"(?:{userinfo}@)?{host}(?::[0-9]*)?"
    abempty = f"(?:/{segment})*"
    absolute = f"/(?:{nz}(?:/{segment})*)?"
    rootless = f"{nz}(?:/{segment})*"
    noscheme = f"{nz_nc}(?:/{segment})*"
    query_chars = f"(?:{pchar}|[/?{_PRIVATE if iri else ''}])*"
    fragment = f"(?:{pchar}|[/?])*"
    tail = f"(?:\\?{query_chars})?(?:#{fragment})?"
    hier = f"(?://{authority}{abempty}|{absolute}|{rootless}|)"
    relative = f"(?://{authority}{abempty}|{absolute}|{noscheme}|)"
    scheme = "[A-Za-z][A-Za-z0-9+.-]*"
    return re.compile(f"{scheme}:{hier}{tail}"), re.compile(f"{relative}{tail}")


_URI, _RELATIVE_REF = _uri_grammar(iri=False)
_IRI, _RELATIVE_IRI = _uri_grammar(iri=True)
_IP_LITERAL = re.compile(r"(?:[^:/?#]+:)?//(?:[^/?#@]*@)?\[([^\]]*)\]")


def _uri_like(value: str, *, iri: bool, reference: bool) -> bool:
    absolute, relative = (_IRI, _RELATIVE_IRI) if iri else (_URI, _RELATIVE_REF)
    if absolute.fullmatch(value) is None and (not reference or relative.fullmatch(value) is None):
        return False
    literal = _IP_LITERAL.match(value)
    if literal is None:
        return True
    inner = literal.group(1)
    if inner[:1] in ("v", "V"):  # IPvFuture
        return re.fullmatch(r"[vV][0-9A-Fa-f]+\.[A-Za-z0-9._~!$&'()*+,;=:-]+", inner) is not None
    return _ipv6(inner)


# RFC 6570 (URI templates, any level): literals and {expressions}.
_PCT = "%[0-9A-Fa-f]{2}"
_VARCHAR = f"(?:[A-Za-z0-9_]|{_PCT})"
_VARSPEC = f"{_VARCHAR}(?:\\.?{_VARCHAR})*(?::[1-9][0-9]{{0,3}}|\\*)?"
_URI_TEMPLATE = re.compile(
    f"(?:[\\x21\\x23\\x24\\x26-\\x3b\\x3d\\x3f-\\x5b\\x5d\\x5f\\x61-\\x7a\\x7e{_UCS}{_PRIVATE}]"
    f"|{_PCT}|\\{{[+#./;?&=,!@|]?{_VARSPEC}(?:,{_VARSPEC})*\\}})*"
)


def _regex_format(value: str) -> bool:
    try:
        compile_ecma(value, max_size=MAX_EXPANSION)
    except PatternTooLarge:
        # A valid pattern the regex package would take seconds to hours to compile: the
        # model's text must not stall the loop. It was read in full (property names too).
        return True
    except EcmaRegexError:
        return False
    return True


_CHECKERS: dict[str, Callable[[str], bool]] = {
    "date": _date,
    "time": _time,
    "date-time": _date_time,
    "duration": lambda v: _DURATION.fullmatch(v) is not None,
    "uuid": lambda v: _UUID.fullmatch(v) is not None,
    "ipv4": _ipv4,
    "ipv6": _ipv6,
    "hostname": _hostname,
    "idn-hostname": _idn_hostname,
    "email": lambda v: _mailbox(v, idn=False),
    "idn-email": lambda v: _mailbox(v, idn=True),
    "json-pointer": lambda v: _JSON_POINTER.fullmatch(v) is not None,
    "relative-json-pointer": lambda v: _RELATIVE_POINTER.fullmatch(v) is not None,
    "regex": _regex_format,
    "uri": lambda v: _uri_like(v, iri=False, reference=False),
    "uri-reference": lambda v: _uri_like(v, iri=False, reference=True),
    "iri": lambda v: _uri_like(v, iri=True, reference=False),
    "iri-reference": lambda v: _uri_like(v, iri=True, reference=True),
    "uri-template": lambda v: _URI_TEMPLATE.fullmatch(v) is not None,
}

# Where a draft's rule for a format differs from Draft 2020-12's: draft-04 and -06 read
# ``hostname`` (and an email's domain) by RFC 1034/1123 alone; the IDNA rule for ``--`` at
# positions 3-4 came with draft-07 (the official suite's draft-04/06 tests accept "ab--cd.example").
_PRE_IDNA: dict[str, Callable[[str], bool]] = {
    "hostname": lambda v: _hostname(v, idna=False),
    "email": lambda v: _mailbox(v, idn=False, idna=False),
}
_DRAFT_RULES: dict[str, dict[str, Callable[[str], bool]]] = {
    "draft-04": _PRE_IDNA,
    "draft-06": _PRE_IDNA,
}

CHECKED = frozenset(_CHECKERS)
"""The formats asserted with ``formats="assert"`` (in the drafts that define them, listed in
:mod:`sdk._schema._vocabulary`); any other stays an annotation."""

# Prefix grammars: matched with partial=True against the string received so far; ``upper``
# says whether the checker upper-cases the string first.
_TIME = (
    r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\.[0-9]+)?"
    r"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
)
_PREFIX: dict[str, tuple[str, bool]] = {
    "date": (r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])", False),
    "date-time": (r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])T" + _TIME, True),
    "time": (_TIME, True),
    "uuid": (_UUID.pattern, False),
    "ipv4": (r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}", False),
}


class FormatCheck:
    """One asserted format: the final check and, for some, a prefix check."""

    __slots__ = ("_prefix", "_upper", "check", "name")

    def __init__(self, name: str, check: Callable[[str], bool]) -> None:
        self.name = name
        self.check = check
        """True when a complete string conforms."""
        grammar = _PREFIX.get(name)
        self._prefix = None if grammar is None else regex.compile(grammar[0])
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


_checks: dict[tuple[str, str], FormatCheck | None] = {}


def format_check(name: str, dialect: str = "2020-12") -> FormatCheck | None:
    """The check for format ``name`` as ``dialect`` defines it, or ``None`` when it is not
    checked (an annotation: a format the dialect does not define, or one no checker knows)."""
    if (name, dialect) in _checks:
        return _checks[(name, dialect)]
    check = None
    if name in VOCABULARIES[dialect].formats:
        check = _DRAFT_RULES.get(dialect, {}).get(name) or _CHECKERS.get(name)
    found = None if check is None else FormatCheck(name, check)
    _checks[(name, dialect)] = found
    return found
