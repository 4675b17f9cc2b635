"""Gemini on Vertex AI through fieldstream's own backend: the URL and credentials (checked
against google-genai's own Vertex client), ``streamFunctionCallArguments`` in the body
(google-genai's models read it), and ``partialArgs`` streams of the shapes Vertex records —
read whole, byte by byte and in random splits into the same arguments google-genai parses from
the same bytes, each field final before the last byte (a whole call: only at its end), and
hostile parts refused with a PartialArgumentsError that says where and what."""

from __future__ import annotations

import json
import random
import sys
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

import sdk
from sdk import Client, MissingDependencyError, PartialArgumentsError
from sdk._backend import Delta, GenerationRequest
from sdk._http.gemini._backend import GeminiBackend
from sdk._http.gemini._decoder import GeminiDecoder
from sdk._http.gemini._request import gemini_body
from tests.sdk._http_support import Body

genai = pytest.importorskip("google.genai", reason="google-genai is a dev dependency")
from google.auth import credentials as auth_credentials  # noqa: E402
from google.genai import types  # noqa: E402
from google.oauth2.credentials import Credentials as TokenCredentials  # noqa: E402

pytestmark = pytest.mark.anyio

MODEL = "gemini-3-pro-preview"
MESSAGES = [{"role": "user", "content": "A recipe, please."}]
VERTEX_URL = (
    "https://us-central1-aiplatform.googleapis.com/v1/projects/proj/locations/us-central1/"
    f"publishers/google/models/{MODEL}:streamGenerateContent?alt=sse"
)


class Ingredient(BaseModel):
    amount: str
    name: str


class Recipe(BaseModel):
    title: str
    servings: int
    vegetarian: bool
    ingredients: list[Ingredient]
    steps: list[str]


# ---------------------------------------------------------------- streams of Vertex's shapes


def record(*parts: dict[str, Any], finish: str | None = None) -> bytes:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}}
    if finish:
        candidate["finishReason"] = finish
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": MODEL}
    if finish:
        out["usageMetadata"] = {"promptTokenCount": 9, "candidatesTokenCount": 30}
    return b"data: " + json.dumps(out).encode() + b"\r\n\r\n"


def call(**fields: Any) -> dict[str, Any]:
    return {"functionCall": fields}


def piece(path: str, **value: Any) -> dict[str, Any]:
    """One partialArgs record's call part (willContinue: more of the call follows)."""
    return call(partialArgs=[{"jsonPath": path, **value}], willContinue=True)


def string(path: str, text: str) -> list[bytes]:
    """A string as Vertex streams it: pieces with willContinue, then an empty last one."""
    cut = len(text) // 2
    return [
        record(piece(path, stringValue=text[:cut], willContinue=True)),
        record(piece(path, stringValue=text[cut:], willContinue=True)),
        record(piece(path, stringValue="")),
    ]


RECIPE = {
    "title": 'Lasagna "al forno"',
    "servings": 4,
    "vegetarian": False,
    "ingredients": [
        {"amount": "16 oz", "name": "noodles"},
        {"amount": "1 lb", "name": "ricotta"},
    ],
    "steps": ["Preheat the oven.", "Layer, bake 45 min."],
}

RECIPE_STREAM = [
    record(call(name="recipe", id="c1", willContinue=True)),
    *string("$.title", RECIPE["title"]),
    record(piece("$.servings", numberValue=4)),
    record(piece("$.vegetarian", boolValue=False)),
    *string("$.ingredients[0].amount", "16 oz"),
    *string("$.ingredients[0].name", "noodles"),
    record(call(willContinue=True)),  # Vertex sends these between elements: nothing new
    *string("$.ingredients[1].amount", "1 lb"),
    *string("$.ingredients[1].name", "ricotta"),
    record(call(willContinue=True)),
    *string("$.steps[0]", "Preheat the oven."),
    *string("$.steps[1]", "Layer, bake 45 min."),
    record(call(), finish="STOP"),  # the call's end and the candidate's together
]

