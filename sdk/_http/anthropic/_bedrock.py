"""Claude on Amazon Bedrock: the Messages API behind Bedrock's ``invoke-with-response-stream``
(``Client(provider="anthropic", platform="bedrock", ...)``).

What differs from Anthropic's own endpoint, as the ``anthropic`` package's ``AnthropicBedrock``
does it (``anthropic/lib/bedrock/_client.py``: ``_prepare_options``, ``_prepare_request``;
``anthropic/lib/bedrock/_stream_decoder.py``):

- the URL: ``POST {base}/model/{model}/invoke-with-response-stream``, ``base``
  ``https://bedrock-runtime.{region}.amazonaws.com`` (``base_url`` or
  ``$ANTHROPIC_BEDROCK_BASE_URL`` replace it), the model id percent-quoted but for ``:``;
- the body: no ``model`` and no ``stream`` (the URL says both), ``anthropic_version``
  :data:`BEDROCK_VERSION` (unless ``extra`` gives one), and an ``anthropic-beta`` header's
  betas as ``anthropic_beta`` (a list) in the body;
- the credentials: ``api_key`` or ``$AWS_BEARER_TOKEN_BEDROCK`` (a Bedrock API key) as a bearer
  token; else each request is signed with SigV4 (service ``bedrock``) by botocore's signer
  (the ``bedrock`` extra), from the keys given (``aws_access_key``, ``aws_secret_key``,
  ``aws_session_token``) or botocore's own chain (environment, ``aws_profile``, config files,
  instance roles), resolved once, off the event loop;
- the stream: the AWS event-stream binary framing (:mod:`sdk._http._eventstream`), each
  ``chunk`` event's payload ``{"bytes": "<base64 of one Messages event's JSON>"}``; an
  ``exception`` frame is an error event of Anthropic's kind (:data:`EXCEPTIONS`), read by the
  same decoder as the first-party stream.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import json
import os
import sys
import urllib.parse
from collections.abc import Mapping
from typing import Any

import anyio

from sdk._http._eventstream import EventStreamDecoder, EventStreamFrameError
from sdk._http._framing import ServerSentEvent

__all__ = ["BEDROCK_VERSION", "EXCEPTIONS", "Bedrock", "BedrockFraming"]

BEDROCK_VERSION = "bedrock-2023-05-31"
"""The ``anthropic_version`` Bedrock's Messages API takes in the body."""

EXCEPTIONS: Mapping[str, str] = {
    "throttlingException": "rate_limit_error",
    "serviceUnavailableException": "overloaded_error",
    "internalServerException": "api_error",
    "modelStreamErrorException": "api_error",
    "modelTimeoutException": "timeout_error",
    "validationException": "invalid_request_error",
    "accessDeniedException": "permission_error",
    "resourceNotFoundException": "not_found_error",
}
"""Bedrock's stream exceptions (``:exception-type``) -> Anthropic's error ``type``, so each is
the status error (and retryable or not) that Anthropic's own error event would be."""


class BedrockFraming:
    """Bytes of the event stream in, Messages events out (the read loop's framing)."""

    content_types: tuple[str, ...] = ("application/vnd.amazon.eventstream",)

    def __init__(self, *, max_size: int) -> None:
        self._frames = EventStreamDecoder(max_payload=max_size)

    def feed_data(self, piece: bytes) -> list[str | ServerSentEvent]:
        """The Messages events the frames that ``piece`` completes carry."""
        out: list[str | ServerSentEvent] = []
        for message in self._frames.feed(piece):
            kind = message.headers.get(":message-type")
            if kind in ("exception", "error"):
                name = message.headers.get(":exception-type") or message.headers.get(":error-code")
                out.append(_error(str(name), _said(message.payload), message.offset))
            elif kind == "event" and message.headers.get(":event-type") == "chunk":
                out.append(_chunk(message.payload, message.offset))
        return out

    def end(self) -> list[str | ServerSentEvent]:
        """The body ended: a frame cut off is an error event (retried as a failure mid-way)."""
        try:
            self._frames.end()
        except EventStreamFrameError as exc:
            return [_error("internalServerException", str(exc), exc.offset)]
        return []


def _chunk(payload: bytes, offset: int) -> ServerSentEvent:
    try:
        raw = json.loads(payload)["bytes"]
        data = base64.b64decode(raw, validate=True).decode("utf-8")
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise EventStreamFrameError(
            offset, f"a chunk's payload is not {{'bytes': <base64 of UTF-8>}} ({exc})"
        ) from None
    try:
        event = json.loads(data)
    except ValueError:
        event = None
    name = event.get("type") if isinstance(event, dict) else None
    return ServerSentEvent(name if isinstance(name, str) else "", data, "", None)


