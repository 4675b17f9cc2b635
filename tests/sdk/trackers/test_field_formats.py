"""``format``: an annotation unless asserted; when asserted, checked at close with the checkers,
and refused while the string streams only where no continuation could conform."""

from __future__ import annotations

import datetime
import string
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdk._errors import SchemaViolation
from sdk._schema._compile import compile_schema
from sdk._schema._formats import format_check
from sdk._trackers._field import FieldTracker
from tests.sdk.trackers._tracker_support import feed_chunks

SETTINGS = settings(max_examples=300, deadline=None)


def checks(name: str) -> tuple[Callable[[str], bool], Callable[[str], bool]]:
    found = format_check(name)
    assert found is not None and found.streams
    return found.check, found.prefix_ok


def assert_prefixes_pass(name: str, value: str) -> None:
    """A string the final check accepts: every prefix of it passes the prefix grammar."""
    check, prefix_ok = checks(name)
    if check(value):
        for i in range(len(value) + 1):
            assert prefix_ok(value[:i]), (value, i)


@SETTINGS
@given(st.dates())
def test_date_prefixes(day: datetime.date) -> None:
    value = day.isoformat()
    assert checks("date")[0](value)
    assert_prefixes_pass("date", value)


@SETTINGS
@given(
    st.datetimes(
        timezones=st.sampled_from(
            [datetime.UTC, datetime.timezone(-datetime.timedelta(hours=3, minutes=30))]
        )
    ),
    st.sampled_from(["T", "t"]),
    st.booleans(),
    st.sampled_from(["", "\n"]),
)
def test_date_time_and_time_prefixes(
    when: datetime.datetime, sep: str, lower_z: bool, tail: str
) -> None:
    text = when.isoformat(sep=sep).replace("+00:00", "z" if lower_z else "Z")
    if when.year == 0:
        return
    _, _prefix_ok = checks("date-time")
    assert checks("date-time")[0](text)
    assert_prefixes_pass("date-time", text + tail)
    time_part = text.split(sep, 1)[1]
    assert checks("time")[0](time_part)
    assert_prefixes_pass("time", time_part + tail)


UUID_CHARS = string.hexdigits + "-{}:_+xurnid \t"


@SETTINGS
@given(st.uuids() | st.text(st.sampled_from(UUID_CHARS), min_size=30, max_size=44))
def test_uuid_prefixes(value: object) -> None:
    text = str(value)
    if not isinstance(value, str):
        assert checks("uuid")[0](text)
    assert_prefixes_pass("uuid", text)


@SETTINGS
@given(st.ip_addresses(v=4) | st.text(st.sampled_from("0123456789."), max_size=16))
def test_ipv4_prefixes(value: object) -> None:
    assert_prefixes_pass("ipv4", str(value))


VALID = {
    "date": st.dates().map(lambda d: d.isoformat()),
    "date-time": st.datetimes(timezones=st.just(datetime.UTC)).map(lambda d: d.isoformat()),
    "time": st.times(timezones=st.just(datetime.UTC)).map(lambda t: t.isoformat()),
    "uuid": st.uuids().map(str),
    "ipv4": st.ip_addresses(v=4).map(str),
}


@SETTINGS
@given(
    st.sampled_from(sorted(VALID)).flatmap(
        lambda name: st.tuples(st.just(name), VALID[name], st.integers(0, 40), st.characters())
    )
)
def test_a_refused_prefix_is_never_completed(case: tuple[str, str, int, str]) -> None:
    # A conforming string with one character changed: when the prefix grammar refuses it at
    # some point, the final check refuses the whole string too.
    name, valid, where, char = case
    text = valid[:where] + char + valid[where + 1 :]
    check, prefix_ok = checks(name)
    for i in range(len(text) + 1):
        if not prefix_ok(text[:i]):
            assert not check(text)
            break


def test_formats_option_and_compilations() -> None:
    schema = {"format": "date"}
    annotated = compile_schema(schema)
    asserted = compile_schema(schema, formats="assert")
    assert annotated is not asserted
    assert compile_schema(schema, formats="assert") is asserted  # cached per mode
    assert (annotated.formats, asserted.formats) == ("annotate", "assert")
    t = FieldTracker(schema, formats="assert")
    assert t.formats == "assert" and FieldTracker(schema).formats == "annotate"
    with pytest.raises(SchemaViolation):
        t.feed('"24-')
    feed_chunks(FieldTracker(asserted), ['"2024-', '02-29"'])
    assert FieldTracker(asserted).formats == "assert"
    with pytest.raises(ValueError, match="compiled with formats='annotate'"):
        FieldTracker(annotated, formats="assert")
    with pytest.raises(ValueError, match="formats"):
        compile_schema(schema, formats="check")  # type: ignore[arg-type]


def test_an_unknown_format_stays_an_annotation_when_asserted() -> None:
    t = FieldTracker({"format": "no-such-format"}, formats="assert")
    t.feed('"anything"')
    assert t.close() == "anything"


@pytest.mark.parametrize(
    ("name", "value", "conforms"),
    [
        ("uri", "https://example.com/a/b?x=1&y=2#frag", True),
        ("uri", "mailto:user@example.com", True),
        ("uri", "urn:isbn:0451450523", True),
        ("uri", "http://[2001:db8::1]:8080/p", True),
        ("uri", "http://[v1.fe]/", True),
        ("uri", "file:///etc/hosts", True),
        ("uri", "http://example.com/%7Euser", True),
        ("uri", "http://[2001:db8::g]/", False),  # not an IPv6 address
        ("uri", "../x", False),  # relative: a reference, not a URI
        ("uri-reference", "../x", True),
        ("uri-reference", "", True),
        ("uri-reference", "a/b:c", True),
        ("uri-reference", "a:b/c", True),
        ("uri-reference", "http://example.com/a b", False),
        ("iri", "http://例え.テスト/パス", True),
        ("uri", "http://例え.テスト/パス", False),
        ("iri-reference", "パス?q", True),
        ("uri-template", "http://example.com/{user}{/path*}{?q,lang}{#frag:3}", True),
        ("uri-template", "{var:10000}", False),
        ("hostname", "example.com", True),
        ("email", "first.last@[IPv6:2001:db8::1]", True),
        ("duration", "P1Y2M3DT4H5M6S", True),
        ("relative-json-pointer", "0#", True),
    ],
)
def test_more_formats_are_checked_by_their_rfc(name: str, value: str, conforms: bool) -> None:
    found = format_check(name)
    assert found is not None
    assert found.check(value) is conforms
