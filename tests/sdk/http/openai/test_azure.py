"""Azure OpenAI, natively and through the caller's ``openai`` Azure clients: the URL, the
``api-version`` query, the ``api-key`` header or the Entra ID token, the environment variables,
checked on the wire (httpx ``MockTransport``) and against what openai-python's own
``AsyncAzureOpenAI`` sends for the same settings."""

from __future__ import annotations

import json
from typing import Any

import httpx
import httpx2
import openai
import pytest

from sdk import Client, SyncClient

pytestmark = pytest.mark.anyio

ENDPOINT = "https://my-resource.openai.azure.com"
VERSION = "2024-10-21"
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
MESSAGES = [{"role": "user", "content": "hi"}]
CHAT = (
    'data: {"id":"c","choices":[{"index":0,"delta":{"content":"{\\"a\\": 1}"}}]}\n\n'
    'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    "data: [DONE]\n\n"
)
RESPONSES = "".join(
    f"event: {e['type']}\ndata: {json.dumps(e)}\n\n"
    for e in (
        {"type": "response.output_text.delta", "delta": '{"a": 1}'},
        {"type": "response.completed", "response": {"usage": {"input_tokens": 1}}},
    )
)
AZURE_ENV = (
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_AD_TOKEN",
    "AZURE_OPENAI_ENDPOINT",
    "OPENAI_API_VERSION",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in AZURE_ENV:
        monkeypatch.delenv(name, raising=False)


async def send(
    api: str = "chat", model: str | None = "gpt-4o-dep", **options: Any
) -> list[httpx.Request]:
    """One stream through a native client with ``options``; the requests it sent."""
    sent: list[httpx.Request] = []

    def reply(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        text = RESPONSES if api == "responses" else CHAT
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, text=text)

    http = httpx.AsyncClient(transport=httpx.MockTransport(reply))
    async with Client(model=model, api=api, http_client=http, **options) as client:  # type: ignore[arg-type]
        for _ in range(2):
            async with client.stream(messages=MESSAGES, schema=SCHEMA) as s:
                assert await s.result() == {"a": 1}
    return sent


async def test_the_key_goes_as_api_key_to_the_models_deployment() -> None:
    (request, _) = await send(azure_endpoint=ENDPOINT, api_version=VERSION, api_key="k1")
    assert (
        str(request.url)
        == f"{ENDPOINT}/openai/deployments/gpt-4o-dep/chat/completions?api-version={VERSION}"
    )
    assert request.headers["api-key"] == "k1"
    assert "authorization" not in request.headers
    assert json.loads(request.content)["model"] == "gpt-4o-dep"


async def test_azure_deployment_names_the_deployment() -> None:
    (request, _) = await send(
        model="gpt-4o",
        azure_endpoint=ENDPOINT + "/",
        azure_deployment="prod",
        api_version=VERSION,
        api_key="k",
    )
    assert (
        str(request.url)
        == f"{ENDPOINT}/openai/deployments/prod/chat/completions?api-version={VERSION}"
    )


async def test_the_responses_api_goes_to_the_resources_responses() -> None:
    (request, _) = await send(
        api="responses",
        azure_endpoint=ENDPOINT,
        azure_deployment="prod",
        api_version=VERSION,
        api_key="k",
    )
    assert str(request.url) == f"{ENDPOINT}/openai/responses?api-version={VERSION}"
    assert request.headers["api-key"] == "k"


async def test_an_entra_token_and_a_token_provider_asked_for_every_request() -> None:
    (request, _) = await send(azure_endpoint=ENDPOINT, api_version=VERSION, azure_ad_token="tok")
    assert request.headers["authorization"] == "Bearer tok" and "api-key" not in request.headers
    tokens = iter(["t1", "t2"])
    sent = await send(
        azure_endpoint=ENDPOINT, api_version=VERSION, azure_ad_token_provider=lambda: next(tokens)
    )
    assert [r.headers["authorization"] for r in sent] == ["Bearer t1", "Bearer t2"]

    async def fetch() -> str:
        return "async-token"

    (request, _) = await send(
        azure_endpoint=ENDPOINT, api_version=VERSION, azure_ad_token_provider=fetch
    )
    assert request.headers["authorization"] == "Bearer async-token"


async def test_the_environment_variables_as_azureopenai_reads_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "env-key")
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", ENDPOINT)
    monkeypatch.setenv("OPENAI_API_VERSION", VERSION)
    monkeypatch.setenv("OPENAI_API_KEY", "not-for-azure")
    (request, _) = await send(azure_deployment="prod")
    assert (
        str(request.url)
        == f"{ENDPOINT}/openai/deployments/prod/chat/completions?api-version={VERSION}"
    )
    assert request.headers["api-key"] == "env-key"
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", "env-token")  # wins over the key, as in openai
    (request, _) = await send(azure_deployment="prod")
    assert (
        request.headers["authorization"] == "Bearer env-token" and "api-key" not in request.headers
    )


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"azure_endpoint": ENDPOINT, "api_version": VERSION}, "Missing credentials"),
        ({"azure_endpoint": ENDPOINT, "api_key": "k"}, "OPENAI_API_VERSION"),
        ({"api_version": VERSION, "api_key": "k"}, "AZURE_OPENAI_ENDPOINT"),
        (
            {
                "azure_endpoint": ENDPOINT,
                "api_version": VERSION,
                "api_key": "k",
                "azure_ad_token": "t",
            },
            "mutually exclusive",
        ),
        (
            {
                "base_url": ENDPOINT + "/openai",
                "azure_endpoint": ENDPOINT,
                "api_version": VERSION,
                "api_key": "k",
            },
            "base_url and azure_endpoint",
        ),
    ],
)
def test_what_is_missing_or_contradictory_is_named(options: dict[str, Any], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        Client(**options)


async def test_the_native_client_sends_what_openais_azure_client_sends() -> None:
    # openai-python's own AsyncAzureOpenAI, the same settings: the same URL and credential.
    theirs: list[httpx2.Request] = []

    def reply(request: httpx2.Request) -> httpx2.Response:
        theirs.append(request)
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, text=CHAT)

    oai = openai.AsyncAzureOpenAI(
        azure_endpoint=ENDPOINT,
        api_version=VERSION,
        api_key="k1",
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(reply)),
    )
    async with Client.from_openai(oai, model="gpt-4o-dep") as client:
        async with client.stream(messages=MESSAGES, schema=SCHEMA) as s:
            assert await s.result() == {"a": 1}
    (ours, _) = await send(azure_endpoint=ENDPOINT, api_version=VERSION, api_key="k1")
    assert str(theirs[0].url) == str(ours.url)
    assert theirs[0].headers["api-key"] == ours.headers["api-key"] == "k1"


def test_syncclient_from_openai_takes_an_azureopenai() -> None:
    def provider() -> str:
        return "tok"

    for credential in ({"api_key": "k"}, {"azure_ad_token_provider": provider}):
        users = openai.AzureOpenAI(
            azure_endpoint=ENDPOINT,
            azure_deployment="prod",
            api_version=VERSION,
            max_retries=3,
            **credential,  # type: ignore[arg-type]
        )
        with SyncClient.from_openai(users, model="gpt-4o") as client:
            copied = client.backend._client  # type: ignore[attr-defined]
            assert isinstance(copied, openai.AsyncAzureOpenAI)
            assert str(copied.base_url) == f"{ENDPOINT}/openai/deployments/prod/"
            assert copied._api_version == VERSION
            assert copied.default_query == {"api-version": VERSION}
            assert copied.max_retries == 3
            if "api_key" in credential:
                assert copied.api_key == "k"
            else:
                assert copied._azure_ad_token_provider is provider
