"""A developer's pattern that the regex engine would take seconds to forever to compile is
refused at compile time, naming its place and size (``compile_schema``'s ``max_pattern_size``).

The ``regex`` package writes counted repetitions out when it compiles a pattern:
``((a{1000}){1000}){1000}`` never finished, and a schema holding it hung ``compile_schema``.
"""

from __future__ import annotations

from typing import Any

import pytest

from sdk import Regex, SchemaError
from sdk._constants import DEFAULT_MAX_PATTERN_SIZE
from sdk._regex._ecma import EcmaRegexError, PatternTooLarge, compile_ecma
from sdk._regex._ecma import pattern_size as size
from sdk._schema._compile import compile_schema
from sdk._trackers._field import FieldTracker

pytestmark = pytest.mark.timeout(60)  # a regression hangs; it must fail instead

NEVER_COMPILES = "((a{1000}){1000}){1000}"
"""10**9 elements written out: the regex package's compile of it does not finish."""
MILLION = "(a{1000}){1000}"


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("abc", 3),
        ("a|bc", 3),
        ("\\d{4}-\\d{2}", 7),
        ("[a-z]{1,65535}", 2),  # the least count is written out, the rest is a loop
        ("^[a-z]{3,}$", 6),
        ("(?:ab){50000,100000}", 100_002),
        ("(a|bc){2}", 6),
        ("x?y*z+", 6),  # each: one copy, and one more for the optional rest
        ("(?=ab)c", 3),  # a lookahead is compiled like a group
        ("(a)\\1{5}", 6),
        ("(){3}", 3),  # an empty group still counts one
        (MILLION, 10**6),
        (NEVER_COMPILES, 10**9),
        ("(?:a{5}){2}", 10),
    ],
)
def test_the_size_is_what_the_regex_package_writes_out(pattern: str, expected: int) -> None:
    assert size(pattern) == expected


def test_a_pattern_too_large_is_refused_before_it_is_compiled() -> None:
    with pytest.raises(PatternTooLarge) as info:
        compile_ecma(NEVER_COMPILES)
    error = info.value
    assert isinstance(error, EcmaRegexError)  # a ValueError, like every bad pattern
    assert (error.size, error.limit) == (10**9, DEFAULT_MAX_PATTERN_SIZE)
    assert error.position == NEVER_COMPILES.index("){1000}){1000}") + 1  # where it passed
    assert "1,000,000,000 elements" in str(error) and "100,000" in str(error)
    assert compile_ecma(MILLION, max_size=None).fullmatch("a" * 10**6)


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        ({"type": "string", "pattern": NEVER_COMPILES}, "/pattern"),
        (
            {"type": "object", "properties": {"code": {"type": "string", "pattern": MILLION}}},
            "/properties/code/pattern",
        ),
        ({"$defs": {"id": {"pattern": f"^{MILLION}$"}}, "$ref": "#/$defs/id"}, "/$defs/id/pattern"),
        ({"type": "object", "patternProperties": {NEVER_COMPILES: {}}}, "/patternProperties"),
    ],
)
def test_a_schema_with_one_is_a_schema_error_naming_the_place(
    schema: dict[str, Any], pointer: str
) -> None:
    with pytest.raises(SchemaError) as info:
        compile_schema(schema)
    assert info.value.pointer == pointer
    assert info.value.keyword == "pattern"
    assert "too large to check" in str(info.value)
    assert "max_pattern_size" in str(info.value)
    with pytest.raises(SchemaError):
        FieldTracker(schema)  # the tracker compiles it the same way


def test_the_limit_is_the_callers_to_raise_or_lift() -> None:
    schema = {"type": "string", "pattern": f"^{MILLION}$"}
    with pytest.raises(SchemaError):
        compile_schema(schema)
    lifted = compile_schema(schema, max_pattern_size=None)
    raised = compile_schema(schema, max_pattern_size=2 * 10**6)
    for compiled in (lifted, raised):
        tracker = FieldTracker(compiled, runaway=None)  # a million "a" is a loop, else
        tracker.feed('"' + "a" * 10**6 + '"')
        assert tracker.close() == "a" * 10**6
    # The cache is keyed by the limit: the default still refuses what a larger one accepted.
    with pytest.raises(SchemaError):
        compile_schema(schema)
    with pytest.raises(SchemaError):
        compile_schema({"type": "string", "pattern": "a{20}"}, max_pattern_size=19)
    assert compile_schema({"type": "string", "pattern": "a{20}"}, max_pattern_size=20)


def test_the_meta_schema_check_applies_the_same_limit() -> None:
    # unknown="refuse" also checks the schema against its meta-schema, whose format "regex"
    # compiles every pattern again: under the caller's limit, not the default.
    schema = {"type": "string", "pattern": MILLION}
    assert compile_schema(schema, unknown="refuse", max_pattern_size=None)
    with pytest.raises(SchemaError):
        compile_schema(schema, unknown="refuse")


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "100"])
def test_a_limit_that_is_not_a_positive_int_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_pattern_size"):
        compile_schema({"type": "string"}, max_pattern_size=bad)


def test_a_regex_constraint_too_large_says_so() -> None:
    with pytest.raises(SchemaError, match="too large to check"):
        Regex(NEVER_COMPILES)
    with pytest.raises(SchemaError, match="not a valid regular expression"):
        Regex("(?P<x>a)")  # Python's syntax, not ECMA-262's: still its own message
