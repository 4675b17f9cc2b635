"""Every early check: the earliest character at which it fires, and silence one character before.

Each case marks with ``¦`` the character at which the violation must be raised. The helper feeds
the document one character at a time and checks the index, the path and the keyword; feeds
everything before the mark (in one piece and in two) and checks nothing is raised; and checks
that jsonschema, on the complete document, agrees it is invalid.
"""

from __future__ import annotations

from typing import Any

import pytest

from sdk._errors import SchemaViolation
from sdk._schema._compile import CompiledSchema, compile_schema
from sdk._trackers._field import FieldTracker
from tests.sdk.trackers._tracker_support import assert_fires, assert_valid


def ASSERT(schema: Any) -> CompiledSchema:
    """``schema`` compiled with ``format`` asserted."""
    return compile_schema(schema, formats="assert")


OBJ_AB = {
    "type": "object",
    "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
    "required": ["a"],
    "additionalProperties": False,
}

TREE = {
    "$defs": {
        "node": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "maxLength": 3},
                "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            },
            "required": ["name"],
        }
    },
    "$ref": "#/$defs/node",
}

PET = {
    "oneOf": [
        {
            "type": "object",
            "properties": {"kind": {"const": "cat"}, "lives": {"type": "integer"}},
            "required": ["kind"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"kind": {"const": "dog"}, "bark": {"type": "string"}},
            "required": ["kind"],
            "additionalProperties": False,
        },
    ]
}

