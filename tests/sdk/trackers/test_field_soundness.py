"""Never reject while a continuation can be valid; never disagree with the final verdict.

Generated documents for schemas that use the keywords the tracker checks while values stream
(``pattern``, ``uniqueItems``, ``maxItems``, ``contains``/``maxContains``, ``propertyNames``,
``maxProperties``, ``additionalProperties: false``, ``enum``, discriminated ``oneOf``, asserted
formats):

- every *valid* document passes, fed one character at a time — so every prefix of it, which
  some valid document (itself) extends, is accepted: the tracker never raises at a point from
  which a valid document continues;
- a *mutated* document (one character replaced, removed or inserted; an item repeated; a key
  renamed) that is still JSON raises exactly when an independent judge (jsonschema, patterns by
  ``regex``) calls it invalid, so every early error agrees with the final validation.
"""

from __future__ import annotations

import json
import string
from typing import Any

import pydantic
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdk._errors import SchemaViolation, StreamError
from sdk._regex._ecma import compile_ecma
from sdk._schema._compile import CompiledSchema, compile_schema
from sdk._trackers._field import FieldTracker
from tests.sdk.trackers._tracker_support import oracle

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{2,4}$"},
        "tags": {
            "type": "array",
            "items": {"type": "string", "maxLength": 5},
            "uniqueItems": True,
            "maxItems": 3,
        },
        "nums": {
            "type": "array",
            "items": {"type": "number"},
            "uniqueItems": True,
            "contains": {"minimum": 10},
            "maxContains": 2,
        },
        "meta": {
            "type": "object",
            "propertyNames": {"pattern": "^[a-z]+$", "maxLength": 4},
            "maxProperties": 2,
            "additionalProperties": {"type": "integer"},
        },
        "kind": {"enum": ["alpha", "beta", "gamma"]},
        "shape": {
            "oneOf": [
                {
                    "type": "object",
                    "properties": {"t": {"const": "circle"}, "r": {"minimum": 0}},
                    "required": ["t", "r"],
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "properties": {"t": {"const": "rect"}, "w": {}, "h": {}},
                    "required": ["t", "w", "h"],
                    "additionalProperties": False,
                },
            ]
        },
        "day": {"type": "string", "format": "date"},
        "id": {"type": "string", "format": "uuid"},
    },
    "required": ["code", "kind"],
    "additionalProperties": False,
}
COMPILED = compile_schema(SCHEMA, formats="assert")
JUDGE = oracle(SCHEMA)

short = st.text(st.sampled_from("abcxyz"), max_size=5)
documents = st.fixed_dictionaries(
    {
        "code": st.from_regex(r"\A[A-Z]{2}-[0-9]{2,4}\Z"),
        "kind": st.sampled_from(["alpha", "beta", "gamma"]),
    },
    optional={
        "tags": st.lists(short, max_size=3, unique=True),
        "nums": st.tuples(
            st.lists(st.integers(10, 99), min_size=1, max_size=2, unique=True),
            st.lists(st.integers(-50, 9) | st.floats(-5, 9.5), max_size=3, unique=True),
        ).map(lambda t: [*t[0], *t[1]]),
        "meta": st.dictionaries(
            st.text(st.sampled_from("abcd"), min_size=1, max_size=4), st.integers(), max_size=2
        ),
        "shape": st.one_of(
            st.fixed_dictionaries({"t": st.just("circle"), "r": st.integers(0, 9)}),
            st.fixed_dictionaries({"t": st.just("rect"), "w": st.integers(), "h": st.integers()}),
        ),
        "day": st.dates().map(lambda d: d.isoformat()),
        "id": st.uuids().map(str),
    },
)

SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def raised_at(compiled: CompiledSchema | Any, doc: str) -> int | None:
    """Feed ``doc`` one character at a time: where a violation was raised (``len(doc)``: at
    the end), or ``None``."""
    tracker = FieldTracker(compiled)
    for i, ch in enumerate(doc):
        try:
            tracker.feed(ch)
        except SchemaViolation:
            return i
        except StreamError:
            return None  # not JSON: judged below only when it parses
    try:
        tracker.close()
    except SchemaViolation:
        return len(doc)
    except StreamError:
        return None
    return None


