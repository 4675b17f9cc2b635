"""What each server receives: every body the client builds (Chat Completions and Responses, each
``mode``, a constraint, each ``tool_choice``), per ``server=``, one test per row of the table in
``docs/servers.md``, each compared with the server's published request schema:

- OpenAI, and a server not named (SGLang, Ollama...: OpenAI's format is all they are sure to
  read): the whole body against the request types of the ``openai`` package
  (``CompletionCreateParamsStreaming``, ``ResponseCreateParamsStreaming``), unknown keys
  refused as OpenAI refuses them (HTTP 400 ``unknown_parameter``).
- vLLM: the same, once its own documented extension (``structured_outputs``) is set apart.
- llama.cpp: the same, once its own extensions are set apart (``grammar``, a ``schema`` beside
  ``json_object``; on ``/responses``, which it serves by turning the body into a chat request,
  the chat ``response_format`` it reads), each of them checked against what its server reads.
- SGLang: the same, once ``regex`` / ``ebnf`` and a ``structural_tag`` ``response_format`` are
  set apart; TGI: once its ``response_format`` (its ``GrammarType``, ``{"type": "json" |
  "regex", "value"}``) is checked against that type's shape and set apart.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from openai.types.chat.completion_create_params import (
    CompletionCreateParamsStreaming,
    ResponseFormat,
)
from openai.types.responses.response_create_params import ResponseCreateParamsStreaming
from pydantic import BaseModel

from sdk import Choice, Grammar, Regex, StructuralTag, Tag, Tool
from sdk._backend import GenerationRequest
from sdk._constraints import tool_choice_of
from sdk._grammar_languages import (
    choice_gbnf,
    choice_regex,
    grammar_text,
    legacy_structural_tag,
    regex_lark,
    structural_tag_lark,
)
from sdk._http.openai._chat_request import chat_body
from sdk._http.openai._responses_request import responses_body
from sdk._http.openai._strict import strict_schema
from tests.sdk.http.openai._openai_types import openai_errors


class Person(BaseModel):
    name: str
    age: int


class Search(BaseModel):
    """Search the web."""

    query: str


class Weather(BaseModel):
    city: str


PERSON = Person.model_json_schema()
STRICT = strict_schema(PERSON).schema
TOOLS = (Tool("get_weather", Weather), Tool("search", Search))
CHOICE = Choice(["yes", "no"])
REGEX = Regex(r"[0-9]{3}-[0-9]{4}")
LARK = Grammar("start: NUM\nNUM: /[0-9]+/")
GBNF = Grammar("root ::= [0-9]+")
TAGGED = StructuralTag([Tag("<w>", Weather, "</w>")], triggers=["<w>"])
CONSTRAINTS: dict[str, Any] = {
    "Choice": CHOICE,
    "Regex": REGEX,
    "Grammar": LARK,
    "StructuralTag": TAGGED,
}
SERVERS: tuple[str | None, ...] = (None, "openai", "vllm", "llamacpp", "sglang", "tgi")


def chat_tool(tool: Tool) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        function["description"] = tool.description
    function.update(parameters=strict_schema(tool.compiled.schema_dict()).schema, strict=True)
    return {"type": "function", "function": function}


def responses_tool(tool: Tool) -> dict[str, Any]:
    return {"type": "function", **chat_tool(tool)["function"]}


PERSON_TOOL = {
    "type": "function",
    "function": {"name": "Person", "parameters": STRICT, "strict": True},
}
CHAT_SCHEMA = {
    "type": "json_schema",
    "json_schema": {"name": "Person", "schema": STRICT, "strict": True},
}


def request(kind: str, server: str | None = None) -> GenerationRequest:
    """The request of one row's kind."""
    base: dict[str, Any] = {
        "messages": ({"role": "user", "content": "hi"},),
        "schema": PERSON,
        "schema_name": "Person",
        "max_tokens": 50,
    }
    if kind in ("json_schema", "json_object", "tool", "none"):
        return GenerationRequest(mode=kind, **base)  # type: ignore[arg-type]
    if kind == "Grammar" and server == "sglang":  # SGLang reads GBNF, not Lark
        return GenerationRequest(constraint=GBNF, **base)
    if kind in CONSTRAINTS:
        return GenerationRequest(constraint=CONSTRAINTS[kind], **base)
    tools, choice = (TOOLS[:1], None) if kind == "tools: one" else (TOOLS, None)
    if kind.startswith("tools: ") and kind != "tools: one":
        word = kind.removeprefix("tools: ")
        choice = {"type": "function", "function": {"name": "search"}} if word == "named" else word
    return GenerationRequest(
        mode="tool",
        tools=tools,
        tool_choice=None if choice is None else tool_choice_of(choice, tools),
        **base,
    )


