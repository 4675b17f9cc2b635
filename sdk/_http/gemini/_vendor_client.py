"""The backend over the caller's own ``google.genai.Client`` (``Client.from_genai``).

The request goes through ``client.aio.models.generate_content_stream(...)``, so what the
caller set up on that client is used as it is: the Gemini API or Vertex AI, its credentials
(an API key, Google application credentials), base URL, API version, headers and HTTP client.
The body is the one :func:`~sdk._http.gemini._request.gemini_body` builds for the httpx
backend, given to the SDK as its ``contents`` and ``GenerateContentConfig`` (the REST field
names, which its models read), and each record the SDK yields is read by the same decoder as
the httpx backend (:class:`~sdk._http.gemini._decoder.GeminiDecoder`). On a Vertex AI client
(``vertexai=True``) the calls' arguments are asked for in parts
(``stream_function_call_arguments``), read from the SDK's ``partial_args`` as the httpx backend
reads them. Closing the iterator closes the SDK's stream, and its HTTP response.

Its errors stay google-genai's too: a ``google.genai.errors.ClientError`` for HTTP 429 is raised
as an error that is both an :class:`~sdk.RateLimitError` and that ``ClientError``, so
``except google.genai.errors.APIError`` and ``except sdk.TransportError`` both catch it.
"""

from __future__ import annotations

import types as pytypes
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from sdk._backend import Delta, GenerationRequest, TextChunks
from sdk._errors import StreamUsageError, TransportError
from sdk._http._errors import both, status_error
from sdk._http._request_checks import calls_forced
from sdk._http._vendor_sdk import import_sdk
from sdk._http.gemini._cures import gemini_policy
from sdk._http.gemini._decoder import GeminiDecoder
from sdk._http.gemini._request import check_gemini_request, gemini_body
from sdk._server_policy import attach_policy

__all__ = ["GenaiSDKBackend"]


class GenaiSDKBackend:
    """A :class:`~sdk._backend.Backend` that streams through a ``google.genai.Client``.
    ``client`` is not closed by :meth:`aclose`: it belongs to the caller."""

    def __init__(self, client: Any, *, model: str) -> None:
        genai = import_sdk("google.genai", "from_genai", "google-genai")
        errors = import_sdk("google.genai.errors", "from_genai", "google-genai")
        types = import_sdk("google.genai.types", "from_genai", "google-genai")
        if not isinstance(client, genai.Client):
            raise TypeError(
                f"Client.from_genai() takes a google.genai.Client, not {type(client).__name__}"
            )
        if not isinstance(model, str):
            raise TypeError(f"model must be a str, not {type(model).__name__}")
        self._errors = errors
        self._types = types
        self._client = client
        self.model = model

    def shows_schema(self, request: GenerationRequest) -> bool:
        """As :meth:`~sdk._http.gemini.GeminiBackend.shows_schema`."""
        return request.mode in ("json_schema", "tool")

    def check_request(self, request: GenerationRequest) -> None:
        """As :meth:`~sdk._http.gemini.GeminiBackend.check_request`; per-request HTTP options
        (headers, query) are the caller's client's to set, and refused here."""
        check_gemini_request(request)
        if request.extra_headers or request.extra_query:
            raise StreamUsageError(
                "Client.from_genai sends through your google.genai.Client: set headers and "
                "query parameters on its http_options, not per request"
            )

    def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        """Stream one generation; errors as for the httpx backend, each also google-genai's
        own exception."""
        # Vertex AI streams a call's arguments in parts; google-genai refuses to ask the
        # Gemini API for it.
        body = gemini_body(request, stream_arguments=bool(getattr(self._client, "vertexai", False)))
        contents = body.pop("contents")
        config = {**body.pop("generationConfig", {}), **body}
        if request.timeout is not None and isinstance(request.timeout, (int, float)):
            config["httpOptions"] = {"timeout": int(request.timeout * 1000)}
        deltas = TextChunks(
            self._deltas(
                request.model or self.model,
                contents,
                config,
                GeminiDecoder(tools=calls_forced(request)),
            )
        )
        attach_policy(deltas, gemini_policy(config))  # what Gemini masks (_cures.py)
        return deltas

    async def _deltas(
        self, model: str, contents: Any, config: dict[str, Any], decoder: GeminiDecoder
    ) -> AsyncGenerator[Delta, None]:
        types = self._types
        stream = None
        try:
            stream = await self._call(
                self._client.aio.models.generate_content_stream(
                    model=model,
                    contents=[types.Content.model_validate(c) for c in contents],
                    config=types.GenerateContentConfig.model_validate(config),
                )
            )
            while True:
                try:
                    chunk = await self._call(stream.__anext__())
                except StopAsyncIteration:
                    break
                record = chunk.model_dump_json(by_alias=True, exclude_none=True)
                out = decoder.decode("", record)
                for delta in [Delta(text=out)] if isinstance(out, str) else out:
                    yield delta
            for delta in decoder.end():
                yield delta
        finally:
            if stream is not None:
                await _aclose_chain(stream)

    async def _call(self, awaitable: Any) -> Any:
        """Await an SDK call; its errors raised as ours and theirs at once."""
        errors = self._errors
        try:
            return await awaitable
        except errors.APIError as exc:
            status = exc.code if isinstance(exc.code, int) else 500
            response = getattr(exc, "response", None)
            headers = getattr(response, "headers", None) or {}
            said = f"{exc.status}: {exc.message}" if exc.status else str(exc.message)
            error: TransportError = status_error(
                f"HTTP {status}: {said}",
                status=status,
                headers=headers,
                body=exc.details,
                response=response,
            )
            raise both(error, exc) from exc

    async def aclose(self) -> None:
        """Nothing to release: the genai client belongs to the caller."""


async def _aclose_chain(stream: Any) -> None:
    """Close the SDK's stream and the async generators it reads from, innermost first.

    google-genai's stream is an async generator iterating over other async generators, and
    closing the outer one leaves the inner ones to the garbage collector (trio then warns that
    they were never closed, and the HTTP response is closed late). The inner generators are
    found in each generator's suspended frame (``ag_frame``, as :mod:`inspect` documents it);
    each is closed after those it reads from, so the response is closed now."""
    chain: list[Any] = []
    found: Any = stream
    while isinstance(found, pytypes.AsyncGeneratorType) and found not in chain:
        chain.append(found)
        frame = found.ag_frame
        inner = [v for v in (frame.f_locals.values() if frame else ()) if _agen(v)]
        found = inner[0] if inner else None
    for generator in reversed(chain):
        await generator.aclose()
    if not chain and hasattr(stream, "aclose"):
        await stream.aclose()


def _agen(value: Any) -> bool:
    return isinstance(value, pytypes.AsyncGeneratorType)