def _said(payload: bytes) -> str:
    try:
        said = json.loads(payload)
    except ValueError:
        return payload.decode("utf-8", "replace")
    message = said.get("message") or said.get("Message") if isinstance(said, dict) else None
    return message if isinstance(message, str) else payload.decode("utf-8", "replace")


def _error(name: str, message: str, offset: int) -> ServerSentEvent:
    kind = EXCEPTIONS.get(name, name)
    error = {"type": kind, "message": f"{name}: {message} (Bedrock, frame at byte {offset})"}
    return ServerSentEvent("error", json.dumps({"type": "error", "error": error}), "", None)


class Bedrock:
    """Where and how one backend reaches Claude on Bedrock (see the module docstring)."""

    framing = BedrockFraming

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        region: str | None,
        access_key: str | None,
        secret_key: str | None,
        session_token: str | None,
        profile: str | None,
    ) -> None:
        keys = (access_key, secret_key, session_token, profile)
        if api_key is not None and any(k is not None for k in keys):
            raise ValueError(
                "platform='bedrock' takes api_key (a Bedrock API key) or AWS credentials "
                "(aws_access_key, aws_secret_key, aws_session_token, aws_profile), not both"
            )
        region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if not region:
            raise ValueError(
                "platform='bedrock' needs a region: pass aws_region=... or set AWS_REGION"
            )
        self.region = region
        root = base_url or os.environ.get("ANTHROPIC_BEDROCK_BASE_URL")
        self.root = (root or f"https://bedrock-runtime.{region}.amazonaws.com").rstrip("/")
        self.token = api_key if api_key is not None else os.environ.get("AWS_BEARER_TOKEN_BEDROCK")
        self._keys = keys
        self._credentials: Any = None
        if self.token is None:
            _botocore()  # the extra is needed: say so at Client(...), not at the first request

    def url(self, model: str) -> str:
        """The endpoint for ``model`` (a Bedrock model id or an inference profile's ARN)."""
        return (
            f"{self.root}/model/{urllib.parse.quote(model, safe=':')}/invoke-with-response-stream"
        )

    def body(self, body: dict[str, Any], headers: Mapping[str, str]) -> dict[str, Any]:
        """The Messages body as Bedrock takes it: no ``model``, no ``stream``, its
        ``anthropic_version``, the ``anthropic-beta`` header's betas in the body."""
        body = {k: v for k, v in body.items() if k not in ("model", "stream")}
        body.setdefault("anthropic_version", BEDROCK_VERSION)
        betas = {k.lower(): v for k, v in headers.items()}.get("anthropic-beta")
        if betas:
            body.setdefault("anthropic_beta", [b.strip() for b in betas.split(",") if b.strip()])
        return body

    async def headers(self, url: str, payload: bytes, sent: Mapping[str, str]) -> dict[str, str]:
        """The credential headers of one request: the bearer token, or its SigV4 signature
        (over ``url``, ``payload`` and the headers ``sent``)."""
        if self.token is not None:
            return {"Authorization": f"Bearer {self.token}"}
        if self._credentials is None:
            self._credentials = await anyio.to_thread.run_sync(self._resolve)
        botocore = _botocore()
        frozen = await anyio.to_thread.run_sync(self._credentials.get_frozen_credentials)
        signed = botocore.awsrequest.AWSRequest(
            method="POST",
            url=url,
            data=payload,
            headers={k: v for k, v in sent.items() if k.lower() != "connection"},
        )
        botocore.auth.SigV4Auth(frozen, "bedrock", self.region).add_auth(signed)
        return {k: v for k, v in signed.headers.items() if k.lower() not in _UNSIGNED_COPY}

    def _resolve(self) -> Any:
        botocore = _botocore()
        access, secret, token, profile = self._keys
        if access is not None and secret is not None:
            return botocore.credentials.Credentials(access, secret, token)
        session = botocore.session.Session(profile=profile)
        credentials = session.get_credentials()
        if credentials is None:
            raise ValueError(
                "Missing credentials: no AWS credentials were found for Bedrock; pass "
                "aws_access_key=... and aws_secret_key=..., aws_profile=..., or api_key=... "
                "(a Bedrock API key), or set AWS_ACCESS_KEY_ID / AWS_BEARER_TOKEN_BEDROCK"
            )
        return credentials


_UNSIGNED_COPY = frozenset({"content-type", "accept"})  # sent by the transport already


def _botocore() -> Any:
    try:
        for part in ("auth", "awsrequest", "credentials", "session"):
            importlib.import_module(f"botocore.{part}")
    except ImportError:
        raise ImportError(
            "platform='bedrock' signs requests with botocore: pip install 'fieldstream[bedrock]' "
            "(or pass api_key=... with a Bedrock API key)"
        ) from None
    return sys.modules["botocore"]
