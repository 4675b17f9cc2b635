"""Large and mixed-type schemas on the llama.cpp runtime's masks (``_llg_masks``,
``_llg_json``): objects of hundreds or thousands of properties decode (llguidance's parser
limits), translate without recursion, and fail with a typed error naming the limit past it;
type lists keep ``format``, ``enum`` and ``const`` on every branch, as llguidance's own JSON
compiler does. No model is loaded (the tokenizer is read out of the GGUF)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sdk._backend import GenerationRequest
from sdk._errors import BackendError
from sdk._local._constrain import GrammarSpec
from sdk._local._layout import JsonFormat
from sdk._local._llg_json import laid_out_lark
from sdk._local._llg_masks import (
    MAX_ITEMS_IN_ROW,
    STEP_MAX_ITEMS,
    LlgConstraint,
    LlgGrammars,
)
from sdk._local._llg_specs import check_llg
from sdk._local._llg_strict import strict_schema
from tests.sdk.local._local_support import import_llguidance_hf

np = pytest.importorskip("numpy", reason="needs numpy (the local extra)")
llguidance_hf = import_llguidance_hf()


def grammars(ll_tokenizer: Any, json_format: JsonFormat, **limits: int) -> LlgGrammars:
    return LlgGrammars(ll_tokenizer, ll_tokenizer.vocab_size, [], json_format=json_format, **limits)


def constraint(g: LlgGrammars, schema: Any, tokenizer: Any) -> LlgConstraint:
    return g.constraint_for(GrammarSpec("json_schema", json.dumps(schema)), tokenizer)


def decodes(c: LlgConstraint, text: str, tokenizer: Any) -> bool:
    """Feed ``text``'s tokens one by one, each checked against the mask, then end."""
    for token in [*tokenizer.encode(text, add_special_tokens=False), tokenizer.eos_token_id]:
        if token not in c.allowed():
            return False
        c.accept(token)
    return True


def optional_properties(n: int) -> dict[str, Any]:
    return {"type": "object", "properties": {f"field_{i}": {"type": "integer"} for i in range(n)}}


def document(n: int, json_format: JsonFormat) -> str:
    gap = " " if json_format == "bounded" else ""
    return f'{{"field_1":{gap}1,{gap}"field_{n - 1}":{gap}3}}'


@pytest.mark.parametrize("json_format", ["bounded", "compact"])
@pytest.mark.parametrize("n", [700, 1000, 1500])
def test_objects_of_many_optional_properties_decode_token_by_token(
    n: int, json_format: JsonFormat, ll_tokenizer: Any, tokenizer: Any
) -> None:
    # llguidance's default max_items_in_row (2,000) stopped these after the first token; its
    # default step_max_items (50,000), 1,500 under bounded (llguidance's JSON compiler there).
    c = constraint(grammars(ll_tokenizer, json_format), optional_properties(n), tokenizer)
    assert decodes(c, document(n, json_format), tokenizer)


def test_an_any_of_many_objects_decodes_under_bounded(ll_tokenizer: Any, tokenizer: Any) -> None:
    branches = [
        {"type": "object", "properties": {f"k{i}": {"type": "integer"}}, "required": [f"k{i}"]}
        for i in range(700)
    ]
    c = constraint(grammars(ll_tokenizer, "bounded"), {"anyOf": branches}, tokenizer)
    assert decodes(c, '{"k699": 5}', tokenizer)


def test_past_the_row_limit_the_error_is_typed_with_llguidances_reason(
    ll_tokenizer: Any, tokenizer: Any
) -> None:
    assert MAX_ITEMS_IN_ROW > 2000
    g = grammars(ll_tokenizer, "bounded", max_items_in_row=2000)  # llguidance's default
    c = constraint(g, optional_properties(700), tokenizer)
    with pytest.raises(BackendError, match=r"max is 2000.*max_items_in_row 2000") as caught:
        decodes(c, document(700, "bounded"), tokenizer)
    assert "Current row has" in str(caught.value)
    # The error is sticky: every later call says so again.
    with pytest.raises(BackendError, match="max_items_in_row"):
        c.accept(tokenizer.encode("1", add_special_tokens=False)[0])


