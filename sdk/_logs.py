"""The request/response debug log, and ``FIELDSTREAM_LOG``.

Every HTTP request an httpx backend sends (:meth:`sdk._http._transport.HttpTransport.open` calls
:func:`log_request`), and the status and headers of every response, is logged at DEBUG on the
``fieldstream`` logger: method, URL, headers, body; status, headers, request id. Secrets never
reach it: the value of every header that carries a credential (``Authorization``, ``api-key``,
``Cookie``, any name holding ``key``, ``token``, ``secret``, ``auth``, ``cookie`` or
``password``) and of such query parameters is written as ``<redacted>``. It costs nothing
while DEBUG is off.

``FIELDSTREAM_LOG=debug`` (or ``info``, ``warning``, ``error``), read when ``sdk`` is imported,
turns the ``fieldstream`` logger on at that level with a basic handler on stderr, as
openai-python's ``OPENAI_LOG`` does; or configure the ``fieldstream`` logger yourself with
:mod:`logging`. Standard library only: the sans-I/O core may import it.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

if TYPE_CHECKING:
    import httpx

__all__ = [
    "REDACTED",
    "log_request",
    "log_response",
    "redact_headers",
    "redact_url",
    "setup_logging",
]

logger = logging.getLogger("fieldstream")

REDACTED = "<redacted>"
_SECRET_NAMES = frozenset(
    {"authorization", "proxy-authorization", "api-key", "x-api-key", "cookie", "set-cookie"}
)
_SECRET_PARTS = ("key", "token", "secret", "auth", "cookie", "password", "signature")
_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}


def setup_logging(environ: Mapping[str, str] | None = None) -> None:
    """Apply ``FIELDSTREAM_LOG`` (from ``environ``, default ``os.environ``): the
    ``fieldstream`` logger at that level, and a basic handler on stderr if logging has none
    (``logging.basicConfig``). An unknown value does nothing."""
    value = (os.environ if environ is None else environ).get("FIELDSTREAM_LOG")
    level = _LEVELS.get((value or "").strip().lower())
    if level is None:
        return
    logging.basicConfig(
        format="[%(asctime)s - %(name)s:%(lineno)d - %(levelname)s] %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
    )
    logger.setLevel(level)


def _secret(name: str) -> bool:
    lowered = name.lower()
    return lowered in _SECRET_NAMES or any(part in lowered for part in _SECRET_PARTS)


def redact_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """``headers`` (name, value pairs) as a dict, each credential's value ``<redacted>``."""
    return {name: REDACTED if _secret(name) else value for name, value in headers}


def redact_url(url: str) -> str:
    """``url`` with the value of each query parameter that carries a credential
    ``<redacted>``, and any ``user:password@`` removed."""
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, REDACTED if _secret(k) else v) for k, v in pairs], safe="<>")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def log_request(
    client: httpx.AsyncClient,
    url: str,
    *,
    content: bytes,
    headers: Mapping[str, str],
    params: Mapping[str, str] | None,
) -> None:
    """Log the POST ``client`` is about to send (at DEBUG), as httpx will build it: the
    client's own headers and base URL included. Nothing is built while DEBUG is off."""
    if not logger.isEnabledFor(logging.DEBUG):
        return
    request = client.build_request("POST", url, content=content, headers=headers, params=params)
    try:
        body = json.dumps(json.loads(content), ensure_ascii=False)
    except ValueError:
        body = f"<{len(content)} bytes>"
    logger.debug(
        "HTTP Request: %s %s headers=%s body=%s",
        request.method,
        redact_url(str(request.url)),
        redact_headers(request.headers.multi_items()),
        body,
    )


def log_response(response: httpx.Response) -> None:
    """Log a response's status line and headers (at DEBUG), before its body is read."""
    if not logger.isEnabledFor(logging.DEBUG):
        return
    shown = redact_headers(response.headers.multi_items())
    logger.debug(
        'HTTP Response: %s %s "%d %s" request_id=%s headers=%s',
        response.request.method,
        redact_url(str(response.request.url)),
        response.status_code,
        response.reason_phrase,
        response.headers.get("x-request-id"),
        shown,
    )
