"""The llama.cpp runtime's masks (llguidance) against the torch runtime's (xgrammar), on the same
tokens: for every schema of the official JSON Schema Test Suite (draft 2020-12) both compile,
each of its documents laid out as the engine lays JSON out (one text per layout) is fed token by
token (its canonical tokens, then the end-of-sequence token) to both engines' constraints.

What must hold, per layout, for every schema not listed in :data:`KNOWN` (each entry names the
difference and why; docs/local-engine.md says the same):

- ``valid-refused``: a valid document xgrammar takes, llguidance takes too (the model can write
  under llguidance everything it could under xgrammar);
- ``valid-only-llg``: a valid document llguidance takes, xgrammar takes too;
- ``invalid-taken``: an invalid document llguidance takes, xgrammar takes too (llguidance is
  never looser; it is often stricter: xgrammar takes many invalid documents, e.g. numbers past
  an exclusive bound, which is no difference to list);
- ``forced``: at every token of a document both take, both force the same text;
- ``compile``: both compile the schema, or neither.

:data:`KNOWN` is checked both ways: a listed difference that no longer shows fails too, so the
list stays the record of what differs. The tools' structural tag and StructuralTags are compared
the same way on sample outputs. Needs xgrammar, torch and llguidance; no model is loaded.
"""

from __future__ import annotations

import enum
import itertools
import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from sdk import StructuralTag, Tag, Tool
from sdk._grammar_languages import xgrammar_structural_tag
from sdk._local._constrain import GrammarSpec
from sdk._local._layout import JsonFormat
from sdk._local._llg_json import bounded_lark, laid_out_lark
from sdk._local._llg_masks import LlgGrammars
from sdk._local._llg_specs import schema_plan
from sdk._local._llg_strict import strict_schema
from sdk._local._tools import tools_structural_tag
from sdk._local._xgr_masks import Grammars
from sdk._local._xgr_schema import xgr_plan
from tests.sdk.local._local_support import (
    ENUM,
    FLAGS,
    NESTED,
    PERSON,
    ROOT_ARRAY,
    TAGS,
    TAGS4,
    import_llguidance_hf,
)

llguidance_hf = import_llguidance_hf()

DATA = Path(__file__).resolve().parents[2] / "data"
SUITE = DATA / "json-schema-test-suite" / "draft2020-12"

LAYOUTS: dict[str, Callable[[Any], list[str]]] = {
    "compact": lambda v: [json.dumps(v, separators=(",", ":"))],
    "spaced": lambda v: [json.dumps(v)],
    "bounded": lambda v: [json.dumps(v, indent=2), json.dumps(v, separators=(",", ":"))],
    "any": lambda v: [json.dumps(v, indent=4)],
}
INDENTED: Callable[[Any], list[str]] = lambda v: [json.dumps(v, indent=2)]  # noqa: E731
"""``indented`` is compared where ``_llg_json`` writes the structure (elsewhere llguidance
only approximates it: docs/local-engine.md)."""

ALL = ("compact", "spaced", "bounded", "any")
_ALL_OF = "allOf: llguidance merges the members' properties in member order, xgrammar not"
_ID = "$id / URN / $dynamicRef resolution: llguidance resolves by base URI, xgrammar naively"
_CONST = "a const/enum object or array: xgrammar writes it compact only, llguidance laid out"
_PATTERN_PROPS = "patternProperties: xgrammar's strict mode takes no name they match"
_NAMES = "propertyNames: llguidance bounds the names, xgrammar ignores them"
_SIBLINGS = "keywords beside allOf / $ref: xgrammar reads them on their own, llguidance merges"

KNOWN: dict[tuple[str, str], dict[str, tuple[str, tuple[str, ...]]]] = {}
"""(file, group description) -> {kind of difference: (why, the layouts it shows in)}."""

KNOWN_FILES = {
    "unevaluatedItems.json": "unevaluated*: xgrammar enforces them; llguidance (lenient) ignores",
    "unevaluatedProperties.json": "unevaluated*: xgrammar enforces them; llguidance ignores them",
}
"""Files whose every group may differ in any way (at least one does, in every layout)."""


