"""Schemas as people have them: every dialect, unknown keywords, references to other documents,
and malformed input (a clean :class:`~sdk.SchemaError`, never a crash)."""

from __future__ import annotations

import json
import logging
from typing import Any

import jsonschema
import pytest
import referencing
import referencing.exceptions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdk import CompiledSchema, SchemaError, compile_schema
from sdk._errors import SchemaViolation, ValidationFailed
from sdk._http.openai._strict import strict_schema
from sdk._trackers._field import FieldTracker

D4 = "http://json-schema.org/draft-04/schema#"
D7 = "http://json-schema.org/draft-07/schema#"
D2019 = "https://json-schema.org/draft/2019-09/schema"


def _valid(schema: Any, doc: str, **options: Any) -> bool:
    compiled = schema if isinstance(schema, CompiledSchema) else compile_schema(schema, **options)
    tracker = FieldTracker(compiled)
    try:
        for c in doc:  # one character at a time
            tracker.feed(c)
        tracker.finish()
        tracker.close()
    except SchemaViolation:
        return False
    return True


DRAFT4_ORDER = {
    "$schema": D4,
    "id": "http://example.com/order.json",
    "type": "object",
    "required": ["total", "lines"],
    "properties": {
        "total": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
        "discount": {"type": "number", "maximum": 1, "exclusiveMaximum": False},
        "lines": {
            "type": "array",
            "items": [{"type": "string"}, {"$ref": "#/definitions/qty"}],
            "additionalItems": False,
        },
        "card": {"type": "string"},
        "billing": {"type": "string"},
    },
    "dependencies": {"card": ["billing"], "billing": {"required": ["total"]}},
    "definitions": {"qty": {"id": "#qty", "type": "integer", "minimum": 1}},
}


def test_a_draft4_schema_is_read_as_draft4() -> None:
    compiled = compile_schema(DRAFT4_ORDER)
    assert compiled.dialect == "draft-04"
    assert compiled.ignored == ()
    assert _valid(compiled, '{"total": 3, "lines": ["pen", 2]}')
    assert not _valid(compiled, '{"total": 0, "lines": ["pen", 2]}')  # exclusive minimum
    assert _valid(compiled, '{"total": 1, "discount": 1, "lines": []}')  # maximum inclusive
    assert not _valid(compiled, '{"total": 1, "lines": ["pen", 0]}')  # via definitions
    assert not _valid(compiled, '{"total": 1, "lines": ["pen", 2, 3]}')  # additionalItems
    assert not _valid(compiled, '{"total": 1, "lines": [], "card": "x"}')  # dependencies
    assert _valid(compiled, '{"total": 1, "lines": [], "card": "x", "billing": "y"}')


def test_what_a_backend_is_sent_is_the_canonical_draft_2020_12() -> None:
    sent = compile_schema(DRAFT4_ORDER).json_schema
    assert isinstance(sent, dict)
    assert "$schema" not in sent and "id" not in sent
    assert sent["$id"] == "http://example.com/order.json"
    props = sent["properties"]
    assert props["total"] == {"type": "number", "exclusiveMinimum": 0}
    assert props["discount"] == {"type": "number", "maximum": 1}
    assert props["lines"]["prefixItems"][1] == {"$ref": "#/definitions/qty"}
    assert props["lines"]["items"] is False
    assert sent["dependentRequired"] == {"card": ["billing"]}
    assert sent["dependentSchemas"] == {"billing": {"required": ["total"]}}
    assert sent["definitions"]["qty"]["$anchor"] == "qty"
    # ... which is valid Draft 2020-12 and means what the draft-04 schema meant.
    jsonschema.Draft202012Validator.check_schema(sent)
    for doc in ({"total": 0, "lines": []}, {"total": 1, "lines": ["a", 1, 2]}, {"total": 2}):
        old = jsonschema.Draft4Validator(DRAFT4_ORDER).is_valid(doc)
        assert jsonschema.Draft202012Validator(sent).is_valid(doc) == old
    # The strict rewrite for servers takes it like any 2020-12 schema.
    assert strict_schema(sent).schema["type"] == "object"


