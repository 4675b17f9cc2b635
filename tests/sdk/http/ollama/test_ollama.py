"""The Ollama backend: ``/api/chat`` bodies checked against the ``ollama`` package's own request
model (unknown keys refused), ``OLLAMA_HOST`` read as that package reads it, and the wire
(JSON lines, done reasons, tool calls, error lines, statuses, abort, early retry)."""

from __future__ import annotations

import collections.abc
import json
import re
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

import sdk
from sdk import Client, Retry
from sdk._backend import GenerationRequest
from sdk._constraints import Tool, tools_of
from sdk._errors import (
    NotFoundError,
    SchemaViolation,
    StreamUsageError,
    TransportError,
    TruncatedError,
    UnsupportedConstraint,
)
from sdk._http.ollama._backend import OllamaBackend, ollama_host
from sdk._http.ollama._decoder import OllamaDecoder
from sdk._http.ollama._messages import ollama_messages
from sdk._http.ollama._request import check_ollama_request, forced_call, ollama_body
from sdk._schema import compile_schema
from sdk._schema_prompt import system_text, with_schema
from tests.sdk._http_support import Body

ollama_types = pytest.importorskip("ollama._types", reason="the ollama package is a dev dependency")
from ollama._client import _parse_host  # noqa: E402

pytestmark = pytest.mark.anyio

URL = "http://ollama.test"
MESSAGES = [{"role": "user", "content": "Where?"}]


class City(BaseModel):
    name: str
    population: int


# ---------------------------------------------------------------- OLLAMA_HOST


HOSTS = re.findall(r">>> _parse_host\((.*?)\)\n\s*'(.*?)'", _parse_host.__doc__ or "")


def test_the_hosts_of_the_ollama_packages_own_examples() -> None:
    assert len(HOSTS) >= 30
    for given, expected in HOSTS:
        host = None if given == "None" else given.strip("'")
        assert ollama_host(host) == expected, given


def test_ollama_host_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "0.0.0.0:9999")
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    backend = OllamaBackend(model="qwen3")
    assert backend.url == "http://0.0.0.0:9999/api/chat"
    assert "Authorization" not in backend.headers
    monkeypatch.setenv("OLLAMA_API_KEY", "k")
    assert OllamaBackend().headers["Authorization"] == "Bearer k"


# ---------------------------------------------------------------- bodies


def model_errors(value: Any, model: type[BaseModel], where: str = "body") -> list[str]:
    """What is wrong with ``value`` as a ``model`` (its pydantic validation, and keys it does not
    have, at every level where a nested model is declared)."""
    if not isinstance(value, dict):
        return [f"{where}: not an object"]
    names = {f.alias or n: f for n, f in model.model_fields.items()}
    errors = [f"{where}.{k}: unknown parameter" for k in value if k not in names]
    try:
        model.model_validate(value)
    except Exception as exc:  # pydantic's ValidationError
        errors.append(f"{where}: {exc}")
    for key, item in value.items():
        field = names.get(key)
        nested = _model_of(field.annotation) if field is not None else None
        if nested is not None:
            model_type, keyed = nested
            if keyed and isinstance(item, dict):  # a map of names to models
                items = list(item.items())
            else:
                items = list(enumerate(item if isinstance(item, list) else [item]))
            for i, each in items:
                if isinstance(each, dict):
                    errors += model_errors(each, model_type, f"{where}.{key}[{i!r}]")
    return errors


def _model_of(annotation: Any) -> tuple[type[BaseModel], bool] | None:
    """The model a field holds (alone, in a list, or as a map's values: then ``True``)."""
    stack = [(annotation, False)]
    while stack:
        tp, keyed = stack.pop()
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return tp, keyed
        mapping = getattr(tp, "__origin__", None) in (dict, collections.abc.Mapping)
        stack.extend((arg, keyed or mapping) for arg in getattr(tp, "__args__", ()))
    return None