def expected(api: str, kind: str, server: str | None) -> dict[str, Any]:
    """The fields a row's body carries beyond the conversation and the sampling: the table."""
    llama = server == "llamacpp"
    chat = api == "chat"
    tool = chat_tool if chat else responses_tool
    tgi = server == "tgi"
    if kind == "json_schema" and tgi and chat:  # TGI's own form: {"type": "json", "value"}
        return {"response_format": {"type": "json", "value": STRICT}}
    if kind == "json_object" and tgi and chat:
        return {"response_format": {"type": "json", "value": {"type": "object"}}}
    if kind == "json_schema":
        if chat or llama:  # llama.cpp's /responses reads chat's response_format, not text
            return {"response_format": CHAT_SCHEMA}
        fields = CHAT_SCHEMA["json_schema"]
        return {"text": {"format": {"type": "json_schema", **fields}}}
    if kind == "json_object":
        if llama:
            return {"response_format": {"type": "json_object", "schema": PERSON}}
        if chat:
            return {"response_format": {"type": "json_object"}}
        return {"text": {"format": {"type": "json_object"}}}
    if kind == "none":
        return {}
    if kind in CONSTRAINTS and server == "vllm":
        vllm = {
            "Choice": {"choice": ["yes", "no"]},
            "Regex": {"regex": REGEX.pattern},
            "Grammar": {"grammar": LARK.text},
            "StructuralTag": {"structural_tag": json.dumps(legacy_structural_tag(TAGGED))},
        }
        return {"structured_outputs": vllm[kind]}
    if kind in CONSTRAINTS and server == "openai":  # a forced custom tool, its input's grammar
        grammar = {
            "Choice": {"syntax": "regex", "definition": choice_regex(CHOICE)},
            "Regex": {"syntax": "regex", "definition": REGEX.pattern},
            "Grammar": {"syntax": "lark", "definition": LARK.text},
        }[kind]
        said = "Write the answer as this tool's input; it must follow the grammar."
        if chat:
            custom = {"name": "Person", "description": said}
            custom["format"] = {"type": "grammar", "grammar": grammar}  # type: ignore[assignment]
            return {
                "tools": [{"type": "custom", "custom": custom}],
                "tool_choice": {"type": "custom", "custom": {"name": "Person"}},
            }
        tool = {"type": "custom", "name": "Person", "description": said}
        tool["format"] = {"type": "grammar", **grammar}  # type: ignore[assignment]
        return {"tools": [tool], "tool_choice": {"type": "custom", "name": "Person"}}
    if kind in CONSTRAINTS and server == "sglang":
        sglang: dict[str, Any] = {
            "Choice": {"ebnf": choice_gbnf(CHOICE)},
            "Regex": {"regex": REGEX.pattern},
            "Grammar": {"ebnf": GBNF.text},
            "StructuralTag": {"response_format": legacy_structural_tag(TAGGED)},
        }
        return sglang[kind]
    if kind in CONSTRAINTS and tgi:
        pattern = choice_regex(CHOICE) if kind == "Choice" else REGEX.pattern
        return {"response_format": {"type": "regex", "value": pattern}}
    if kind in CONSTRAINTS:
        gbnf_or_lark = {
            "Choice": choice_gbnf(CHOICE),
            "Regex": regex_lark(REGEX),
            "Grammar": grammar_text(LARK),
            "StructuralTag": structural_tag_lark(TAGGED),
        }
        return {"grammar": gbnf_or_lark[kind]}
    if llama and chat and kind in ("tool", "tools: one", "tools: named"):
        # llama.cpp forces no tool call: the one call's arguments are asked for as the answer
        # (its grammar applies response_format), and read back as that call.
        spec = {
            "tool": PERSON_TOOL,
            "tools: one": chat_tool(TOOLS[0]),
            "tools: named": chat_tool(TOOLS[1]),
        }[kind]["function"]
        fields = {"name": spec["name"], "schema": spec["parameters"], "strict": spec["strict"]}
        return {"response_format": {"type": "json_schema", "json_schema": fields}}
    if kind == "tool":
        spec = PERSON_TOOL if chat else {"type": "function", **PERSON_TOOL["function"]}
        return {"tools": [spec], "tool_choice": named("Person", api, server)}
    if kind == "tools: one":
        return {"tools": [tool(TOOLS[0])], "tool_choice": named("get_weather", api, server)}
    if kind == "tools: named":
        offered = [TOOLS[1]] if llama else TOOLS  # llama.cpp: that tool alone, "required"
        return {"tools": [tool(t) for t in offered], "tool_choice": named("search", api, server)}
    choice = {"tools": "required", "tools: required": "required"}.get(kind)
    choice = choice or kind.removeprefix("tools: ")
    return {"tools": [tool(t) for t in TOOLS], "tool_choice": choice}