def test_ref_overrides_its_siblings_up_to_draft7_only() -> None:
    body = {
        "definitions": {"s": {"type": "string"}},
        "properties": {"a": {"$ref": "#/definitions/s", "maxLength": 2}},
    }
    assert _valid({"$schema": D7, **body}, '{"a": "abc"}')
    assert not _valid(body, '{"a": "abc"}')  # 2020-12: both hold
    assert not _valid({"$schema": D2019, **body}, '{"a": "abc"}')


def test_the_default_dialect_is_2020_12_and_the_caller_may_change_it() -> None:
    schema = {"items": [{"type": "integer"}], "additionalItems": False}
    with pytest.raises(SchemaError, match="prefixItems") as info:
        compile_schema(schema)
    assert (info.value.keyword, info.value.pointer) == ("items", "/items")
    compiled = compile_schema(schema, dialect="draft-07")
    assert compiled.dialect == "draft-07"
    assert _valid(compiled, "[1]") and not _valid(compiled, "[1, 2]")
    assert compile_schema({"type": "string"}, dialect=D4).dialect == "draft-04"
    with pytest.raises(SchemaError, match="unknown dialect"):
        compile_schema({}, dialect="draft-99")


def test_an_embedded_resource_is_read_in_its_own_dialect() -> None:
    schema = {
        "$id": "https://example.com/root",
        "properties": {
            "n": {
                "$schema": D4,
                "id": "https://example.com/old",
                "type": "number",
                "maximum": 5,
                "exclusiveMaximum": True,
                "items": True,  # no schema in draft-04, but plain enough to read
            }
        },
    }
    assert not _valid(schema, '{"n": 5}') and _valid(schema, '{"n": 4.5}')


def test_nested_draft4_resources_with_boolean_subschemas_do_not_crash() -> None:
    # ``referencing``'s crawl of a draft-04 resource raised TypeError on a boolean subschema.
    schema = {
        "type": "object",
        "properties": {
            "a": {"$schema": D4, "id": "a.json", "properties": {"b": True, "c": False}},
            "d": {"$schema": D4, "additionalProperties": True, "items": {"not": True}},
        },
    }
    compiled = compile_schema(schema)
    assert _valid(compiled, '{"a": {"b": 1}}') and not _valid(compiled, '{"a": {"c": 1}}')


def test_recursive_ref_in_2019_09() -> None:
    tree = {
        "$schema": D2019,
        "$recursiveAnchor": True,
        "type": "object",
        "properties": {"kids": {"type": "array", "items": {"$recursiveRef": "#"}}},
        "additionalProperties": False,
    }
    assert _valid(tree, '{"kids": [{"kids": []}]}')
    assert not _valid(tree, '{"kids": [{"kids": [{"x": 1}]}]}')


# ---------------------------------------------------------------- unknown keywords


def test_unknown_keywords_are_annotations_reported_once(caplog: pytest.LogCaptureFixture) -> None:
    schema = {
        "type": "object",
        "self": {"vendor": "com.acme"},
        "properties": {
            "age": {"type": "integer", "_format": "int32", "readonly": True},
            "tags": {"x-order": 2, "type": "array"},
        },
        "title": "unknown-keywords-test",
    }
    with caplog.at_level(logging.WARNING, logger="fieldstream"):
        compiled = compile_schema(schema)
        compile_schema(schema)  # cached: not reported again
    assert compiled.ignored == (
        ("", "self"),
        ("/properties/age", "_format"),
        (
            "/properties/age",
            "readonly",
        ),
    )
    records = [r for r in caplog.records if r.name == "fieldstream"]
    assert len(records) == 1
    assert "_format at /properties/age" in records[0].getMessage()
    sent = compiled.json_schema
    assert isinstance(sent, dict)
    assert "self" not in sent and sent["properties"]["tags"]["x-order"] == 2  # extensions stay
    assert _valid(compiled, '{"age": 3}') and not _valid(compiled, '{"age": "3"}')


def test_strict_mode_refuses_unknown_keywords_and_malformed_annotations() -> None:
    with pytest.raises(SchemaError) as info:
        compile_schema({"properties": {"a": {"maxLenght": 3}}}, unknown="refuse")
    assert (info.value.keyword, info.value.pointer) == ("maxLenght", "/properties/a")
    with pytest.raises(SchemaError, match="not a valid JSON Schema"):
        compile_schema({"title": 3}, unknown="refuse")
    assert compile_schema({"title": 3}).ignored == ()  # annotations are not vetted by default
    # A keyword of a later draft is unknown in an earlier one.
    assert compile_schema({"$schema": D4, "const": 1}).ignored == (("", "const"),)
    with pytest.raises(ValueError, match="unknown must be"):
        compile_schema({}, unknown="warn")  # type: ignore[arg-type]


