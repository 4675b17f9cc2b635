"""What the local engine says it does with a schema (issue 42, "say what was relaxed"):
``LocalBackend.explain`` / ``Client.explain``, ``Stream.mask_report`` and the debug log line,
on schemas of each relaxation kind, read off the very plan the compile uses."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from sdk import Client
from sdk._errors import UnsupportedConstraint
from sdk._local import LocalBackend
from sdk._local._mask_report import MaskReport
from tests.sdk.local._local_support import import_llguidance_hf

llguidance = pytest.importorskip("llguidance", reason="needs llguidance (the local extra)")
import_llguidance_hf()

CORPUS = Path(__file__).resolve().parents[2] / "data" / "schema-corpus"


def explain(schema: Any, runtime: str = "llama.cpp") -> MaskReport:
    return LocalBackend(runtime=runtime).explain(schema)  # type: ignore[arg-type]


def relaxed(report: MaskReport) -> set[tuple[str, str]]:
    return {(r.path, r.keyword) for r in report.relaxations}


# (schema, the (path, keyword) pairs the llama.cpp mask relaxes)
KINDS: list[tuple[str, Any, set[tuple[str, str]]]] = [
    (
        "format",
        {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}}},
        {("/properties/at", "format")},
    ),
    (
        "minProperties",
        {
            "type": "object",
            "minProperties": 1,
            "properties": {"a": {"type": "boolean"}},
            "additionalProperties": True,
        },
        {("/", "minProperties")},
    ),
    (
        "bounded number",
        {"type": "number", "minimum": 0, "multipleOf": 0.5},
        {("/", "minimum,multipleOf")},
    ),
    ("float in enum", {"enum": [{"a": 0.0}, "x"]}, {("/", "enum")}),
    ("integer bound", {"type": "integer", "maximum": 2**63}, {("/", "maximum")}),
    ("unreadable pattern", {"type": "string", "pattern": "^(?!x).*$"}, {("/", "pattern")}),
    (
        "circular ref beside keywords",
        {"type": "object", "properties": {"c": {"$ref": "#", "properties": {"d": {}}}}},
        {
            ("/properties/c", "$ref"),  # as an allOf of the reference and its siblings
            ("/properties/c/allOf/0", "*"),  # still refused: the members any value
            ("/properties/c/allOf/1", "*"),
        },
    ),
    (
        "overlapping patternProperties",
        {"type": "object", "patternProperties": {"^a": {"type": "integer"}, "^ab": {}}},
        {("/", "patternProperties")},
    ),
]


@pytest.mark.parametrize(("kind", "schema", "expected"), KINDS, ids=[k for k, _, _ in KINDS])
def test_each_relaxation_kind_is_reported_at_its_path(
    kind: str, schema: Any, expected: set[tuple[str, str]]
) -> None:
    report = explain(schema)
    assert report.runtime == "llama.cpp"
    assert relaxed(report) == expected
    assert not report.is_exact
    # A relaxed path is never listed as exact.
    assert not {path for path, _ in expected} & set(report.exact)
    assert report.summary().startswith("llama.cpp mask: ")
    assert all(r.reason for r in report.relaxations)


def test_an_exact_schema_says_so_with_its_closures_and_key_order() -> None:
    schema = {
        "type": "object",
        "properties": {"b": {"type": "string"}, "a": {"type": "integer", "minimum": 0}},
        "required": ["b"],
    }
    report = explain(schema)
    assert report.is_exact
    assert report.relaxations == ()
    assert report.exact == ("/", "/properties/b", "/properties/a")
    assert [(c.path, c.names, c.what) for c in report.closures] == [
        ("/", ("b", "a"), "closed to these names")
    ]
    assert report.key_order == (("/", ("b", "a")),)
    assert report.refused == ""
    assert "masked exactly; 1 object(s) closed by the strict rule, 0 left open" in str(report)


def test_an_object_closing_would_contradict_is_reported_open() -> None:
    # The root names no url; a branch requires it: closed, no document would pass.
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "anyOf": [{"properties": {"url": {"type": "string"}}, "required": ["url"]}],
    }
    report = explain(schema)
    root = [c for c in report.closures if c.path == "/"]
    assert root and root[0].what.startswith("closed")
    assert root[0].names == ("name", "url")  # the branch's name too, in the grammar's order
    contradicting = {"type": "object", "properties": {"a": {}}, "required": ["a", "b"]}
    (closure,) = explain(contradicting).closures
    assert closure.names == ()
    assert closure.what == "left open: closing it would contradict (required ['b'] listed nowhere)"


def test_a_schema_the_engine_refuses_says_why() -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^a": {"type": "integer"}, "^ab": {"type": "string"}},
    }
    report = explain(schema)
    assert report.refused  # llguidance's own reason for the schema as written
    circular = explain(KINDS[6][1])
    assert "circular references with sibling keys" in circular.refused
    assert ("/", "patternProperties") in relaxed(report)


def test_the_report_as_json() -> None:
    report = explain({"type": "object", "properties": {"n": {"type": "number", "maximum": 1}}})
    data = report.as_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["relaxations"] == [
        {
            "path": "/properties/n",
            "keyword": "maximum",
            "kind": "widened",
            "reason": "a bounded number refuses spellings json.dumps writes (1e-06, 2.0): "
            "any number",
        }
    ]
    assert data["key_order"] == {"/": ["n"]}


def test_real_schemas_from_the_corpus() -> None:
    # Mergify's configuration schema (SchemaStore): 47 formats read as annotations, nothing
    # else relaxed; one `if` branch's property left open (Scopes declares `source` too).
    schema = json.loads((CORPUS / "schemastore" / "mergify.json").read_text())
    report = explain(schema)
    assert {(r.keyword, r.kind) for r in report.relaxations} == {("format", "annotation")}
    assert len(report.relaxations) == 47
    assert report.refused == ""
    assert [(c.path, c.what) for c in report.closures if not c.what.startswith("closed")] == [
        (
            "/$defs/Scopes/if/properties/source",
            "left open: another schema applying to its object declares it too",
        )
    ]
    # Read the Docs' schema: a bounded number and minProperties beside properties.
    docs = explain(json.loads((CORPUS / "schemastore" / "readthedocs.json").read_text()))
    assert {r.keyword for r in docs.relaxations} == {"minProperties", "minimum,maximum"}


def test_the_client_explains_on_the_local_engine_only() -> None:
    schema = {"type": "string", "format": "email"}
    report = Client.local().explain(schema)
    assert relaxed(report) == {("/", "format")}

    class Server:
        async def aclose(self) -> None: ...

    with pytest.raises(UnsupportedConstraint, match="explain\\(\\) is the local engine's"):
        Client.from_backend(Server()).explain(schema)  # type: ignore[arg-type]


def test_the_stream_carries_the_report_and_the_log_says_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "number", "minimum": 0}}}
    client = Client.local()
    with caplog.at_level(logging.DEBUG, logger="fieldstream"):
        stream = client.stream(messages=[{"role": "user", "content": "hi"}], schema=schema)
    assert stream.mask_report == client.explain(schema)
    lines = [r.getMessage() for r in caplog.records if "local engine, schema" in r.getMessage()]
    assert lines == [
        "local engine, schema 'response': llama.cpp mask: 1 relaxed (/properties/n minimum); "
        "1 object(s) closed by the strict rule, 0 left open"
    ]
    from sdk import Regex

    regex = client.stream(messages=[{"role": "user", "content": "hi"}], schema=Regex("[a-z]+"))
    assert regex.mask_report is None


# -- the torch runtime (xgrammar) ------------------------------------------------------------


def test_torch_reports_its_own_relaxations_and_closures() -> None:
    pytest.importorskip("xgrammar", reason="needs xgrammar (the torch extra)")
    schema = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "pattern": "^[a-z]{1,5000}$"},
            "x": {"type": "number", "minimum": 0},
        },
    }
    report = explain(schema, runtime="torch")
    assert report.runtime == "torch"
    assert relaxed(report) == {("/properties/id", "pattern"), ("/properties/x", "minimum")}
    (why,) = [r.reason for r in report.relaxations if r.keyword == "pattern"]
    assert why == "a count over 1000 written {k,} (xgrammar's compile time)"
    assert [(c.path, c.names) for c in report.closures] == [("/", ("id", "x"))]