def test_past_the_step_limit_the_error_is_typed_with_llguidances_reason(
    ll_tokenizer: Any, tokenizer: Any
) -> None:
    assert STEP_MAX_ITEMS > 50_000
    g = grammars(ll_tokenizer, "bounded", step_max_items=50_000)  # llguidance's default
    c = constraint(g, optional_properties(1500), tokenizer)
    # The mask that hits the limit allows nothing: mask() raises, and so does any token.
    assert not decodes(c, document(1500, "bounded"), tokenizer)
    assert not c.allowed()
    limit = r"Too many items \(limit 50000.*step_max_items 50000"
    with pytest.raises(BackendError, match=limit):
        c.mask(np.zeros((1, ll_tokenizer.vocab_size), dtype=np.float32))
    with pytest.raises(BackendError, match=limit):
        c.accept(tokenizer.encode(",", add_special_tokens=False)[0])


@pytest.mark.parametrize("json_format", ["bounded", "indented", "compact"])
@pytest.mark.parametrize("n", [1000, 3000])
def test_thousands_of_properties_are_checked_without_recursion_error(
    n: int, json_format: JsonFormat
) -> None:
    # The translation wrote one rule per property recursively: RecursionError near 990.
    request = GenerationRequest(
        messages=({"role": "user", "content": "x"},), schema=optional_properties(n)
    )
    check_llg(request, json_format)


def test_a_translation_of_thousands_of_members_falls_back_to_the_native_compile() -> None:
    def leaf(node: Any, scalar: bool) -> Any:
        return node

    assert laid_out_lark(strict_schema(optional_properties(1000)), "bounded", leaf) is not None
    # Past 1,000 members llguidance's Lark compiler would overflow the stack: None (native).
    assert laid_out_lark(strict_schema(optional_properties(3000)), "bounded", leaf) is None


GOLDEN_SCHEMA = {
    "type": "object",
    "properties": {
        "a": {"type": "integer"},
        "b": {"type": "string"},
        "c": {
            "type": "object",
            "properties": {"d": {"type": "boolean"}, "e": {"type": "integer"}},
            "required": ["e"],
            "additionalProperties": False,
        },
    },
    "required": ["b"],
    "additionalProperties": False,
}
# What the recursive translation wrote (before the tails were built in a loop), verbatim.
GOLDEN = {
    "bounded": (
        "j_5",
        [
            'j_1: "," GAP? "\\"e\\"" ":" GAP? %json {"type": "integer"} ""',
            'j_2: "{" GAP? ("\\"d\\"" ":" GAP? %json {"type": "boolean"} j_1 | "\\"e\\"" ":" GAP? %json {"type": "integer"} "") GAP? "}"',  # noqa: E501
            'j_3: ("," GAP? "\\"c\\"" ":" GAP? j_2)? ""',
            'j_4: "," GAP? "\\"b\\"" ":" GAP? %json {"type": "string"} j_3',
            'j_5: "{" GAP? ("\\"a\\"" ":" GAP? %json {"type": "integer"} j_4 | "\\"b\\"" ":" GAP? %json {"type": "string"} j_3) GAP? "}"',  # noqa: E501
            "GAP: / |\\n\\n?[ \\t]{0,20}/",
        ],
    ),
    "indented": (
        "j_5",
        [
            'j_1: ",\\n    " "\\"e\\"" ": " %json {"type": "integer"} ""',
            'j_2: "{" "\\n    " ("\\"d\\"" ": " %json {"type": "boolean"} j_1 | "\\"e\\"" ": " %json {"type": "integer"} "") "\\n  " "}"',  # noqa: E501
            'j_3: (",\\n  " "\\"c\\"" ": " j_2)? ""',
            'j_4: ",\\n  " "\\"b\\"" ": " %json {"type": "string"} j_3',
            'j_5: "{" "\\n  " ("\\"a\\"" ": " %json {"type": "integer"} j_4 | "\\"b\\"" ": " %json {"type": "string"} j_3) "\\n" "}"',  # noqa: E501
        ],
    ),
}


@pytest.mark.parametrize("layout", ["bounded", "indented"])
def test_the_iterative_translation_writes_what_the_recursive_one_wrote(layout: str) -> None:
    def leaf(node: Any, scalar: bool) -> Any:
        return {"type": node.get("type")}

    assert laid_out_lark(GOLDEN_SCHEMA, layout, leaf) == GOLDEN[layout]