# (id, schema, marked document, path, keyword)
CASES: list[tuple[str, Any, str, tuple[str | int, ...], str]] = [
    # type, at the value's first character
    ("type-string", {"type": "string"}, "¦12", (), "type"),
    ("type-number", {"type": "number"}, '¦"1"', (), "type"),
    ("type-integer-vs-string", {"type": "integer"}, '¦"1"', (), "type"),
    ("type-integer-fraction", {"type": "integer"}, "3.5¦", (), "type"),
    (
        "type-integer-fraction-in-object",
        {"properties": {"n": {"type": "integer"}}},
        '{"n": 3.5¦}',
        ("n",),
        "type",
    ),
    ("type-boolean", {"type": "boolean"}, "¦null", (), "type"),
    ("type-null", {"type": "null"}, "¦false", (), "type"),
    ("type-object", {"type": "object"}, "¦[]", (), "type"),
    ("type-array", {"type": "array"}, "¦{}", (), "type"),
    ("type-list", {"type": ["string", "null"]}, "¦true", (), "type"),
    ("type-member", OBJ_AB, '{"a": ¦1}', ("a",), "type"),
    ("type-element", {"items": {"type": "string"}}, '["x", ¦{}]', (1,), "type"),
    ("type-deep", TREE, '{"name": "a", "kids": [{"name": ¦7}]}', ("kids", 0, "name"), "type"),
    # enum / const: kinds at the first character, strings while they stream
    ("enum-kind", {"enum": ["a", "b"]}, "¦1", (), "enum"),
    ("enum-prefix", {"enum": ["red", "green"]}, '"gr¦a"', (), "enum"),
    ("enum-first-char", {"enum": ["red", "green"]}, '"¦b"', (), "enum"),
    ("enum-too-long", {"enum": ["red", "green"]}, '"red¦d"', (), "enum"),
    ("enum-proper-prefix", {"enum": ["red", "green"]}, '"re¦"', (), "enum"),
    ("enum-number", {"enum": [1, 2]}, "3¦", (), "enum"),
    ("enum-number-in-array", {"items": {"enum": [1, 2]}}, "[1, 3¦]", (1,), "enum"),
    ("enum-mixed", {"enum": ["a", None]}, '"¦b"', (), "enum"),
    ("const-string", {"const": "cat"}, '"c¦o"', (), "const"),
    ("const-kind", {"const": "cat"}, "¦null", (), "const"),
    ("const-object", {"const": {"a": 1}}, '{"a": 2¦}', (), "const"),
    ("enum-escape", {"enum": ["é"]}, '"\\u00e¦8"', (), "enum"),
    # string lengths and content
    ("maxLength", {"type": "string", "maxLength": 3}, '"abc¦d"', (), "maxLength"),
    ("maxLength-zero", {"maxLength": 0}, '"¦a"', (), "maxLength"),
    ("maxLength-code-points", {"maxLength": 2}, '"😀😀¦😀"', (), "maxLength"),
    (
        "maxLength-surrogate-escape",
        {"maxLength": 1},
        '"\\ud83d\\ude00\\ud83d\\ude0¦0"',
        (),
        "maxLength",
    ),
    ("minLength", {"minLength": 3}, '"ab¦"', (), "minLength"),
    ("pattern", {"pattern": "^[a-z]+$"}, '"ab¦C"', (), "pattern"),
    ("pattern-unanchored-end", {"pattern": "^a"}, '"¦ba"', (), "pattern"),
    ("pattern-anchored-end", {"pattern": "^ab$"}, '"ab¦c"', (), "pattern"),
    ("pattern-at-close", {"pattern": "b"}, '"aaa¦"', (), "pattern"),
    ("pattern-unicode-class", {"pattern": "^\\p{L}+$"}, '"été¦1"', (), "pattern"),
    ("pattern-alternatives", {"pattern": "^(cat|dog)s?$"}, '"c¦ow"', (), "pattern"),
    (
        "pattern-escape",
        {"pattern": "^[a-z]+$"},
        '"ab\\u004¦1"',  # \u0041 is "A": known at its last hex digit
        (),
        "pattern",
    ),
    ("format-date", ASSERT({"format": "date"}), '"2024-1¦3-01"', (), "format"),
    ("format-date-final", ASSERT({"format": "date"}), '"2023-02-29¦"', (), "format"),
    ("format-date-too-long", ASSERT({"format": "date"}), '"2024-01-01¦T"', (), "format"),
    ("format-uuid", ASSERT({"format": "uuid"}), '"a8098c1a¦f86e"', (), "format"),
    ("format-uuid-letter", ASSERT({"format": "uuid"}), '"¦not-a-uuid"', (), "format"),
    ("format-ipv4", ASSERT({"format": "ipv4"}), '"10.0.¦x"', (), "format"),
    ("format-ipv4-final", ASSERT({"format": "ipv4"}), '"10.0.0.256¦"', (), "format"),
    # numbers: final only, at the character after them
    ("minimum", {"minimum": 0}, "-1¦", (), "minimum"),
    ("minimum-in-object", {"properties": {"x": {"minimum": 0}}}, '{"x": -0.5¦}', ("x",), "minimum"),
    ("maximum", {"items": {"maximum": 10}}, "[10, 11¦]", (1,), "maximum"),
    ("exclusiveMinimum", {"exclusiveMinimum": 0}, "0¦", (), "exclusiveMinimum"),
    ("exclusiveMaximum", {"exclusiveMaximum": 1}, "1.0¦", (), "exclusiveMaximum"),
    ("multipleOf", {"items": {"multipleOf": 3}}, "[7¦]", (0,), "multipleOf"),
    # objects
    ("additionalProperties-false", OBJ_AB, '{"a": "x", "¦c": 1}', ("c",), "additionalProperties"),
    (
        "additionalProperties-prefix",
        {"properties": {"name": {}}, "additionalProperties": False},
        '{"na¦x": 1}',
        ("nax",),
        "additionalProperties",
    ),
    (
        "additionalProperties-no-key-at-all",
        {"additionalProperties": False},
        '{¦"a": 1}',
        (),
        "additionalProperties",
    ),
    (
        "additionalProperties-schema",
        {"additionalProperties": {"type": "number"}},
        '{"k": ¦"v"}',
        ("k",),
        "type",
    ),
    (
        "patternProperties",
        {"patternProperties": {"^n_": {"type": "number"}}},
        '{"n_a": ¦"x"}',
        ("n_a",),
        "type",
    ),
    (
        "patternProperties-closed",
        {"patternProperties": {"^n_": {}}, "additionalProperties": False},
        '{"n_a": 1, "¦m": 2}',
        ("m",),
        "additionalProperties",
    ),
    (
        "propertyNames",
        {"propertyNames": {"maxLength": 2}},
        '{"ab¦c": 1}',
        ("abc",),
        "propertyNames",
    ),
    ("property-false", {"properties": {"x": False}}, '{"x¦": 1}', ("x",), "false"),
    ("required", OBJ_AB, '{"b": 1¦}', (), "required"),
    ("required-nested", {"properties": {"o": OBJ_AB}}, '{"o": {¦}}', ("o",), "required"),
    ("minProperties", {"minProperties": 2}, '{"a": 1¦}', (), "minProperties"),
    ("maxProperties", {"maxProperties": 1}, '{"a": 1¦, "b": 2}', (), "maxProperties"),
    ("maxProperties-zero", {"maxProperties": 0}, '{¦"a": 1}', (), "maxProperties"),
    (
        "dependentRequired",
        {"dependentRequired": {"a": ["b"]}},
        '{"a": 1¦}',
        (),
        "dependentRequired",
    ),
    # arrays
    ("maxItems", {"maxItems": 2}, "[1, 2¦, 3]", (2,), "maxItems"),
    ("maxItems-zero", {"maxItems": 0}, "[¦1]", (0,), "maxItems"),
    ("minItems", {"minItems": 2}, "[1¦]", (), "minItems"),
    ("uniqueItems", {"uniqueItems": True}, '[1, "a", 1¦]', (), "uniqueItems"),
    ("uniqueItems-number-forms", {"uniqueItems": True}, "[1, 2, 1.0¦]", (), "uniqueItems"),
    ("uniqueItems-string", {"uniqueItems": True}, '["a", "b", "a¦"]', (), "uniqueItems"),
    (
        "uniqueItems-objects-key-order",
        {"uniqueItems": True},
        '[{"a": 1, "b": [2]}, {"b": [2.0], "a": 1¦}]',
        (),
        "uniqueItems",
    ),
    ("uniqueItems-arrays", {"uniqueItems": True}, "[[1, [2]], [1, [2]¦]]", (), "uniqueItems"),
    ("uniqueItems-null", {"uniqueItems": True}, "[null, false, nul¦l]", (), "uniqueItems"),
    (
        "maxContains-every-item",
        {"contains": {}, "maxContains": 1},
        "[1¦, 2]",
        (),
        "maxContains",
    ),
    (
        "maxContains-matching",
        {"contains": {"type": "string"}, "maxContains": 1},
        '["a", 1, "b¦"]',
        (),
        "maxContains",
    ),
    (
        "minContains",
        {"contains": {"type": "string"}, "minContains": 2},
        '["a", 1¦]',
        (),
        "minContains",
    ),
    (
        "prefixItems",
        {"prefixItems": [{"type": "string"}, {"type": "number"}]},
        '["a", ¦"b"]',
        (1,),
        "type",
    ),
    ("prefixItems-closed", {"prefixItems": [{}], "items": False}, "[1, ¦2]", (1,), "items"),
    ("contains", {"contains": {"type": "string"}}, "[1, 2¦]", (), "contains"),
    # applicators
    ("anyOf-type", {"anyOf": [{"type": "string"}, {"type": "integer"}]}, "¦true", (), "type"),
    (
        "anyOf-keys",
        {"anyOf": [OBJ_AB, {"properties": {"z": {}}, "additionalProperties": False}]},
        '{"a": "x", "¦z": 1}',
        ("z",),
        "additionalProperties",
    ),
    (
        "anyOf-nested",
        {"items": {"anyOf": [{"type": "string", "maxLength": 1}, {"type": "null"}]}},
        '[null, "a", "b¦c"]',
        (2,),
        "maxLength",
    ),
    (
        "anyOf-deep-branch",
        {
            "anyOf": [
                {"properties": {"p": {"properties": {"q": {"type": "string"}}}}},
                {"properties": {"p": {"properties": {"q": {"type": "number"}}}}},
            ]
        },
        '{"p": {"q": ¦true}}',
        ("p", "q"),
        "type",
    ),
    ("oneOf-discriminated", PET, '{"kind": "c¦o"}', ("kind",), "const"),
    ("oneOf-branch-key", PET, '{"kind": "cat", "¦bark": "x"}', ("b",), "additionalProperties"),
    (
        "oneOf-two-match",
        {"items": {"oneOf": [{"type": "number"}, {"type": "integer"}]}},
        "[3¦]",
        (0,),
        "oneOf",
    ),
    ("allOf", {"allOf": [{"maxLength": 3}, {"enum": ["abcd", "ab"]}]}, '"abc¦d"', (), "maxLength"),
    ("allOf-type", {"allOf": [{"type": "number"}, {"type": "integer"}]}, "2.5¦", (), "type"),
    (
        "ref-siblings",
        {"$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s", "maxLength": 1},
        '"a¦b"',
        (),
        "maxLength",
    ),
    ("not", {"not": {"type": "string"}}, '"a¦"', (), "not"),
    (
        "oneOf-both-at-close",
        {"oneOf": [{"minLength": 1}, {"pattern": "^a"}]},
        '"ab¦"',
        (),
        "oneOf",
    ),
    (
        "if-else-early",
        {"if": {"type": "string"}, "else": {"type": "integer"}},
        "¦true",
        (),
        "type",
    ),
    (
        "dependentSchemas",
        {"dependentSchemas": {"a": {"required": ["b"]}}},
        '{"a": 1¦}',
        (),
        "required",
    ),
    (
        "dependentSchemas-key-after",
        {"dependentSchemas": {"a": {"properties": {"x": {"type": "string"}}}}},
        '{"x": 1, "a¦": 2}',
        ("x",),
        "type",
    ),
    (
        "propertyNames-pattern",
        {"propertyNames": {"pattern": "^[a-z_]+$"}},
        '{"ok": 1, "no¦-way": 2}',
        ("no-",),
        "propertyNames",
    ),
    (
        "propertyNames-enum",
        {"propertyNames": {"enum": ["alpha", "beta"]}},
        '{"al¦x": 1}',
        ("alx",),
        "propertyNames",
    ),
    ("if-then", {"if": {"minimum": 10}, "then": {"multipleOf": 10}}, "15¦", (), "multipleOf"),
    ("false-root", False, "¦1", (), "false"),
]