def _known(
    reason: str, kinds: str, file: str, *groups: str, layouts: tuple[str, ...] = ALL
) -> None:
    for group in groups:
        for kind in kinds.split():
            KNOWN.setdefault((file, group), {})[kind] = (reason, layouts)


# Issue 42: no schema is refused any more (each is widened where an engine refuses a part:
# sdk/_local/_mask_schema.py), so no "compile" difference is left.
_WIDENED = "the mask is never narrower: a number's bounds / multipleOf masked as any number"
_UNEXPLAINED = "after issue 42's rewrite, not yet explained (listed so that it stays seen)"
_known(_WIDENED, "invalid-taken", "multipleOf.json", "float division = inf")
_known(_WIDENED, "invalid-taken", "vocabulary.json", "ignore unrecognized optional vocabulary")
_known(
    _UNEXPLAINED,
    "valid-refused",
    "pattern.json",
    "pattern with Unicode property escape requires unicode mode",
)
_known(_ALL_OF, "valid-refused", "allOf.json", "allOf", "allOf with base schema")
_known(
    _ID,
    "valid-refused",
    "dynamicRef.json",
    "A $dynamicRef that initially resolves to a schema with a matching $dynamicAnchor resolves "
    "to the first $dynamicAnchor in the dynamic scope",
    "A $dynamicRef that initially resolves to a schema without a matching $dynamicAnchor "
    "behaves like a normal $ref to $anchor",
)
_known(
    _ID,
    "valid-refused",
    "ref.json",
    "refs with relative uris and defs",
    "relative refs with absolute uris and defs",
    "simple URN base URI with $ref via the URN",
)
_known(
    _PATTERN_PROPS,
    "forced-shorter valid-only-llg",
    "additionalProperties.json",
    "additionalProperties being false does not allow other properties",
)
_known(
    _NAMES, "forced-shorter", "additionalProperties.json", "additionalProperties with propertyNames"
)
_known(
    _SIBLINGS,
    "forced-shorter",
    "additionalProperties.json",
    "additionalProperties does not look in applicators",
)
_known(_SIBLINGS, "forced-shorter", "items.json", "items does not look in applicators, valid case")
_known(
    KNOWN_FILES["unevaluatedProperties.json"],
    "forced-shorter",
    "ref.json",
    "ref creates new scope when adjacent to keywords",
)
_CONST_GROUPS = [
    ("const.json", "const with array"),
    ("const.json", "const with object"),
    ("const.json", 'const with {"a": false} does not match {"a": 0}'),
    ("const.json", 'const with {"a": true} does not match {"a": 1}'),
    ("enum.json", "heterogeneous enum validation"),
    ("ref.json", "naive replacement of $ref with its destination is not correct"),
]
for _file, _group in _CONST_GROUPS:
    _known(_CONST, "forced-conflict", _file, _group, layouts=("spaced",))
    _known(_CONST, "valid-only-llg", _file, _group, layouts=("spaced", "bounded", "any"))
    _known(_CONST, "forced-shorter", _file, _group, layouts=("bounded", "any"))
for _file, _group in [
    ("const.json", "const with [false] does not match [0]"),
    ("const.json", "const with [true] does not match [1]"),
    ("enum.json", "enum with [0] does not match [false]"),
    ("enum.json", "enum with [1] does not match [true]"),
    ("enum.json", "enum with [false] does not match [0]"),
    ("enum.json", "enum with [true] does not match [1]"),
]:
    _known(_CONST, "forced-shorter valid-only-llg", _file, _group, layouts=("bounded", "any"))


def suite_groups() -> list[tuple[str, dict[str, Any]]]:
    return [
        (path.name, group)
        for path in sorted(SUITE.glob("*.json"))
        for group in json.loads(path.read_text(encoding="utf-8"))
    ]


