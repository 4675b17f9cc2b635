"""What the local engine decodes each request under, and what it refuses, without a model.

``LocalBackend.check_request`` accepts every constraint kind and several tools and refuses,
before any request, what xgrammar cannot compile; ``spec_of`` is the grammar a request compiles
to (the compile cache's key); the tools' grammar and prompt (``_tools``) and the JSON layout
inside structural tags (``_layout``) are checked against xgrammar itself. Needs the ``local``
extra (xgrammar); no model is loaded.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from sdk import (
    Choice,
    Client,
    Grammar,
    Regex,
    StructuralTag,
    Tag,
    Tool,
    UnsupportedConstraint,
)
from sdk._backend import GenerationRequest, check_request
from sdk._constraints import Constraint
from sdk._grammar_languages import choice_gbnf, xgrammar_structural_tag
from sdk._local import LocalBackend
from sdk._local._constrain import GrammarSpec, check, spec_of
from sdk._local._layout import JSON_FORMATS, JsonFormat, laid_out
from sdk._local._model import RUNTIMES, Runtime
from sdk._local._tool_calls import ToolCallSplitter
from sdk._local._tools import (
    prompt_messages,
    template_takes_tools,
    tool_listing,
    tools_structural_tag,
)

xgr = pytest.importorskip("xgrammar", reason="needs the local extra (xgrammar)")
xgrammar_accepts = xgr.testing._is_grammar_accept_string


class Weather(BaseModel):
    """The weather in a city."""

    city: str
    days: int


class Search(BaseModel):
    query: str


TOOLS = (Tool("get_weather", Weather), Tool("search", Search, "Search the web"))
TAG = StructuralTag(
    [
        Tag("<function=get_weather>", Weather, "</function>"),
        Tag("<function=search>", Search, "</function>"),
    ],
    ["<function="],
)
MESSAGES = ({"role": "user", "content": "hi"},)


def request(
    constraint: Constraint | None = None, *, tools: tuple[Tool, ...] = (), mode: str | None = None
) -> GenerationRequest:
    return GenerationRequest(
        messages=MESSAGES,
        schema={"type": "string"},
        constraint=constraint,
        tools=tools,
        mode=(mode or ("tool" if tools else "json_schema")),  # type: ignore[arg-type]
    )


ACCEPTED: list[Constraint] = [
    Choice(["positive", "negative"]),
    Regex(r"\+?[0-9]{1,3}-[0-9]{3}-[0-9]{4}"),
    Grammar('root ::= "SELECT " col " FROM t"\ncol ::= "a" | "b"'),
    Grammar('start: NUM "-" NUM\nNUM: /[0-9]+/'),
    Grammar('%llguidance {}\nstart: NUM "-" NUM\nNUM: /[0-9]+/'),  # written for llama.cpp
    TAG,
]


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("constraint", ACCEPTED, ids=lambda c: type(c).__name__)
def test_every_constraint_kind_is_accepted(constraint: Constraint, runtime: Runtime) -> None:
    backend = LocalBackend(runtime=runtime)
    backend.check_request(request(constraint))
    check_request(backend, request(constraint))  # what Client.stream calls


def test_several_tools_and_one_tool_are_accepted() -> None:
    LocalBackend().check_request(request(tools=TOOLS))
    LocalBackend().check_request(request(tools=TOOLS[:1]))


def test_json_schema_and_no_constraint_are_accepted() -> None:
    for mode in ("json_schema", "json_object", "tool", "none"):
        LocalBackend().check_request(request(mode=mode))
    # Nothing is sent with mode="none": even what xgrammar cannot compile is fine then.
    LocalBackend().check_request(request(Regex("(?=a)b"), mode="none"))


@pytest.mark.parametrize(
    ("constraint", "reason"),
    [
        (Regex("(?=a)b"), "Lookahead is not supported"),
        (Regex(r"(a)\1"), "Backreference is not supported"),
        (Regex(r"\p{L}+"), "Unicode character class"),
        (Grammar('root ::= "a" | b'), 'Rule "b" is not defined'),
        (Grammar('%llguidance {"lazy": true}\nstart: "a"'), "directive %llguidance"),
    ],
)
def test_what_xgrammar_cannot_compile_is_refused_with_its_reason(
    constraint: Constraint, reason: str
) -> None:
    """On the torch runtime (xgrammar's masks); the llama.cpp runtime's check is llguidance's
    (``tests/sdk/local/test_llg_grammar.py``)."""
    with pytest.raises(
        UnsupportedConstraint, match=r"local engine \(xgrammar\) cannot compile"
    ) as e:
        LocalBackend(runtime="torch").check_request(request(constraint))
    assert reason in str(e.value)
    assert "/project/" not in str(e.value)  # xgrammar's source location is left out


def test_client_stream_refuses_before_any_request() -> None:
    """Each runtime's check is its grammar engine's: llguidance's for llama.cpp (the default
    on a CPU), xgrammar's for torch."""
    torch = Client.local(runtime="torch")
    with pytest.raises(UnsupportedConstraint, match=r"\(xgrammar\).*Lookahead"):
        torch.stream(messages=MESSAGES, schema=Regex("(?=a)b"))
    client = Client.local(device="cpu")
    with pytest.raises(UnsupportedConstraint, match=r"(?s)\(llguidance\).*look-around"):
        client.stream(messages=MESSAGES, schema=Regex("(?=a)b"))
    # Accepted: nothing runs until the stream is iterated.
    client.stream(messages=MESSAGES, schema=Regex("[0-9]+"))
    client.stream(messages=MESSAGES, tools=list(TOOLS))
    backend = client.backend
    assert isinstance(backend, LocalBackend) and backend.active == 0


