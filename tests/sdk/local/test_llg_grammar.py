"""The llama.cpp runtime's masks (``sdk._local._llg_masks``): llguidance over the packaged
model's tokenizer, every spec kind and JSON layout, masks on numpy logits, accept / rollback /
jump-forward, and the check that refuses what llguidance cannot compile. No model is loaded
(the tokenizer is read out of the GGUF, which needs transformers)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sdk import Choice, Grammar, Regex, StructuralTag, Tag, Tool, UnsupportedConstraint
from sdk._backend import GenerationRequest
from sdk._grammar_languages import choice_gbnf, xgrammar_structural_tag
from sdk._local._constrain import GrammarSpec, spec_of
from sdk._local._layout import JSON_FORMATS, JsonFormat
from sdk._local._llg_masks import LlgConstraint, LlgGrammars
from sdk._local._llg_specs import check_llg
from sdk._local._llg_strict import strict_schema
from sdk._local._tools import tools_structural_tag
from tests.sdk.local._local_support import import_llguidance_hf

np = pytest.importorskip("numpy", reason="needs numpy (the local extra)")
llguidance = pytest.importorskip("llguidance", reason="needs llguidance (the local extra)")
llguidance_hf = import_llguidance_hf()

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 24},
        "age": {"type": "integer", "minimum": 0, "maximum": 130},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "age", "tags"],
}
VALUE = {"name": "Ann", "age": 31, "tags": ["a", "b"]}


@pytest.fixture(scope="module")
def grammars_of(ll_tokenizer: Any) -> Any:
    made: dict[str, LlgGrammars] = {}
    vocab = [ll_tokenizer.decode_bytes([i]) for i in range(ll_tokenizer.vocab_size)]

    def get(json_format: JsonFormat = "bounded") -> LlgGrammars:
        if json_format not in made:
            made[json_format] = LlgGrammars(
                ll_tokenizer, ll_tokenizer.vocab_size, vocab, json_format=json_format
            )
        return made[json_format]

    return get


def schema_spec(schema: Any) -> GrammarSpec:
    return GrammarSpec("json_schema", json.dumps(schema))


def accepts(constraint: LlgConstraint, text: str, tokenizer: Any, *, end: bool = True) -> bool:
    """Feed ``text`` token by token (its canonical tokens), each checked against the mask, then
    the end-of-sequence token (``end``)."""
    ids = tokenizer.encode(text, add_special_tokens=False)
    if end:
        ids.append(tokenizer.eos_token_id)
    for token in ids:
        if token not in constraint.allowed():
            return False
        constraint.accept(token)
    return True


LAID_OUT: dict[str, list[str]] = {
    "bounded": [
        json.dumps(VALUE, separators=(",", ":")),
        json.dumps(VALUE, indent=2),
        json.dumps(VALUE, indent="\t"),
        '{\n\n  "name": "Ann",\n  "age": 31, "tags": [ "a", "b" ]}',
    ],
    "spaced": [json.dumps(VALUE)],
    "compact": [json.dumps(VALUE, separators=(",", ":"))],
    "indented": [json.dumps(VALUE, indent=2)],
    "any": [json.dumps(VALUE, indent=4), '{ \r\n\t"name"  :  "Ann" ,"age":31,"tags":[ ]}'],
}
MISLAID: dict[str, list[str]] = {
    "bounded": [
        " " + json.dumps(VALUE),  # nothing before the value
        json.dumps(VALUE) + "\n",  # nor after it
        '{\n\n\n"name": "Ann", "age": 31, "tags": []}',  # at most two newlines
        "{\n" + " " * 21 + '"name": "Ann", "age": 31, "tags": []}',  # at most 20 spaces
        '{  "name": "Ann", "age": 31, "tags": []}',  # one space, or a newline first
        '{"name":\r"Ann", "age": 31, "tags": []}',  # no carriage return
    ],
    "spaced": [json.dumps(VALUE, separators=(",", ":")), json.dumps(VALUE, indent=2)],
    "compact": [json.dumps(VALUE), json.dumps(VALUE, indent=2)],
    "indented": [
        json.dumps(VALUE, separators=(",", ":")),
        json.dumps(VALUE, indent="\t"),
        json.dumps(VALUE, indent=4),  # the depth is kept: two spaces a level
        '{\n  "name": "Ann",\n  "age": 31,\n  "tags": ["a", "b"]\n}',  # the list too
    ],
    "any": [" " + json.dumps(VALUE), json.dumps(VALUE) + " "],
}


@pytest.mark.parametrize("json_format", JSON_FORMATS)
def test_each_layout_takes_its_json_and_refuses_other_layouts(
    json_format: JsonFormat, grammars_of: Any, tokenizer: Any
) -> None:
    grammars = grammars_of(json_format)
    for text in LAID_OUT[json_format]:
        constraint = grammars.constraint(PERSON, tokenizer)
        assert accepts(constraint, text, tokenizer), text
        assert constraint.terminated
    for text in MISLAID[json_format]:
        assert not accepts(grammars.constraint(PERSON, tokenizer), text, tokenizer), text


@pytest.mark.parametrize(
    ("json_format", "forced"),
    [
        ("spaced", '{"name": "'),
        ("compact", '{"name":"'),
        ("indented", '{\n  "name": "'),
        ("bounded", "{"),
    ],
)
def test_the_forced_text_follows_the_layout(
    json_format: JsonFormat, forced: str, grammars_of: Any, tokenizer: Any
) -> None:
    constraint = grammars_of(json_format).constraint(PERSON, tokenizer)
    assert constraint.forced_text() == forced
    assert constraint.forced_tokens() == tokenizer.encode(forced, add_special_tokens=False)


def test_the_bounded_layout_puts_no_whitespace_before_a_comma_or_a_colon(
    grammars_of: Any, tokenizer: Any
) -> None:
    grammars = grammars_of("bounded")
    for text in (
        '{"name": "Ann" , "age": 31, "tags": []}',
        '{"name" : "Ann", "age": 31, "tags": []}',
    ):
        assert not accepts(grammars.constraint(PERSON, tokenizer), text, tokenizer), text
    constraint = grammars.constraint(PERSON, tokenizer)
    assert constraint.accept_text('{\n  "name')
    assert constraint.forced_text() == '":'  # the colon is forced, as on xgrammar
    assert constraint.accept_text('": "Ann"')
    assert constraint.forced_text() == ","  # no gap before it: the comma is forced
    # Objects without properties: any object, or a map.
    for schema, text in [
        ({"type": "object"}, '{\n  "a": [1, {"b": 2}],\n  "c": null\n}'),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, '{"a": 1, "b": 2}'),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "{ }"),
    ]:
        assert accepts(grammars.constraint(schema, tokenizer), text, tokenizer), text
    map_of_int = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert not accepts(grammars.constraint(map_of_int, tokenizer), '{"a": "x"}', tokenizer)
    assert not accepts(grammars.constraint(map_of_int, tokenizer), '{"a" : 1}', tokenizer)
    # A structure llguidance's own JSON compiler writes (here: allOf) lets a gap before them:
    # the one difference left (docs/local-engine.md).
    merged = {"allOf": [PERSON]}
    text = '{"name": "Ann" , "age" : 31, "tags": []}'
    assert accepts(grammars.constraint(merged, tokenizer), text, tokenizer)


def test_strict_mode_no_extra_properties_and_properties_in_schema_order(
    grammars_of: Any, tokenizer: Any
) -> None:
    grammars = grammars_of("compact")
    extra = '{"name":"Ann","age":31,"tags":[],"x":1}'
    assert not accepts(grammars.constraint(PERSON, tokenizer), extra, tokenizer)
    swapped = '{"age":31,"name":"Ann","tags":[]}'
    assert not accepts(grammars.constraint(PERSON, tokenizer), swapped, tokenizer)
    optional = {**PERSON, "required": ["name"]}
    assert accepts(grammars.constraint(optional, tokenizer), '{"name":"A","tags":[]}', tokenizer)
    # additionalProperties given is kept; a prefixItems array takes no more items.
    open_schema = {**PERSON, "additionalProperties": {"type": "integer"}}
    assert accepts(grammars.constraint(open_schema, tokenizer), extra, tokenizer)
    pair = {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]}
    assert accepts(grammars.constraint(pair, tokenizer), '[1,"a"]', tokenizer)
    assert not accepts(grammars.constraint(pair, tokenizer), '[1,"a",2]', tokenizer)


def test_keywords_llguidance_cannot_enforce_are_left_to_the_tracker_as_on_xgrammar(
    grammars_of: Any, tokenizer: Any
) -> None:
    grammars = grammars_of("compact")
    unique = {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}
    assert accepts(grammars.constraint(unique, tokenizer), "[1,1]", tokenizer)
    assert accepts(
        grammars_of("bounded").constraint(unique, tokenizer), "[\n  1,\n  1\n]", tokenizer
    )
    one_of = {"oneOf": [{"type": "integer"}, {"type": "number"}]}
    assert accepts(grammars.constraint(one_of, tokenizer), "1", tokenizer)
    escaped = grammars.constraint({"type": "string"}, tokenizer)
    assert accepts(escaped, '"caf\\u00e9"', tokenizer)  # any \\u escape, as xgrammar


def test_strict_schema_closes_objects_as_xgrammar_does() -> None:
    schema = {
        "type": "object",
        "allOf": [{"properties": {"a": {"type": "integer"}}, "oneOf": [{"required": ["a"]}]}],
        "properties": {"b": {"const": {"type": "object"}}, "c": {"type": "object"}},
        "anyOf": [{"properties": {"b": {}}}],
        "required": ["b", "z"],
        "$defs": {"d": {"type": "object", "properties": {}}, "e": {"items": {}}},
    }
    # "z" is required and listed nowhere: closing would contradict the schema, so it stays open.
    assert "additionalProperties" not in strict_schema(schema)
    out = strict_schema({**schema, "required": ["b"]})
    assert strict_schema({"properties": {"a": {}}})["type"] == "object"  # inferred
    assert "type" not in strict_schema({"properties": {}, "anyOf": [{}]})  # not beside anyOf
    assert out["additionalProperties"] is False
    # Closed to the names it and every subschema applying to it list ("a", from its allOf).
    assert list(out["properties"]) == ["b", "c", "a"]
    assert out["properties"]["a"] == {}
    # What applies to the same value stays open (closing it would close the value).
    assert "additionalProperties" not in out["allOf"][0]
    assert "additionalProperties" not in out["allOf"][0]["oneOf"][0]
    assert "additionalProperties" not in out["anyOf"][0]
    assert out["properties"]["b"] == {"const": {"type": "object"}}  # values are not schemas
    assert "additionalProperties" not in out["properties"]["c"]  # no properties: any object
    assert out["$defs"]["d"]["additionalProperties"] is False
    assert out["$defs"]["e"]["type"] == "array"
    assert "additionalProperties" not in schema  # the input is not changed
    # Under a schema without properties, a branch with properties is closed.
    assert (
        strict_schema({"anyOf": [{"properties": {"a": {}}}]})["anyOf"][0]["additionalProperties"]
        is False
    )


def test_mask_sets_forbidden_logits_to_minus_infinity_in_place(
    grammars_of: Any, tokenizer: Any, ll_tokenizer: Any
) -> None:
    grammars = grammars_of("compact")
    constraint = grammars.constraint({"type": "integer", "minimum": 0, "maximum": 9}, tokenizer)
    allowed = constraint.allowed()
    assert {ll_tokenizer.decode_bytes([t]) for t in allowed} == {str(d).encode() for d in range(10)}
    for shape in [(1, grammars.vocab_size), (grammars.vocab_size,)]:
        logits = np.arange(grammars.vocab_size, dtype=np.float32).reshape(shape)
        constraint.mask(logits)
        row = logits.reshape(-1)
        assert set(np.flatnonzero(np.isfinite(row)).tolist()) == allowed
        assert all(row[t] == t for t in allowed)  # allowed logits are untouched


def test_a_mask_over_more_rows_than_the_tokenizer_forbids_the_extra_rows(
    ll_tokenizer: Any, tokenizer: Any
) -> None:
    wider = LlgGrammars(ll_tokenizer, ll_tokenizer.vocab_size + 64, [], json_format="compact")
    constraint = wider.constraint({"type": "boolean"}, tokenizer)
    logits = np.zeros((1, wider.vocab_size), dtype=np.float32)
    constraint.mask(logits)
    assert np.isneginf(logits[0, ll_tokenizer.vocab_size :]).all()
    assert np.isfinite(logits[0]).sum() == len(constraint.allowed()) > 0


def test_special_tokens_never_enter_text_and_eos_only_ends(
    grammars_of: Any, tokenizer: Any
) -> None:
    constraint = grammars_of("compact").constraint({"type": "string"}, tokenizer)
    for token in tokenizer.encode('"ab', add_special_tokens=False):
        constraint.accept(token)
    added = set(tokenizer.added_tokens_decoder)
    assert added and not added & constraint.allowed()
    constraint.accept(tokenizer.encode('"', add_special_tokens=False)[0])
    assert constraint.allowed() == {tokenizer.eos_token_id}
    assert not constraint.terminated
    constraint.accept(tokenizer.eos_token_id)
    assert constraint.terminated


def test_the_generations_stop_tokens_end_it_not_only_llguidances_eos(
    ll_tokenizer: Any, tokenizer: Any
) -> None:
    eos = tokenizer.eos_token_id
    other = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    assert other != eos
    both = LlgGrammars(ll_tokenizer, ll_tokenizer.vocab_size, [], stop_token_ids={eos, other})
    constraint = both.constraint({"type": "integer", "maximum": 5}, tokenizer)
    constraint.accept(tokenizer.encode("5", add_special_tokens=False)[0])
    assert constraint.allowed() == {eos, other}
    constraint.accept(other)
    assert constraint.terminated
    constraint.rollback(1)
    assert not constraint.terminated and constraint.allowed() == {eos, other}
    # A stop set without llguidance's own EOS: that token is never allowed.
    only = LlgGrammars(ll_tokenizer, ll_tokenizer.vocab_size, [], stop_token_ids={other})
    constraint = only.constraint({"type": "integer", "maximum": 5}, tokenizer)
    constraint.accept(tokenizer.encode("5", add_special_tokens=False)[0])
    assert constraint.allowed() == {other}
    logits = np.zeros(only.vocab_size, dtype=np.float32)
    constraint.mask(logits)
    assert np.flatnonzero(np.isfinite(logits)).tolist() == [other]
    with pytest.raises(RuntimeError, match="rejected token"):
        constraint.accept(eos)


def test_rollback_returns_to_the_same_state(grammars_of: Any, tokenizer: Any) -> None:
    constraint = grammars_of("bounded").constraint(PERSON, tokenizer)
    ids = tokenizer.encode(json.dumps(VALUE, indent=2), add_special_tokens=False)
    seen = []
    for token in ids:
        seen.append((constraint.allowed(), constraint.forced_text()))
        constraint.accept(token)
    constraint.accept(tokenizer.eos_token_id)
    assert constraint.terminated
    constraint.rollback(1)
    assert not constraint.terminated
    constraint.rollback(5)
    assert (constraint.allowed(), constraint.forced_text()) == seen[len(ids) - 5]
    constraint.rollback(0)
    constraint.rollback(len(ids) - 5)
    # Everything rolled back: the state is the first one again, and the same tokens go on.
    for i, token in enumerate(ids):
        assert (constraint.allowed(), constraint.forced_text()) == seen[i]
        constraint.accept(token)
    with pytest.raises(ValueError, match="cannot roll back"):
        constraint.rollback(len(ids) + 1)


def test_a_refused_token_raises_and_leaves_the_state_usable(
    grammars_of: Any, tokenizer: Any
) -> None:
    constraint = grammars_of("compact").constraint({"type": "boolean"}, tokenizer)
    (seven,) = tokenizer.encode("7", add_special_tokens=False)
    with pytest.raises(RuntimeError, match="rejected token"):
        constraint.accept(seven)
    assert accepts(constraint, "true", tokenizer)


def test_accept_text_is_one_step(grammars_of: Any, tokenizer: Any) -> None:
    constraint = grammars_of("compact").constraint(PERSON, tokenizer)
    assert constraint.accept_text('{"name":"Ann",')
    assert constraint.forced_text() == '"age":'
    assert not constraint.accept_text('"tags":')
    constraint.rollback(1)
    assert constraint.forced_text() == '{"name":"'


def test_forced_after_and_forces_leave_the_state_as_it_was(
    grammars_of: Any, tokenizer: Any
) -> None:
    constraint = grammars_of("compact").constraint(PERSON, tokenizer)
    assert constraint.forced_after(b'{"name":"Ann"') == ',"age":'
    assert constraint.forced_after(b"") == '{"name":"'
    assert constraint.forced_text() == '{"name":"'
    (brace,) = tokenizer.encode("{", add_special_tokens=False)
    assert constraint.forces(brace, b'"name":"')
    assert not constraint.forces(brace, b'"age"')
    assert not constraint.forces(tokenizer.encode("[", add_special_tokens=False)[0], b"")
    assert constraint.forced_text() == '{"name":"'
    with pytest.raises(RuntimeError, match="rejected"):
        constraint.forced_after(b"[")
    assert constraint.forced_text() == '{"name":"'


def test_forced_text_is_whole_characters(
    grammars_of: Any, tokenizer: Any, ll_tokenizer: Any
) -> None:
    grammars = grammars_of()
    # Forced bytes ending inside a character stop before it.
    choice = grammars.constraint_for(GrammarSpec("ebnf", choice_gbnf(Choice(["aé", "aè"]))), None)
    assert choice.forced_text() == "a"
    # A state inside a character forces nothing (no text starts there), then goes on.
    cafe = grammars.constraint_for(GrammarSpec("ebnf", choice_gbnf(Choice(["café au lait"]))), None)
    assert cafe.forced_text() == "café au lait"
    head = ll_tokenizer.tokenize_bytes(b"caf\xc3")
    assert ll_tokenizer.decode_bytes(head[-1:]).endswith(b"\xc3")
    for token in head:
        cafe.accept(token)
    assert cafe.forced_text() == ""
    assert cafe.forced_after(b"\xa9") == " au lait"


def test_choice_regex_ebnf_and_lark(grammars_of: Any, tokenizer: Any) -> None:
    grammars = grammars_of()
    cases: list[tuple[Any, list[str], list[str]]] = [
        (Choice(["red", "green", 'say "hi"\n']), ["red", "green", 'say "hi"\n'], ["blue", "re"]),
        (Regex(r"[0-9]{3}-[A-Z]+"), ["123-AB"], ["12-AB", "123-ab", "123-AB "]),
        (
            Grammar('root ::= "(" item ("," item)* ")"\nitem ::= [a-z]+\n'),
            ["(ab,c)"],
            ["()", "(ab,)"],
        ),
        (
            Grammar('start: "x=" NUMBER ";"\nNUMBER: /[0-9]+/\n', syntax="lark"),
            ["x=12;"],
            ["x=;", "x=1"],
        ),
        (
            Grammar('%llguidance {}\nstart: "ok" | "no"\n', syntax="lark"),
            ["ok"],
            ["yes"],
        ),
    ]
    for constraint, good, bad in cases:
        request = GenerationRequest(messages=(), schema={}, constraint=constraint)
        spec = spec_of(request)
        assert spec is not None
        for text in good:
            assert accepts(grammars.constraint_for(spec, tokenizer), text, tokenizer), text
        for text in bad:
            assert not accepts(grammars.constraint_for(spec, tokenizer), text, tokenizer), text


WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city", "days"],
}


@pytest.mark.parametrize(
    ("at_least_one", "stop_after_first"),
    [(False, False), (True, False), (False, True), (True, True)],
)
def test_structural_tags_keep_xgrammar_options(
    at_least_one: bool, stop_after_first: bool, grammars_of: Any, tokenizer: Any
) -> None:
    tag = StructuralTag(
        [Tag("<w>", WEATHER, "</w>"), Tag("<s>", {"type": "string"}, "</s>")],
        at_least_one=at_least_one,
        stop_after_first=stop_after_first,
    )
    spec = GrammarSpec("structural_tag", json.dumps(xgrammar_structural_tag(tag)))
    grammars = grammars_of("spaced")
    call = '<w>{"city": "Oslo", "days": 2}</w>'
    texts = {
        "free": "just text",
        "one": call,
        "text then one": f"hi {call}",
        "one then text": f"{call} bye",
        "two": f'{call}\n<s>"x"</s>',
        "bad json": '<w>{"city": 3}</w>',
        "bad layout": '<w>{"city":"Oslo","days":2}</w>',
        "trigger without a tag": "a <w> b",
    }
    ok = {
        name: accepts(grammars.constraint_for(spec, tokenizer), t, tokenizer)
        for name, t in texts.items()
    }
    assert ok == {
        "free": not at_least_one,
        "one": True,
        "text then one": not at_least_one,
        "one then text": not stop_after_first,
        "two": not stop_after_first,
        "bad json": False,
        "bad layout": False,
        "trigger without a tag": False,
    }


def test_tool_calls_follow_each_tools_schema(grammars_of: Any, tokenizer: Any) -> None:
    tools = [
        Tool("get_weather", WEATHER),
        Tool(
            "search", {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
        ),
    ]
    spec = GrammarSpec("structural_tag", json.dumps(tools_structural_tag(tools)))
    grammars = grammars_of("bounded")
    one = (
        '<tool_call>[\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 1}}\n'
        "]</tool_call>"
    )
    two = (
        '<tool_call>[\n{"name": "search", "arguments": {\n  "q": "x"\n}},\n'
        '{"name": "get_weather", "arguments": {"city": "Rome", "days": 3}}\n]</tool_call>'
    )
    for text in (one, two):
        assert accepts(grammars.constraint_for(spec, tokenizer), text, tokenizer), text
    for text in (
        "<tool_call>[\n]</tool_call>",  # at least one call
        one.replace('"days": 1', '"q": "x"'),  # another tool's arguments
        one.replace("get_weather", "get_time"),  # no such tool
        one + " more",  # nothing after the calls
    ):
        assert not accepts(grammars.constraint_for(spec, tokenizer), text, tokenizer), text
    constraint = grammars.constraint_for(spec, tokenizer)
    assert constraint.forced_text() == '<tool_call>[\n{"name": "'
    assert constraint.forced_after(b'<tool_call>[\n{"name": "s') == 'earch", "arguments": {'


def test_compiles_are_cached_per_spec(grammars_of: Any) -> None:
    grammars = grammars_of("compact")
    spec = schema_spec({"type": "array", "items": {"type": "number"}})
    first = grammars.compile_spec(spec)
    assert grammars.compile_spec(spec) is first
    grammars.clear_cache()
    assert grammars.compile_spec(spec) is not first


def test_what_llguidance_cannot_compile_is_a_value_error_with_its_reason(
    grammars_of: Any,
) -> None:
    grammars = grammars_of()
    with pytest.raises(ValueError, match="look-around"):
        grammars.compile_spec(GrammarSpec("regex", "a(?=b)"))
    # A schema is never refused: a $ref to nothing here is masked as any value.
    assert grammars.compile_spec(schema_spec({"$ref": "https://example.com/remote.json"}))
    with pytest.raises(ValueError, match="unknown name"):
        grammars.compile_spec(GrammarSpec("lark", "start: foo\n"))
    with pytest.raises(ValueError, match="json_format"):
        LlgGrammars(grammars.ll_tokenizer, 10, [], json_format="pretty")  # type: ignore[arg-type]


def request_of(**fields: Any) -> GenerationRequest:
    return GenerationRequest(
        messages=({"role": "user", "content": "hi"},), schema=fields.pop("schema", {}), **fields
    )


def test_check_llg_refuses_what_llguidance_cannot_compile_with_its_reason() -> None:
    check_llg(request_of(constraint=Regex("[a-z]+")))
    check_llg(request_of(schema=PERSON))
    check_llg(request_of(tools=[Tool("get_weather", WEATHER)], mode="tool", tool_choice="required"))
    with pytest.raises(
        UnsupportedConstraint,
        match=r"(?s)llguidance\) cannot compile Regex\('a\(\?=b\)'\): .*look-around",
    ):
        check_llg(request_of(constraint=Regex("a(?=b)")))
    # A pattern llguidance cannot read is masked as any string (the tracker checks it).
    check_llg(request_of(schema={"type": "string", "pattern": "a(?=b)"}))
    with pytest.raises(UnsupportedConstraint, match=r"(?s)this Grammar \(lark\): .*unknown name"):
        check_llg(request_of(constraint=Grammar("start: foo\n", syntax="lark")))
    with pytest.raises(UnsupportedConstraint, match=r"this Grammar \(gbnf\)"):
        check_llg(request_of(constraint=Grammar("root ::= foo\n")))
    # The request's options are checked as for the xgrammar path.
    with pytest.raises(UnsupportedConstraint, match="tool_choice='auto'"):
        check_llg(request_of(tools=[Tool("get_weather", WEATHER)], mode="tool", tool_choice="auto"))