@pytest.fixture(scope="module")
def engines(tokenizer: Any) -> Callable[[JsonFormat], tuple[Grammars, LlgGrammars]]:
    ll = llguidance_hf.from_tokenizer(tokenizer)
    made: dict[str, tuple[Grammars, LlgGrammars]] = {}

    def get(json_format: JsonFormat) -> tuple[Grammars, LlgGrammars]:
        if json_format not in made:
            stop = [tokenizer.eos_token_id]
            made[json_format] = (
                Grammars(tokenizer, len(tokenizer), json_format=json_format, stop_token_ids=stop),
                LlgGrammars(ll, len(tokenizer), [], json_format=json_format, stop_token_ids=stop),
            )
        return made[json_format]

    return get


def compiles(grammars: Grammars | LlgGrammars, spec: GrammarSpec) -> bool:
    try:
        grammars.compile_spec(spec)
    except (RuntimeError, ValueError):
        return False
    return True


def forced_relation(x: str, lg: str) -> str | None:
    """How llguidance's forced text ``lg`` compares with xgrammar's ``x``: None when they
    agree or llguidance forces more (it often does: ``3.`` under ``maximum: 3`` forces ``0``),
    ``"forced-shorter"`` when it forces a proper prefix of xgrammar's, ``"forced-conflict"``
    when they disagree."""
    if lg.startswith(x):
        return None
    if not x.startswith(lg):
        return "forced-conflict"
    # The bounded layout on llguidance lets whitespace before a colon or a comma, so it cannot
    # force them after a key or a value (a layout-wide difference: docs/local-engine.md).
    return "forced-gap" if x[len(lg)] in ":," else "forced-shorter"


def run(
    xgr: Grammars, llg: LlgGrammars, spec: GrammarSpec, ids: list[int], tokenizer: Any
) -> tuple[bool, bool, set[str]]:
    """Feed ``ids`` to both: (xgrammar took them all, llguidance did, how their forced texts
    compared where both took the tokens so far)."""
    x, lg = xgr.constraint_for(spec, tokenizer), llg.constraint_for(spec, tokenizer)
    took = {"x": True, "l": True}
    forced: set[str] = set()
    for token in ids:
        if took["x"] and took["l"]:
            relation = forced_relation(x.forced_text(), lg.forced_text())
            if relation:
                forced.add(relation)
        for name, constraint in (("x", x), ("l", lg)):
            if took[name]:
                try:
                    constraint.accept(token)
                except RuntimeError:
                    took[name] = False
        if not (took["x"] or took["l"]):
            break
    return took["x"], took["l"], forced


def differences(
    json_format: JsonFormat, engines: Any, tokenizer: Any
) -> tuple[dict[tuple[str, str], set[str]], int]:
    xgr, llg = engines(json_format)
    found: dict[tuple[str, str], set[str]] = defaultdict(set)
    documents = 0
    for file, group in suite_groups():
        key = (file, group["description"])
        spec = GrammarSpec("json_schema", json.dumps(group["schema"]))
        x_compiles, l_compiles = compiles(xgr, spec), compiles(llg, spec)
        if x_compiles != l_compiles:
            found[key].add("compile")
        if not (x_compiles and l_compiles):
            continue
        for test in group["tests"]:
            for text in LAYOUTS[json_format](test["data"]):
                ids = [*tokenizer.encode(text, add_special_tokens=False), tokenizer.eos_token_id]
                x_ok, l_ok, forced = run(xgr, llg, spec, ids, tokenizer)
                documents += 1
                if test["valid"] and x_ok and not l_ok:
                    found[key].add("valid-refused")
                if test["valid"] and l_ok and not x_ok:
                    found[key].add("valid-only-llg")
                if not test["valid"] and l_ok and not x_ok:
                    found[key].add("invalid-taken")
                found[key].update(forced)
    return found, documents