STREAMS: dict[str, tuple[list[bytes], list[tuple[str, dict[str, Any]]]]] = {
    "a nested call, ended by {}": (RECIPE_STREAM, [("recipe", RECIPE)]),
    "two calls, each ended by {}": (
        [
            record(call(name="look", willContinue=True)),
            *string("$.city", "Boston"),
            record(call()),
            record(call(name="look", willContinue=True)),
            *string("$.city", "San Francisco"),
            record(call()),
            record({"text": ""}, finish="STOP"),
        ],
        [("look", {"city": "Boston"}), ("look", {"city": "San Francisco"})],
    ),
    "the last part ends the call (no {})": (
        [
            record(call(name="items", willContinue=True)),
            *string("$.ops[0].item", "apple"),
            record(piece("$.ops[0].price", numberValue=0.5)),
            *string("$.ops[1].item", "pear"),
            record(call(partialArgs=[{"jsonPath": "$.ops[1].price", "numberValue": 0.3}])),
            record({"text": ""}, finish="STOP"),
        ],
        [("items", {"ops": [{"item": "apple", "price": 0.5}, {"item": "pear", "price": 0.3}]})],
    ),
    "no end part, the candidate's STOP ends it": (
        [
            record(call(name="look", willContinue=True)),
            record(piece("$.city", stringValue="Paris", willContinue=True)),
            record(piece("$.country", nullValue="NULL_VALUE")),
            record({"text": ""}, finish="STOP"),
        ],
        [("look", {"city": "Paris", "country": None})],
    ),
    "each part repeating the call's name and id": (
        [
            record(
                call(
                    name="light",
                    id="c9",
                    willContinue=True,
                    partialArgs=[{"jsonPath": "$.brightness", "numberValue": 50}],
                )
            ),
            record(
                call(
                    name="light",
                    id="c9",
                    willContinue=True,
                    partialArgs=[
                        {"jsonPath": "$.color", "stringValue": "wa", "willContinue": True}
                    ],
                )
            ),
            record(
                call(
                    name="light",
                    id="c9",
                    partialArgs=[{"jsonPath": "$.color", "stringValue": "rm"}],
                ),
                finish="STOP",
            ),
        ],
        [("light", {"brightness": 50, "color": "warm"})],
    ),
    "a no-argument call and empty containers": (
        [
            record(call(name="ping")),
            record(call(name="tag", willContinue=True)),
            record(piece("$.tags[]")),
            record(piece("$.meta")),
            record(call(), finish="STOP"),
        ],
        [("ping", {}), ("tag", {"tags": [], "meta": {}})],
    ),
}


def backend(parts: list[bytes], seen: list[httpx.Request] | None = None) -> GeminiBackend:
    def answer(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, stream=Body(parts)
        )

    http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    return GeminiBackend(
        vertex=True,
        project="proj",
        location="us-central1",
        access_token="ya29.token",
        model=MODEL,
        http_client=http,
    )


def tool_request() -> GenerationRequest:
    return GenerationRequest(
        messages=tuple(MESSAGES), schema=Recipe.model_json_schema(), mode="tool"
    )


async def our_calls(parts: list[bytes]) -> tuple[list[tuple[str | None, Any]], Delta]:
    b = backend(parts)
    deltas = [
        d if isinstance(d, Delta) else Delta(text=d) async for d in b.generate(tool_request())
    ]
    await b.aclose()
    texts: dict[int, str] = {}
    names: dict[int, str | None] = {}
    for d in deltas:
        if d.tool_call is not None:
            texts[d.tool_call] = texts.get(d.tool_call, "") + (d.text or "")
            if d.tool_name is not None or d.tool_call not in names:
                names[d.tool_call] = d.tool_name
    return [(names[k], json.loads(texts[k])) for k in sorted(texts)], deltas[-1]