def test_tools_with_a_constraint_or_outside_tool_mode_are_refused() -> None:
    with pytest.raises(UnsupportedConstraint, match="not both"):
        check(request(Choice(["a"]), tools=TOOLS))
    with pytest.raises(UnsupportedConstraint, match="mode must be 'tool'"):
        check(request(tools=TOOLS, mode="json_schema"))


def test_the_spec_is_a_function_of_the_constraint() -> None:
    assert spec_of(request(mode="none")) is None
    assert spec_of(request()) == GrammarSpec("json_schema", '{"type":"string"}')
    choice = Choice(["a", "b"])
    assert spec_of(request(choice)) == GrammarSpec("ebnf", choice_gbnf(choice))
    assert spec_of(request(Regex("[0-9]+"))) == GrammarSpec("regex", "[0-9]+")
    lark = Grammar('%llguidance {}\nstart: "a"')
    assert spec_of(request(lark)) == GrammarSpec("lark", 'start: "a"')
    assert spec_of(request(Grammar('root ::= "a"'))) == GrammarSpec("ebnf", 'root ::= "a"')
    # Same schema ({"type": "string"}), different constraints: different keys.
    specs = {spec_of(request(c)) for c in (Regex("a"), Regex("b"), Choice(["a"]), Choice(["b"]))}
    assert len(specs) == 4
    # Equal constraints built apart: one key.
    again = StructuralTag(list(TAG.structures), ["<function="])
    assert spec_of(request(TAG)) == spec_of(request(again))
    tools = spec_of(request(tools=TOOLS))
    assert tools is not None and tools.kind == "structural_tag"
    assert tools != spec_of(request(tools=TOOLS[:1]))


def tools_grammar(json_format: JsonFormat = "bounded") -> xgr.Grammar:
    return xgr.Grammar.from_structural_tag(
        json.dumps(laid_out(tools_structural_tag(TOOLS), json_format))
    )


W = '{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}'
S = '{"name": "search", "arguments": {"query": "fjords"}}'