@pytest.mark.parametrize("json_format", list(LAYOUTS))
def test_the_two_engines_agree_on_the_official_suite_but_for_known_differences(
    json_format: JsonFormat, engines: Any, tokenizer: Any
) -> None:
    found, documents = differences(json_format, engines, tokenizer)
    assert documents >= 1000
    # The unevaluated* files may differ in any way (and do).
    for file in KNOWN_FILES:
        assert any(key[0] == file for key in found), f"{file} no longer differs"
    observed = {
        (key, kind)
        for key, kinds in found.items()
        if key[0] not in KNOWN_FILES
        for kind in kinds
        if kind != "forced-gap"
    }
    expected = {
        (key, kind)
        for key, kinds in KNOWN.items()
        for kind, (_, layouts) in kinds.items()
        if json_format in layouts
    }
    assert sorted(observed - expected) == [], "new differences"
    assert sorted(expected - observed) == [], "listed differences that no longer show"
    # The bounded layout's one difference left: where llguidance's JSON compiler writes the
    # structure (a schema _llg_json does not know), no colon or comma is forced after a key or
    # a value (it lets a gap before them). Where _llg_json writes it, and elsewhere, they agree.
    gaps = {key for key, kinds in found.items() if "forced-gap" in kinds}
    gaps -= {key for key in gaps if key[0] in KNOWN_FILES}
    if json_format != "bounded":
        assert gaps == set()
        return
    written = {
        (file, group["description"])
        for file, group in suite_groups()
        if bounded_lark(strict_schema(group["schema"]), lambda node, scalar: node) is not None
    }
    assert len(written) >= 75  # of the 383 (the suite is about the other keywords)
    assert gaps and not gaps & written


# The engine tests' schemas, with documents the model could write and documents it must not.
ENGINE_CASES: list[tuple[dict[str, Any], list[Any], list[Any]]] = [
    (
        PERSON,
        [{"name": "Ann", "age": 31}, {"name": "", "age": 0}],
        [{"name": "Ann"}, {"age": 31, "name": "Ann"}, {"name": "Ann", "age": 131}],
    ),
    (ENUM, [{"mood": "sad"}], [{"mood": "bored"}, {}]),
    (
        NESTED,
        [{"title": "Dune", "author": {"first": "Frank", "born": 1920}}],
        [{"title": "Dune", "author": {"first": "Frank"}}, {"title": "x" * 21, "author": {}}],
    ),
    (TAGS, [{"tags": []}, {"tags": ["a", "b", "c"]}], [{"tags": ["a", "b", "c", "d"]}]),
    (ROOT_ARRAY, [[1], [0, 999, 5, 6]], [[], [1, 2, 3, 4, 5], [1000]]),
    (
        FLAGS,
        [{"ok": True, "stars": 5, "note": None}, {"ok": False, "stars": 1, "note": "meh"}],
        [{"ok": True, "stars": 0, "note": None}, {"ok": 1, "stars": 2, "note": None}],
    ),
    (TAGS4, [{"tags": ["a", "b"]}], [{"tags": ["a"]}, {"tags": ["a", "b", "c", "d", "e"]}]),
]


@pytest.mark.parametrize("json_format", [*LAYOUTS, "indented"])
def test_the_engine_tests_schemas_agree_on_valid_and_invalid_documents(
    json_format: JsonFormat, engines: Any, tokenizer: Any
) -> None:
    xgr, llg = engines(json_format)
    for schema, valid, invalid in ENGINE_CASES:
        spec = GrammarSpec("json_schema", json.dumps(schema))
        lay_out = LAYOUTS.get(json_format, INDENTED)
        for value, expected in [*((v, True) for v in valid), *((v, False) for v in invalid)]:
            for text in lay_out(value):
                ids = [*tokenizer.encode(text, add_special_tokens=False), tokenizer.eos_token_id]
                x_ok, l_ok, forced = run(xgr, llg, spec, ids, tokenizer)
                assert (x_ok, l_ok) == (expected, expected), text
                assert not forced, text


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Pet(BaseModel):
    name: str = Field(max_length=12)
    kind: Literal["cat", "dog"]