# ---------------------------------------------------------------- references


ADDRESS = {"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}}
ORDER = {
    "type": "object",
    "properties": {
        "ship": {"$ref": "https://schemas.example.com/address.json"},
        "bill": {"$ref": "https://schemas.example.com/address.json#/properties/city"},
    },
}


def test_remote_references_resolve_from_a_mapping() -> None:
    registry = {"https://schemas.example.com/address.json": ADDRESS}
    compiled = compile_schema(ORDER, registry=registry)
    assert _valid(compiled, '{"ship": {"city": "Oslo"}, "bill": "Oslo"}')
    assert not _valid(compiled, '{"ship": {}}') and not _valid(compiled, '{"bill": 1}')
    jsonschema.Draft202012Validator.check_schema(compiled.json_schema)  # self-contained


def test_remote_references_resolve_from_a_referencing_registry() -> None:
    resource = referencing.Resource.from_contents(
        {"$schema": D4, **ADDRESS}, default_specification=referencing.jsonschema.DRAFT4
    )
    registry: referencing.Registry[Any] = referencing.Registry().with_resource(
        "https://schemas.example.com/address.json", resource
    )
    compiled = compile_schema(ORDER, registry=registry)
    assert _valid(compiled, '{"ship": {"city": "Oslo"}}') and not _valid(compiled, '{"ship": {}}')


def test_a_remote_reference_without_a_registry_is_refused_naming_the_uri() -> None:
    with pytest.raises(SchemaError, match=r"address\.json.*never fetches") as info:
        compile_schema(ORDER)
    assert (info.value.keyword, info.value.pointer) == ("$ref", "/properties/ship")
    with pytest.raises(SchemaError, match="not in this schema nor in the registry"):
        compile_schema(ORDER, registry={"https://elsewhere.example.com/": {}})

    def retrieve(uri: str) -> referencing.Resource[Any]:
        raise OSError(f"no network for {uri}")

    registry: referencing.Registry[Any] = referencing.Registry(retrieve=retrieve)  # type: ignore[call-arg]
    with pytest.raises(SchemaError, match=r"retrieving .* failed: no network"):
        compile_schema(ORDER, registry=registry)


def test_references_to_ids_and_anchors_inside_the_document() -> None:
    schema = {
        "$schema": D7,
        "properties": {"a": {"$ref": "#pos"}, "b": {"$ref": "item.json"}},
        "definitions": {
            "p": {"$id": "#pos", "type": "integer", "minimum": 1},
            "i": {"$id": "item.json", "type": "string"},
        },
    }
    assert _valid(schema, '{"a": 1, "b": "x"}')
    assert not _valid(schema, '{"a": 0}') and not _valid(schema, '{"b": 1}')


def test_a_draft_meta_schema_is_known_without_the_network() -> None:
    compiled = compile_schema({"$ref": "http://json-schema.org/draft-07/schema#"})
    assert _valid(compiled, '{"type": "string"}')
    assert not _valid(compiled, '{"type": 12}')


# ---------------------------------------------------------------- never a crash

_KEYWORDS = [
    "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minLength", "maxLength", "pattern", "format", "items", "prefixItems",
    "additionalItems", "contains", "minContains", "maxContains", "minItems", "maxItems",
    "uniqueItems", "properties", "patternProperties", "additionalProperties", "required",
    "minProperties", "maxProperties", "propertyNames", "dependencies", "dependentRequired",
    "dependentSchemas", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "$ref",
    "$defs", "definitions", "$id", "id", "$anchor", "$schema", "$recursiveRef",
    "$recursiveAnchor", "$dynamicRef", "$dynamicAnchor", "title", "_format", "x-a",
]  # fmt: skip
_SCHEMA_URIS = [D4, D7, D2019, "https://json-schema.org/draft/2020-12/schema", "nope", 3]
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
    st.sampled_from(["", "a", "#", "#/a", "#/$defs/a", "integer", "string", "[", "^a+$"]),
    st.sampled_from(_SCHEMA_URIS),
)
_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from([*_KEYWORDS, "a", "b"]), inner, max_size=4),
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=_json, docs=st.lists(_json, max_size=3))
def test_any_input_compiles_or_is_a_schema_error(schema: Any, docs: list[Any]) -> None:
    try:
        compiled = compile_schema(schema)
    except SchemaError:
        return
    for doc in docs:  # what compiled also checks documents without crashing
        try:
            compiled.validate(doc)
        except ValidationFailed:
            pass
        text = json.dumps(doc)
        tracker = FieldTracker(compiled)
        try:
            tracker.feed(text)
            tracker.finish()
            tracker.close()
        except SchemaViolation:
            pass