def set_at(target: dict[str, Any], path: str, value: Any, *, append: bool) -> None:
    """A plain reference reading of one PartialArg (the way other clients accumulate them)."""
    steps = [
        int(s) if s.isdigit() else s
        for s in path[2:].replace("[", ".").replace("]", "").split(".")
        if s
    ]
    node: Any = target
    for step, after in zip(steps, [*steps[1:], None], strict=True):
        if after is None:
            break
        if isinstance(node, list):
            while len(node) <= step:
                node.append([] if isinstance(after, int) else {})
            node = node[step]
        else:
            node = node.setdefault(step, [] if isinstance(after, int) else {})
    last = steps[-1]
    if isinstance(node, list):
        if last < len(node):
            node[last] = node[last] + value if append else value
        else:
            node.append(value)
    else:
        node[last] = node[last] + value if append and last in node else value


async def genai_calls(parts: list[bytes]) -> list[tuple[str | None, Any]]:
    """The calls google-genai's Vertex client parses from the same bytes (its ``PartialArg``
    models, put together by :func:`set_at`)."""

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=b"".join(parts)
        )

    http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    client = genai.Client(
        vertexai=True,
        project="proj",
        location="us-central1",
        credentials=TokenCredentials(token="t"),
        http_options=types.HttpOptions(httpx_async_client=http),
    )
    calls: list[tuple[str | None, Any]] = []
    current: dict[str, Any] | None = None
    open_string: str | None = None
    async for chunk in await client.aio.models.generate_content_stream(model=MODEL, contents="x"):
        for part in chunk.candidates[0].content.parts or []:
            fc = part.function_call
            if fc is None:
                continue
            if current is None and (fc.name or fc.partial_args):
                current = {}
                calls.append((fc.name, current))
            for arg in fc.partial_args or []:
                path = arg.json_path or ""
                if arg.string_value is not None:
                    set_at(current, path, arg.string_value, append=open_string == path)
                    open_string = path if arg.will_continue else None
                elif arg.number_value is not None:
                    value = arg.number_value
                    set_at(current, path, int(value) if value.is_integer() else value, append=False)
                elif arg.bool_value is not None:
                    set_at(current, path, arg.bool_value, append=False)
                elif arg.null_value is not None:
                    set_at(current, path, None, append=False)
                elif path.endswith("[]"):
                    set_at(current, path[:-2], [], append=False)
                else:
                    set_at(current, path, {}, append=False)
            if not fc.will_continue:
                current = None
    await http.aclose()
    return calls


def splits(parts: list[bytes], seed: int) -> list[bytes]:
    data = b"".join(parts)
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, 12)))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


@pytest.mark.parametrize("name", sorted(STREAMS))
async def test_partial_args_streams_read_as_google_genai_parses_them(name: str) -> None:
    parts, expected = STREAMS[name]
    assert await genai_calls(parts) == expected  # the oracle agrees with the expectation
    chunkings = [parts, [bytes([b]) for b in b"".join(parts)]] + [
        splits(parts, seed) for seed in range(5)
    ]
    for chunking in chunkings:
        calls, last = await our_calls(chunking)
        assert calls == expected
        assert last.finish_reason == "tool_calls"


async def test_the_decoder_reads_google_genais_own_records_alike() -> None:
    # What Client.from_genai feeds the decoder: the SDK's models dumped back to JSON (numbers
    # as doubles, nullValue as its enum name), read the same as the wire's records.
    for name, (parts, expected) in STREAMS.items():
        decoder = GeminiDecoder(tools=True)
        texts: dict[int, str] = {}
        for raw in parts:
            data = json.loads(raw.decode()[len("data: ") :])
            dumped = types.GenerateContentResponse.model_validate(data).model_dump_json(
                by_alias=True, exclude_none=True
            )
            out = decoder.decode("", dumped)
            for d in [Delta(text=out)] if isinstance(out, str) else out:
                if d.tool_call is not None:
                    texts[d.tool_call] = texts.get(d.tool_call, "") + (d.text or "")
        assert [json.loads(texts[k]) for k in sorted(texts)] == [args for _, args in expected], name