DATE_OR_ARRAY = {"type": ["string", "array"], "format": "date", "items": {"type": "integer"}}
ENUM_MIXED = {"type": ["object", "string"], "enum": ["a", {"x": 1}]}
CONST_MIXED = {"type": ["array", "integer", "null"], "const": [1, 2]}
TYPE_LISTS = [
    (DATE_OR_ARRAY, ['"2020-01-01"', '"hello"', "[1,2]", '["a"]']),
    (ENUM_MIXED, ['"a"', '{"x":1}', '{"y":2}', '"b"', "{}"]),
    (CONST_MIXED, ["[1,2]", "[1]", "null", "3"]),
    ({"type": ["object", "string"], "const": "k"}, ['"k"', '"j"', "{}"]),
    (
        {"type": ["integer", "array"], "minimum": 3, "items": {"type": "boolean"}},
        ["5", "1", "[true]", "[1]"],
    ),
]


@pytest.mark.parametrize(("schema", "texts"), TYPE_LISTS)
def test_type_lists_keep_format_enum_and_const_as_the_native_compile_does(
    schema: Any, texts: list[str], ll_tokenizer: Any, tokenizer: Any
) -> None:
    native = grammars(ll_tokenizer, "compact")  # llguidance's own JSON compiler
    written = grammars(ll_tokenizer, "bounded")  # the structure _llg_json writes
    for text in texts:
        expected = decodes(constraint(native, schema, tokenizer), text, tokenizer)
        assert decodes(constraint(written, schema, tokenizer), text, tokenizer) == expected, text


@pytest.mark.parametrize("json_format", ["bounded", "indented"])
def test_a_type_list_with_a_container_keeps_enum_and_reads_format_as_an_annotation(
    json_format: JsonFormat, ll_tokenizer: Any, tokenizer: Any
) -> None:
    written = grammars(ll_tokenizer, json_format)
    assert decodes(constraint(written, DATE_OR_ARRAY, tokenizer), '"2020-01-01"', tokenizer)
    # format is an annotation, as the tracker reads it by default (docs/local-engine.md).
    assert decodes(constraint(written, DATE_OR_ARRAY, tokenizer), '"hello"', tokenizer)
    assert not decodes(constraint(written, DATE_OR_ARRAY, tokenizer), "1", tokenizer)
    assert decodes(constraint(written, ENUM_MIXED, tokenizer), '"a"', tokenizer)
    # An object or array in an enum or const is written compactly, as xgrammar writes it.
    assert decodes(constraint(written, ENUM_MIXED, tokenizer), '{"x":1}', tokenizer)
    assert not decodes(constraint(written, ENUM_MIXED, tokenizer), '{"x": 1}', tokenizer)
    assert not decodes(constraint(written, ENUM_MIXED, tokenizer), '{"y":2}', tokenizer)
    assert decodes(constraint(written, CONST_MIXED, tokenizer), "[1,2]", tokenizer)
    assert not decodes(constraint(written, CONST_MIXED, tokenizer), "null", tokenizer)


def xgrammar_takes(constraint: Any, text: str, tokenizer: Any) -> bool:
    try:
        for token in [*tokenizer.encode(text, add_special_tokens=False), tokenizer.eos_token_id]:
            constraint.accept(token)
    except RuntimeError:
        return False
    return True


XGRAMMAR_TABLE = [
    (DATE_OR_ARRAY, ['"2020-01-01"', '"hello"', "[\n  1\n]", "[1]"]),
    (ENUM_MIXED, ['"a"', '{"x":1}', '{"x": 1}', '{\n  "x": 1\n}', '{"y":2}']),
    (CONST_MIXED, ["[1,2]", "[1, 2]", "[\n  1,\n  2\n]", "null"]),
]


@pytest.mark.torch
@pytest.mark.parametrize("json_format", ["bounded", "indented"])
def test_type_lists_agree_with_xgrammar(
    json_format: JsonFormat, ll_tokenizer: Any, tokenizer: Any
) -> None:
    from sdk._local._xgr_masks import Grammars

    stop = [tokenizer.eos_token_id]
    xgr = Grammars(tokenizer, len(tokenizer), json_format=json_format, stop_token_ids=stop)
    written = grammars(ll_tokenizer, json_format)
    for schema, texts in XGRAMMAR_TABLE:
        spec = GrammarSpec("json_schema", json.dumps(schema))
        for text in texts:
            expected = xgrammar_takes(xgr.constraint_for(spec, tokenizer), text, tokenizer)
            assert decodes(constraint(written, schema, tokenizer), text, tokenizer) == expected, (
                schema,
                text,
            )