def test_deep_and_odd_inputs_are_schema_errors() -> None:
    deep: Any = {}
    for _ in range(5000):
        deep = {"not": deep}
    with pytest.raises(SchemaError, match="nested too deeply"):
        compile_schema(deep)
    odd: list[Any] = [[1], 3, {"properties": []}, {"$schema": 4}, {1: {}}, {"properties": {1: {}}}]
    odd += [
        {"dependentRequired": {2: []}},
        {"$schema": D7, "dependencies": {3: []}},
        {"enum": [float("nan")]},
    ]
    for bad in odd:
        with pytest.raises(SchemaError):
            compile_schema(bad)


# ---------------------------------------------------------------- same room


@pytest.mark.parametrize("spaced", [True, False])
def test_unique_items_over_objects_is_raised_at_the_repeated_objects_closing_brace(
    spaced: bool,
) -> None:
    doc = '{"a": [{"k": 1}, {"k": 1}, 5]}' if spaced else '{"a":[{"k":1},{"k":1},5]}'
    brace = doc.index("}", doc.index("}") + 1)  # the second object's closing brace
    for chunks in ([doc], list(doc)):
        tracker = FieldTracker({"properties": {"a": {"uniqueItems": True}}})
        with pytest.raises(SchemaViolation) as info:
            for chunk in chunks:
                tracker.feed(chunk)
        assert (info.value.keyword, info.value.offset) == ("uniqueItems", brace)
        assert info.value.start == doc.rindex("{", 0, brace)  # where the repeated item began


def test_a_schema_keyword_that_names_no_resource_is_ignored() -> None:
    # $schema counts at a resource's root only; elsewhere even an unknown URI is harmless.
    schema = {"properties": {"a": {"$schema": "https://example.com/meta", "type": "string"}}}
    assert _valid(schema, '{"a": "x"}') and not _valid(schema, '{"a": 1}')


@pytest.mark.local
def test_a_draft4_schema_reaches_xgrammar_as_it_means() -> None:
    # xgrammar is the grammar engine of vLLM and of the local engine: it gets the canonical form.
    xgr = pytest.importorskip("xgrammar", reason="needs the local extra (xgrammar)")
    xgrammar_accepts = xgr.testing._is_grammar_accept_string

    sent = compile_schema(DRAFT4_ORDER).json_schema
    grammar = xgr.Grammar.from_json_schema(json.dumps(sent), strict_mode=True)
    for doc, valid in [
        ('{"total": 3, "lines": ["pen", 2]}', True),
        ('{"total": 3, "lines": ["pen", 2, 3]}', False),  # additionalItems: false
        ('{"total": 3, "lines": ["pen", "x"]}', False),  # items[1] via #/definitions/qty
        ('{"total": 3}', False),  # required
    ]:
        assert xgrammar_accepts(grammar, doc) == valid == _valid(DRAFT4_ORDER, doc), doc