async def events_with_progress(parts: list[bytes]) -> tuple[list[tuple[Any, int]], Any]:
    """Each FieldEvent's path with how many body parts had been read when it came."""
    body = Body(parts)
    http = httpx.AsyncClient(
        transport=httpx.MockTransport(
            lambda r: httpx.Response(
                200, headers={"content-type": "text/event-stream"}, stream=body
            )
        )
    )
    client = Client(
        provider="gemini",
        vertex=True,
        project="proj",
        location="us-central1",
        access_token="ya29.token",
        model=MODEL,
        http_client=http,
    )
    async with client, client.stream(messages=MESSAGES, schema=Recipe, mode="tool") as s:
        seen = [(ev.path, body.pulled) async for ev in s if isinstance(ev, sdk.FieldEvent)]
        result = await s.result()
    return seen, result


async def test_the_first_field_is_final_before_the_last_byte() -> None:
    seen, result = await events_with_progress(RECIPE_STREAM)
    assert result == Recipe.model_validate(RECIPE)
    first_path, pulled = seen[0]
    assert first_path == ("title",)
    # title is final at its empty last piece: the fourth record of twenty-seven.
    assert pulled == 4 < len(RECIPE_STREAM)
    assert [p for p, _ in seen][:4] == [
        ("title",),
        ("servings",),
        ("vegetarian",),
        ("ingredients", 0, "amount"),
    ]


async def test_a_whole_call_gives_its_fields_only_at_its_end() -> None:
    whole = [
        record({"text": ""}),
        record(call(name="recipe", args=RECIPE)),
        record({"text": ""}, finish="STOP"),
    ]
    seen, result = await events_with_progress(whole)
    assert result == Recipe.model_validate(RECIPE)
    assert {pulled for _, pulled in seen} == {2}  # every field at the call's one record


# ---------------------------------------------------------------- hostile parts


