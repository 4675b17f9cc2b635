"""The web example's app (examples/web/app.py) without a browser: the page, and the event
stream a browser would read, over a scripted backend that violates the schema once, and over
an upstream whose error holds the API key."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from sdk import Client
from tests._web_support import (
    BAD,
    GOOD,
    INTERNAL_URL,
    REPEATED,
    REQUEST_ID,
    SECRET,
    PacedBackend,
    RewindingBackend,
    echoing_client,
    import_app,
)

pytestmark = pytest.mark.anyio


async def test_the_page_and_its_event_stream() -> None:
    app_module = import_app()
    backend = PacedBackend(BAD, GOOD, pace=0)
    app = app_module.create_app(Client.from_backend(backend))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://app") as http:
        page = await http.get("/")
        assert page.status_code == 200 and 'data-pointer="/mood"' in page.text
        response = await http.get("/stream", params={"prompt": "Invent a person"})
    assert response.headers["content-type"].startswith("text/event-stream")
    messages = []
    for block in response.text.split("\n\n")[:-1]:
        name, data = block.split("\n")
        messages.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    names = [name for name, _ in messages]
    assert names[:5] == ["attempt", "field", "field", "field", "attempt_failed"]
    assert messages[4][1]["error"]["pointer"] == "/mood"
    assert names[5] == "attempt" and names[-2:] == ["end", "result"]
    assert messages[-1][1] == app_module.Person.model_validate_json(GOOD).model_dump(mode="json")


async def test_a_repair_in_place_is_a_backtracked_event() -> None:
    app_module = import_app()
    backend = RewindingBackend(pace=0)
    app = app_module.create_app(Client.from_backend(backend))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://app") as http:
        response = await http.get("/stream")
    messages = []
    for block in response.text.split("\n\n")[:-1]:
        name, data = block.split("\n")
        messages.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    names = [name for name, _ in messages]
    i = names.index("backtracked")
    assert names[i - 1 : i + 2] == ["attempt_failed", "backtracked", "attempt"]
    assert names.count("backtracked") == 1 and backend.requests == 1
    back = messages[i][1]
    assert (back["pointer"], back["text"], back["offset"]) == (
        "/hobbies",
        '"chess"',
        REPEATED.rindex('"chess"'),
    )
    assert back["error"]["keyword"] == "uniqueItems"
    fields = [(d["pointer"], d["value"]) for n, d in messages if n == "field"]
    assert ("/hobbies/1", "chess") not in fields and ("/hobbies/1", "poetry") in fields
    assert messages[-1] == ("result", app_module.Person.model_validate_json(GOOD).model_dump())


async def test_an_upstream_error_reaches_the_page_without_its_details(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The upstream refuses the key and says it back; the page gets the status and the
    # request id, the server's log gets the rest.
    app = import_app().create_app(echoing_client())
    transport = httpx.ASGITransport(app=app)
    with caplog.at_level(logging.WARNING, logger="fieldstream"):
        async with httpx.AsyncClient(transport=transport, base_url="http://app") as http:
            response = await http.get("/stream")
    assert SECRET not in response.text and "models.internal" not in response.text
    last = response.text.split("\n\n")[-2].split("\n")
    assert last[0] == "event: failed"
    assert json.loads(last[1].removeprefix("data: ")) == {
        "type": "AuthenticationError",
        "message": "the model server refused the request (HTTP 401)",
        "status": 401,
        "request_id": REQUEST_ID,
    }
    assert SECRET in caplog.text and INTERNAL_URL in caplog.text and REQUEST_ID in caplog.text
