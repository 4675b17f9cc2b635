"""The User-Agent, and the request/response debug log (``FIELDSTREAM_LOG=debug``), which
never shows a credential."""

from __future__ import annotations

import logging
import os
import platform
import subprocess
import sys

import httpx
import pytest

import sdk
from sdk._logs import REDACTED, redact_headers, redact_url, setup_logging

pytestmark = pytest.mark.anyio

BASE = "http://llm.test/v1"
DOC = (
    b'data: {"choices": [{"index": 0, "delta": {"content": "{}"}, "finish_reason": "stop"}]}\n\n'
    b"data: [DONE]\n\n"
)
KEY = "sk-very-secret-0123456789"


class Recorder:
    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(
            200,
            headers={
                "content-type": "text/event-stream",
                "x-request-id": "req_42",
                "set-cookie": "session=cookie-secret",
            },
            content=DOC,
        )


async def send(client: sdk.Client) -> None:
    async with (
        client,
        client.stream(messages=[{"role": "user", "content": "hi"}], schema={"type": "object"}) as s,
    ):
        assert await s.result() == {}


def mock_client(recorder: Recorder, **kwargs: object) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.MockTransport(recorder), **kwargs)  # type: ignore[arg-type]


async def test_the_user_agent_names_fieldstream_and_python() -> None:
    recorder = Recorder()
    await send(sdk.Client(base_url=BASE, http_client=mock_client(recorder)))
    agent = recorder.requests[0].headers.get_list("user-agent")
    assert agent == [f"fieldstream/{sdk.__version__} python/{platform.python_version()}"]


async def test_the_user_agent_can_be_replaced() -> None:
    recorder = Recorder()
    await send(
        sdk.Client(
            base_url=BASE,
            http_client=mock_client(recorder),
            default_headers={"user-agent": "my-app/2.0"},
        )
    )
    # A client of the caller's own that says who it is is believed too.
    await send(
        sdk.Client(
            base_url=BASE, http_client=mock_client(recorder, headers={"User-Agent": "proxy/1"})
        )
    )
    assert [r.headers.get_list("user-agent") for r in recorder.requests] == [
        ["my-app/2.0"],
        ["proxy/1"],
    ]


async def test_the_debug_log_shows_the_exchange_and_never_the_key(
    caplog: pytest.LogCaptureFixture,
) -> None:
    recorder = Recorder()
    client = sdk.Client(
        base_url=BASE,
        api_key=KEY,
        http_client=mock_client(recorder, headers={"Proxy-Authorization": "Basic proxy-secret"}),
        default_headers={"X-Api-Key": "header-secret", "X-Trace": "t-1"},
        default_query={"api-key": "query-secret", "region": "eu"},
    )
    with caplog.at_level(logging.DEBUG, logger="fieldstream"):
        await send(client)
    text = caplog.text
    assert recorder.requests[0].headers["authorization"] == f"Bearer {KEY}"  # it was sent
    for secret in (KEY, "header-secret", "query-secret", "proxy-secret", "cookie-secret"):
        assert secret not in text, secret
    request_line = next(r.getMessage() for r in caplog.records if "HTTP Request" in r.message)
    response_line = next(r.getMessage() for r in caplog.records if "HTTP Response" in r.message)
    assert request_line.startswith("HTTP Request: POST http://llm.test/v1/chat/completions?")
    assert "region=eu" in request_line and "'x-trace': 't-1'" in request_line
    assert f"'authorization': '{REDACTED}'" in request_line.lower()
    assert '"messages"' in request_line  # the body sent
    assert '"200 OK" request_id=req_42' in response_line
    assert REDACTED in response_line  # the cookie


async def test_nothing_is_logged_without_debug(caplog: pytest.LogCaptureFixture) -> None:
    recorder = Recorder()
    with caplog.at_level(logging.INFO, logger="fieldstream"):
        await send(sdk.Client(base_url=BASE, api_key=KEY, http_client=mock_client(recorder)))
    assert not [r for r in caplog.records if "HTTP" in r.message]


def test_redaction_rules() -> None:
    assert redact_headers([("Authorization", "Bearer x"), ("api-key", "y"), ("X-Id", "1")]) == {
        "Authorization": REDACTED,
        "api-key": REDACTED,
        "X-Id": "1",
    }
    assert redact_url("https://user:pw@h.test/v1?key=abc&model=m&access_token=t") == (
        f"https://h.test/v1?key={REDACTED}&model=m&access_token={REDACTED}"
    )


def test_fieldstream_log_turns_the_logger_on_at_import() -> None:
    code = "import logging, sdk; print(logging.getLogger('fieldstream').level)"
    env = {**os.environ, "FIELDSTREAM_LOG": "debug"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.stdout.strip() == str(logging.DEBUG), done.stderr
    env["FIELDSTREAM_LOG"] = "loud"  # unknown: nothing changes
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.stdout.strip() == str(logging.NOTSET), done.stderr


def test_setup_logging_reads_the_given_environment() -> None:
    log = logging.getLogger("fieldstream")
    before = log.level
    try:
        setup_logging({"FIELDSTREAM_LOG": "INFO"})
        assert log.level == logging.INFO
    finally:
        log.setLevel(before)
