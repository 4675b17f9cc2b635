"""The web example's app (examples/web/app.py) without a browser: the page, and the event
stream a browser would read, over a scripted backend that violates the schema once."""

from __future__ import annotations

import json

import httpx
import pytest
from _web_support import BAD, GOOD, PacedBackend, import_app

from sdk import Client

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
