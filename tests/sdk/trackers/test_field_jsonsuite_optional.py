"""The JSON-Schema-Test-Suite's optional tests that fieldstream means to pass.

``optional/ecmascript-regex.json`` and ``optional/non-bmp-regex.json`` (draft 2020-12): patterns
are ECMA-262 regexes (``\\d`` is ASCII, ``$`` is the end, surrogate pairs are one character).
``optional/format/*.json`` of every draft (draft-04 ... 2020-12), each read as its draft, with
``formats="assert"``: a format fieldstream checks in that draft must agree with the suite; one it
does not check (an annotation, listed in ``docs/patterns.md``) may only let through what the
suite calls invalid, never refuse what it calls valid. ``draft4/optional/zeroTerminatedFloats``:
draft-04's ``integer`` is a number written without a fraction.

Each document is streamed as in ``test_tracker_jsonsuite.py``: whole, one character at a time,
and in two random chunkings.
"""

from __future__ import annotations

import datetime
import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdk._errors import SchemaViolation
from sdk._schema._compile import CompiledSchema, compile_schema
from sdk._schema._formats import format_check
from sdk._trackers._field import FieldTracker
from tests.sdk.trackers._tracker_support import feed_chunks

DATA = Path(__file__).resolve().parents[2] / "data" / "json-schema-test-suite"
SUITE = DATA / "draft2020-12"
OPTIONAL = SUITE / "optional"
REGEX_FILES = [OPTIONAL / "ecmascript-regex.json", OPTIONAL / "non-bmp-regex.json"]
DRAFTS = {
    "draft4": "draft-04",
    "draft6": "draft-06",
    "draft7": "draft-07",
    "draft2019-09": "2019-09",
    "draft2020-12": "2020-12",
}
FORMAT_FILES = sorted((OPTIONAL / "format").glob("*.json"))
DRAFT_FORMAT_FILES = [
    (dialect, path)
    for folder, dialect in DRAFTS.items()
    for path in sorted((DATA / folder / "optional" / "format").glob("*.json"))
]

Verdict = tuple[str, str, bool, bool]
"""(group, test, the suite's verdict, the tracker's)."""


def _chunkings(doc: str, rng: random.Random) -> list[list[str]]:
    out = [[doc], list(doc)]
    for _ in range(2):
        if len(doc) < 2:
            break
        cuts = sorted(rng.sample(range(1, len(doc)), min(len(doc) - 1, rng.randint(1, 8))))
        bounds = [0, *cuts, len(doc)]
        out.append([doc[a:b] for a, b in itertools.pairwise(bounds)])
    return out


def _valid(compiled: CompiledSchema, chunks: list[str]) -> bool:
    tracker = FieldTracker(compiled)
    try:
        feed_chunks(tracker, chunks)
        tracker.close()
    except SchemaViolation:
        return False
    return True


def _verdicts(path: Path, formats: Any, dialect: str = "2020-12") -> list[Verdict]:
    """One verdict for every test and chunking of the file (read as ``dialect``)."""
    out: list[Verdict] = []
    for group in json.loads(path.read_text(encoding="utf-8")):
        compiled = compile_schema(group["schema"], formats=formats, dialect=dialect)
        for test in group["tests"]:
            doc = json.dumps(test["data"])
            rng = random.Random(f"{path.name}/{group['description']}/{test['description']}")
            where = (group["description"], test["description"], test["valid"])
            out.extend((*where, _valid(compiled, chunks)) for chunks in _chunkings(doc, rng))
    return out


@pytest.mark.parametrize("path", REGEX_FILES, ids=lambda p: p.stem)
def test_patterns_are_read_as_ecma_262(path: Path) -> None:
    wrong = [v for v in _verdicts(path, "annotate") if v[2] != v[3]]
    assert not wrong, "\n".join(map(str, wrong))


@pytest.mark.parametrize(
    ("dialect", "path"),
    DRAFT_FORMAT_FILES,
    ids=[f"{d}/{p.stem}" for d, p in DRAFT_FORMAT_FILES],
)
def test_an_asserted_format_never_refuses_a_valid_string(dialect: str, path: Path) -> None:
    verdicts = _verdicts(path, "assert", dialect)
    assert verdicts
    refused = [v for v in verdicts if v[2] and not v[3]]
    assert not refused, "\n".join(map(str, refused))
    name = "regex" if path.stem == "ecmascript-regex" else path.stem
    if format_check(name, dialect) is not None:  # checked: the suite's invalid strings too
        accepted = [v for v in verdicts if not v[2] and v[3]]
        assert not accepted, "\n".join(map(str, accepted))


