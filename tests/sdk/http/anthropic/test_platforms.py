"""Claude on Amazon Bedrock and Google Vertex AI (``Client(provider="anthropic",
platform=...)``): the URL, body and credentials each takes, as the ``anthropic`` package's
``AnthropicBedrock`` / ``AnthropicVertex`` send them; Bedrock's event stream (frames made here,
read by botocore and by the anthropic package's own Bedrock decoder as the oracle) replayed
whole, byte by byte and in random splits; exceptions, bad and cut-off frames; the first field
final before the last byte on each."""

from __future__ import annotations

import base64
import json
import random
from typing import Any

import httpx
import pytest

import sdk
from sdk import Client
from sdk._errors import RateLimitError, TransportError
from tests.sdk._eventstream_support import frame, header
from tests.sdk._http_support import Body

anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is a dev dependency")
pytest.importorskip("botocore", reason="botocore is the bedrock extra")
from anthropic.lib.bedrock._stream_decoder import AWSEventStreamDecoder  # noqa: E402
from anthropic.lib.streaming._messages import accumulate_event  # noqa: E402
from botocore.auth import SigV4Auth  # type: ignore[import-untyped]  # noqa: E402
from botocore.awsrequest import AWSRequest  # type: ignore[import-untyped]  # noqa: E402
from botocore.credentials import Credentials  # type: ignore[import-untyped]  # noqa: E402

pytestmark = pytest.mark.anyio

CITY = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["name", "population"],
}
DOCUMENT = '{"name": "Paris", "population": 2100000}'
MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"


def events() -> list[dict[str, Any]]:
    """A tool-mode message, its input fine-grained (a few characters per delta)."""
    block = {"type": "tool_use", "id": "toolu_1", "name": "City", "input": {}}
    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "claude",
        "stop_reason": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    pieces = [DOCUMENT[i : i + 4] for i in range(0, len(DOCUMENT), 4)]
    return [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "ping"},
        *(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": p},
            }
            for p in pieces
        ),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 20},
        },
        {"type": "message_stop"},
    ]


def chunk(event: dict[str, Any]) -> bytes:
    """One Bedrock ``chunk`` frame carrying ``event``, as Bedrock sends it."""
    data = base64.b64encode(json.dumps(event).encode()).decode()
    headers = (
        header(":event-type", 7, "chunk")
        + header(":content-type", 7, "application/json")
        + header(":message-type", 7, "event")
    )
    return frame(headers, json.dumps({"bytes": data, "p": "abcd"}).encode())


def exception(name: str, message: str) -> bytes:
    headers = (
        header(":exception-type", 7, name)
        + header(":content-type", 7, "application/json")
        + header(":message-type", 7, "exception")
    )
    return frame(headers, json.dumps({"message": message}).encode())


BEDROCK_RAW = b"".join(chunk(e) for e in events())
EVENTSTREAM = {"content-type": "application/vnd.amazon.eventstream"}


def chunkings(raw: bytes, rng: random.Random) -> list[list[bytes]]:
    out = [[raw], [raw[i : i + 1] for i in range(len(raw))]]
    for _ in range(3):
        cuts = sorted(rng.sample(range(1, len(raw)), k=rng.randint(1, 40)))
        out.append([raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)])
    return out


def bedrock_sdk_input(raw: bytes) -> Any:
    """The tool input as the anthropic package's Bedrock stream decoder and accumulator read
    ``raw``."""
    snapshot: Any = None
    buffers: dict[int, bytes] = {}
    for sse in AWSEventStreamDecoder().iter_bytes(iter([raw])):
        if sse.event != "ping":
            snapshot = accumulate_event(
                event=json.loads(sse.data), current_snapshot=snapshot, json_bufs=buffers
            )
    (block,) = snapshot.content
    return block.input


class Server:
    def __init__(self, parts: list[bytes], headers: dict[str, str]) -> None:
        self.parts = parts
        self.headers = headers
        self.requests: list[httpx.Request] = []
        self.body: Body | None = None

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        self.body = Body(self.parts)
        return httpx.Response(200, headers=self.headers, stream=self.body)


def bedrock(server: Server, **options: Any) -> Client:
    http = httpx.AsyncClient(transport=httpx.MockTransport(server))
    given: dict[str, Any] = {
        "aws_region": "us-east-1",
        "aws_access_key": "AKIDEXAMPLE",
        "aws_secret_key": "secret",
        "platform": "bedrock",
        **options,
    }
    return Client(
        provider="anthropic",
        model=MODEL,
        http_client=http,
        max_retries=0,
        **given,
    )