HOSTILE = {
    "a path that goes back": (
        [
            record(piece("$.a", numberValue=1)),
            record(piece("$.b", numberValue=2)),
            record(piece("$.a", numberValue=3)),
        ],
        "$.a",
        "'a' of $ came again",
    ),
    "a type change": (
        [
            record(piece("$.a", stringValue="x", willContinue=True)),
            record(piece("$.a", numberValue=2)),
        ],
        "$.a",
        "still open",
    ),
    "an unknown value kind": (
        [record(piece("$.a", structValue={"b": 1}))],
        "$.a",
        "unknown value kind structValue",
    ),
    "two values": (
        [record(piece("$.a", stringValue="x", numberValue=1))],
        "$.a",
        "one value is expected, not stringValue and numberValue",
    ),
    "a value of the wrong type": (
        [record(piece("$.a", numberValue="NaN"))],
        "$.a",
        "numberValue 'NaN' is not of its kind's JSON type",
    ),
    "an absurd depth": (
        [record(piece("$" + ".a" * 600, numberValue=1))],
        "$" + ".a" * 600,
        "deeper than 512 steps",
    ),
    "another call before this one ended": (
        [record(piece("$.a", numberValue=1)), record(call(name="other", willContinue=True))],
        None,
        "a part with name 'other' came before the call ended",
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
async def test_hostile_parts_are_a_typed_error_that_says_where_and_what(name: str) -> None:
    parts, path, said = HOSTILE[name]
    stream = [record(call(name="f", willContinue=True)), *parts]
    b = backend(stream)
    with pytest.raises(PartialArgumentsError) as info:
        async for _ in b.generate(tool_request()):
            pass
    await b.aclose()
    assert str(info.value).startswith("the arguments of call 0 (f)")
    assert said in str(info.value)
    assert info.value.json_path == path
    assert isinstance(info.value, sdk.TransportError) and not info.value.retryable


# ---------------------------------------------------------------- the request


def test_the_body_asks_for_streamed_arguments_and_genai_reads_it() -> None:
    body = gemini_body(tool_request(), stream_arguments=True)
    config = body["toolConfig"]["functionCallingConfig"]
    assert config == {
        "mode": "ANY",
        "allowedFunctionNames": ["response"],
        "streamFunctionCallArguments": True,
    }
    parsed = types.ToolConfig.model_validate(body["toolConfig"])
    assert parsed.function_calling_config is not None
    assert parsed.function_calling_config.stream_function_call_arguments is True
    for key, model in (("tools", types.Tool), ("contents", types.Content)):
        for item in body[key]:
            model.model_validate(item)
    # The Gemini API is not asked (google-genai refuses to send it there), nor a json_schema
    # request, nor tool_choice="none".
    assert "streamFunctionCallArguments" not in json.dumps(gemini_body(tool_request()))
    none = GenerationRequest(
        messages=tuple(MESSAGES), schema={"type": "object"}, mode="tool", tool_choice="none"
    )
    assert "streamFunctionCallArguments" not in json.dumps(gemini_body(none, stream_arguments=True))


async def test_the_request_is_the_one_google_genais_vertex_client_sends() -> None:
    seen: list[httpx.Request] = []
    b = backend(RECIPE_STREAM, seen)
    async for _ in b.generate(tool_request()):
        pass
    await b.aclose()
    ours = seen[0]
    assert str(ours.url) == VERTEX_URL
    assert ours.headers["authorization"] == "Bearer ya29.token"

    theirs: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        theirs.append(request)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=b"")

    http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    client = genai.Client(
        vertexai=True,
        project="proj",
        location="us-central1",
        credentials=TokenCredentials(token="ya29.token"),
        http_options=types.HttpOptions(api_version="v1", httpx_async_client=http),
    )
    body = json.loads(ours.content)
    config = {
        **body.pop("generationConfig", {}),
        **{k: v for k, v in body.items() if k != "contents"},
    }
    async for _ in await client.aio.models.generate_content_stream(
        model=MODEL,
        contents=[types.Content.model_validate(c) for c in body["contents"]],
        config=types.GenerateContentConfig.model_validate(config),
    ):
        pass
    await http.aclose()
    sent = theirs[0]
    assert str(sent.url) == VERTEX_URL
    assert sent.headers["authorization"] == "Bearer ya29.token"
    # The same tool config (google-genai writes the proto field names, which Vertex AI reads
    # as well as the JSON names).
    assert types.ToolConfig.model_validate(
        json.loads(sent.content)["toolConfig"]
    ) == types.ToolConfig.model_validate(json.loads(ours.content)["toolConfig"])


@pytest.mark.parametrize(
    ("location", "host"),
    [
        ("global", "https://aiplatform.googleapis.com"),
        ("us", "https://aiplatform.us.rep.googleapis.com"),
        ("europe-west4", "https://europe-west4-aiplatform.googleapis.com"),
    ],
)
def test_hosts(location: str, host: str) -> None:
    b = GeminiBackend(vertex=True, project="p", location=location, access_token="t")
    assert b.url_for("gemini-2.5-flash") == (
        f"{host}/v1/projects/p/locations/{location}/publishers/google/models/"
        "gemini-2.5-flash:streamGenerateContent?alt=sse"
    )


def test_express_mode_and_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    monkeypatch.delenv("GOOGLE_CLOUD_LOCATION", raising=False)
    b = GeminiBackend(vertex=True, api_key="key")
    assert b.url_for("m") == (
        "https://aiplatform.googleapis.com/v1/publishers/google/models/m:streamGenerateContent?alt=sse"
    )
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "envproj")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "asia-east1")
    # The key given wins over the environment's project, as google-genai has it.
    assert GeminiBackend(vertex=True, api_key="key").url_for("m") == b.url_for("m")
    assert b.vertex is not None and b.vertex.express
    b = GeminiBackend(vertex=True, access_token="t")
    assert b.url_for("m").startswith(
        "https://asia-east1-aiplatform.googleapis.com/v1/projects/envproj/locations/asia-east1/"
    )