@pytest.mark.parametrize(
    ("text", "accepted"),
    [
        (f"<tool_call>[\n{W}\n]</tool_call>", True),
        (f"<tool_call>[\n{W},\n{S}\n]</tool_call>", True),
        (f"<tool_call>[\n{S},\n{S}\n]</tool_call>", True),
        (
            '<tool_call>[\n{"name": "get_weather", "arguments": '
            '{\n  "city": "Oslo",\n  "days": 2\n}}\n]</tool_call>',
            True,
        ),
        ("<tool_call>[\n\n]</tool_call>", False),  # at least one call
        (f"Sure! <tool_call>[\n{W}\n]</tool_call>", False),  # nothing but calls
        (f"<tool_call>[\n{W}\n]</tool_call> done", False),
        (
            '<tool_call>[\n{"name": "get_weather", "arguments": {"query": "x"}}\n]</tool_call>',
            False,
        ),
        ('<tool_call>[\n{"name": "lookup", "arguments": {}}\n]</tool_call>', False),
        (f"<tool_call>[\n{W}{S}\n]</tool_call>", False),  # the separator
    ],
)
def test_the_tools_grammar(text: str, accepted: bool) -> None:
    assert xgrammar_accepts(tools_grammar(), text) is accepted
    if accepted:
        # What the grammar accepts, the splitter reads into calls of the tools' schemas.
        deltas = ToolCallSplitter([t.name for t in TOOLS]).feed(text)
        calls: dict[int, list[Any]] = {}
        for d in deltas:
            assert d.tool_call is not None
            calls.setdefault(d.tool_call, [d.tool_name, ""])[1] += d.text
        for name, args in calls.values():
            model = {"get_weather": Weather, "search": Search}[name]
            model.model_validate_json(args)