async def run(client: Client, server: Server) -> tuple[int | None, Any]:
    """The bytes read when the first field was final, and the result."""
    at: int | None = None
    async with (
        client,
        client.stream(
            messages=[{"role": "user", "content": "Where?"}], schema=CITY, mode="tool"
        ) as s,
    ):
        async for ev in s:
            if isinstance(ev, sdk.FieldEvent) and at is None:
                assert server.body is not None
                at = sum(len(p) for p in server.parts[: server.body.pulled])
        value = await s.result()
    return at, value


# ---------------------------------------------------------------- Bedrock


async def test_bedrock_url_body_and_sigv4() -> None:
    server = Server([BEDROCK_RAW], EVENTSTREAM)
    _, value = await run(bedrock(server, headers={"anthropic-beta": "a-1, b-2"}), server)
    assert value == json.loads(DOCUMENT)
    request = server.requests[0]
    assert str(request.url) == (
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
        "anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream"
    )
    body = json.loads(request.content)
    assert "model" not in body and "stream" not in body
    assert body["anthropic_version"] == "bedrock-2023-05-31"
    assert body["anthropic_beta"] == ["a-1", "b-2"]
    assert body["tools"][0]["eager_input_streaming"] is True
    assert request.headers["accept"] == "application/vnd.amazon.eventstream"
    assert "x-api-key" not in request.headers and "anthropic-version" not in request.headers
    auth = request.headers["authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/us-east-1/bedrock/aws4_request" in auth
    # The signature is botocore's for the request as sent: signed again, the same.
    again = AWSRequest(
        method="POST",
        url=str(request.url),
        data=request.content,
        headers={"Content-Type": "application/json", "Accept": EVENTSTREAM["content-type"]}
        | {"anthropic-beta": "a-1, b-2", "X-Amz-Date": request.headers["x-amz-date"]},
    )
    signer = SigV4Auth(Credentials("AKIDEXAMPLE", "secret"), "bedrock", "us-east-1")
    signer._modify_request_before_signing = lambda r: None  # keep our X-Amz-Date
    again.context["timestamp"] = request.headers["x-amz-date"]
    signer.add_auth(again)
    assert again.headers["Authorization"] == auth


async def test_bedrock_every_chunking_reads_as_the_sdk_reads_it() -> None:
    expected = bedrock_sdk_input(BEDROCK_RAW)
    assert expected == json.loads(DOCUMENT)
    for parts in chunkings(BEDROCK_RAW, random.Random(7)):
        server = Server(parts, EVENTSTREAM)
        _, value = await run(bedrock(server), server)
        assert value == expected


async def test_bedrock_the_first_field_is_final_before_the_last_byte() -> None:
    server = Server([BEDROCK_RAW[i : i + 1] for i in range(len(BEDROCK_RAW))], EVENTSTREAM)
    at, _ = await run(bedrock(server), server)
    last_input = b"".join(chunk(e) for e in events()[:-4])  # up to before the last delta
    assert at is not None and at < len(last_input)


async def test_bedrock_an_api_key_is_a_bearer_token(monkeypatch: pytest.MonkeyPatch) -> None:
    server = Server([BEDROCK_RAW], EVENTSTREAM)
    await run(bedrock(server, aws_access_key=None, aws_secret_key=None, api_key="bk"), server)
    assert server.requests[0].headers["authorization"] == "Bearer bk"
    with pytest.raises(ValueError, match="not both"):
        bedrock(server, api_key="bk")
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    with pytest.raises(ValueError, match="needs a region"):
        bedrock(server, aws_region=None)
    with pytest.raises(TypeError, match="'project_id' is not an option of platform='bedrock'"):
        bedrock(server, project_id="p")
    with pytest.raises(ValueError, match="platform must be one of"):
        bedrock(server, platform="azure")


async def test_bedrock_an_exception_frame_is_the_status_error() -> None:
    raw = b"".join(chunk(e) for e in events()[:4]) + exception(
        "throttlingException", "Too many requests, please wait."
    )
    server = Server([raw], EVENTSTREAM)
    with pytest.raises(RateLimitError, match="throttlingException: Too many requests") as info:
        await run(bedrock(server), server)
    assert info.value.retryable


async def test_bedrock_a_bad_or_cut_frame_is_a_transport_error() -> None:
    bad = bytearray(BEDROCK_RAW)
    bad[len(chunk(events()[0])) + 30] ^= 1  # inside the second frame
    server = Server([bytes(bad)], EVENTSTREAM)
    with pytest.raises(TransportError, match=r"malformed event stream: .* CRC mismatch") as info:
        await run(bedrock(server), server)
    assert not info.value.retryable
    cut = BEDROCK_RAW[: len(BEDROCK_RAW) - 20]  # inside the last frame
    server = Server([cut], EVENTSTREAM)
    with pytest.raises(TransportError, match="the body ended inside it") as cut_info:
        await run(bedrock(server), server)
    assert cut_info.value.retryable


# ---------------------------------------------------------------- Vertex


def sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


VERTEX_RAW = b"".join(sse(e) for e in events())
SSE = {"content-type": "text/event-stream"}


def vertex(server: Server, **options: Any) -> Client:
    http = httpx.AsyncClient(transport=httpx.MockTransport(server))
    given: dict[str, Any] = {
        "region": "us-east5",
        "project_id": "my-project",
        "access_token": "ya29.token",
        "platform": "vertex",
        **options,
    }
    return Client(
        provider="anthropic",
        model="claude-sonnet-4-5@20250929",
        http_client=http,
        max_retries=0,
        **given,
    )


async def test_vertex_url_body_and_token() -> None:
    server = Server([VERTEX_RAW], SSE)
    _, value = await run(vertex(server), server)
    assert value == json.loads(DOCUMENT)
    request = server.requests[0]
    assert str(request.url) == (
        "https://us-east5-aiplatform.googleapis.com/v1/projects/my-project/locations/us-east5/"
        "publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
    )
    body = json.loads(request.content)
    assert "model" not in body and body["stream"] is True
    assert body["anthropic_version"] == "vertex-2023-10-16"
    assert request.headers["authorization"] == "Bearer ya29.token"
    assert "x-api-key" not in request.headers


async def test_vertex_global_and_credentials_refreshed() -> None:
    class Creds:
        token: str | None = None
        expired = False
        refreshed = 0

        def refresh(self, request: Any) -> None:
            self.refreshed += 1
            self.token = f"fresh-{self.refreshed}"

    creds = Creds()
    server = Server([VERTEX_RAW], SSE)
    await run(vertex(server, region="global", access_token=None, credentials=creds), server)
    assert str(server.requests[0].url).startswith(
        "https://aiplatform.googleapis.com/v1/projects/my-project/locations/global/"
    )
    assert server.requests[0].headers["authorization"] == "Bearer fresh-1"
    assert creds.refreshed == 1
    with pytest.raises(ValueError, match="not an API key"):
        vertex(server, api_key="k")


async def test_vertex_every_chunking_and_the_first_field_before_the_last_byte() -> None:
    for parts in chunkings(VERTEX_RAW, random.Random(3)):
        server = Server(parts, SSE)
        _, value = await run(vertex(server), server)
        assert value == json.loads(DOCUMENT)
    server = Server([VERTEX_RAW[i : i + 1] for i in range(len(VERTEX_RAW))], SSE)
    at, _ = await run(vertex(server), server)
    assert at is not None and at < VERTEX_RAW.rindex(b"event: content_block_delta")


def test_a_platform_named_as_the_provider_says_what_to_write() -> None:
    with pytest.raises(ValueError, match=r"provider='anthropic', platform='bedrock'"):
        Client(provider="bedrock", api_key="k")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"provider='anthropic', platform='vertex'"):
        Client(provider="vertex")  # type: ignore[arg-type]


async def test_bedrock_a_status_error_keeps_its_message_and_request_id() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            403,
            json={"message": "You don't have access to the model."},
            headers={"x-amzn-requestid": "req-aws-1", "x-amzn-errortype": "AccessDenied"},
        )

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    client = Client(
        provider="anthropic",
        model=MODEL,
        http_client=http,
        max_retries=0,
        **{"platform": "bedrock", "aws_region": "us-east-1", "api_key": "bk"},
    )
    with pytest.raises(sdk.APIStatusError, match="HTTP 403: You don't have access") as info:
        async with (
            client,
            client.stream(messages=[{"role": "user", "content": "x"}], schema=CITY) as s,
        ):
            await s.result()
    assert info.value.status == 403 and info.value.request_id == "req-aws-1"
