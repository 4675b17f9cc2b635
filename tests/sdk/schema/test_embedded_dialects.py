"""``$schema`` inside a document, judged against jsonschema (the oracle, a differential test).

A subschema's ``$schema`` says how its keywords are read (jsonschema switches to that draft's
validator there); whether it is a resource with a base URI of its own is the enclosing
dialect's to say (``$id``, or ``id`` in draft-04). Heroku's prmd hyper-schemas embed draft-04
resources (``"$schema"`` and ``"id": "schemata/app"``) whose ``#/definitions/app/...``
references name places in the whole document: under a draft-06 ... 2020-12 root they resolve
from the document, as jsonschema resolves them, and the schema is not refused.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdk import SchemaError, compile_schema
from sdk._errors import SchemaViolation
from sdk._schema._vocabulary import META_SCHEMAS
from sdk._trackers._field import FieldTracker

D4 = META_SCHEMAS["draft-04"]
ROOTS = ["draft-06", "draft-07", "2019-09", "2020-12"]


def _tracker_valid(schema: Any, doc: Any) -> bool:
    tracker = FieldTracker(compile_schema(schema))
    try:
        text = json.dumps(doc)
        for i in range(0, len(text), 3):
            tracker.feed(text[i : i + 3])
        tracker.close()
    except SchemaViolation:
        return False
    return True


def _oracle_valid(schema: Any, doc: Any) -> bool:
    validator = jsonschema.validators.validator_for(schema)(schema)
    return next(iter(validator.iter_errors(doc)), None) is None


def _prmd(name: str, maximum: int, exclusive: bool, required: list[str]) -> dict[str, Any]:
    """A resource as prmd writes one into a combined hyper-schema (draft-04, ``id``, references
    by a pointer from the document's root)."""
    here = f"#/definitions/{name}/definitions"
    return {
        "$schema": D4,
        "id": f"schemata/{name}",
        "title": f"API - {name}",
        "type": ["object"],
        "definitions": {
            "id": {"type": ["string"], "pattern": "^[a-z]+$", "example": "abc"},
            "count": {"type": ["integer"], "maximum": maximum, "exclusiveMaximum": exclusive},
            "tags": {
                "type": ["array"],
                "items": [{"type": "string"}],
                "additionalItems": {"type": "integer"},
            },
            "identity": {"anyOf": [{"$ref": f"{here}/id"}, {"$ref": f"{here}/count"}]},
            # draft-04: $ref overrides its siblings (the type here is dropped)
            "alias": {"$ref": f"{here}/id", "type": "integer"},
        },
        "links": [{"href": f"/{name}s/{{(%23%2Fdefinitions%2F{name}%2Fdefinitions%2Fid)}}"}],
        "properties": {
            key: {"$ref": f"{here}/{key}"} for key in ("id", "count", "tags", "identity", "alias")
        },
        "required": required,
    }


def _document_schema(root: str, region: dict[str, Any], name: str) -> dict[str, Any]:
    return {
        "$schema": META_SCHEMAS[root],
        "type": "object",
        "definitions": {name: region},
        "properties": {name: {"$ref": f"#/definitions/{name}"}},
    }


_values = st.one_of(
    st.sampled_from(["abc", "ABC", "", 0, 3, 3.0, 2.5, -1, 7, 10, 10.0, None, True]),
    st.lists(st.sampled_from(["a", 1, 1.0, 1.5, None]), max_size=3),
)
_documents = st.dictionaries(
    st.sampled_from(["id", "count", "tags", "identity", "alias", "other"]), _values, max_size=4
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    root=st.sampled_from(ROOTS),
    maximum=st.integers(0, 10),
    exclusive=st.booleans(),
    required=st.lists(st.sampled_from(["id", "count"]), unique=True),
    docs=st.lists(_documents, min_size=1, max_size=6),
)
def test_an_embedded_prmd_resource_is_judged_as_jsonschema_judges_it(
    root: str, maximum: int, exclusive: bool, required: list[str], docs: list[dict[str, Any]]
) -> None:
    schema = _document_schema(root, _prmd("app", maximum, exclusive, required), "app")
    for body in docs:
        doc = {"app": body}
        assert _tracker_valid(schema, doc) == _oracle_valid(schema, doc), (root, doc)


@pytest.mark.parametrize("root", ROOTS)
def test_the_prmd_resource_reads_its_keywords_as_draft_04(root: str) -> None:
    schema = _document_schema(root, _prmd("app", 5, True, ["id"]), "app")
    cases = [
        ({"id": "abc"}, True),
        ({"id": "abc", "count": 4}, True),
        ({"id": "abc", "count": 5}, False),  # exclusiveMaximum: true (draft-04)
        ({"id": "abc", "count": 4.0}, False),  # draft-04: 4.0 is not an integer
        ({"id": "abc", "tags": ["a", 1]}, True),  # items as an array (draft-04)
        ({"id": "abc", "tags": ["a", "b"]}, False),
        ({"id": "abc", "alias": "xyz"}, True),  # $ref overrides "type": "integer"
        ({"id": "abc", "identity": 3}, True),
        ({"id": "ABC"}, False),
        ({}, False),
    ]
    for body, valid in cases:
        doc = {"app": body}
        assert _oracle_valid(schema, doc) is valid, body  # the oracle agrees with the case
        assert _tracker_valid(schema, doc) is valid, body


def test_a_draft_04_root_reads_id_as_a_base_uri_there() -> None:
    # Under a draft-04 root, the same "id" does make a resource: "#/definitions/app/..." then
    # names a place inside "schemata/app", where there is none (jsonschema cannot resolve it
    # either).
    schema = _document_schema("draft-04", _prmd("app", 5, True, ["id"]), "app")
    with pytest.raises(SchemaError, match="points at nothing"):
        compile_schema(schema)
    validator = jsonschema.Draft4Validator(schema)
    with pytest.raises(jsonschema.exceptions._WrappedReferencingError):
        validator.is_valid({"app": {"id": "abc"}})


def test_an_embedded_resource_is_still_known_by_its_own_identifier() -> None:
    # A reference that names the draft-04 subschema by its "id" finds it, as jsonschema's
    # registry does (which then resolves references inside it from that URI: the tracker, which
    # resolves each reference once, reads them from the document, so none is written here).
    count = {
        "$schema": D4,
        "id": "https://example.com/schemata/count",
        "type": "integer",
        "maximum": 5,
        "exclusiveMaximum": True,
    }
    schema = {
        "$schema": META_SCHEMAS["draft-07"],
        "definitions": {"count": count},
        "properties": {"n": {"$ref": "https://example.com/schemata/count"}},
    }
    for n, valid in [(4, True), (5, False), (4.0, False), ("4", False)]:
        assert _oracle_valid(schema, {"n": n}) is valid, n
        assert _tracker_valid(schema, {"n": n}) is valid, n


def test_an_unknown_schema_name_in_a_subschema_keeps_the_enclosing_dialect() -> None:
    # prmd's own files name draft-04's hyper-schema, which no dialect table lists: the
    # subschema is read as its document is (jsonschema keeps its validator there too).
    schema = {
        "$schema": META_SCHEMAS["2020-12"],
        "properties": {
            "a": {"$schema": "http://json-schema.org/draft-04/hyper-schema", "maximum": 5}
        },
    }
    assert _tracker_valid(schema, {"a": 5}) and not _tracker_valid(schema, {"a": 6})
    with pytest.raises(SchemaError, match=r"\$schema \(at /properties/a\) must be a string"):
        compile_schema({"properties": {"a": {"$schema": 4}}})