CHAT = (
    {"role": "developer", "content": "JSON only."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Which city? "},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "look", "arguments": '{"q": 1}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "Paris"},
)
SCHEMA = City.model_json_schema()


def request(**kw: Any) -> GenerationRequest:
    return GenerationRequest(**{"messages": CHAT, "schema": SCHEMA, **kw})


BODIES = {
    "json_schema": request(max_tokens=9, temperature=0.1, top_p=0.9, seed=3),
    "json_object": request(mode="json_object"),
    "none": request(mode="none"),
    "tools auto": request(
        mode="tool",
        tool_choice="auto",
        tools=tools_of(
            [Tool("look", {"type": "object", "properties": {"q": {"type": "integer"}}})]
        ),
    ),
    "extra": request(extra={"think": True, "keep_alive": "5m"}),
    "forced, the one schema": request(mode="tool"),
    "forced, one tool named": request(
        mode="tool",
        tool_choice={"type": "function", "function": {"name": "look"}},
        tools=tools_of([Tool("look", {"type": "object"}), Tool("other", {"type": "object"})]),
    ),
}


def as_the_sdk_holds_it(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with each message's images as the ``ollama`` package holds them (``Image``
    values, which it serializes to the base64 text sent)."""
    messages = [
        {**m, "images": [ollama_types.Image(value=i) for i in m["images"]]} if "images" in m else m
        for m in body["messages"]
    ]
    return {**body, "messages": messages}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_bodies_are_ollamas_request_model(name: str) -> None:
    body = ollama_body(BODIES[name], model="qwen3")
    held = as_the_sdk_holds_it(body)
    assert model_errors(held, ollama_types.ChatRequest) == []
    for i, message in enumerate(held["messages"]):
        assert model_errors(message, ollama_types.Message, f"messages[{i}]") == []
    # The messages the ollama package would send for these are the ones sent.
    sent = ollama_types.ChatRequest.model_validate(held).model_dump(
        exclude_none=True, by_alias=True
    )
    assert sent["messages"] == body["messages"]


def test_the_model_check_refuses_what_ollama_does_not_read() -> None:
    body = as_the_sdk_holds_it(ollama_body(request(), model="qwen3"))
    assert model_errors({**body, "response_format": {}}, ollama_types.ChatRequest) == [
        "body.response_format: unknown parameter"
    ]
    assert model_errors({"role": "user", "name": "x"}, ollama_types.Message)


def test_the_body() -> None:
    body = ollama_body(BODIES["json_schema"], model="qwen3")
    assert body["format"] == SCHEMA and body["stream"] is True
    assert body["options"] == {"num_predict": 9, "temperature": 0.1, "top_p": 0.9, "seed": 3}
    assert body["messages"] == [
        {"role": "system", "content": "JSON only."},
        {"role": "user", "content": "Which city? ", "images": ["iVBORw0KGgo="]},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "look", "arguments": {"q": 1}}}],
        },
        {"role": "tool", "content": "Paris", "tool_name": "look"},
    ]
    assert ollama_body(BODIES["json_object"], model="m")["format"] == "json"
    assert "format" not in ollama_body(BODIES["none"], model="m")
    assert ollama_body(BODIES["tools auto"], model="m")["tools"][0]["function"]["name"] == "look"


@pytest.mark.parametrize(
    ("messages", "said"),
    [
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png"}}],
                }
            ],
            "base64 data",
        ),
        (
            [{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}],
            "text and images",
        ),
        ([{"role": "user", "name": "bob", "content": "x"}], "'name'"),
        ([{"role": "tool", "tool_call_id": "nope", "content": "x"}], "earlier assistant turn"),
        ([{"role": "critic", "content": "x"}], "role 'critic'"),
    ],
)
def test_what_has_no_equivalent_is_refused(messages: list[dict[str, Any]], said: str) -> None:
    with pytest.raises(StreamUsageError, match=said):
        ollama_messages(messages)


# ---------------------------------------------------------------- the wire


def line(content: str = "", **fields: Any) -> bytes:
    out: dict[str, Any] = {"model": "qwen3", "created_at": "2026-01-01T00:00:00Z", "done": False}
    out["message"] = {"role": "assistant", "content": content, **fields.pop("message", {})}
    out.update(fields)
    return (json.dumps(out) + "\n").encode()


def done(reason: str = "stop") -> bytes:
    return line(done=True, done_reason=reason, prompt_eval_count=11, eval_count=6)


CITY = ['{"name": "Par', 'is", "population": 2', "100000}"]


class Server:
    def __init__(self, *answers: list[bytes] | httpx.Response) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []
        self.bodies: list[Body] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, httpx.Response):
            return answer
        body = Body(answer)
        self.bodies.append(body)
        return httpx.Response(200, headers={"content-type": "application/x-ndjson"}, stream=body)

    def client(self) -> Client:
        http = httpx.AsyncClient(transport=httpx.MockTransport(self), base_url=URL)
        return Client(provider="ollama", model="qwen3", http_client=http)


async def result(server: Server, **kw: Any) -> Any:
    async with server.client() as client, client.stream(messages=MESSAGES, schema=City, **kw) as s:
        return await s.result()


async def test_a_stream_and_its_usage() -> None:
    server = Server([*(line(p) for p in CITY), done()])
    async with server.client() as client, client.stream(messages=MESSAGES, schema=City) as s:
        assert await s.result() == City(name="Paris", population=2100000)
    assert str(server.requests[0].url) == URL + "/api/chat"
    assert json.loads(server.requests[0].content)["format"] == SCHEMA
    assert (s.usage.prompt_tokens, s.usage.completion_tokens) == (11, 6)


async def test_length_is_truncation_and_thinking_is_reasoning() -> None:
    server = Server([line(message={"thinking": "Hm"}), line(CITY[0]), done("length")])
    with pytest.raises(TruncatedError) as info:
        await result(server)
    assert info.value.reason == "length"
    server = Server([line(message={"thinking": "Hm"}), *(line(p) for p in CITY), done()])
    async with (
        server.client() as client,
        client.stream(messages=MESSAGES, schema=City, reasoning=True) as s,
    ):
        thoughts = [ev.text async for ev in s if isinstance(ev, sdk.ReasoningDelta)]
    assert thoughts == ["Hm"]


async def test_a_tool_call_comes_whole() -> None:
    call = {"function": {"name": "City", "arguments": {"name": "Paris", "population": 2100000}}}
    server = Server([line(message={"tool_calls": [call]}), done()])
    async with (
        server.client() as client,
        client.stream(messages=MESSAGES, tools=[Tool("City", City)], tool_choice="auto") as s,
    ):
        paths = [ev.path async for ev in s if isinstance(ev, sdk.FieldEvent)]
        assert await s.result() == City(name="Paris", population=2100000)
    assert paths == [("name",), ("population",), ()]
    assert json.loads(server.requests[0].content)["tools"][0]["function"]["name"] == "City"


async def test_what_ollama_cannot_do_is_refused_before_sending() -> None:
    server = Server()
    with pytest.raises(UnsupportedConstraint, match="Regex"):
        async with (
            server.client() as client,
            client.stream(messages=MESSAGES, schema=sdk.Regex("[a-z]+")) as s,
        ):
            assert await s.result() == City(name="Paris", population=2100000)
    assert server.requests == []


async def test_errors() -> None:
    server = Server(httpx.Response(404, json={"error": "model 'qwen3' not found"}))
    with pytest.raises(NotFoundError, match="model 'qwen3' not found"):
        await result(server)
    server = Server(
        [line(CITY[0]), b'{"error": "an error was encountered while running the model"}\n']
    )
    with pytest.raises(TransportError, match="while running the model") as info:
        await result(server, max_retries=0)
    assert info.value.retryable


async def test_a_violation_closes_the_connection_and_the_retry_carries_the_feedback() -> None:
    bad = [line('{"name": 3'), line(', "population": 1}'), *(line(" ") for _ in range(5)), done()]
    server = Server(bad, [*(line(p) for p in CITY), done()])
    async with (
        server.client() as client,
        client.stream(messages=MESSAGES, schema=City, retry=Retry(max_attempts=2)) as s,
    ):
        assert await s.result() == City(name="Paris", population=2100000)
    assert server.bodies[0].closed and server.bodies[0].pulled < len(bad)
    assert isinstance(s.attempts[0].error, SchemaViolation)
    turns = json.loads(server.requests[1].content)["messages"]
    # Ollama's format is a grammar: the schema is shown in a system message, once.
    assert [t["role"] for t in turns] == ["system", "user", "assistant", "user"]
    assert turns[0]["content"] == system_text(compile_schema(City).json_schema)
    assert turns[2]["content"] == '{"name": 3'


def test_named_parameters_in_ollamas_words() -> None:
    given = {
        "max_completion_tokens": 50,
        "stop": "END",
        "frequency_penalty": 0.5,
        "presence_penalty": 0.1,
        "logprobs": True,
        "top_logprobs": 2,
        "reasoning_effort": "none",
        "stream_options": {"include_usage": True},
    }
    body = ollama_body(request(parameters=given), model="qwen3")
    assert model_errors(as_the_sdk_holds_it(body), ollama_types.ChatRequest) == []
    assert body["options"] == {
        "num_predict": 50,
        "stop": ["END"],
        "frequency_penalty": 0.5,
        "presence_penalty": 0.1,
    }
    assert (body["logprobs"], body["top_logprobs"], body["think"]) == (True, 2, False)
    assert ollama_types.Options.model_validate(body["options"])


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"user": "u"}, "user= has no equivalent"),
        ({"parallel_tool_calls": False}, "parallel_tool_calls= has no equivalent"),
        ({"reasoning_effort": "xhigh"}, "reasoning_effort='xhigh'"),
    ],
)
def test_named_parameters_it_has_no_equivalent_for_are_refused(
    given: dict[str, Any], said: str
) -> None:
    with pytest.raises(UnsupportedConstraint, match=said):
        check_ollama_request(request(parameters=given))


# ---------------------------------------------------------------- a forced call, as the answer


class Country(BaseModel):
    code: str


LOOK = Tool("look", {"type": "object", "properties": {"q": {"type": "integer"}}, "required": ["q"]})
TWO = tools_of([LOOK, Tool("City", City)])
NAMED_CITY = {"type": "function", "function": {"name": "City"}}


@pytest.mark.parametrize(
    ("given", "name", "schema"),
    [
        ({"mode": "tool"}, "response", SCHEMA),  # the one schema, no name given
        ({"mode": "tool", "schema_name": "City"}, "City", SCHEMA),
        ({"mode": "tool", "tools": tools_of([LOOK])}, "look", LOOK.schema),
        ({"mode": "tool", "tools": tools_of([LOOK]), "tool_choice": "required"}, "look", None),
        ({"mode": "tool", "tools": TWO, "tool_choice": NAMED_CITY}, "City", SCHEMA),
    ],
)
def test_a_forced_call_is_sent_as_format_and_no_tools(
    given: dict[str, Any], name: str, schema: dict[str, Any] | None
) -> None:
    forced = request(**given)
    check_ollama_request(forced)
    assert forced_call(forced) == name
    body = ollama_body(forced, model="qwen3")
    assert "tools" not in body and "tool_choice" not in body
    assert body["format"] == (schema or LOOK.schema)
    # The messages are those of any other request.
    assert body["messages"] == ollama_body(request(), model="qwen3")["messages"]
    assert model_errors(as_the_sdk_holds_it(body), ollama_types.ChatRequest) == []


@pytest.mark.parametrize(
    "given",
    [
        {"mode": "json_schema"},
        {"mode": "tool", "tools": TWO, "tool_choice": "auto"},
        {"mode": "tool", "tool_choice": "auto"},
        {"mode": "tool", "tools": tools_of([LOOK]), "tool_choice": "none"},
    ],
)
def test_what_forces_no_call_is_no_forced_call(given: dict[str, Any]) -> None:
    assert forced_call(request(**given)) is None


@pytest.mark.parametrize("choice", [None, "required"])
def test_a_forced_choice_among_several_tools_is_refused(choice: Any) -> None:
    several = request(mode="tool", tools=TWO, tool_choice=choice)
    assert forced_call(several) is None
    with pytest.raises(UnsupportedConstraint, match="one of several tools") as info:
        check_ollama_request(several)
    said = str(info.value)
    assert "'look', 'City'" in said and "tool_choice='auto'" in said and "'name'" in said


def forced_lines(*pieces: str, reason: str = "stop") -> list[bytes]:
    """Ollama's answer to a request with ``format``: the arguments as content, then done."""
    return [*(line(p) for p in pieces), done(reason)]


def test_the_lines_are_ollamas_and_read_as_one_call_of_the_tool() -> None:
    pieces = ["{", '"name": "Par', "is", '",', " ", '"population": 2100000', "\n", "}"]
    lines = forced_lines(*pieces)
    for each in lines:  # the shape Ollama sends (its own package's response model)
        assert model_errors(json.loads(each), ollama_types.ChatResponse) == []
    decoder = OllamaDecoder(call="City")
    deltas = [d for each in lines for d in decoder.decode("", each.decode().strip())]
    texts = [d for d in deltas if d.text]
    assert "".join(d.text for d in texts) == "".join(pieces)  # whitespace kept
    assert [(d.tool_call, d.tool_name, d.tool_call_id) for d in texts] == [
        (0, "City", None),
        *[(0, None, None)] * (len(pieces) - 1),
    ]
    last = deltas[-1]
    assert last.finish_reason == "tool_calls"
    assert last.usage is not None and (last.usage.prompt_tokens, last.usage.completion_tokens) == (
        11,
        6,
    )
    assert decoder.done and decoder.end() == []


def test_a_forced_call_cut_off_by_the_limit_ends_with_length() -> None:
    decoder = OllamaDecoder(call="City")
    deltas = [
        d
        for each in forced_lines('{"name"', reason="length")
        for d in decoder.decode("", each.decode().strip())
    ]
    assert deltas[-1].finish_reason == "length"


async def test_a_forced_call_through_the_client() -> None:
    server = Server(forced_lines(*CITY))
    seen: list[tuple[tuple[str | int, ...], Any]] = []
    async with (
        server.client() as client,
        client.stream(
            messages=MESSAGES,
            schema=City,
            mode="tool",
            on_field=lambda ev: seen.append((ev.path, ev.value)),
        ) as s,
    ):
        events = [ev async for ev in s.fields()]
        assert await s.result() == City(name="Paris", population=2100000)
    assert [ev.path for ev in events] == [("name",), ("population",), ()]
    assert {(ev.tool_call, ev.tool_name) for ev in events} == {(0, "City")}
    assert seen == [
        (("name",), "Paris"),
        (("population",), 2100000),
        ((), {"name": "Paris", "population": 2100000}),
    ]
    assert s.called_tools is True
    info = s.attempts[-1]
    assert info.finish_reason == "tool_calls" and (
        info.usage.prompt_tokens,
        info.usage.completion_tokens,
    ) == (11, 6)
    assert [(c.index, c.name, c.arguments) for c in info.tool_calls] == [(0, "City", "".join(CITY))]
    body = json.loads(server.requests[0].content)
    assert "tools" not in body and body["format"] == SCHEMA
    assert body["messages"] == list(with_schema(MESSAGES, compile_schema(City).json_schema))


async def test_one_named_tool_of_several_is_a_typed_call() -> None:
    server = Server(forced_lines(*CITY))
    async with (
        server.client() as client,
        client.stream(
            messages=MESSAGES,
            tools=[Tool("Country", Country), Tool("City", City)],
            tool_choice=NAMED_CITY,
        ) as s,
    ):
        assert await s.results() == [City(name="Paris", population=2100000)]
    assert s.assistant_message()["tool_calls"] == [
        {
            "id": "call_0",
            "type": "function",
            "function": {"name": "City", "arguments": "".join(CITY)},
        }
    ]
    body = json.loads(server.requests[0].content)
    assert "tools" not in body and body["format"] == City.model_json_schema()
    # The next turn of a tool loop is one Ollama takes: the call, then its answer by name.
    turns = ollama_messages(
        [
            *MESSAGES,
            s.assistant_message(),
            {"role": "tool", "tool_call_id": "call_0", "content": "ok"},
        ]
    )
    assert turns[-2]["tool_calls"] == [
        {"function": {"name": "City", "arguments": {"name": "Paris", "population": 2100000}}}
    ]
    assert turns[-1] == {"role": "tool", "content": "ok", "tool_name": "City"}
    for i, turn in enumerate(turns):
        assert model_errors(turn, ollama_types.Message, f"messages[{i}]") == []


async def test_a_forced_call_cut_off_is_truncation() -> None:
    server = Server(forced_lines(CITY[0], reason="length"))
    with pytest.raises(TruncatedError) as info:
        await result(server, mode="tool", max_retries=0)
    assert info.value.reason == "length"


async def test_several_tools_forced_are_refused_before_sending() -> None:
    server = Server()
    async with server.client() as client:
        for choice in (None, "required"):
            with pytest.raises(UnsupportedConstraint, match="one of several tools"):
                async with client.stream(
                    messages=MESSAGES,
                    tools=[Tool("Country", Country), Tool("City", City)],
                    tool_choice=choice,
                ) as s:
                    await s.result()
    assert server.requests == []


async def test_a_violation_in_a_forced_call_is_retried_with_feedback_ollama_takes() -> None:
    bad = [line('{"name": 3'), line(', "population": 1}'), *(line(" ") for _ in range(5)), done()]
    server = Server(bad, forced_lines(*CITY))
    async with (
        server.client() as client,
        client.stream(
            messages=MESSAGES, schema=City, mode="tool", retry=Retry(max_attempts=2)
        ) as s,
    ):
        assert await s.result() == City(name="Paris", population=2100000)
    assert server.bodies[0].closed and server.bodies[0].pulled < len(bad)
    error = s.attempts[0].error
    assert isinstance(error, SchemaViolation) and error.tool_call == 0
    assert [(c.name, c.arguments) for c in s.attempts[0].tool_calls] == [("City", '{"name": 3')]
    second = json.loads(server.requests[1].content)
    assert "tools" not in second and second["format"] == SCHEMA
    turns = second["messages"]
    assert [t["role"] for t in turns] == ["system", "user", "assistant", "user"]
    assert turns[2]["content"] == '{"name": 3'
    assert "/name" in turns[3]["content"]
    held = as_the_sdk_holds_it(second)
    assert model_errors(held, ollama_types.ChatRequest) == []
    for i, turn in enumerate(turns):
        assert model_errors(turn, ollama_types.Message, f"messages[{i}]") == []
