"""What every provider's httpx backend shares: the options its constructor takes besides its
own (``base_url``, ``api_key``, ``model``, and the transport's ``http_client``, ``timeout``,
``headers`` / ``default_headers``, ``default_query``), checked at the call, the
:class:`~sdk._http._transport.HttpTransport` they make, and what every such backend exposes
(:class:`HttpBackend`: ``model``, ``headers``, ``http_client``, ``aclose``), and the sending of
one request through the shared read loop (:meth:`HttpBackend._deltas`).

A provider's backend takes ``**options`` typed by a ``TypedDict`` that extends
:class:`EndpointOptions` and its folder's options (which extend :class:`HttpOptions`), reads
them with :meth:`HttpBackend._settings`, and builds its URL and headers its own way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

import httpx

from sdk._backend import Delta, GenerationRequest
from sdk._http._framing import EventStreamParser, Framing
from sdk._http._read_loop import EventDecoder, stream_deltas
from sdk._http._transport import HttpTransport, Opened, encode_body, estimate_tokens
from sdk._merge import merge_headers

__all__ = [
    "EndpointOptions",
    "HttpBackend",
    "HttpOptions",
    "HttpSettings",
    "check_http_options",
    "endpoint_url",
]


class HttpOptions(TypedDict, total=False):
    """The transport options every httpx backend takes (a provider's options extend these)."""

    http_client: httpx.AsyncClient | None
    timeout: httpx.Timeout | float | None
    headers: Mapping[str, str] | None
    default_headers: Mapping[str, str] | None
    default_query: Mapping[str, str] | None


class EndpointOptions(TypedDict, total=False):
    """Where and as whom every httpx backend sends (``Client(...)`` takes them by position)."""

    base_url: str | None
    api_key: str | None
    model: str | None


@dataclass(frozen=True, slots=True)
class HttpSettings:
    """The shared options of one backend, checked (:func:`check_http_options`)."""

    base_url: str | None
    api_key: str | None
    model: str | None
    http_client: httpx.AsyncClient | None
    timeout: httpx.Timeout | float | None
    headers: Mapping[str, str] | None
    default_headers: Mapping[str, str] | None
    default_query: Mapping[str, str] | None

    def endpoint(self, path: str, root: str) -> str:
        """Where requests go (:func:`endpoint_url`)."""
        return endpoint_url(path, self.base_url, self.http_client, root)

    def transport(
        self, url: str, sent: Mapping[str, str], *, query: Mapping[str, str] | None = None
    ) -> HttpTransport:
        """The transport to ``url``: the provider's headers ``sent``, then ``default_headers``
        and ``headers`` over them; ``query`` (default: ``default_query``) on every URL."""
        return HttpTransport(
            url,
            headers=merge_headers(sent, self.default_headers, self.headers),
            query=self.default_query if query is None else query,
            http_client=self.http_client,
            timeout=self.timeout,
        )


_SHARED = (*EndpointOptions.__optional_keys__, *HttpOptions.__optional_keys__)


class HttpBackend:
    """The base of every provider's httpx backend: what each exposes, and the reading of the
    shared options (:meth:`_settings`). A subclass sets ``_transport`` in its constructor."""

    model: str | None
    _transport: HttpTransport

    def _settings(self, given: Mapping[str, Any], own: Collection[str]) -> HttpSettings:
        """The shared options among ``given`` (the constructor's keyword arguments), checked;
        ``own``: the names of the provider's other options. A name neither shared nor its own
        is a ``TypeError``, worded as Python words it for a keyword a function does not take."""
        for name in given:
            if name not in _SHARED and name not in own:
                raise TypeError(
                    f"{type(self).__init__.__qualname__}() got an unexpected keyword argument "
                    f"{name!r}"
                )
        settings = HttpSettings(**{name: given.get(name) for name in _SHARED})
        check_http_options(settings)
        self.model = settings.model
        return settings

    def _deltas(
        self,
        request: GenerationRequest,
        body: Mapping[str, Any],
        decoder: EventDecoder,
        *,
        unwrap: bool = False,
        url: str | None = None,
        framing: Callable[..., Framing] = EventStreamParser,
    ) -> AsyncIterator[Delta]:
        """The deltas of ``request``, sent as ``body`` (to ``url``, default the transport's)
        by :meth:`_open` and read by the shared read loop
        (:func:`~sdk._http._read_loop.stream_deltas`) with ``framing`` and ``decoder``;
        ``unwrap``: the schema's root was sent wrapped."""
        payload = encode_body(body)
        return stream_deltas(
            lambda: self._open(payload, request, url),
            decoder,
            unwrap=unwrap,
            framing=framing,
            prompt_estimate=estimate_tokens(payload),
        )

    async def _open(self, payload: bytes, request: GenerationRequest, url: str | None) -> Opened:
        """Send the request (:meth:`~sdk._http._transport.HttpTransport.open`, which logs it);
        a provider with more to do (a status error in its SDK's words, a credential fetched per
        request) says so here."""
        return await self._transport.open(payload, request, url=url)

    @property
    def headers(self) -> Mapping[str, str]:
        """The headers every request is sent with (credentials included)."""
        return self._transport.headers

    @property
    def http_client(self) -> httpx.AsyncClient:
        """The httpx client requests go through."""
        return self._transport.http_client

    async def aclose(self) -> None:
        """Close the httpx client if this backend made it."""
        await self._transport.aclose()


def check_http_options(settings: HttpSettings) -> None:
    """The options every httpx backend takes, checked at the call (``TypeError`` /
    ``ValueError`` naming the argument)."""
    for name in ("base_url", "api_key", "model"):
        value = getattr(settings, name)
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    base_url = settings.base_url
    if isinstance(base_url, str) and not base_url.startswith(("http://", "https://")):
        raise ValueError(
            f"base_url must be an http(s) URL such as http://host:8000/v1, not {base_url!r}"
        )
    http_client: object = settings.http_client
    if http_client is not None and not isinstance(http_client, httpx.AsyncClient):
        raise TypeError(
            f"http_client must be an httpx.AsyncClient, not {type(http_client).__name__}"
            " (for an openai client, use Client.from_openai)"
        )
    timeout: object = settings.timeout
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float, httpx.Timeout))
    ):
        raise TypeError(f"timeout must be seconds or an httpx.Timeout, not {timeout!r}")
    for name in ("headers", "default_headers", "default_query"):
        mapping = getattr(settings, name)
        if mapping is not None and not isinstance(mapping, Mapping):
            raise TypeError(f"{name} must be a mapping of names to values, not {mapping!r}")


def endpoint_url(path: str, base_url: str | None, http_client: object, root: str) -> str:
    """Where a backend sends its requests: ``path`` relative to the caller's ``http_client``'s
    own base URL when it has one and no ``base_url`` was given, else ``root`` (the base URL
    given, from the environment or the provider's default) followed by ``path``."""
    if base_url is None and isinstance(http_client, httpx.AsyncClient):
        if str(http_client.base_url):
            return path.lstrip("/")
    return root.rstrip("/") + path
