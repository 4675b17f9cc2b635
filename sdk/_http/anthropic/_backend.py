"""The Anthropic backend: the Messages API (``POST /v1/messages``) over httpx, streamed as
server-sent events.

It builds the body (:mod:`._request`), sends it through the shared
:class:`~sdk._http._transport.HttpTransport`, reads the event stream with the read loop every
HTTP backend shares (:func:`~sdk._http._read_loop.stream_deltas`) and turns Anthropic's events
into deltas (:mod:`._events`). Closing the iterator :meth:`AnthropicBackend.generate` returns
closes the HTTP response at once: the connection is dropped, which is how the API learns to
stop generating. There are no retries here: :mod:`sdk._retry` decides them (a 529
``overloaded_error`` is a 5xx, retried; ``retry-after`` is honoured), and the stream sends the
request again.

Errors are those of Anthropic's SDK, as fieldstream's classes: a status is its
:class:`~sdk.APIStatusError` family, with the body's ``error`` object, the message
``"{type}: {message}"`` and the ``request-id`` header as ``request_id``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any, Literal, TypeAlias

from typing_extensions import Unpack

from sdk._backend import Delta, GenerationRequest
from sdk._errors import APIStatusError
from sdk._http._http_backend import EndpointOptions, HttpBackend, HttpOptions
from sdk._http._request_checks import calls_forced
from sdk._http._transport import Opened
from sdk._http.anthropic._bedrock import Bedrock
from sdk._http.anthropic._cures import anthropic_policy
from sdk._http.anthropic._decoder import AnthropicDecoder
from sdk._http.anthropic._errors import anthropic_status_error
from sdk._http.anthropic._request import (
    anthropic_request,
    anthropic_shows_schema,
    check_anthropic_request,
)
from sdk._http.anthropic._vertex import Vertex
from sdk._server_policy import attach_policy

__all__ = [
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_VERSION",
    "PLATFORMS",
    "AnthropicBackend",
    "AnthropicOptions",
    "Platform",
]

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
"""Where requests go when no base URL is given and ``$ANTHROPIC_BASE_URL`` is not set."""

ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header sent (the API version Anthropic's SDK sends)."""


Platform: TypeAlias = Literal["anthropic", "bedrock", "vertex"]
"""Where Claude is reached: Anthropic's API, Amazon Bedrock, Google Vertex AI."""

PLATFORMS: tuple[Platform, ...] = ("anthropic", "bedrock", "vertex")
"""The platforms ``Client(provider="anthropic", platform=...)`` takes, the default first."""

_BEDROCK = ("aws_region", "aws_access_key", "aws_secret_key", "aws_session_token", "aws_profile")
_VERTEX = ("region", "project_id", "access_token", "credentials")
_OWN = {"anthropic": (), "bedrock": _BEDROCK, "vertex": _VERTEX}


class AnthropicOptions(HttpOptions, total=False):
    """The options of :class:`AnthropicBackend` besides ``base_url``, ``api_key`` and
    ``model`` (``Client(provider="anthropic", ...)`` takes the same): the shared ones,
    ``eager_input_streaming``, ``platform`` and each platform's own (named as the
    ``anthropic`` package's ``AnthropicBedrock`` and ``AnthropicVertex`` name them)."""

    platform: Platform
    """Where Claude is reached: ``"anthropic"`` (the default), ``"bedrock"``
    (:mod:`._bedrock`), ``"vertex"`` (:mod:`._vertex`)."""
    aws_region: str | None
    """Bedrock: the AWS region (default ``$AWS_REGION``, ``$AWS_DEFAULT_REGION``)."""
    aws_access_key: str | None
    """Bedrock: the access key id (default: botocore's credential chain)."""
    aws_secret_key: str | None
    """Bedrock: the secret access key."""
    aws_session_token: str | None
    """Bedrock: the session token of temporary credentials."""
    aws_profile: str | None
    """Bedrock: the profile botocore reads the credentials of."""
    region: str | None
    """Vertex: the location (``us-east5``, ``europe-west1``, ``global``...; default
    ``$CLOUD_ML_REGION``)."""
    project_id: str | None
    """Vertex: the Google Cloud project (default ``$ANTHROPIC_VERTEX_PROJECT_ID``, else ADC's)."""
    access_token: str | None
    """Vertex: an OAuth access token (default: ``credentials``, else ADC)."""
    credentials: Any
    """Vertex: a ``google.auth`` credentials object (refreshed when expired)."""

    eager_input_streaming: bool | None
    """Each tool's ``eager_input_streaming`` (fine-grained tool streaming): ``True`` by
    default, so a tool's input streams as Claude writes it; ``False`` sends ``false``,
    ``None`` leaves the field out (:mod:`._request`)."""


class _Arguments(EndpointOptions, AnthropicOptions, total=False):
    """All that :class:`AnthropicBackend` takes."""


