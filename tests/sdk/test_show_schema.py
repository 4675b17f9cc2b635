"""``show_schema`` (issue 38, item 7): the model is shown the schema where its server does not
show it, on every backend, with one text (``sdk._schema_prompt``) that the command line sends
too; the caller's system message is kept, the schema after it.

Each wire test sends one request through an httpx mock transport and reads the body the
provider got (the mock answers 400, so nothing else happens); the OpenAI-compatible one also
streams a whole answer and reads the retry's body.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import httpx
import pytest
from pydantic import BaseModel, Field

from sdk import Choice, Client, Retry, SyncClient, Tool
from sdk._backend import GenerationRequest, Message, server_shows_schema
from sdk._errors import TransportError
from sdk._local import LocalBackend
from sdk._local._prompt import prompt_ids
from sdk._schema import compile_schema
from sdk._schema_prompt import DEFAULT_SYSTEM, schema_instruction, system_text, with_schema

pytestmark = pytest.mark.anyio


class City(BaseModel):
    """A city of the world."""

    name: str = Field(description="the city's name in English")
    population: int = Field(description="people living there, a whole number")


SCHEMA = compile_schema(City).json_schema
USER: Message = {"role": "user", "content": "A city?"}
SYSTEM = {"role": "system", "content": system_text(SCHEMA)}


class Wire:
    """A mock transport that records each body and answers 400 (or ``answer(body)``)."""

    def __init__(self, answer: Callable[[int], httpx.Response] | None = None) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.answer = answer

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.content))
        if self.answer is not None:
            return self.answer(len(self.bodies))
        return httpx.Response(400, json={"error": {"message": "recorded"}})

    def http(self, base_url: str = "") -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self), base_url=base_url)


def _client(kind: str, wire: Wire) -> Client:
    """A client of each backend under test, over ``wire``."""
    if kind == "openai":  # OpenAI's own URL (the default)
        return Client(api_key="sk", model="gpt-4o", http_client=wire.http(), max_retries=0)
    if kind == "openai-responses":
        return Client(
            api_key="sk", model="gpt-4o", http_client=wire.http(), api="responses", max_retries=0
        )
    if kind == "openai-said":  # server="openai" at another URL (a proxy)
        return Client(
            base_url="http://proxy.test/v1", model="m", server="openai", http_client=wire.http()
        )
    if kind == "azure":
        return Client(
            api_key="k",
            azure_endpoint="https://me.openai.azure.com",
            api_version="2024-10-21",
            model="gpt-4o",
            http_client=wire.http(),
            max_retries=0,
        )
    if kind in ("vllm", "llamacpp"):
        return Client(
            base_url="http://gpu.test/v1",
            model="m",
            server=kind,  # type: ignore[arg-type]
            http_client=wire.http(),
            max_retries=0,
        )
    if kind == "compatible":  # a server that does not say which it is
        return Client(base_url="http://127.0.0.1:8080/v1", http_client=wire.http(), max_retries=0)
    if kind == "anthropic":
        return Client(
            provider="anthropic",
            api_key="k",
            model="claude-test",
            http_client=wire.http(),
            max_retries=0,
        )
    if kind == "gemini":
        return Client(
            provider="gemini", api_key="k", model="gemini-x", http_client=wire.http(), max_retries=0
        )
    if kind == "ollama":
        return Client(provider="ollama", model="m", http_client=wire.http(), max_retries=0)
    raise AssertionError(kind)


async def _sent(kind: str, messages: list[Message], **options: Any) -> dict[str, Any]:
    wire = Wire()
    async with _client(kind, wire) as client:
        with pytest.raises(TransportError):
            async with client.stream(messages=messages, schema=City, **options) as s:
                await s.result()
    [body] = wire.bodies
    return body


def _text(body: Any) -> str:
    """Every string of ``body`` (decoded), one after another."""
    if isinstance(body, str):
        return body + "\0"
    if isinstance(body, dict):
        return "".join(_text(v) for v in body.values())
    if isinstance(body, list):
        return "".join(_text(v) for v in body)
    return ""


INSTRUCTION = schema_instruction(SCHEMA)


# -- which servers are shown the schema by default ---------------------------------------------


@pytest.mark.parametrize(
    ("kind", "mode", "shown"),
    [
        # OpenAI's structured outputs put the schema in the model's context; so does a tool.
        ("openai", "json_schema", False),
        ("openai-responses", "json_schema", False),
        ("openai-said", "json_schema", False),
        ("azure", "json_schema", False),
        ("openai", "tool", False),
        # JSON mode and no constraint send no schema, on OpenAI too.
        ("openai", "json_object", True),
        ("openai", "none", True),
        # Every other OpenAI-compatible server reads response_format as a grammar alone.
        ("vllm", "json_schema", True),
        ("llamacpp", "json_schema", True),
        ("compatible", "json_schema", True),
        ("compatible", "json_object", True),
        ("vllm", "tool", False),  # a tool definition, written into the prompt by the template
        ("llamacpp", "tool", True),  # asked as response_format: no tool definition is sent
        # Anthropic and Gemini show their schema modes and tools; Ollama's format is a grammar.
        ("anthropic", "json_schema", False),
        ("anthropic", "tool", False),
        ("anthropic", "none", True),
        ("gemini", "json_schema", False),
        ("gemini", "tool", False),
        ("gemini", "json_object", True),
        ("ollama", "json_schema", True),
        ("ollama", "tool", True),
    ],
)
async def test_the_schema_is_shown_where_the_server_does_not_show_it(
    kind: str, mode: str, shown: bool
) -> None:
    body = await _sent(kind, [USER], mode=mode)
    text = _text(body)
    assert (INSTRUCTION in text) is shown
    assert text.count("Reply with one JSON document") == (1 if shown else 0)
    if shown:  # no system message of the caller's: one of its own, the command line's text
        assert system_text(SCHEMA) + "\0" in text
        assert system_text(SCHEMA).startswith(DEFAULT_SYSTEM)


async def test_the_wire_body_of_a_compatible_server() -> None:
    body = await _sent("vllm", [USER])
    assert body["messages"] == [SYSTEM, USER]
    assert body["response_format"]["json_schema"]["schema"]["properties"]["name"] == {
        "description": "the city's name in English",
        "title": "Name",
        "type": "string",
    }
    # Descriptions reach the model in the text too, compact.
    assert '"description":"the city\'s name in English"' in SYSTEM["content"]
    assert ": " not in SYSTEM["content"].split("\n", 1)[1]


async def test_true_and_false_force_it() -> None:
    assert (await _sent("openai", [USER], show_schema=True))["messages"] == [SYSTEM, USER]
    assert (await _sent("vllm", [USER], show_schema=False))["messages"] == [USER]
    assert (await _sent("ollama", [USER], show_schema=False))["messages"] == [USER]


# -- the caller's system message is kept --------------------------------------------------------


@pytest.mark.parametrize("role", ["system", "developer"])
async def test_the_callers_system_message_is_kept_and_the_schema_follows_it(role: str) -> None:
    mine = {"role": role, "content": "Answer in French."}
    body = await _sent("vllm", [mine, USER])
    assert body["messages"] == [
        {"role": role, "content": f"Answer in French.\n\n{INSTRUCTION}"},
        USER,
    ]


async def test_a_system_message_of_content_parts_gets_one_more_part() -> None:
    mine = {"role": "system", "content": [{"type": "text", "text": "Answer in French."}]}
    body = await _sent("vllm", [mine, USER])
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "Answer in French."},
        {"type": "text", "text": INSTRUCTION},
    ]
    assert body["messages"][1:] == [USER]


async def test_a_system_message_later_in_the_conversation_is_not_the_first() -> None:
    late = {"role": "system", "content": "late"}
    body = await _sent("compatible", [USER, late])
    assert body["messages"] == [SYSTEM, USER, late]


async def test_ollama_and_anthropic_carry_it_their_way() -> None:
    mine = {"role": "system", "content": "Be brief."}
    ollama = await _sent("ollama", [mine, USER])
    assert ollama["messages"][0] == {"role": "system", "content": system_text(SCHEMA, "Be brief.")}
    claude = await _sent("anthropic", [mine, USER], mode="none")
    assert _text(claude).count(INSTRUCTION[:40]) == 1
    assert "Be brief.\n\nReply with one JSON document" in _text(claude)


def test_the_callers_messages_are_not_changed() -> None:
    mine: dict[str, Any] = {"role": "system", "content": "Be brief."}
    messages = [mine, USER]
    shown = with_schema(messages, SCHEMA)
    assert mine == {"role": "system", "content": "Be brief."} and messages == [mine, USER]
    assert shown[0]["content"] == system_text(SCHEMA, "Be brief.") and shown[1] is USER


# -- retries, tokens, other entry points --------------------------------------------------------


def _chunks(*pieces: str, prompt_tokens: int) -> httpx.Response:
    lines = [
        {"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in pieces
    ]
    lines.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    lines.append(
        {
            "choices": [],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 5, "total_tokens": 0},
        }
    )
    data = "".join(f"data: {json.dumps(line)}\n\n" for line in lines) + "data: [DONE]\n\n"
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, text=data)


async def test_a_retry_keeps_the_schema_once_and_the_feedback_after_it() -> None:
    answers = iter(
        [
            _chunks('{"name": "Oslo", "population": "many"}', prompt_tokens=120),
            _chunks('{"name": "Oslo", "population": 700000}', prompt_tokens=160),
        ]
    )
    wire = Wire(lambda n: next(answers))
    async with _client("vllm", wire) as client:
        async with client.stream(
            messages=[USER], schema=City, retry=Retry(max_attempts=2)
        ) as stream:
            assert await stream.result() == City(name="Oslo", population=700000)
    first, second = (body["messages"] for body in wire.bodies)
    assert first == [SYSTEM, USER]
    assert second[:2] == [SYSTEM, USER] and [m["role"] for m in second[2:]] == [
        "assistant",
        "user",
    ]
    assert sum(INSTRUCTION in str(m["content"]) for m in second) == 1
    # The server's count is the prompt's, the schema's text included; the aborted attempt's is
    # the estimate of the body it was sent.
    assert stream.attempts[0].usage.estimated
    assert stream.attempts[1].usage.prompt_tokens == 160


async def test_tools_and_text_constraints() -> None:
    wire = Wire()
    async with _client("vllm", wire) as client:
        with pytest.raises(TransportError):
            async with client.stream(messages=[USER], tools=[Tool("city", City)]) as s:
                await s.result()
        with pytest.raises(TransportError):
            async with client.stream(messages=[USER], schema=Choice(["a", "b"])) as s:
                await s.result()
        assert [body["messages"] for body in wire.bodies] == [[USER], [USER]]
        for schema, tools in ((None, [Tool("city", City)]), (Choice(["a", "b"]), None)):
            with pytest.raises(ValueError, match="show_schema=True shows a JSON Schema"):
                client.stream(messages=[USER], schema=schema, tools=tools, show_schema=True)


async def test_with_options_and_batch() -> None:
    wire = Wire()
    async with _client("vllm", wire) as client:
        quiet = client.with_options(show_schema=False)
        with pytest.raises(TransportError):
            async with quiet.stream(messages=[USER], schema=City) as s:
                await s.result()
        with pytest.raises(TransportError):  # the call's own wins
            async with quiet.stream(messages=[USER], schema=City, show_schema=True) as s:
                await s.result()
        async with client.batch(
            [{"id": 1, "prompt": "A city?"}], schema=City, system="Be brief."
        ) as results:
            [done] = [r async for r in results]
        assert isinstance(done.error, TransportError)
    assert [body["messages"] for body in wire.bodies] == [
        [USER],
        [SYSTEM, USER],
        [{"role": "system", "content": system_text(SCHEMA, "Be brief.")}, USER],
    ]


def test_the_blocking_client_takes_it_too() -> None:
    wire = Wire()
    with SyncClient(
        base_url="http://gpu.test/v1", server="vllm", http_client=wire.http(), max_retries=0
    ) as client:
        for show in (None, False):
            with (
                pytest.raises(TransportError),
                client.stream(messages=[USER], schema=City, show_schema=show) as s,
            ):
                s.result()
    assert [body["messages"] for body in wire.bodies] == [[SYSTEM, USER], [USER]]


@pytest.mark.parametrize("value", ["yes", 1])
def test_a_value_that_is_not_a_bool_is_refused(value: object) -> None:
    client = Client(base_url="http://gpu.test/v1")
    with pytest.raises(TypeError, match="show_schema must be True or False"):
        client.stream(messages=[USER], schema=City, show_schema=value)  # type: ignore[arg-type]


def test_a_backend_that_does_not_say_is_left_as_it_is() -> None:
    request = GenerationRequest(messages=(USER,), schema=SCHEMA)
    assert server_shows_schema(object(), request) is True
    assert server_shows_schema(LocalBackend(), request) is False


# -- the local engine ----------------------------------------------------------------------------


class Recording(LocalBackend):
    """The local engine's decision, with the requests it is handed recorded (no model)."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[GenerationRequest] = []

    def generate(self, request: GenerationRequest) -> Any:
        self.requests.append(request)
        raise TransportError("recorded")


