"""A web page that fills a form field by field as the model writes it (Server-Sent Events).

Runs on the packaged local model by default (nothing else to start), or on any
OpenAI-compatible server; needs the ``web`` extra (Starlette, uvicorn)::

    bash examples/web/serve.sh                       # installs into .venv once, then serves
    python examples/web/app.py                       # http://127.0.0.1:8765
    python examples/web/app.py --base-url http://127.0.0.1:8080/v1 --model NAME

``GET /`` is the page; ``GET /stream?prompt=...`` streams a structured answer (a
:class:`Person`) as server-sent events with :func:`sdk.sse_events`: one ``field`` event per
value the moment it is final and valid, ``attempt``/``attempt_failed`` when an attempt starts
or breaks the schema (and is retried at once), ``backtracked`` when the local engine repairs the
offending value in place (``Retry(backtrack=True)``: a repeated hobby, say), then ``result``
(the validated value) or ``failed``. The page (``index.html``) puts each field into the form as
it arrives, shows a violation and the retry (or the rejected value struck through, and the
repair), and replaces the form with the validated result at the end; ``/?autostart`` asks at
once, with the default prompt.

A failure that is not about the model's output (the server refused the key, the connection
broke) reaches the page as a generic message, the HTTP status and a request id; the whole error
(the upstream's body, the URL) goes to this server's log under that id, never to a visitor.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse
from starlette.routing import Route

from sdk import Client, Retry, sse_events

PAGE = Path(__file__).with_name("index.html")
# Not 8000: `mkdocs serve` and vLLM take that one, llama.cpp's server 8080.
PORT = 8765
PROMPT = "Invent a fictional person: name, age, occupation, mood and up to three hobbies."


class Person(BaseModel):
    """The form the page fills: one input per field, in this order."""

    name: Annotated[str, Field(min_length=1, max_length=40)]
    age: int = Field(ge=0, le=120)
    occupation: Annotated[str, Field(max_length=40)]
    mood: Literal["happy", "calm", "curious", "grumpy"]
    hobbies: list[Annotated[str, Field(max_length=30)]] = Field(
        max_length=3, json_schema_extra={"uniqueItems": True}
    )


def create_app(client: Client, *, max_tokens: int = 160, max_attempts: int = 3) -> Starlette:
    """The ASGI app: the page, and one structured stream per ``GET /stream``. The client is
    closed when the app shuts down."""

    async def page(request: Request) -> Response:
        return HTMLResponse(PAGE.read_text(encoding="utf-8"))

    async def stream(request: Request) -> Response:
        prompt = request.query_params.get("prompt") or PROMPT
        structured = client.stream(
            messages=[{"role": "user", "content": prompt}],
            schema=Person,
            # The local engine repairs a value that breaks the schema in place; a server gets
            # a fresh attempt, with the violation fed back.
            retry=Retry(max_attempts=max_attempts, backtrack=True),
            progress=True,  # the page shows each attempt, and a violation when one happens
            max_tokens=max_tokens,
        )
        # A browser that goes away cancels this response, which closes the generation.
        return StreamingResponse(
            sse_events(structured),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await client.aclose()

    return Starlette(routes=[Route("/", page), Route("/stream", stream)], lifespan=lifespan)


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible server (default: local model)")
    parser.add_argument("--model", help="the server's model name, or a local model")
    parser.add_argument("--api-key", help="the server's API key (default: $OPENAI_API_KEY)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=PORT)
    parser.add_argument("--max-tokens", type=int, default=160)
    args = parser.parse_args(argv)
    # The details of a failure the page shows without them (sse_events logs them).
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(name)s: %(message)s")
    if args.base_url:
        client = Client(base_url=args.base_url, model=args.model, api_key=args.api_key)
    else:
        client = Client.local(model=args.model)
    print(f"fieldstream web example: http://{args.host}:{args.port}/", flush=True)
    uvicorn.run(create_app(client, max_tokens=args.max_tokens), host=args.host, port=args.port)


if __name__ == "__main__":
    main()