@pytest.mark.parametrize(
    ("schema", "marked", "path", "keyword"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_fires_at_the_earliest_character(
    schema: Any, marked: str, path: tuple[str | int, ...], keyword: str
) -> None:
    assert_fires(schema, marked, path, keyword)


# The table of issue 10: proven at the character the issue names, raised there.
ISSUE_TABLE: list[tuple[str, Any, str, tuple[str | int, ...], str]] = [
    ("uniqueItems", {"properties": {"a": {"uniqueItems": True}}}, '{"a": [1, 1¦, 2, 3]}', ("a",)),
    ("pattern", {"properties": {"s": {"pattern": "^[0-9]+$"}}}, '{"s": "12¦a45678"}', ("s",)),
    ("maxItems", {"properties": {"a": {"maxItems": 2}}}, '{"a": ["x", "y"¦, "z"]}', ("a", 2)),
    ("maxProperties", {"maxProperties": 1}, '{"a": 1¦, "b": 2}', ()),
    ("propertyNames", {"propertyNames": {"maxLength": 2}}, '{"ab¦cdef": 1}', ("abc",)),
]  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("keyword", "schema", "marked", "path"),
    [pytest.param(*row, id=row[0]) for row in ISSUE_TABLE],
)
def test_the_issue_table(
    keyword: str, schema: Any, marked: str, path: tuple[str | int, ...]
) -> None:
    at = marked.index("¦")
    assert at == {"uniqueItems": 11, "pattern": 9, "maxItems": 15, "maxProperties": 7}.get(
        keyword, 4
    )  # the issue's "proven at char" column
    assert_fires(schema, marked, path, keyword)


@pytest.mark.parametrize(
    ("schema", "doc"),
    [
        pytest.param({"type": "integer"}, "3.0", id="integer-3.0"),
        pytest.param({"type": "integer"}, "3.5e1", id="integer-3.5e1"),
        pytest.param({"type": "integer"}, "-0", id="integer-minus-zero"),
        pytest.param({"type": "integer", "minimum": 0}, "-0", id="minus-0"),
        pytest.param({"items": {"minimum": 0}}, "[-0.0, -0e5]", id="minus-zero-forms"),
        pytest.param({"enum": ["red", "reddish"]}, '"reddish"', id="enum-prefix-member"),
        pytest.param({"enum": ["a", None, 1]}, "null", id="enum-null"),
        pytest.param({"maxLength": 1}, '"😀"', id="maxLength-astral"),
        pytest.param({"maxLength": 1}, '"\\ud83d\\ude00"', id="maxLength-surrogate-pair"),
        pytest.param({"maxItems": 2}, "[1, 2]", id="maxItems-exact"),
        pytest.param(PET, '{"kind": "dog", "bark": "woof"}', id="oneOf"),
        pytest.param(TREE, '{"name": "a", "kids": [{"name": "b", "kids": []}]}', id="recursive"),
        pytest.param({"anyOf": [{"type": "string"}, {"type": "integer"}]}, "7", id="anyOf"),
        pytest.param(OBJ_AB, '{"a": "x", "b": 2.0}', id="integer-float-member"),
        pytest.param({"const": {"a": [1, 2]}}, '{"a": [1, 2.0]}', id="const-equal-numbers"),
        pytest.param({"uniqueItems": True}, "[1, true, [1], [true]]", id="uniqueItems-bools"),
        pytest.param(
            {"uniqueItems": True}, '[{"a": 1}, {"a": 1, "b": 1}, [0], [false]]', id="unique-near"
        ),
        pytest.param({"pattern": "^a"}, '"abc"', id="pattern-prefix-then-anything"),
        pytest.param({"pattern": "^\\p{Lu}\\p{Ll}+$"}, '"Été"', id="pattern-unicode-class"),
        pytest.param({"pattern": "^ab$"}, '"ab"', id="pattern-anchored-exact"),
        pytest.param({"maxItems": 2, "contains": {}, "maxContains": 2}, "[1, 2]", id="max-exact"),
        pytest.param({"maxProperties": 1}, '{"a": [1, 2]}', id="maxProperties-exact"),
        pytest.param({"propertyNames": {"maxLength": 2}}, '{"ab": 1, "": 2}', id="names-ok"),
        pytest.param({"format": "date"}, '"not a date"', id="format-annotation"),
        pytest.param(
            ASSERT({"format": "uuid"}), '"2EB8AA08-AA98-11EA-B4AA-73B441D16380"', id="uuid-upper"
        ),
        pytest.param(ASSERT({"format": "date"}), '"2024-02-29"', id="date-leap"),
        pytest.param(ASSERT({"format": "ipv4"}), '"255.255.255.255"', id="ipv4"),
        pytest.param(ASSERT({"format": "unknown-format"}), '"x"', id="format-unknown"),
        pytest.param({"format": "email"}, '"a@b"', id="format"),
        pytest.param({"contains": {"type": "string"}, "maxItems": 3}, '[1, "a"]', id="contains"),
        pytest.param(
            {"additionalProperties": False, "patternProperties": {"^x": {}}},
            '{"xa": 1}',
            id="patternProperties",
        ),
        pytest.param(True, '{"anything": [1, "a", null]}', id="true-root"),
    ],
)
def test_valid_documents_never_fire(schema: Any, doc: str) -> None:
    assert_valid(schema, doc)


def test_a_repeated_item_starts_where_the_repeat_begins() -> None:
    # What backtracking rewinds to: the repeated item, not the whole array.
    doc = '{"a": [1, 1.0'
    t = FieldTracker({"properties": {"a": {"uniqueItems": True}}})
    with pytest.raises(SchemaViolation) as info:
        t.feed(doc + ",")
    assert info.value.keyword == "uniqueItems"
    assert info.value.start == doc.rindex("1.0")


def test_a_repeated_item_is_named_by_its_index_and_the_first_ones() -> None:
    """Indexes as in the path (``/1``, ``/3``): counted from 0, and the message says so, with
    the index of the item it repeats ("item 3 repeats an earlier one" read as the third)."""
    tracker = FieldTracker({"type": "array", "uniqueItems": True})
    with pytest.raises(SchemaViolation) as info:
        tracker.feed('["a", "b", "c", "b"]')
    assert info.value.keyword == "uniqueItems"
    assert str(info.value.message) == (
        "expected unique items; the item at index 3 repeats the one at index 1"
    )