@pytest.mark.anyio
async def test_a_server_is_sent_the_canonical_form_strict_and_the_client_checks_it() -> None:
    import httpx
    import respx

    from sdk import Client

    def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
        chunk = {"object": "chat.completion.chunk", "choices": [
            {"index": 0, "delta": delta, "finish_reason": finish}
        ]}  # fmt: skip
        return b"data: " + json.dumps(chunk).encode() + b"\n\n"

    text = '{"total": 0, "lines": []}'  # exclusiveMinimum (draft-04's boolean form) breaks
    parts = [event({"role": "assistant", "content": ""}), event({"content": text})]
    parts += [event({}, finish="stop"), b"data: [DONE]\n\n"]
    with respx.mock(base_url="http://llm.test/v1") as router:
        route = router.post("/chat/completions").mock(
            return_value=httpx.Response(
                200, headers={"content-type": "text/event-stream"}, content=b"".join(parts)
            )
        )
        client = Client(base_url="http://llm.test/v1", model="m")
        async with client.stream(
            messages=[{"role": "user", "content": "an order"}], schema=DRAFT4_ORDER, retry=None
        ) as stream:
            with pytest.raises(SchemaViolation) as info:
                await stream.result()
        await client.aclose()
    assert info.value.keyword == "exclusiveMinimum"
    body = json.loads(route.calls[0].request.content)
    sent = body["response_format"]["json_schema"]
    assert sent["strict"] is True  # the strict rewrite reads the canonical form
    schema = sent["schema"]
    assert schema["additionalProperties"] is False
    assert "$schema" not in schema and "dependencies" not in schema
    assert schema["properties"]["total"]["exclusiveMinimum"] == 0
    assert schema["properties"]["lines"]["prefixItems"][0] == {"type": "string"}


def test_a_pattern_a_pydantic_model_adds_itself_is_vetted_when_it_is_compiled() -> None:
    # A pattern from json_schema_extra is the tracker's to check (pydantic never reads it), so
    # one that is not ECMA-262 is refused by compile_schema, never first met mid-stream; and a
    # refused schema stays refused the same way (no half-compiled state left in a cache).
    from pydantic import BaseModel, Field

    from sdk import FieldTracker

    class Model(BaseModel):
        s: str = Field(json_schema_extra={"pattern": "(?P<x>a)"})

    for _ in range(2):
        with pytest.raises(SchemaError, match="not a valid regular expression"):
            compile_schema(Model)
        with pytest.raises(SchemaError, match="not a valid regular expression"):
            FieldTracker(Model)


def test_draft_04_integer_is_a_number_written_without_a_fraction() -> None:
    # Draft-04 counts 12345.0 as a number that is not an integer (draft-06 made it one): the
    # official suite's draft4/optional/zeroTerminatedFloats and jsonschema's Draft4Validator.
    d4 = {"$schema": D4, "type": "object", "properties": {"n": {"type": "integer"}}}
    d6 = {**d4, "$schema": "http://json-schema.org/draft-06/schema#"}
    for doc in ('{"n": 12345}', '{"n": 12345.0}', '{"n": 1e2}', '{"n": -0}', '{"n": 1.5}'):
        value = json.loads(doc)
        assert _valid(d4, doc) is jsonschema.Draft4Validator(d4).is_valid(value), doc
        assert _valid(d6, doc) is jsonschema.Draft6Validator(d6).is_valid(value), doc
    assert not _valid(d4, '{"n": 12345.0}') and _valid(d6, '{"n": 12345.0}')
    # "integer" beside "number" allows every number; under "not", 1.0 is not an integer.
    assert _valid({"$schema": D4, "type": ["integer", "number"]}, "12345.0")
    assert _valid({"$schema": D4, "not": {"type": "integer"}}, "1.0")
    assert not _valid({"$schema": D4, "not": {"type": "integer"}}, "1")
    # The schema sent to servers (and the local grammar) stays plain Draft 2020-12.
    assert compile_schema(d4).json_schema == {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
    }
    assert strict_schema(dict(compile_schema(d4).json_schema)).schema["properties"] == {
        "n": {"type": "integer"}
    }


def test_a_definition_that_is_not_a_schema_is_ignored_until_referenced() -> None:
    # cibuildwheel's published schema keeps a description string among its $defs; jsonschema
    # never looks at a definition nothing references.
    schema = {"$defs": {"note": "a string, not a schema", "n": {"type": "integer"}}}
    schema["properties"] = {"n": {"$ref": "#/$defs/n"}}
    compiled = compile_schema(schema)
    assert compiled.ignored == (("/$defs", "note"),)
    assert _valid(compiled, '{"n": 1}') and not _valid(compiled, '{"n": "1"}')
    schema["properties"] = {"n": {"$ref": "#/$defs/note"}}
    with pytest.raises(SchemaError, match="a schema must be an object or a boolean, got str"):
        compile_schema(schema)