@pytest.mark.parametrize(
    ("json_format", "good", "bad"),
    [
        (
            "bounded",
            ['{"city": "Oslo"}', '{\n  "city": "Oslo"\n}'],
            ['{"city" : "Oslo"}', '{"city":\n\n\n"Oslo"}'],
        ),
        ("compact", ['{"city":"Oslo"}'], ['{"city": "Oslo"}']),
        ("spaced", ['{"city": "Oslo"}'], ['{"city":"Oslo"}', '{\n"city": "Oslo"}']),
        ("indented", ['{\n  "city": "Oslo"\n}'], ['{"city": "Oslo"}']),
        ("any", ['{ "city" :\n\n\n"Oslo" }'], ['{"city": Oslo}']),
    ],
)
def test_structural_tag_segments_follow_the_layout(
    json_format: JsonFormat, good: list[str], bad: list[str]
) -> None:
    tag = StructuralTag(
        [
            Tag(
                "<w>",
                {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
                "</w>",
            )
        ]
    )
    grammar = xgr.Grammar.from_structural_tag(
        json.dumps(laid_out(xgrammar_structural_tag(tag), json_format))
    )
    for segment in good:
        assert xgrammar_accepts(grammar, f"a <w>{segment}</w> b"), segment
    for segment in bad:
        assert not xgrammar_accepts(grammar, f"a <w>{segment}</w> b"), segment


def test_laid_out_leaves_other_contents_alone() -> None:
    node = {"type": "json_schema", "json_schema": {"type": "integer"}, "any_order": True}
    assert laid_out({"content": node}, "bounded") == {"content": node}
    plain = laid_out(
        {"content": {"type": "json_schema", "json_schema": {"type": "integer"}}}, "compact"
    )
    assert plain["content"]["type"] == "grammar" and "root ::=" in plain["content"]["grammar"]
    assert set(JSON_FORMATS) == {"bounded", "spaced", "compact", "indented", "any"}


def test_the_prompt_lists_the_tools_in_a_system_message() -> None:
    messages, listing = prompt_messages(MESSAGES, TOOLS, template_takes_tools=False)
    assert listing is None
    assert [m["role"] for m in messages] == ["system", "user"]
    system = messages[0]["content"]
    assert json.dumps(tool_listing(TOOLS)) in system
    assert "The weather in a city." in system and "Search the web" in system
    assert '<tool_call>[\n{"name": "get_weather", "arguments": ' in system
    # An existing system message is kept, the instructions after it.
    mine = ({"role": "system", "content": "Be brief."}, *MESSAGES)
    messages, _ = prompt_messages(mine, TOOLS, template_takes_tools=False)
    assert len(messages) == 2 and messages[0]["content"].startswith("Be brief.\n\n")
    assert mine[0]["content"] == "Be brief."  # the caller's messages are not changed


def test_a_template_that_takes_tools_gets_them() -> None:
    messages, listing = prompt_messages(MESSAGES, TOOLS, template_takes_tools=True)
    assert listing == tool_listing(TOOLS)
    assert listing[0]["function"]["parameters"] == TOOLS[0].compiled.schema_dict()
    assert "<tools>" not in messages[0]["content"]  # listed by the template, not twice
    assert "<tool_call>[" in messages[0]["content"]
    assert template_takes_tools("{% if tools %}{{ tools }}{% endif %}")
    assert template_takes_tools({"default": "x", "tool_use": "{{ tools }}"})
    assert not template_takes_tools("{{ messages }}")
    assert not template_takes_tools(None)


# -- on torch, no JSON Schema is refused at generation time (issue 42, item 4) ---------------

# Every kind of schema xgrammar refuses (or used to) that we found, each minimal, with a document
# its schema admits. The check plans each (widening what xgrammar refuses); the compile then
# takes the plan, so nothing is refused once the prompt is built.
TORCH_REFUSAL_KINDS = {
    "lookbehind": ({"type": "string", "pattern": "(?<=a)b"}, '"ab"'),
    "word-boundary": ({"type": "string", "pattern": "\\bfoo\\b"}, '"a foo b"'),
    "backreference": ({"type": "string", "pattern": "^(a)\\1$"}, '"aa"'),
    "unicode-class": ({"type": "string", "pattern": "^\\p{L}+$"}, '"abc"'),
    "ref-to-nothing": ({"type": "object", "properties": {"a": {"$ref": "#/$defs/no"}}}, '{"a":1}'),
    "false-subschema": ({"type": "object", "properties": {"a": False}}, "{}"),
    "integer-past-int64": ({"type": "integer", "minimum": -1e30}, "5"),
    "integer-at-2^63": ({"type": "integer", "maximum": 2**63}, "5"),
    "tuple-shorter-than-minItems": (
        {"type": "array", "prefixItems": [{"type": "integer"}], "minItems": 3},
        "[1,2,3]",
    ),
    "circular-ref-with-siblings": (
        {
            "$defs": {
                "n": {
                    "type": "object",
                    "properties": {"c": {"$ref": "#/$defs/n", "minProperties": 0}},
                }
            },
            "$ref": "#/$defs/n",
        },
        '{"c":{"c":{}}}',
    ),
    "nested-allOf-30-deep": (json.loads('{"allOf":[' * 30 + "{}" + "]}" * 30), "{}"),
    "huge-count": ({"type": "string", "pattern": "^[a-z]{1,20000}$"}, '"abc"'),
}


@pytest.mark.torch  # the tokenizer reads the GGUF through transformers
@pytest.mark.parametrize(
    ("schema", "document"), TORCH_REFUSAL_KINDS.values(), ids=TORCH_REFUSAL_KINDS.keys()
)
def test_a_schema_xgrammar_refuses_is_never_refused_at_generation_time(
    schema: Any, document: str, tokenizer: Any
) -> None:
    from sdk._local._xgr_masks import Grammars
    from tests.sdk.local._local_support import request_for

    check(request_for("x", schema), None)  # planned to the end: widened, not refused
    grammars = Grammars(
        tokenizer, len(tokenizer), json_format="bounded", stop_token_ids=[tokenizer.eos_token_id]
    )
    spec = GrammarSpec("json_schema", json.dumps(schema, separators=(",", ":")))
    assert grammars.constraint_for(spec, tokenizer).accept_text(document)