class Owner(BaseModel):
    """Optional fields, nested models by $ref, lists, an enum, a recursive reference."""

    name: str
    age: int | None = None
    colour: Colour = Colour.RED
    pets: list[Pet] = Field(max_length=2)
    friends: list[Owner] = []


class Keeper(BaseModel):
    """Owner without its recursion (``indented`` writes rules per depth: a recursive schema is
    compiled by llguidance's own JSON compiler there)."""

    name: str
    age: int | None = None
    colour: Colour = Colour.RED
    pets: list[Pet] = Field(max_length=2)


OWNER = Owner.model_json_schema()
KEEPER = Keeper.model_json_schema()
OWNER_VALID: list[dict[str, Any]] = [
    {"name": "A", "pets": []},
    {"name": "A", "age": None, "colour": "blue", "pets": [{"name": "Rex", "kind": "dog"}]},
    {"name": "A", "age": 3, "pets": [], "friends": [{"name": "B", "pets": [], "friends": []}]},
]
OWNER_INVALID: list[dict[str, Any]] = [
    {"name": "A"},
    {"pets": [], "name": "A"},
    {"name": "A", "colour": "green", "pets": []},
    {"name": "A", "pets": [{"name": "Rex", "kind": "cow"}]},
    {"name": "A", "pets": [{"name": "R", "kind": "cat"}] * 3},
    {"name": "A", "pets": [], "friends": [{"name": "B"}]},
]
NULLABLE = {
    "type": "object",
    "properties": {
        "meta": {
            "type": ["object", "null"],
            "properties": {"name": {"type": ["string", "null"], "maxLength": 8}},
            "required": ["name"],
        },
        "sizes": {"type": ["array", "integer"], "items": {"type": "integer"}, "maxItems": 2},
        "pick": {"oneOf": [{"type": "boolean"}, {"$ref": "#/$defs/point"}]},
    },
    "required": ["meta", "sizes", "pick"],
    "$defs": {
        "point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}
    },
}
NULLABLE_VALID = [
    {"meta": None, "sizes": 3, "pick": True},
    {"meta": {"name": None}, "sizes": [], "pick": {"x": 1.5}},
    {"meta": {"name": "ab"}, "sizes": [1, 2], "pick": False},
]
NULLABLE_INVALID = [
    {"meta": {}, "sizes": 3, "pick": True},
    {"meta": None, "sizes": [1, 2, 3], "pick": True},
    {"meta": None, "sizes": "3", "pick": True},
    {"meta": None, "sizes": 3, "pick": {"y": 1}},
    {"meta": {"name": "abcdefghi"}, "sizes": 3, "pick": True},
]
OPTIONAL = {
    "type": "object",
    "properties": {p: {"type": "integer"} for p in "abcd"},
    "required": ["b"],
}


@pytest.mark.parametrize("json_format", ["bounded", "indented"])
def test_the_written_structure_agrees_with_xgrammar_on_models_and_optional_properties(
    json_format: JsonFormat, engines: Any, tokenizer: Any
) -> None:
    xgr, llg = engines(json_format)

    def leaf(node: Any, scalar: bool) -> Any:
        return node

    model = OWNER if json_format == "bounded" else KEEPER
    for schema in (model, OPTIONAL, NULLABLE):  # written by _llg_json
        assert laid_out_lark(strict_schema(schema), json_format, leaf) is not None
    assert (laid_out_lark(strict_schema(OWNER), json_format, leaf) is None) == (
        json_format == "indented"
    )
    flat = [
        ({k: v for k, v in doc.items() if k != "friends"}, ok)
        for doc, ok in [*((v, True) for v in OWNER_VALID), *((v, False) for v in OWNER_INVALID)]
        if json_format == "indented" and doc.get("friends") in (None, [])
    ]
    subsets = [{k: 1 for k in keys} for n in range(5) for keys in itertools.combinations("abcd", n)]
    cases: list[tuple[dict[str, Any], list[tuple[Any, bool]]]] = [
        (OWNER, [(v, True) for v in OWNER_VALID] + [(v, False) for v in OWNER_INVALID])
        if json_format == "bounded"
        else (KEEPER, flat),
        (OPTIONAL, [(v, "b" in v) for v in subsets]),
        (NULLABLE, [(v, True) for v in NULLABLE_VALID] + [(v, False) for v in NULLABLE_INVALID]),
    ]
    for schema, documents in cases:
        spec = GrammarSpec("json_schema", json.dumps(schema))
        for value, valid in documents:
            for text in LAYOUTS.get(json_format, INDENTED)(value):
                ids = [*tokenizer.encode(text, add_special_tokens=False), tokenizer.eos_token_id]
                x_ok, l_ok, forced = run(xgr, llg, spec, ids, tokenizer)
                assert (x_ok, l_ok) == (valid, valid), text
                assert not forced, text


WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    "required": ["city", "days"],
}
SEARCH = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


TOOL_ARGUMENTS = {
    "bounded": ('{"city": "Oslo", "days": 2}', '{\n  "q": "x"\n}'),
    "indented": ('{\n  "city": "Oslo",\n  "days": 2\n}', '{\n  "q": "x"\n}'),
    "compact": ('{"city":"Oslo","days":2}', '{"q":"x"}'),
}


@pytest.mark.parametrize("json_format", list(TOOL_ARGUMENTS))
def test_the_tools_calls_agree(json_format: JsonFormat, engines: Any, tokenizer: Any) -> None:
    xgr, llg = engines(json_format)
    tools = [Tool("get_weather", WEATHER), Tool("search", SEARCH)]
    spec = GrammarSpec("structural_tag", json.dumps(tools_structural_tag(tools)))
    weather, query = TOOL_ARGUMENTS[json_format]
    call = f'{{"name": "get_weather", "arguments": {weather}}}'
    search = f'{{"name": "search", "arguments": {query}}}'
    outputs = {
        f"<tool_call>[\n{call}\n]</tool_call>": True,
        f"<tool_call>[\n{search},\n{call}\n]</tool_call>": True,
        "<tool_call>[\n\n]</tool_call>": False,
        f"<tool_call>[\n{call.replace('2', '0')}\n]</tool_call>": False,
        f"<tool_call>[\n{call.replace('get_weather', 'get_time')}\n]</tool_call>": False,
        f"<tool_call>[\n{call}\n]</tool_call> and more": False,
        f"Sure! <tool_call>[\n{call}\n]</tool_call>": False,
    }
    for text, expected in outputs.items():
        ids = [*tokenizer.encode(text, add_special_tokens=False), tokenizer.eos_token_id]
        x_ok, l_ok, forced = run(xgr, llg, spec, ids, tokenizer)
        assert (x_ok, l_ok) == (expected, expected), text
        assert not forced, text


@pytest.mark.parametrize(
    ("at_least_one", "stop_after_first"),
    [(False, False), (True, False), (False, True), (True, True)],
)
def test_structural_tags_agree(
    at_least_one: bool, stop_after_first: bool, engines: Any, tokenizer: Any
) -> None:
    xgr, llg = engines("spaced")
    tag = StructuralTag(
        [Tag("<w>", WEATHER, "</w>"), Tag("<s>", SEARCH, "</s>")],
        triggers=["<"],
        at_least_one=at_least_one,
        stop_after_first=stop_after_first,
    )
    spec = GrammarSpec("structural_tag", json.dumps(xgrammar_structural_tag(tag)))
    call = '<w>{"city": "Oslo", "days": 2}</w>'
    outputs = [
        "just text",
        call,
        f"hi {call}",
        f"{call} bye",
        f'{call}\n<s>{{"q": "x"}}</s>',
        '<w>{"city": 3}</w>',
        '<w>{"city":"Oslo","days":2}</w>',
        "a < b",
        "<x>",
    ]
    agreed = 0
    for text in outputs:
        ids = [*tokenizer.encode(text, add_special_tokens=False), tokenizer.eos_token_id]
        x_ok, l_ok, forced = run(xgr, llg, spec, ids, tokenizer)
        assert x_ok == l_ok, text
        assert not forced, text
        agreed += x_ok
    assert agreed >= 1  # the lone call at least