def named(name: str, api: str, server: str | None) -> Any:
    if server == "llamacpp":
        return "required"  # its server reads tool_choice as a string; an object is "auto"
    if api == "chat":
        return {"type": "function", "function": {"name": name}}
    return {"type": "function", "name": name}


def takes(server: str | None, kind: str, api: str) -> bool:
    """Whether ``server`` is sent a ``kind`` constraint on ``api`` (else it is refused)."""
    if server in ("vllm", "llamacpp"):
        return True
    if server == "openai":
        return kind != "StructuralTag"
    if server == "sglang":
        return api == "chat"
    return server == "tgi" and api == "chat" and kind in ("Choice", "Regex")


KINDS = (
    "json_schema",
    "json_object",
    "tool",
    "none",
    *CONSTRAINTS,
    "tools",
    "tools: one",
    "tools: auto",
    "tools: none",
    "tools: required",
    "tools: named",
)
ROWS = [
    pytest.param(api, kind, server, id=f"{api}-{kind.replace(': ', '-')}-{server}")
    for api in ("chat", "responses")
    for kind in KINDS
    for server in SERVERS
    if kind not in CONSTRAINTS or takes(server, kind, api)  # the others refuse them
]


# What each server reads beyond OpenAI's format, set apart before the rest is held to it:
# vLLM's structured outputs (docs/features/structured_outputs.md: "structured_outputs":
# {"choice"|"regex"|"grammar"|"structural_tag"|"json": ...}); llama.cpp's `grammar` and the
# `schema` beside `json_object` (tools/server/README.md: "response_format: ... Supports JSON
# schema constraints, e.g. {"type": "json_object", "schema": {...}}"), and on /responses the
# chat `response_format` (server-common.cpp, convert_responses_to_chatcmpl: the body becomes
# a chat request, `text` is not read).
# SGLang's ChatCompletionRequest (docs/advanced_features/structured_outputs: `extra_body=
# {"regex": ...}`, `{"ebnf": ...}`, and `response_format={"type": "structural_tag",
# "structures": [...], "triggers": [...]}`); TGI's ChatRequest.response_format is its
# GrammarType (router/src/lib.rs: `#[serde(tag = "type", content = "value")]`, variants
# "json" (alias "json_object") with a JSON Schema and "regex" with a string).
EXTENSIONS = {
    "vllm": {"structured_outputs"},
    "llamacpp": {"grammar"},
    "sglang": {"regex", "ebnf"},
}