class AnthropicBackend(HttpBackend):
    """A :class:`~sdk._backend.Backend` for Anthropic's Messages API.

    ``base_url`` is the API root (``https://api.anthropic.com``; ``/v1/messages`` is added); as
    in Anthropic's SDK it defaults to ``$ANTHROPIC_BASE_URL``, else Anthropic's. ``api_key``
    defaults to ``$ANTHROPIC_API_KEY`` and is sent as ``x-api-key``; without one,
    ``$ANTHROPIC_AUTH_TOKEN`` is sent as a bearer token. Without either, a request to
    Anthropic's own URL is refused here with a ``ValueError`` that says how to give one (a
    proxy or a local server may need none). ``anthropic-version`` is :data:`ANTHROPIC_VERSION`
    unless ``headers`` say otherwise (``anthropic-beta`` goes in ``headers`` too).

    ``model`` is required by the API (here or per request). ``http_client``, ``timeout``,
    ``headers`` / ``default_headers`` and ``default_query`` are as for
    :class:`~sdk._http.openai.OpenAIBackend`.
    """

    path = "/v1/messages"
    """The endpoint, below ``base_url``."""

    def __init__(self, **options: Unpack[_Arguments]) -> None:
        given = self._settings(options, ("eager_input_streaming", "platform", *_BEDROCK, *_VERTEX))
        eager = options.get("eager_input_streaming", True)
        if eager is not None and not isinstance(eager, bool):
            raise TypeError(f"eager_input_streaming must be a bool or None, not {eager!r}")
        self._eager: bool | None = eager
        platform = options.get("platform", "anthropic")
        if platform not in PLATFORMS:
            raise ValueError(
                f"platform must be one of {', '.join(map(repr, PLATFORMS))}, not {platform!r}"
            )
        stray = [k for k in (*_BEDROCK, *_VERTEX) if k in options and k not in _OWN[platform]]
        if stray:
            raise TypeError(
                f"{', '.join(map(repr, stray))} {'is' if len(stray) == 1 else 'are'} not an "
                f"option of platform={platform!r}"
            )
        self.platform: Platform = platform
        """Where Claude is reached."""
        self._platform: Bedrock | Vertex | None = None
        if platform == "bedrock":
            self._platform = Bedrock(
                base_url=given.base_url,
                api_key=given.api_key,
                region=options.get("aws_region"),
                access_key=options.get("aws_access_key"),
                secret_key=options.get("aws_secret_key"),
                session_token=options.get("aws_session_token"),
                profile=options.get("aws_profile"),
            )
        elif platform == "vertex":
            self._platform = Vertex(
                base_url=given.base_url,
                api_key=given.api_key,
                region=options.get("region"),
                project_id=options.get("project_id"),
                access_token=options.get("access_token"),
                credentials=options.get("credentials"),
            )
        if self._platform is not None:
            accept = self._platform.framing.content_types[0]
            self._transport = given.transport(
                self._platform.root, {"Content-Type": "application/json", "Accept": accept}
            )
            return
        root = given.base_url or os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE_URL
        url = given.endpoint(self.path, root)
        sent = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            "anthropic-version": ANTHROPIC_VERSION,
        }
        key = given.api_key if given.api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        token = None if key else os.environ.get("ANTHROPIC_AUTH_TOKEN")
        if key:
            sent["x-api-key"] = key
        elif token:
            sent["Authorization"] = f"Bearer {token}"
        elif url.startswith(ANTHROPIC_BASE_URL):
            raise ValueError(
                "Missing credentials: Anthropic's API needs a key; pass api_key=... or set the "
                "ANTHROPIC_API_KEY environment variable (or give the base_url of another server)"
            )
        self._transport = given.transport(url, sent)

    @property
    def url(self) -> str:
        """Where requests go (relative to ``http_client``'s base URL when it has one)."""
        return self._transport.url

    def shows_schema(self, request: GenerationRequest) -> bool:
        """Whether Claude is shown ``request.schema``
        (:func:`~sdk._http.anthropic._request.anthropic_shows_schema`)."""
        return anthropic_shows_schema(request)

    def check_request(self, request: GenerationRequest) -> None:
        """Raise :class:`~sdk.UnsupportedConstraint` when the Messages API cannot be sent
        ``request`` (:func:`~sdk._http.anthropic._request.check_anthropic_request`)."""
        check_anthropic_request(request)

    def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        """Stream one message. Raises :class:`~sdk.TransportError` for HTTP and connection
        failures and error events (``status``, ``retryable``, ``retry_after``,
        ``request_id``), :class:`~sdk.StreamUsageError` for messages the API cannot be sent."""
        model = request.model or self.model
        body, wrapped = anthropic_request(request, model=model, eager=self._eager)
        decoder = AnthropicDecoder(tools=calls_forced(request))
        policy = anthropic_policy(body, request)  # what the API masks (_cures.py)
        if self._platform is None:
            deltas = self._deltas(request, body, decoder, unwrap=wrapped)
        else:
            if not model:
                raise ValueError(f"platform={self.platform!r} needs a model (here or per request)")
            body = self._platform.body(body, self._transport.headers)
            deltas = self._deltas(
                request, body, decoder, unwrap=wrapped, url=model, framing=self._platform.framing
            )
        attach_policy(deltas, policy)
        return deltas

    async def _open(self, payload: bytes, request: GenerationRequest, url: str | None) -> Opened:
        """Send the request (:meth:`~sdk._http._transport.HttpTransport.open`); a status error
        as Anthropic's SDK gives it (:func:`anthropic_status_error`). On Bedrock and Vertex,
        ``url`` is the model: the endpoint is made here, with the request's credentials (a
        SigV4 signature, an access token fetched or refreshed)."""
        headers = None
        if self._platform is not None and url is not None:
            if isinstance(self._platform, Vertex):
                await self._platform.prepare()
            url = self._platform.url(url)
            headers = await self._platform.headers(url, payload, self._transport.headers)
        try:
            return await self._transport.open(payload, request, url=url, headers=headers)
        except APIStatusError as exc:
            error = anthropic_status_error(exc)
            if error.request_id is None and error.response is not None:
                error.request_id = error.response.headers.get("x-amzn-requestid")  # Bedrock's
            raise error from None
