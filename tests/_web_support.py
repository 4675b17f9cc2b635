"""Helpers for the web tests: the example app, imported from its file; a backend that writes
scripted answers a piece at a time; an upstream that answers 401 with the caller's API key in
its body; headless Chromium; an ASGI app served by uvicorn in a thread."""

from __future__ import annotations

import importlib.util
import shutil
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import httpx

from sdk import Client, Delta, GenerationRequest
from sdk._backend import Rewound

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "examples" / "web" / "app.py"
FIELDS = ["name", "age", "occupation", "mood", "hobbies"]

BAD = '{"name": "Ada Lovelace", "age": 36, "occupation": "mathematician", "mood": "sleepy"}'
GOOD = (
    '{"name": "Ada Lovelace", "age": 36, "occupation": "mathematician", "mood": "curious", '
    '"hobbies": ["chess", "poetry"]}'
)


def import_app() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_web_example_app", APP)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def pieces(doc: str) -> list[str]:
    """``doc`` in pieces of about a token: 3 characters each."""
    return [doc[i : i + 3] for i in range(0, len(doc), 3)]


class PacedBackend:
    """A backend that writes ``scripts[n - 1]`` on attempt n, one piece every ``pace`` seconds,
    and records how many pieces each attempt handed out before it was closed."""

    def __init__(self, *scripts: str, pace: float) -> None:
        self.scripts = [pieces(s) for s in scripts]
        self.pace = pace
        self.sent: list[int] = []

    async def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        self.sent.append(0)
        for piece in self.scripts[len(self.sent) - 1]:
            await anyio.sleep(self.pace)
            self.sent[-1] += 1
            yield Delta(text=piece)
        yield Delta(finish_reason="stop")

    async def aclose(self) -> None:
        pass


# A repeated hobby (uniqueItems), and what the model writes after the rewind to where it began.
REPEATED = GOOD.replace('"poetry"]}', '"chess"]}')
REPAIR = '"poetry"]}'


class RewindingGeneration:
    """Writes ``first`` a piece every ``pace`` seconds; rewound, it writes ``redo`` from where it
    was rewound to. Rewindable, as the local engine's generations are."""

    def __init__(self, first: str, redo: str, pace: float) -> None:
        self.todo, self.redo, self.pace = pieces(first), redo, pace
        self.rewinds: list[int] = []
        self.finished = False

    def __aiter__(self) -> RewindingGeneration:
        return self

    async def __anext__(self) -> Delta:
        await anyio.sleep(self.pace)
        if self.finished:
            raise StopAsyncIteration
        if not self.todo:
            self.finished = True
            return Delta(finish_reason="stop")
        return Delta(text=self.todo.pop(0))

    async def rewind(self, offset: int, *, ban: bool = True) -> Rewound:
        self.rewinds.append(offset)
        self.todo, self.finished = pieces(self.redo), False
        return Rewound(offset, offset, 1, self.redo[:1])

    async def aclose(self) -> None:
        pass


class RewindingBackend:
    """A backend whose one generation repeats a hobby and, rewound, writes another."""

    def __init__(self, pace: float) -> None:
        self.generation = RewindingGeneration(REPEATED, REPAIR, pace)
        self.requests = 0

    def generate(self, request: GenerationRequest) -> RewindingGeneration:
        self.requests += 1
        return self.generation

    async def aclose(self) -> None:
        pass


SECRET = "sk-secret-4242"
INTERNAL_URL = "http://models.internal:9000/v1"
REQUEST_ID = "req_abc123"


def echoing_upstream(request: httpx.Request) -> httpx.Response:
    """An OpenAI-compatible server that refuses the key, and says it back (some do)."""
    key = request.headers["authorization"]
    body = {"error": {"message": f"Incorrect API key provided: {key}", "code": "invalid_api_key"}}
    return httpx.Response(401, json=body, headers={"x-request-id": REQUEST_ID})


def echoing_client() -> Client:
    """A client for :func:`echoing_upstream` at :data:`INTERNAL_URL`, with :data:`SECRET`."""
    http = httpx.AsyncClient(transport=httpx.MockTransport(echoing_upstream))
    return Client(base_url=INTERNAL_URL, api_key=SECRET, model="m", http_client=http)


def chromium() -> Any:
    """Headless Chromium, driven by selenium (Debian's ``chromium`` and ``chromium-driver``)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    driver_path = shutil.which("chromedriver")
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    assert driver_path and binary, (
        "the browser test needs Chromium: apt-get install chromium chromium-driver "
        "(.ci/bootstrap does it as root)"
    )
    options = Options()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    options.add_argument("--window-size=760,900")
    return webdriver.Chrome(service=Service(driver_path), options=options)


def listening_socket() -> socket.socket:
    """A socket bound to a free port on 127.0.0.1, listening."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    return sock


@contextmanager
def served(app: Any) -> Iterator[str]:
    """``app`` served by uvicorn in a thread; its URL."""
    import uvicorn

    sock = listening_socket()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", ws="none"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the app did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