def tgi_grammar_errors(form: Any) -> list[str]:
    """What TGI's GrammarType would refuse in ``form`` (empty: nothing)."""
    if not isinstance(form, dict) or set(form) != {"type", "value"}:
        return [f"not {{type, value}}: {form!r}"]
    if form["type"] in ("json", "json_object"):
        return [] if isinstance(form["value"], dict) else ["json: value is not a schema"]
    if form["type"] == "regex":
        return [] if isinstance(form["value"], str) else ["regex: value is not a string"]
    return [f"unknown variant {form['type']!r}"]


def set_apart(body: dict[str, Any], api: str, server: str | None) -> dict[str, Any]:
    """The body as OpenAI's format sees it, once ``server``'s own extensions are checked and
    taken out."""
    body = copy.deepcopy(body)
    for key in EXTENSIONS.get(server or "", set()):
        body.pop(key, None)
    if server == "llamacpp" and "response_format" in body:
        form = body["response_format"]
        if form["type"] == "json_object" and "schema" in form:
            assert isinstance(form.pop("schema"), dict)
        if api == "responses":
            assert openai_errors(body.pop("response_format"), ResponseFormat) == []
    if server == "sglang" and body.get("response_format", {}).get("type") == "structural_tag":
        form = body.pop("response_format")
        assert set(form) == {"type", "structures", "triggers"}
        assert all(set(t) == {"begin", "schema", "end"} for t in form["structures"])
    if server == "tgi" and api == "chat" and "response_format" in body:
        assert tgi_grammar_errors(body.pop("response_format")) == []
    return body


@pytest.mark.parametrize(("api", "kind", "server"), ROWS)
def test_each_server_receives_its_own_request_shape(
    api: str, kind: str, server: str | None
) -> None:
    req = request(kind, server)
    if api == "chat":
        body = chat_body(req, model="m", server=server)  # type: ignore[arg-type]
        common = {
            "model": "m",
            "messages": [{"role": "user", "content": "hi"}],
            "stream": True,
            "stream_options": {"include_usage": True},
            # OpenAI deprecated max_tokens (its reasoning models refuse it): the current name.
            ("max_completion_tokens" if server == "openai" else "max_tokens"): 50,
        }
        published: Any = CompletionCreateParamsStreaming
    else:
        body = responses_body(req, model="m", server=server)  # type: ignore[arg-type]
        common = {
            "model": "m",
            "input": [{"role": "user", "content": "hi"}],
            "stream": True,
            "max_output_tokens": 50,
        }
        published = ResponseCreateParamsStreaming
    assert body == {**common, **expected(api, kind, server)}
    assert openai_errors(set_apart(body, api, server), published) == []


def test_the_checker_refuses_what_openai_refuses() -> None:
    # The issue's case: OpenAI answers a schema beside json_object with HTTP 400
    # `Unknown parameter: 'response_format.schema'`; the checker must see it too, as it must
    # see each API's named tool_choice in the other's body.
    body = chat_body(request("json_object"), model="m", server="llamacpp")
    assert any("response_format" in e for e in openai_errors(body, CompletionCreateParamsStreaming))
    body = chat_body(request("tools: named"), model="m", server="openai")
    body["tool_choice"] = {"type": "function", "name": "search"}
    assert openai_errors(body, CompletionCreateParamsStreaming) != []
    body = responses_body(request("json_schema"), model="m", server="openai")
    body["response_format"] = CHAT_SCHEMA
    assert openai_errors(body, ResponseCreateParamsStreaming) == [
        "body.response_format: unknown parameter"
    ]