@SETTINGS
@given(value=documents, indent=st.sampled_from([None, 1]))
def test_valid_documents_pass_at_every_prefix(value: dict[str, Any], indent: int | None) -> None:
    assert JUDGE.is_valid(value), list(JUDGE.iter_errors(value))
    doc = json.dumps(value, indent=indent)
    assert raised_at(COMPILED, doc) is None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate key")
    return dict(pairs)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, str]:
    """(a valid document, the same with one mutation)."""
    value = draw(documents)
    doc = json.dumps(value)
    how = draw(st.sampled_from(["replace", "delete", "insert", "repeat", "rename"]))
    if how == "repeat":
        for key in ("tags", "nums"):
            if value.get(key):
                value[key].append(draw(st.sampled_from(value[key])))
        return doc, json.dumps(value)
    if how == "rename":
        key = draw(st.sampled_from(sorted(value)))
        value[draw(st.text(string.ascii_lowercase, min_size=1, max_size=5))] = value.pop(key)
        return doc, json.dumps(value)
    i = draw(st.integers(0, len(doc) - 1))
    char = draw(st.sampled_from(string.ascii_letters + string.digits + '-:"., {}[]'))
    if how == "replace":
        return doc, doc[:i] + char + doc[i + 1 :]
    if how == "delete":
        return doc, doc[:i] + doc[i + 1 :]
    return doc, doc[:i] + char + doc[i:]


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=mutated())
def test_every_early_error_agrees_with_the_final_verdict(case: tuple[str, str]) -> None:
    original, doc = case
    at = raised_at(COMPILED, doc)
    if at is not None and at < len(doc):
        # Raised at character ``at``: the valid original must not continue from there.
        assert not original.startswith(doc[: at + 1]), (original, doc, at)
    try:
        value = json.loads(doc, object_pairs_hook=_no_duplicates)
    except ValueError:  # not JSON, or a duplicate key (refused: checked elsewhere)
        return
    assert (at is not None) == (not JUDGE.is_valid(value)), (doc, at)


class Item(pydantic.BaseModel):
    sku: str = pydantic.Field(pattern=r"^[A-Z]{3}\d{2}$")
    qty: int = pydantic.Field(ge=1, le=99)
    tags: list[str] = pydantic.Field(default=[], max_length=2)


class Cart(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    items: list[Item] = pydantic.Field(max_length=3)
    note: str | None = None


@SETTINGS
@given(
    cart=st.builds(
        Cart,
        items=st.lists(
            st.builds(
                Item,
                sku=st.from_regex(r"\A[A-Z]{3}[0-9]{2}\Z"),
                qty=st.integers(1, 99),
                tags=st.lists(st.text(max_size=3), max_size=2),
            ),
            max_size=3,
        ),
        note=st.none() | st.text(max_size=8),
    ),
    lax=st.booleans(),
)
def test_what_pydantic_accepts_passes_at_every_prefix(cart: Cart, lax: bool) -> None:
    value = cart.model_dump()
    if lax:  # numbers as strings, as lax pydantic reads them
        for item in value["items"]:
            item["qty"] = f" {item['qty']} "
    doc = json.dumps(value)
    assert pydantic.TypeAdapter(Cart).validate_json(doc) == cart
    assert raised_at(Cart, doc) is None


PATTERNS = [
    r"^[0-9]+$",
    r"^(cat|dog)s?$",
    r"^a(?!b)",
    r"^a(?=bc)",
    r"\bfoo\b",
    r"^\p{Lu}\p{Ll}*$",
    r"^(ab)+c?$",
    r"x{2,3}y$",
    r"^$",
    r"^.{0,3}$",
    r"^(?i:hello)",
    r"^[^a]*a[^a]*$",
]


@settings(max_examples=400, deadline=None)
@given(
    pattern=st.sampled_from(PATTERNS),
    prefix=st.text("abcxyfoABC0129 \n", max_size=6),
    tails=st.lists(st.text("abcxyfoABC0129 \n", max_size=6), min_size=1, max_size=5),
)
def test_a_pattern_refuses_a_prefix_only_when_no_continuation_matches(
    pattern: str, prefix: str, tails: list[str]
) -> None:
    # The tracker's rule for ``pattern`` while a string streams: refuse the prefix when no
    # continuation can match. Then none may.
    compiled = compile_ecma(pattern)
    if not compiled.could_search(prefix):
        for tail in tails:
            assert not compiled.search(prefix + tail), (prefix, tail)
    doc = json.dumps(prefix)
    at = raised_at({"pattern": pattern}, doc)
    if compiled.search(prefix):
        assert at is None
    else:
        assert at is not None
