"""Every provider's schema subset accepts every document the caller's schema accepts.

Each provider is sent a translation of the caller's schema (Anthropic's and Gemini's subsets,
OpenAI's strict form, Ollama's ``format``): a server-side mask that may be looser than the
caller's schema (fieldstream checks the whole schema as it streams), never stricter, or no
attempt can pass. Checked as a property over generated schemas: hypothesis draws a schema (types,
objects, tuples, ``allOf`` / ``anyOf`` / ``oneOf`` side by side with ``properties``, ``$ref``
into ``$defs``, enums, bounds, patterns) and documents built to fit it; each document that
jsonschema's ``Draft202012Validator`` accepts under the caller's schema must be accepted under
the schema sent.

Two providers close objects by rule (Anthropic requires ``additionalProperties: false`` on every
object; OpenAI's strict mode too, and it requires every property): their oracle is the caller's
schema read the same way, an object without ``additionalProperties`` closed to the properties
its schema evaluates (``unevaluatedProperties: false`` where a value stands: the root, each
property, item and definition; an ``allOf`` member's properties count for the object it
applies to). For OpenAI's strict form, whose rule also makes every property required, the
documents are those that give every property their schema lists.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdk._http.anthropic._schema import anthropic_schema
from sdk._http.gemini._schema import gemini_schema
from sdk._http.ollama._request import _format as ollama_format
from sdk._http.openai._strict import WRAPPER_KEY, strict_schema

Schema = dict[str, Any]
Draw = Callable[[st.SearchStrategy[Any]], Any]

# ---------------------------------------------------------------------------------------------
# Schemas

_NAMES = ("a", "b", "c", "d")
_PATTERNS = ("^[a-c]+$", "^x", "b", "^[0-9]{2}$")
_FORMATS = ("date", "email", "uuid", "ipv4", "date-time")


def _scalars() -> st.SearchStrategy[Schema]:
    string = st.fixed_dictionaries(
        {"type": st.just("string")},
        optional={
            "minLength": st.integers(0, 2),
            "maxLength": st.integers(2, 5),
            "pattern": st.sampled_from(_PATTERNS),
            "format": st.sampled_from(_FORMATS),
        },
    )
    number = st.fixed_dictionaries(
        {"type": st.sampled_from(["integer", "number"])},
        optional={
            "minimum": st.integers(-3, 1),
            "maximum": st.integers(1, 5),
            "exclusiveMinimum": st.integers(-4, 0),
            "multipleOf": st.sampled_from([1, 2, 0.5]),
        },
    )
    enum = st.fixed_dictionaries(
        {
            "enum": st.lists(
                st.one_of(st.sampled_from(["x", "y", 1, 2.5, True, None]), st.just({"k": 1})),
                min_size=1,
                max_size=3,
                unique_by=repr,
            )
        },
        optional={"type": st.sampled_from(["string", "integer", "number"])},
    )
    const = st.fixed_dictionaries({"const": st.sampled_from(["x", 3, False, None])})
    simple = st.fixed_dictionaries(
        {"type": st.sampled_from(["boolean", "null", ["string", "null"], ["integer", "string"]])}
    )
    return st.one_of(string, number, enum, const, simple)


def _props(inner: st.SearchStrategy[Schema]) -> st.SearchStrategy[dict[str, Schema]]:
    return st.dictionaries(st.sampled_from(_NAMES), inner, min_size=1, max_size=3)


@st.composite
def _object(draw: st.DrawFn, inner: st.SearchStrategy[Schema]) -> Schema:
    properties = draw(_props(inner))
    node: Schema = {"properties": properties}
    if draw(st.booleans()):
        node["type"] = "object"
    names = sorted(properties)
    node["required"] = draw(st.lists(st.sampled_from(names), unique=True, max_size=2))
    extra = draw(st.sampled_from([None, None, None, None, False, False, True, {"type": "integer"}]))
    if extra is not None:
        node["additionalProperties"] = extra
    return node


@st.composite
def _member(draw: st.DrawFn, inner: st.SearchStrategy[Schema]) -> Schema:
    """An ``allOf`` / ``anyOf`` member: an object fragment (properties, required) or another
    schema."""
    if draw(st.booleans()):
        node: Schema = {"properties": draw(_props(inner))}
        if draw(st.booleans()):
            node["required"] = [draw(st.sampled_from(sorted(node["properties"])))]
        if draw(st.integers(0, 3)) == 0:
            node["type"] = "object"
        return node
    return draw(inner)


@st.composite
def _combined(draw: st.DrawFn, inner: st.SearchStrategy[Schema]) -> Schema:
    node: Schema = draw(_object(inner)) if draw(st.booleans()) else {}
    key = draw(st.sampled_from(["allOf", "anyOf", "oneOf"]))
    node[key] = draw(st.lists(_member(inner), min_size=1, max_size=3))
    return node


@st.composite
def _array(draw: st.DrawFn, inner: st.SearchStrategy[Schema]) -> Schema:
    node: Schema = {"type": "array"}
    if draw(st.booleans()):
        node["prefixItems"] = draw(st.lists(inner, min_size=1, max_size=2))
        tail = draw(st.sampled_from(["schema", "schema", "false", "absent"]))
        if tail == "schema":
            node["items"] = draw(inner)
        elif tail == "false":
            node["items"] = False
    else:
        node["items"] = draw(inner)
    for key, values in (("minItems", (0, 1, 2)), ("maxItems", (2, 4)), ("uniqueItems", (True,))):
        if draw(st.integers(0, 3)) == 0:
            node[key] = draw(st.sampled_from(values))
    return node


def _extend(inner: st.SearchStrategy[Schema]) -> st.SearchStrategy[Schema]:
    return st.one_of(_object(inner), _combined(inner), _array(inner))


_TREE = st.recursive(_scalars(), _extend, max_leaves=6)


@st.composite
def schemas(draw: st.DrawFn) -> Schema:
    """A caller's schema: a tree of the generators above, sometimes with its objects in
    ``$defs`` and referred to by ``$ref`` (directly or beside other keywords)."""
    root = draw(_TREE)
    if draw(st.integers(0, 3)) == 0:
        defs = draw(st.dictionaries(st.sampled_from(["X", "Y"]), _TREE, min_size=1, max_size=2))
        names = sorted(defs)

        def refer(node: Any) -> Any:
            if isinstance(node, dict):
                node = {k: refer(v) for k, v in node.items()}
                if "properties" in node and draw(st.integers(0, 2)) == 0:
                    name = draw(st.sampled_from(names))
                    node["properties"][draw(st.sampled_from(_NAMES))] = {"$ref": f"#/$defs/{name}"}
                if "allOf" in node and draw(st.booleans()):
                    node["allOf"].append({"$ref": f"#/$defs/{draw(st.sampled_from(names))}"})
                elif "properties" in node and draw(st.integers(0, 3)) == 0:
                    node["$ref"] = f"#/$defs/{draw(st.sampled_from(names))}"
            elif isinstance(node, list):
                return [refer(v) for v in node]
            return node

        root = refer(root)
        if not isinstance(root, dict) or ("$ref" in root and len(root) == 1):
            root = {"properties": {"r": root}}
        root["$defs"] = defs
    return root


# ---------------------------------------------------------------------------------------------
# Documents built to fit a schema (the validator decides whether they do)


class _Builder:
    def __init__(self, root: Schema, draw: Draw, *, complete: bool) -> None:
        self.root = root
        self.draw = draw
        self.complete = complete  # every listed property given (OpenAI's strict documents)

    def resolve(self, node: Any) -> Any:
        seen = 0
        while isinstance(node, dict) and isinstance(node.get("$ref"), str) and seen < 5:
            name = node["$ref"].rsplit("/", 1)[-1]
            rest = {k: v for k, v in node.items() if k != "$ref"}
            target = self.root.get("$defs", {}).get(name, {})
            node = {"allOf": [target, rest]} if rest else target
            seen += 1
        return node

    def members(self, node: Any) -> list[Any]:
        """``node`` and the members that apply to the same value: all of ``allOf``, one drawn
        from ``anyOf`` / ``oneOf`` (sometimes two, both applying)."""
        node = self.resolve(node)
        if not isinstance(node, dict):
            return [node]
        found = [node]
        for member in node.get("allOf", []):
            found += self.members(member)
        for key in ("anyOf", "oneOf"):
            options = node.get(key)
            if options:
                count = self.draw(st.integers(1, min(2, len(options))))
                picked = self.draw(st.permutations(range(len(options))))[:count]
                for i in picked:
                    found += self.members(options[i])
        return found

    def value(self, node: Any, depth: int = 0) -> Any:
        draw = self.draw
        parts = self.members(node)
        if depth > 6:
            return None
        for part in parts:
            if isinstance(part, dict) and "const" in part:
                return copy.deepcopy(part["const"])
            if isinstance(part, dict) and isinstance(part.get("enum"), list) and part["enum"]:
                return copy.deepcopy(draw(st.sampled_from(part["enum"])))
        kinds: list[str] = []
        for part in parts:
            kind = part.get("type") if isinstance(part, dict) else None
            if isinstance(kind, str):
                kinds = [kind]
                break
            if isinstance(kind, list) and kind:
                kinds = list(kind)
                break
        if not kinds:
            if any(isinstance(p, dict) and "properties" in p for p in parts):
                kinds = ["object"]
            elif any(isinstance(p, dict) and ("items" in p or "prefixItems" in p) for p in parts):
                kinds = ["array"]
            else:
                kinds = ["string", "integer", "object", "array", "null"]
        kind = draw(st.sampled_from(kinds))
        dicts = [p for p in parts if isinstance(p, dict)]
        if kind == "object":
            return self.object(dicts, depth)
        if kind == "array":
            return self.array(dicts, depth)
        if kind == "string":
            return self.string(dicts)
        if kind in ("integer", "number"):
            low = max([p["minimum"] for p in dicts if "minimum" in p], default=-3)
            high = min([p["maximum"] for p in dicts if "maximum" in p], default=6)
            if kind == "number" and draw(st.booleans()):
                return draw(st.sampled_from([low + 0.5, 0.5, 2.5]))
            return draw(st.integers(min(low, high), max(low, high)))
        if kind == "boolean":
            return draw(st.booleans())
        return None

    def object(self, parts: list[Schema], depth: int) -> dict[str, Any]:
        subs: dict[str, list[Any]] = {}
        required: set[str] = set()
        for part in parts:
            for name, sub in part.get("properties", {}).items():
                subs.setdefault(name, []).append(sub)
            required.update(part.get("required", []))
        out: dict[str, Any] = {}
        for name, options in subs.items():
            if self.complete or name in required or self.draw(st.booleans()):
                out[name] = self.value({"allOf": options}, depth + 1)
        for name in required - set(out):
            out[name] = self.value({}, depth + 1)
        if self.draw(st.integers(0, 4)) == 0:
            out["z"] = self.draw(st.sampled_from([1, "s", None]))  # an undeclared key
        return out

    def array(self, parts: list[Schema], depth: int) -> list[Any]:
        prefix: list[Any] = []
        tail: Any = {}
        for part in parts:
            prefix = part.get("prefixItems", prefix)
            tail = part.get("items", tail)
        length = self.draw(st.integers(0, len(prefix) + 2))
        out = [self.value(prefix[i], depth + 1) for i in range(min(length, len(prefix)))]
        out += [self.value(tail, depth + 1) for _ in range(length - len(out))]
        return out

    def string(self, parts: list[Schema]) -> str:
        for part in parts:
            pattern = part.get("pattern")
            if isinstance(pattern, str):
                text = self.draw(st.from_regex(pattern, fullmatch=False))
                return text[:6]
            if part.get("format") == "email":
                return "a@b.co"
            if part.get("format") == "date":
                return "2026-12-03"
        return self.draw(st.sampled_from(["", "ab", "abc", "x", "2026-12-03"]))


# ---------------------------------------------------------------------------------------------
# The oracles


def closed(schema: Any, *, every_property_required: bool = False) -> Any:
    """The caller's schema read as a provider that closes objects reads it:
    ``unevaluatedProperties: false`` at each place a value stands (an ``allOf`` or ``anyOf``
    member's properties count for the value it applies to), where ``additionalProperties``
    is not given; optionally every listed property required."""

    def at_value(node: Any) -> Any:
        if isinstance(node, dict) and not _own_keys(node, schema):
            unions = [k for k in ("anyOf", "oneOf") if isinstance(node.get(k), list)]
            if unions:
                # A union with no properties beside it: each member describes the value, each
                # closed on its own.
                node = in_place(node, skip=unions)
                for key in unions:
                    node[key] = [at_value(m) for m in node[key]]
                return node
        node = in_place(node)
        if (
            isinstance(node, dict)
            and _objectish(node, schema)
            and "additionalProperties" not in node
        ):
            node["unevaluatedProperties"] = False
        return node

    def in_place(node: Any, skip: tuple[str, ...] | list[str] = ()) -> Any:
        if not isinstance(node, dict):
            return node
        out = dict(node)
        for key in ("properties", "$defs"):
            if isinstance(out.get(key), dict):
                out[key] = {k: at_value(v) for k, v in out[key].items()}
        if every_property_required and isinstance(out.get("properties"), dict):
            out["required"] = sorted(set(out.get("required", [])) | set(out["properties"]))
        for key in ("allOf", "anyOf", "oneOf"):
            if isinstance(out.get(key), list) and key not in skip:
                out[key] = [in_place(v) for v in out[key]]
        if isinstance(out.get("prefixItems"), list):
            out["prefixItems"] = [at_value(v) for v in out["prefixItems"]]
        for key in ("items", "additionalProperties"):
            if isinstance(out.get(key), dict):
                out[key] = at_value(out[key])
        return out

    return at_value(schema)


def _own_keys(node: Mapping[str, Any], root: Mapping[str, Any], depth: int = 0) -> bool:
    """Whether ``node`` lists properties of its own (itself, an ``allOf`` member, a ``$ref``
    beside other keywords), beside which a union's members' keys count for the value."""
    if "properties" in node or "required" in node:
        return True
    if depth > 5:
        return False
    members = list(node.get("allOf", []))
    if "$ref" in node and len(node) > 1:
        members.append({"$ref": node["$ref"]})
    for member in members:
        if isinstance(member, dict) and "$ref" in member:
            member = root.get("$defs", {}).get(member["$ref"].rsplit("/", 1)[-1], {})
        if isinstance(member, dict) and _own_keys(member, root, depth + 1):
            return True
    return False


def _objectish(node: Mapping[str, Any], root: Mapping[str, Any], depth: int = 0) -> bool:
    kind = node.get("type")
    if kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node:
        return True
    if depth > 5:
        return False
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = root.get("$defs", {}).get(ref.rsplit("/", 1)[-1])
        if isinstance(target, dict) and _objectish(target, root, depth + 1):
            return True
    return any(
        isinstance(m, dict) and _objectish(m, root, depth + 1)
        for key in ("allOf", "anyOf", "oneOf")
        for m in node.get(key, [])
    )


# ---------------------------------------------------------------------------------------------
# The providers


def _anthropic(schema: Schema) -> Schema | None:
    return anthropic_schema(schema)


def _gemini(schema: Schema) -> Schema | None:
    sent: Schema = gemini_schema(schema)
    return sent


def _ollama(schema: Schema) -> Schema | None:
    return ollama_format(schema)


def _openai_strict(schema: Schema) -> Schema | None:
    sent = strict_schema(schema)
    if not sent.strict:
        return None  # sent as it was, with strict: false
    return sent.schema


PROVIDERS: dict[str, tuple[Callable[[Schema], Schema | None], Callable[[Schema], Any], bool]] = {
    # name: (translation, oracle, complete documents)
    "anthropic": (_anthropic, closed, False),
    "gemini": (_gemini, lambda s: s, False),
    "ollama": (_ollama, lambda s: s, False),
    "openai strict": (
        _openai_strict,
        lambda s: closed(s, every_property_required=True),
        True,
    ),
}

RUNS = {name: {"schemas": 0, "sent": 0, "documents": 0, "accepted": 0} for name in PROVIDERS}


def check(name: str, schema: Schema, draw: Draw) -> None:
    translate, oracle, complete = PROVIDERS[name]
    original = copy.deepcopy(schema)
    sent = translate(schema)
    assert schema == original, "the translation changed the caller's schema"
    RUNS[name]["schemas"] += 1
    if sent is None:
        return  # no schema sent: nothing on the server's side to refuse a document
    RUNS[name]["sent"] += 1
    judge = jsonschema.Draft202012Validator(oracle(schema))
    judge_sent = jsonschema.Draft202012Validator(sent)
    wrapped = name == "openai strict" and strict_schema(schema).wrapped
    builder = _Builder(schema, draw, complete=complete)
    for _ in range(6):
        document = builder.value(schema)
        RUNS[name]["documents"] += 1
        if not judge.is_valid(document):
            continue
        RUNS[name]["accepted"] += 1
        as_sent = {WRAPPER_KEY: document} if wrapped else document
        assert judge_sent.is_valid(as_sent), (
            f"{name} refuses a document the caller's schema accepts: {document!r}\nsent: {sent!r}"
        )


@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(schema=schemas(), data=st.data())
def test_the_schema_sent_accepts_every_document_the_callers_accepts(
    schema: Schema, data: st.DataObject
) -> None:
    for name in PROVIDERS:
        check(name, schema, data.draw)


# What the property test found before the fixes, kept as examples: (schema, a document the
# caller's schema accepts; for OpenAI's strict form it gives every property; the providers
# that now send no schema, or the caller's with strict false, for it).
FOUND: list[tuple[Schema, Any, tuple[str, ...]]] = [
    (  # a tuple sent as its tail alone forced the first item to the tail's type
        {
            "type": "object",
            "properties": {
                "p": {
                    "type": "array",
                    "prefixItems": [{"type": "integer"}],
                    "items": {"type": "string"},
                }
            },
            "required": ["p"],
        },
        {"p": [1, "a"]},
        (),
    ),
    (  # allOf members closed one by one forbade each other's keys
        {
            "allOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}},
                {"type": "object", "properties": {"b": {"type": "string"}}},
            ]
        },
        {"a": 1, "b": "x"},
        (),
    ),
    (  # the properties beside an anyOf closed without the members' keys, and the reverse
        {
            "type": "object",
            "properties": {"kind": {"type": "string"}},
            "required": ["kind"],
            "anyOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]}],
        },
        {"kind": "k", "a": 1},
        (),
    ),
    (  # a root $ref whose siblings disagree with its target (OpenAI strict: $defs nested)
        {
            "$ref": "#/$defs/X",
            "properties": {"a": {"$ref": "#/$defs/S"}},
            "$defs": {
                "X": {"type": "object", "properties": {"a": {"type": "string"}}},
                "S": {"type": "string", "minLength": 1},
            },
        },
        {"a": "x"},
        (),
    ),
    (  # OpenAI strict lent a member the keys another member lists, and required them
        {
            "properties": {"a": {"type": "string"}},
            "required": [],
            "anyOf": [
                {"type": "string"},
                {
                    "properties": {
                        "a": {
                            "type": "string",
                            "minLength": 0,
                            "format": "date",
                            "pattern": "^[0-9]{2}$",
                            "maxLength": 2,
                        }
                    },
                    "type": "object",
                },
                {
                    "properties": {
                        "a": {"type": "string"},
                        "b": {"type": "string"},
                        "c": {"type": "string"},
                    },
                    "required": ["a"],
                    "type": "object",
                },
            ],
        },
        {"a": "00"},
        ("openai strict",),  # the strict form cannot say "b and c only with the third"
    ),
    (  # Anthropic's tuple items deduplicated with Python's ==, where true is 1: enum [1] lost
        {
            "type": "array",
            "prefixItems": [{"enum": [True]}],
            "items": {"enum": [1]},
            "uniqueItems": True,
        },
        [True, 1],
        (),
    ),
]


@pytest.mark.parametrize(("schema", "document", "unsaid"), FOUND)
@pytest.mark.parametrize("name", ["anthropic", "openai strict"])
def test_what_the_property_test_found(
    name: str, schema: Schema, document: Any, unsaid: tuple[str, ...]
) -> None:
    translate, oracle, _ = PROVIDERS[name]
    assert jsonschema.Draft202012Validator(oracle(schema)).is_valid(document)
    sent = translate(schema)
    if name in unsaid:
        assert sent is None  # cannot be said in the subset: sent without it
        return
    assert sent is not None  # the others can be said in the subset
    if name == "openai strict" and strict_schema(schema).wrapped:
        document = {WRAPPER_KEY: document}
    assert jsonschema.Draft202012Validator(sent).is_valid(document)


def test_openai_strict_keeps_the_members_of_an_open_object_open() -> None:
    # Found by the property test: an open object whose anyOf member names a property; closing
    # the member forbade the extra keys the object allows.
    from sdk._http.openai._strict import schema_to_send

    schema = {
        "properties": {"a": {"type": "string"}},
        "additionalProperties": True,
        "anyOf": [{"properties": {"a": {"enum": ["x"]}}, "required": ["a"], "type": "object"}],
    }
    document = {"a": "x", "z": "s"}
    assert jsonschema.Draft202012Validator(schema).is_valid(document)
    for root in (schema, {"type": "object", "properties": {"v": schema}, "required": ["v"]}):
        sent = schema_to_send(root, True)
        inner = document if root is schema else {"v": document}
        judged = {"value": inner} if sent.wrapped else inner
        assert jsonschema.Draft202012Validator(sent.schema).is_valid(judged), sent


def test_openai_strict_lends_no_member_another_members_keys() -> None:
    # Strict mode requires every property: a member given the keys another member lists
    # would require them, and refuse the documents it alone allows (a discriminated union
    # beside the object's own properties).
    union = {
        "type": "object",
        "properties": {"id": {"type": "integer"}},
        "required": ["id"],
        "anyOf": [
            {"properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}},
            {"properties": {"kind": {"const": "b"}, "y": {"type": "string"}}},
        ],
    }
    document = {"id": 1, "kind": "a", "x": 2}
    assert jsonschema.Draft202012Validator(closed(union, every_property_required=True)).is_valid(
        document
    )
    sent = strict_schema(union)
    assert not sent.strict
    assert sent.schema == union  # as the caller gave it
    # Members that list the same keys lend none: said strictly, every key required.
    same = copy.deepcopy(union)
    same["anyOf"][1]["properties"] = {"kind": {"const": "b"}, "x": {"type": "string"}}
    sent = strict_schema(same)
    assert sent.strict
    assert sent.wrapped  # a root anyOf once the properties are in its members
    judge = jsonschema.Draft202012Validator(sent.schema)
    assert judge.is_valid({WRAPPER_KEY: document})
    assert not judge.is_valid({WRAPPER_KEY: {"id": 1, "kind": "a"}})
    # Nor is a key lost where the member requires it already (listed by the other member).
    needs = copy.deepcopy(union)
    needs["anyOf"][0]["required"] = ["y"]
    needs["anyOf"][1]["required"] = ["x"]
    sent = strict_schema(needs)
    assert sent.strict
    complete = {"id": 1, "kind": "a", "x": 2, "y": "s"}
    assert jsonschema.Draft202012Validator(sent.schema).is_valid({WRAPPER_KEY: complete})
    # Anthropic keeps lending them (optional there): both members' keys pass together.
    anthropic = anthropic_schema(union)
    assert anthropic is not None
    both = {"id": 1, "kind": "a", "x": 2, "y": "s"}
    assert jsonschema.Draft202012Validator(anthropic).is_valid(both)


def test_an_open_objects_union_members_are_given_its_openness() -> None:
    # The parent's additionalProperties is carried into each member that can be an object
    # and has none of its own, so neither provider closes it.
    from sdk._http._subset import gather_objects

    schema = {
        "additionalProperties": True,
        "anyOf": [
            {"properties": {"a": {"type": "string"}}},
            {"properties": {"b": {"type": "string"}}, "additionalProperties": False},
            {"type": "string"},
            {"$ref": "#/$defs/X"},
        ],
        "$defs": {"X": {"type": "object", "properties": {"c": {"type": "integer"}}}},
    }
    gathered = gather_objects(schema, lambda ref: schema["$defs"]["X"])
    assert gathered["anyOf"] == [
        {"properties": {"a": {"type": "string"}}, "additionalProperties": True},
        {"properties": {"b": {"type": "string"}}, "additionalProperties": False},
        {"type": "string"},
        {"$ref": "#/$defs/X"},
    ]
    assert not strict_schema(schema).strict  # the first member cannot be closed
    assert anthropic_schema(schema) is None
    document = {"a": "x", "z": 1}
    assert jsonschema.Draft202012Validator(schema).is_valid(document)