def test_vertex_options_need_vertex() -> None:
    with pytest.raises(TypeError, match="project= is Vertex AI's: pass vertex=True"):
        GeminiBackend(project="p", api_key="k")
    with pytest.raises(TypeError, match="vertex must be a bool"):
        GeminiBackend(vertex="yes")  # type: ignore[typeddict-item]
    GeminiBackend(api_key="k", stream_arguments=False)  # the Gemini API's own default


class Refreshing(auth_credentials.Credentials):  # type: ignore[misc]
    """Credentials that count their refreshes (each one a new token)."""

    def __init__(self) -> None:
        super().__init__()
        self.refreshes = 0
        self._quota_project_id = "billing"

    def refresh(self, request: Any) -> None:
        self.refreshes += 1
        self.token = f"tok{self.refreshes}"


async def headers_sent(**options: Any) -> httpx.Headers:
    seen: list[httpx.Request] = []
    b = backend(RECIPE_STREAM, seen)
    b2 = GeminiBackend(vertex=True, model=MODEL, http_client=b.http_client, **options)
    async for _ in b2.generate(tool_request()):
        pass
    await b.aclose()
    return seen[0].headers


async def test_credentials_are_refreshed_when_not_valid() -> None:
    creds = Refreshing()
    headers = await headers_sent(project="proj", location="us-central1", credentials=creds)
    assert headers["authorization"] == "Bearer tok1"
    assert headers["x-goog-user-project"] == "billing"
    assert creds.refreshes == 1


async def test_application_default_credentials_name_the_project(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import google.auth

    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    creds = Refreshing()
    asked: list[Any] = []

    def default(scopes: Any = None) -> tuple[Any, str]:
        asked.append(scopes)
        return creds, "adcproj"

    monkeypatch.setattr(google.auth, "default", default)
    seen: list[httpx.Request] = []
    b = backend(RECIPE_STREAM, seen)
    adc = GeminiBackend(vertex=True, location="us-central1", model=MODEL, http_client=b.http_client)
    async for _ in adc.generate(tool_request()):
        pass
    await b.aclose()
    assert asked == [["https://www.googleapis.com/auth/cloud-platform"]]
    assert str(seen[0].url) == VERTEX_URL.replace("projects/proj", "projects/adcproj")
    assert seen[0].headers["authorization"] == "Bearer tok1"


async def test_without_google_auth_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "google.auth", None)  # an import of it fails
    adc = GeminiBackend(vertex=True, project="p", location="us-central1", model=MODEL)
    with pytest.raises(MissingDependencyError, match=r"pip install 'fieldstream\[vertex\]'"):
        async for _ in adc.generate(tool_request()):
            pass
    await adc.aclose()


async def test_from_genai_on_vertex_asks_for_streamed_arguments_and_reads_them() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=b"".join(RECIPE_STREAM)
        )

    http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    client = genai.Client(
        vertexai=True,
        project="proj",
        location="us-central1",
        credentials=TokenCredentials(token="t"),
        http_options=types.HttpOptions(httpx_async_client=http),
    )
    ours = Client.from_genai(client, model=MODEL)
    async with ours.stream(messages=MESSAGES, schema=Recipe, mode="tool") as s:
        assert await s.result() == Recipe.model_validate(RECIPE)
    sent = types.ToolConfig.model_validate(json.loads(seen[0].content)["toolConfig"])
    assert sent.function_calling_config is not None
    assert sent.function_calling_config.stream_function_call_arguments is True