CORPUS_WIDENED = {
    # (issue 42) refused before, now masked wider where the engine cannot take a part.
    "circle-ci.json": ("llguidance", "circular references with sibling keys"),
    "drone-ci.json": ("llguidance", "not present in a registry"),  # a remote $ref
    "github-actions.json": ("xgrammar", "EBNF lexer error"),
    "github-workflows.json": ("xgrammar", "EBNF lexer error"),
}


@pytest.mark.parametrize("json_format", ["compact", "bounded"])
def test_real_world_schemas_compile_on_both_but_for_known_ones(
    json_format: JsonFormat, engines: Any, tokenizer: Any
) -> None:
    xgr, llg = engines(json_format)
    paths = sorted((DATA / "schema-corpus").glob("*/*.json"))
    assert len(paths) == 35
    written = 0
    for path in paths:
        spec = GrammarSpec("json_schema", path.read_text(encoding="utf-8"))
        written += bounded_lark(strict_schema(json.loads(spec.text)), lambda n, s: n) is not None
        errors: dict[str, str] = {}
        for name, grammars in (("xgrammar", xgr), ("llguidance", llg)):
            try:
                grammars.compile_spec(spec)
            except (RuntimeError, ValueError) as exc:
                errors[name] = str(exc)
        assert errors == {}, path.name  # no schema is refused (issue 42)
        plans = {
            "llguidance": schema_plan(spec.text, json_format).refused,
            # No build budget: whether xgrammar takes the schema, not whether it built it
            # within 0.5 s on a loaded machine (gitlab-ci's build crossed it under CI's load).
            "xgrammar": xgr_plan(spec.text, None).refused,
        }
        refused_by = sorted(name for name, reason in plans.items() if reason)
        if path.name in CORPUS_WIDENED:
            engine, reason = CORPUS_WIDENED[path.name]
            assert refused_by == [engine], path.name
            assert reason in plans[engine], path.name
            continue
        assert refused_by == [], path.name
        # Where both force text at the start, it agrees (llguidance may force more).
        forced = forced_relation(
            xgr.constraint_for(spec, tokenizer).forced_text(),
            llg.constraint_for(spec, tokenizer).forced_text(),
        )
        assert forced is None, path.name
    assert written >= 15  # the Kubernetes kinds among them: the bounded layout's own structure


def test_indented_agrees_on_the_suite_where_its_structure_is_written(
    engines: Any, tokenizer: Any
) -> None:
    xgr, llg = engines("indented")
    found: dict[tuple[str, str], set[str]] = defaultdict(set)
    written = 0
    for file, group in suite_groups():
        if laid_out_lark(strict_schema(group["schema"]), "indented", lambda n, s: n) is None:
            continue
        spec = GrammarSpec("json_schema", json.dumps(group["schema"]))
        if not (compiles(xgr, spec) and compiles(llg, spec)):
            continue
        written += 1
        for test in group["tests"]:
            ids = [
                *tokenizer.encode(INDENTED(test["data"])[0], add_special_tokens=False),
                tokenizer.eos_token_id,
            ]
            x_ok, l_ok, forced = run(xgr, llg, spec, ids, tokenizer)
            if x_ok != l_ok:
                found[(file, group["description"])].add("accept")
            found[(file, group["description"])].update(forced)
    assert written >= 80
    differing = {key for key, kinds in found.items() if kinds}
    # format was the one difference here; it is an annotation on both now (issue 42). Left:
    # the widened numbers and the unexplained \p{..} pattern, as in the other layouts.
    assert differing == {
        ("multipleOf.json", "float division = inf"),
        ("vocabulary.json", "ignore unrecognized optional vocabulary"),
        ("pattern.json", "pattern with Unicode property escape requires unicode mode"),
    }
