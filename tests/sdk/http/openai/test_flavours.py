"""How each server flavour is sent each constraint and several tools: the request bodies
(sans-I/O), checked against the formats the servers document, and what is refused before any
request."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from sdk import (
    Choice,
    Grammar,
    Regex,
    StructuralTag,
    Tag,
    Tool,
    UnsupportedConstraint,
)
from sdk._backend import GenerationRequest, check_request
from sdk._constraints import Constraint
from sdk._grammar_languages import quoted
from sdk._http.openai._chat_request import chat_body
from sdk._http.openai._flavours import check_request as check_flavour
from sdk._http.openai._responses_request import responses_body


class Weather(BaseModel):
    """Current weather."""

    city: str


WEATHER_TAG = Tag("<function=get_weather>", Weather, "</function>")
STRUCTURAL = StructuralTag([WEATHER_TAG], triggers=["<function="])
SQL = Grammar('root ::= "SELECT " col\ncol ::= "a" | "b"')
LARK = Grammar("start: NUM\nNUM: /[0-9]+/")


def request(constraint: Constraint | None = None, **kw: Any) -> GenerationRequest:
    return GenerationRequest(
        messages=({"role": "user", "content": "hi"},),
        schema={"type": "string"},
        constraint=constraint,
        **kw,
    )


# vLLM, docs/features/structured_outputs.md ("Structured Outputs"), on the fields removed in
# v0.12.0:
#   "guided_regex -> {"structured_outputs": {"regex": ...}}"
#   "guided_choice -> {"structured_outputs": {"choice": ...}}"
#   "guided_grammar -> {"structured_outputs": {"grammar": ...}}"
#   "structural_tag -> {"structured_outputs": {"structural_tag": ...}}"
# and the online example's grammar: "It works by using a context free EBNF grammar"
# (`root ::= select_statement ...`). The same document: "You can generate structured outputs
# using the OpenAI's Completions and Chat API ... which must be added as extra parameters".
@pytest.mark.parametrize(
    ("constraint", "expected"),
    [
        (Choice(["positive", "negative"]), {"choice": ["positive", "negative"]}),
        # \w spelled as ECMA-262 reads it (xgrammar's default may differ)
        (Regex(r"\w+@\w+\.com\n"), {"regex": r"[A-Za-z0-9_]+@[A-Za-z0-9_]+\.com\n"}),
        (SQL, {"grammar": SQL.text}),
        (LARK, {"grammar": LARK.text}),  # vLLM tells Lark from EBNF itself
    ],
)
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_vllm_reads_each_constraint_from_structured_outputs(
    constraint: Constraint, expected: dict[str, Any], api: str
) -> None:
    req = request(constraint)
    if api == "chat":
        body = chat_body(req, model="m", server="vllm")
        assert "response_format" not in body
    else:
        # vLLM's ResponsesRequest has `structured_outputs` too, and refuses it beside
        # text.format ("Cannot specify both structured_outputs and text.format").
        body = responses_body(req, model="m", server="vllm")
        assert "text" not in body
    assert body["structured_outputs"] == expected


def test_vllm_structural_tag_is_the_json_text_both_vllm_backends_read() -> None:
    # vLLM's StructuredOutputsParams: `structural_tag: str | None` (a JSON text). Its example
    # (examples/online_serving/structured_outputs) writes the structure as
    #   {"type": "structural_tag", "structures": [{"begin": "<function=get_weather>",
    #    "schema": {...}, "end": "</function>"}], "triggers": ["<function="]}
    # which both its xgrammar backend ("structures" in s_tag) and its guidance backend read.
    body = chat_body(request(STRUCTURAL), model="m", server="vllm")
    sent = body["structured_outputs"]["structural_tag"]
    assert isinstance(sent, str)
    assert json.loads(sent) == {
        "type": "structural_tag",
        "structures": [
            {
                "begin": "<function=get_weather>",
                "schema": Weather.model_json_schema(),
                "end": "</function>",
            }
        ],
        "triggers": ["<function="],
    }


def test_vllm_structural_tag_with_options_uses_xgrammars_triggered_tags() -> None:
    tag = StructuralTag([WEATHER_TAG], ["<function="], at_least_one=True, stop_after_first=True)
    sent = json.loads(
        chat_body(request(tag), model="m", server="vllm")["structured_outputs"]["structural_tag"]
    )
    assert sent == {
        "type": "structural_tag",
        "format": {
            "type": "triggered_tags",
            "triggers": ["<function="],
            "tags": [
                {
                    "type": "tag",
                    "begin": "<function=get_weather>",
                    "content": {"type": "json_schema", "json_schema": Weather.model_json_schema()},
                    "end": "</function>",
                }
            ],
            "at_least_one": True,
            "stop_after_first": True,
        },
    }


@pytest.mark.parametrize(
    ("constraint", "grammar"),
    [
        (Choice(['say "hi"', "a\\b\n"]), 'root ::= "say \\"hi\\"" | "a\\\\b\\n"\n'),
        # llguidance reads a Lark grammar behind %llguidance {}; its regex terminals end at "/".
        (Regex(r"[0-9]{3}/\d+"), "%llguidance {}\nstart: /[0-9]{3}\\/[0-9]+/\n"),
        (SQL, SQL.text),
        (LARK, "%llguidance {}\n" + LARK.text),
        (Grammar("%llguidance {}\nstart: /x/"), "%llguidance {}\nstart: /x/"),
    ],
)
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_llamacpp_reads_each_constraint_as_a_grammar(
    constraint: Constraint, grammar: str, api: str
) -> None:
    build = chat_body if api == "chat" else responses_body
    body = build(request(constraint), model=None, server="llamacpp")
    assert body["grammar"] == grammar
    assert "response_format" not in body and "text" not in body


def test_llamacpp_structural_tag_is_llguidances_tool_calling_pattern() -> None:
    # llguidance docs/syntax.md, "Tool calling": `f_foo_hd[lazy]: TEXT "<function"` then
    # `f_foo: f_foo_hd "=foo>" %json {...} "</function>"`, any text in between.
    grammar = chat_body(request(STRUCTURAL), model=None, server="llamacpp")["grammar"]
    schema = json.dumps(Weather.model_json_schema(), ensure_ascii=False)
    assert grammar.splitlines() == [
        "%llguidance {}",
        "start: (text_tag_0)* TEXT",
        "TEXT: /(.|\\n)*/",
        'trigger_0[lazy]: TEXT "<function="',
        f'tag_0: "<function=get_weather>" %json {schema} "</function>"',
        f'text_tag_0: trigger_0 "get_weather>" %json {schema} "</function>"',
    ]


@pytest.mark.parametrize(
    ("at_least_one", "stop_after_first", "start"),
    [
        (True, False, "start: (tag_0) (text_tag_0)* TEXT"),
        (False, True, "start: TEXT | text_tag_0"),
        (True, True, "start: tag_0"),
    ],
)
def test_llamacpp_structural_tag_options_keep_xgrammars_meaning(
    at_least_one: bool, stop_after_first: bool, start: str
) -> None:
    tag = StructuralTag(
        [WEATHER_TAG], ["<function="], at_least_one=at_least_one, stop_after_first=stop_after_first
    )
    assert (
        chat_body(request(tag), model=None, server="llamacpp")["grammar"].splitlines()[1] == start
    )


def test_literals_escape_what_gbnf_and_lark_would_misread() -> None:
    assert quoted('a"b\\c\n\t\r\x01é') == '"a\\"b\\\\c\\n\\t\\r\\u0001é"'


@pytest.mark.parametrize("constraint", [Choice(["a"]), Regex("a"), SQL, STRUCTURAL])
def test_an_unnamed_server_refuses_constraints_before_any_request(constraint: Constraint) -> None:
    with pytest.raises(UnsupportedConstraint, match=type(constraint).__name__) as info:
        check_flavour(request(constraint), server=None, api="chat")
    assert "mode='none'" in str(info.value)
    assert "OpenAI" not in str(info.value)


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_openai_takes_text_constraints_and_refuses_a_structural_tag(api: Any) -> None:
    for constraint in (Choice(["a"]), Regex("a"), SQL, LARK):
        check_flavour(request(constraint), server="openai", api=api)
    with pytest.raises(UnsupportedConstraint, match="OpenAI cannot be sent a StructuralTag"):
        check_flavour(request(STRUCTURAL), server="openai", api=api)


def test_mode_none_sends_no_constraint_and_is_allowed_everywhere() -> None:
    req = request(Regex("a+"), mode="none")
    check_flavour(req, server="openai", api="chat")
    assert "grammar" not in chat_body(req, model=None, server="llamacpp")
    assert "structured_outputs" not in chat_body(req, model=None, server="vllm")


def test_a_seed_on_openais_responses_api_is_refused() -> None:
    with pytest.raises(UnsupportedConstraint, match="takes no seed"):
        check_flavour(request(seed=1), server="openai", api="responses")
    check_flavour(request(seed=1), server="vllm", api="responses")
    assert responses_body(request(seed=1), model=None, server="vllm")["seed"] == 1


def test_a_backend_that_does_not_say_takes_json_schema_only() -> None:
    class Plain:
        pass

    check_request(Plain(), request())  # JSON Schema: fine
    with pytest.raises(UnsupportedConstraint, match="Plain does not say it can send Regex"):
        check_request(Plain(), request(Regex("a")))
    tools = (Tool("a", Weather), Tool("b", Weather))
    with pytest.raises(UnsupportedConstraint, match="several tools"):
        check_request(Plain(), request(tools=tools, mode="tool"))


TOOLS = (
    Tool("get_weather", Weather),
    Tool("search", {"type": "object", "properties": {"q": {"type": "string"}}}),
)


def test_several_tools_over_chat_completions() -> None:
    body = chat_body(request(tools=TOOLS, mode="tool"), model="m")
    assert body["tool_choice"] == "required"
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather.",
                "parameters": {**Weather.model_json_schema(), "additionalProperties": False},
                "strict": True,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "search",
                "parameters": {
                    "type": "object",
                    "properties": {"q": {"type": "string"}},
                    "additionalProperties": False,
                    "required": ["q"],
                },
                "strict": True,
            },
        },
    ]


def test_several_tools_over_the_responses_api_and_one_tool_forced_by_name() -> None:
    body = responses_body(request(tools=TOOLS, mode="tool"), model="m", server=None, strict=False)
    assert body["tool_choice"] == "required"
    assert body["tools"][1] == {
        "type": "function",
        "name": "search",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        "strict": False,
    }
    one = responses_body(request(tools=TOOLS[:1], mode="tool"), model="m", server=None)
    assert one["tool_choice"] == {"type": "function", "name": "get_weather"}
    chat = chat_body(request(tools=TOOLS[:1], mode="tool"), model="m")
    assert chat["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}


def test_responses_body_for_a_json_schema() -> None:
    req = GenerationRequest(
        messages=({"role": "user", "content": "hi"},),
        schema=Weather.model_json_schema(),
        schema_name="Weather",
        max_tokens=50,
        temperature=0.0,
    )
    body = responses_body(req, model="gpt-4o", server="openai")
    assert body == {
        "model": "gpt-4o",
        "input": [{"role": "user", "content": "hi"}],
        "stream": True,
        "max_output_tokens": 50,
        "temperature": 0.0,
        "text": {
            "format": {
                "type": "json_schema",
                "name": "Weather",
                "schema": {**Weather.model_json_schema(), "additionalProperties": False},
                "strict": True,
            }
        },
    }
    tool = responses_body(
        GenerationRequest(
            messages=(), schema=Weather.model_json_schema(), schema_name="w", mode="tool"
        ),
        model=None,
        server=None,
    )
    assert tool["tool_choice"] == {"type": "function", "name": "w"}
    assert tool["tools"][0]["name"] == "w" and tool["tools"][0]["strict"] is True
    assert responses_body(
        GenerationRequest(messages=(), schema={}, mode="json_object"), model=None, server=None
    )["text"] == {"format": {"type": "json_object"}}
    assert "text" not in responses_body(
        GenerationRequest(messages=(), schema={}, mode="none", extra={"json_schema": {}}),
        model=None,
        server=None,
    )