def test_every_format_the_suite_tests_is_checked_and_documented() -> None:
    docs = (Path(__file__).resolve().parents[3] / "docs" / "patterns.md").read_text("utf-8")
    for folder, dialect in DRAFTS.items():
        files = sorted((DATA / folder / "optional" / "format").glob("*.json"))
        names = {"regex" if p.stem == "ecmascript-regex" else p.stem for p in files}
        unchecked = {n for n in names if format_check(n, dialect) is None}
        assert unchecked == {"unknown"}, dialect  # the suite's example of a format nobody knows
        for name in names - unchecked:
            assert f"`{name}`" in docs, name


def test_a_format_is_checked_only_in_the_drafts_that_define_it() -> None:
    # Draft-07 defines no uuid or duration (2019-09 added them), draft-04 no date, regex or
    # uri-reference: there they are annotations, as in jsonschema's per-draft format checkers.
    for name, value, first in [
        ("uuid", "not-a-uuid", "2019-09"),
        ("duration", "P1", "2019-09"),
        ("date", "2024-13-45", "draft-07"),
        ("regex", "(", "draft-07"),
        ("uri-reference", "\\\\", "draft-06"),
        ("hostname", "-a", "draft-04"),
    ]:
        order = list(DRAFTS.values())
        for dialect in order:
            compiled = compile_schema({"format": name}, formats="assert", dialect=dialect)
            defined = order.index(dialect) >= order.index(first)
            assert _valid(compiled, [json.dumps(value)]) is not defined, (name, dialect)


def test_hostname_keeps_the_idna_hyphen_rule_from_draft_07_on() -> None:
    # RFC 5891's "--" at positions 3-4 (only a valid A-label may have it) is draft-07's.
    for dialect in DRAFTS.values():
        compiled = compile_schema({"format": "hostname"}, formats="assert", dialect=dialect)
        old = dialect in ("draft-04", "draft-06")
        assert _valid(compiled, ['"ab--cd.example"']) is old, dialect
        assert _valid(compiled, ['"xn--mnchen-3ya.example"']), dialect  # a valid A-label
        email = compile_schema({"format": "email"}, formats="assert", dialect=dialect)
        assert _valid(email, ['"joe@ab--cd.example"']) is old, dialect


def test_draft_04_integer_is_a_number_written_without_a_fraction() -> None:
    path = DATA / "draft4" / "optional" / "zeroTerminatedFloats.json"
    verdicts = _verdicts(path, "annotate", "draft-04")
    assert verdicts
    wrong = [v for v in verdicts if v[2] != v[3]]
    assert not wrong, "\n".join(map(str, wrong))


@pytest.mark.parametrize("path", FORMAT_FILES, ids=lambda p: p.stem)
def test_the_early_check_never_refuses_a_prefix_of_a_string_the_final_check_accepts(
    path: Path,
) -> None:
    check = format_check(path.stem)
    if check is None or not check.streams:
        return
    for group in json.loads(path.read_text(encoding="utf-8")):
        for test in group["tests"]:
            value = test["data"]
            if not isinstance(value, str):
                continue
            bad = [i for i in range(len(value) + 1) if not check.prefix_ok(value[:i])]
            if check.check(value):
                assert not bad, (value, bad)
            elif bad:  # refused early: then no string that starts like this conforms
                assert all(not check.check(value[: bad[0]] + tail) for tail in ("", "0", "Z"))


@settings(max_examples=300, deadline=None)
@given(
    moment=st.datetimes(timezones=st.timezones()),
    fraction=st.sampled_from(["", ".5", ".123456"]),
    leap=st.booleans(),
    uuid=st.uuids(),
    ip=st.ip_addresses(v=4),
)
def test_every_prefix_of_a_conforming_string_passes_the_early_check(
    moment: datetime.datetime, fraction: str, leap: bool, uuid: Any, ip: Any
) -> None:
    stamp = moment.isoformat(timespec="seconds")
    if moment.utcoffset() is None or len(stamp) != 25:  # RFC 3339 wants an hh:mm offset
        stamp = moment.replace(tzinfo=None).isoformat(timespec="seconds") + "Z"
    stamp = stamp[:19] + fraction + stamp[19:]
    if leap:  # 23:59:60 UTC, written in UTC
        stamp = f"{moment.year:04d}-12-31T23:59:60{fraction}Z"
    values = {
        "date-time": stamp,
        "date": stamp[:10],
        "time": stamp[11:],
        "uuid": str(uuid).upper() if moment.second % 2 else str(uuid),
        "ipv4": str(ip),
    }
    for name, value in values.items():
        check = format_check(name)
        assert check is not None and check.check(value), (name, value)
        for i in range(len(value) + 1):
            assert check.prefix_ok(value[:i]), (name, value, i)