class ChatML:
    """A tokenizer as the engine reads one: ChatML, one id per character."""

    added_tokens_decoder: dict[int, str] = {0: "<|im_start|>", 1: "<|im_end|>"}  # noqa: RUF012
    chat_template = "chatml"

    def apply_chat_template(
        self, messages: list[dict[str, Any]], *, tokenize: bool, add_generation_prompt: bool
    ) -> str:
        turns = [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
        return "".join(turns) + "<|im_start|>assistant\n"

    def __call__(self, text: str, add_special_tokens: bool = False, **_: Any) -> dict[str, Any]:
        return {"input_ids": [ord(c) for c in text]}

    def decode(self, ids: list[int]) -> str:
        return "".join(map(chr, ids))


def _local_prompt(**options: Any) -> str:
    backend = Recording()

    async def run() -> None:
        async with Client.from_backend(backend, max_retries=0) as client:
            with pytest.raises(TransportError):
                async with client.stream(messages=[USER], schema=City, **options) as s:
                    await s.result()

    anyio.run(run)
    [request] = backend.requests
    tokenizer = ChatML()
    return tokenizer.decode(prompt_ids(tokenizer, request.messages, {}))


def test_the_local_prompt_shows_the_schema_by_default() -> None:
    prompt = _local_prompt()
    assert prompt == (
        f"<|im_start|>system\n{system_text(SCHEMA)}<|im_end|>\n"
        "<|im_start|>user\nA city?<|im_end|>\n<|im_start|>assistant\n"
    )
    assert "people living there, a whole number" in prompt
    assert _local_prompt(show_schema=False) == (
        "<|im_start|>user\nA city?<|im_end|>\n<|im_start|>assistant\n"
    )


@pytest.fixture(scope="module")
def smollm() -> Iterator[LocalBackend]:
    pytest.importorskip("xllamacpp")
    backend = LocalBackend(threads=1, runtime="llama.cpp")
    backend.load()
    yield backend


@pytest.mark.slow
@pytest.mark.local
def test_the_local_engines_prompt_tokens_count_the_schema(smollm: LocalBackend) -> None:
    """On the real model: the prompt the engine decodes from, and its count, hold the text."""
    engine = smollm.load()
    counts = {}
    with SyncClient.from_backend(smollm) as client:
        for show in (False, True, None):
            with client.stream(
                messages=[USER], schema=City, max_tokens=40, temperature=0, show_schema=show
            ) as s:
                s.result()
            counts[show] = s.usage.prompt_tokens
    shown = GenerationRequest(messages=(SYSTEM, USER), schema=SCHEMA)
    plain = GenerationRequest(messages=(USER,), schema=SCHEMA)
    assert counts[True] == counts[None] == len(engine.prompt_ids(shown))
    assert counts[False] == len(engine.prompt_ids(plain))
    assert counts[True] - counts[False] > 50  # the schema, its descriptions included


def test_through_the_callers_openai_client() -> None:
    openai = pytest.importorskip("openai")
    request = GenerationRequest(messages=(USER,), schema=SCHEMA)
    clients = {
        "OpenAI's": openai.AsyncOpenAI(api_key="sk"),
        "Azure's": openai.AsyncAzureOpenAI(
            api_key="k", azure_endpoint="https://me.openai.azure.com", api_version="2024-10-21"
        ),
        "vLLM's": openai.AsyncOpenAI(api_key="sk", base_url="http://gpu.test/v1"),
    }
    shows = {
        name: Client.from_openai(c, model="m").backend.shows_schema(request)  # type: ignore[attr-defined]
        for name, c in clients.items()
    }
    assert shows == {"OpenAI's": True, "Azure's": True, "vLLM's": False}
    said = Client.from_openai(clients["vLLM's"], model="m", server="openai")
    assert said.backend.shows_schema(request)  # type: ignore[attr-defined]
