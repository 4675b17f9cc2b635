"""The Gemini backend: ``models/{model}:streamGenerateContent?alt=sse`` over httpx, to the
Gemini API or (``vertex=True``) Vertex AI.

It builds the body (:mod:`._request`), sends it through the shared
:class:`~sdk._http._transport.HttpTransport` to the model's URL, reads the server-sent events
with the shared read loop (:func:`~sdk._http._read_loop.stream_deltas`) and turns each record
into deltas (:mod:`._events`). Closing the iterator closes the connection. A status that is
not 2xx is its :class:`~sdk.APIStatusError` class (429 ``RESOURCE_EXHAUSTED`` and 5xx
retried, ``Retry-After`` honoured), the body's ``error`` object kept.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

from typing_extensions import Unpack

from sdk._backend import Delta, GenerationRequest
from sdk._errors import StreamUsageError
from sdk._http._http_backend import EndpointOptions, HttpBackend, HttpOptions
from sdk._http._request_checks import calls_forced
from sdk._http._transport import Opened
from sdk._http.gemini._cures import gemini_policy
from sdk._http.gemini._decoder import GeminiDecoder
from sdk._http.gemini._request import check_gemini_request, gemini_body
from sdk._http.gemini._vertex import VERTEX_API_VERSION, VertexAuth, vertex_root
from sdk._server_policy import attach_policy

__all__ = ["GEMINI_API_VERSION", "GEMINI_BASE_URL", "GeminiBackend", "GeminiOptions"]

GEMINI_BASE_URL = "https://generativelanguage.googleapis.com"
"""Where requests go when no base URL is given."""

GEMINI_API_VERSION = "v1beta"
"""The API version in the URL (``responseJsonSchema`` and ``parametersJsonSchema`` are
documented there)."""


class GeminiOptions(HttpOptions, total=False):
    """The options of :class:`GeminiBackend` besides ``base_url``, ``api_key``, ``model``."""

    api_version: str | None
    """The API's version in the URL (``None``: ``v1beta`` on the Gemini API, ``v1`` on Vertex
    AI)."""
    vertex: bool
    """Vertex AI instead of the Gemini API (google-genai's ``vertexai=True``)."""
    project: str | None
    location: str | None
    credentials: Any
    """A ``google.auth.credentials.Credentials`` (Vertex AI)."""
    access_token: str | None
    stream_arguments: bool
    """Ask Vertex AI for the calls' arguments in parts (default ``True`` on Vertex AI)."""


_VERTEX_ONLY = ("project", "location", "credentials", "access_token", "stream_arguments")


class _Arguments(EndpointOptions, GeminiOptions, total=False):
    """All that :class:`GeminiBackend` takes."""


class GeminiBackend(HttpBackend):
    """A :class:`~sdk._backend.Backend` for the Gemini API's ``streamGenerateContent``.

    ``base_url`` defaults to ``https://generativelanguage.googleapis.com`` (``/{api_version}/
    models/{model}:streamGenerateContent?alt=sse`` is added); ``api_version`` to
    :data:`GEMINI_API_VERSION`. ``api_key`` defaults to ``$GOOGLE_API_KEY``, else
    ``$GEMINI_API_KEY`` (the ``google-genai`` package's order), and is sent as
    ``x-goog-api-key``; without one a request to Google's URL is refused here with a
    ``ValueError``. ``model`` (``"gemini-2.5-flash"``, or ``"models/..."``) is needed, here or
    per request. ``http_client``, ``timeout``, ``headers`` / ``default_headers``,
    ``default_query`` are as for :class:`~sdk._http.openai.OpenAIBackend`.

    ``vertex=True`` sends to Vertex AI instead (:mod:`sdk._http.gemini._vertex`: ``project``,
    ``location``, and ``access_token``, ``credentials``, an express-mode ``api_key`` or the
    application default credentials; ``api_version`` defaults to ``v1``), asking for the calls'
    arguments in parts unless ``stream_arguments=False``.
    """

    def __init__(self, **options: Unpack[_Arguments]) -> None:
        given = self._settings(options, GeminiOptions.__optional_keys__)
        vertex = options.get("vertex", False)
        if not isinstance(vertex, bool):
            raise TypeError(f"vertex must be a bool, not {vertex!r}")
        stream_arguments = options.get("stream_arguments", vertex)
        if not isinstance(stream_arguments, bool):
            raise TypeError(f"stream_arguments must be a bool, not {stream_arguments!r}")
        self._vertex: VertexAuth | None = None
        self.stream_arguments = stream_arguments
        """Whether requests ask for the calls' arguments in parts (Vertex AI's
        ``streamFunctionCallArguments``)."""
        default_version = VERTEX_API_VERSION if vertex else GEMINI_API_VERSION
        api_version = options.get("api_version")
        if api_version is None:
            api_version = default_version
        if not isinstance(api_version, str) or not api_version:
            raise TypeError(f"api_version must be a str such as 'v1beta', not {api_version!r}")
        sent = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if vertex:
            self._vertex = VertexAuth(
                project=options.get("project"),
                location=options.get("location"),
                api_key=given.api_key,
                access_token=options.get("access_token"),
                credentials=options.get("credentials"),
            )
            root = given.endpoint(
                "/" + api_version, given.base_url or vertex_root(self._vertex.location)
            )
            self._transport = given.transport(root, sent)
            return
        given_options: dict[str, Any] = dict(options)
        for name in _VERTEX_ONLY:
            value = given_options.get(name)
            if value is not None and value is not False:  # stream_arguments=False: as it is
                raise TypeError(
                    f"{name}= is Vertex AI's: pass vertex=True too (the Gemini API takes an "
                    "api_key and streams a call's arguments whole)"
                )
        root = given.endpoint("/" + api_version, given.base_url or GEMINI_BASE_URL)
        key = given.api_key
        if key is None:
            key = os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY")
        if key:
            sent["x-goog-api-key"] = key.strip()
        elif root.startswith(GEMINI_BASE_URL):
            raise ValueError(
                "Missing credentials: the Gemini API needs a key; pass api_key=... or set the "
                "GEMINI_API_KEY (or GOOGLE_API_KEY) environment variable"
            )
        self._transport = given.transport(root, sent)

    @property
    def vertex(self) -> VertexAuth | None:
        """Vertex AI's settings (``None``: the Gemini API)."""
        return self._vertex

    def url_for(self, model: str) -> str:
        """Where a request for ``model`` goes."""
        if self._vertex is not None:
            name = self._vertex.path(model)
        else:
            named = model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"
            name = quote(named, safe="/")
        return f"{self._transport.url}/{name}:streamGenerateContent?alt=sse"

    def shows_schema(self, request: GenerationRequest) -> bool:
        """Whether Gemini shows ``request.schema`` to the model (for ``show_schema=None``): a
        ``responseJsonSchema`` and a function declaration are in the model's context (the
        response schema counts towards the input token limit); ``json_object`` and ``none``
        send no schema."""
        return request.mode in ("json_schema", "tool")

    def check_request(self, request: GenerationRequest) -> None:
        """Raise :class:`~sdk.UnsupportedConstraint` when Gemini cannot be sent ``request``
        (:func:`~sdk._http.gemini._request.check_gemini_request`)."""
        check_gemini_request(request)

    def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        """Stream one generation. Raises :class:`~sdk.TransportError` for HTTP and connection
        failures and error records, :class:`~sdk.StreamUsageError` for messages Gemini cannot
        be sent or no model."""
        model = request.model or self.model
        if not model:
            raise StreamUsageError("Gemini needs a model: Client(..., model=...) or model=...")
        body = gemini_body(request, stream_arguments=self.stream_arguments)
        decoder = GeminiDecoder(tools=calls_forced(request))
        if self._vertex is not None:  # the URL may need the project the credentials name
            deltas = self._deltas(request, body, decoder)
        else:
            deltas = self._deltas(request, body, decoder, url=self.url_for(model))
        attach_policy(deltas, gemini_policy(body))  # what Gemini masks (_cures.py)
        return deltas

    async def _open(self, payload: bytes, request: GenerationRequest, url: str | None) -> Opened:
        """On Vertex AI, the credential fetched (or refreshed) for this request first."""
        vertex = self._vertex
        if vertex is None:
            return await self._transport.open(payload, request, url=url)
        headers = await vertex.headers()
        model = request.model or self.model or ""
        return await self._transport.open(
            payload, request, url=self.url_for(model), headers=headers
        )
