"""Claude on Google Vertex AI: the Messages API behind Vertex's ``streamRawPredict``
(``Client(provider="anthropic", platform="vertex", ...)``).

What differs from Anthropic's own endpoint, as the ``anthropic`` package's ``AnthropicVertex``
does it (``anthropic/lib/vertex/_client.py``: ``__init__``, ``_prepare_options``,
``_ensure_access_token``):

- the URL: ``POST {base}/projects/{project}/locations/{region}/publishers/anthropic/models/
  {model}:streamRawPredict``, ``base`` ``https://{region}-aiplatform.googleapis.com/v1``
  (``https://aiplatform.googleapis.com/v1`` for ``global``, the ``rep`` hosts for ``us`` and
  ``eu``; ``base_url`` or ``$ANTHROPIC_VERTEX_BASE_URL`` replace it);
- the body: no ``model`` (the URL says it), ``anthropic_version`` :data:`VERTEX_VERSION`
  (unless ``extra`` gives one); ``stream: true`` stays;
- the credentials: an OAuth access token as a bearer token: ``access_token`` as given, else
  ``credentials`` (a ``google.auth`` credentials object), else Application Default
  Credentials through ``google-auth`` (the ``vertex`` extra), refreshed off the event loop
  when expired; the project from ``project_id``, ``$ANTHROPIC_VERTEX_PROJECT_ID`` or ADC;
  the region from ``region`` or ``$CLOUD_ML_REGION``;
- the stream: server-sent events, the same as Anthropic's.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping
from typing import Any

import anyio

from sdk._http._framing import EventStreamParser

__all__ = ["VERTEX_VERSION", "Vertex"]

VERTEX_VERSION = "vertex-2023-10-16"
"""The ``anthropic_version`` Vertex AI's Claude endpoint takes in the body."""

_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
_HOSTS = {
    "global": "https://aiplatform.googleapis.com/v1",
    "us": "https://aiplatform.us.rep.googleapis.com/v1",
    "eu": "https://aiplatform.eu.rep.googleapis.com/v1",
}


class Vertex:
    """Where and how one backend reaches Claude on Vertex AI (see the module docstring)."""

    framing = EventStreamParser

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        region: str | None,
        project_id: str | None,
        access_token: str | None,
        credentials: Any,
    ) -> None:
        if api_key is not None:
            raise ValueError(
                "platform='vertex' takes an OAuth token, not an API key: pass "
                "access_token=..., credentials=... or leave both out for Application Default "
                "Credentials"
            )
        region = region or os.environ.get("CLOUD_ML_REGION")
        if not region:
            raise ValueError(
                "platform='vertex' needs a region: pass region=... (e.g. 'us-east5' or "
                "'global') or set CLOUD_ML_REGION"
            )
        self.region = region
        root = base_url or os.environ.get("ANTHROPIC_VERTEX_BASE_URL")
        self.root = root or _HOSTS.get(region, f"https://{region}-aiplatform.googleapis.com/v1")
        self.root = self.root.rstrip("/")
        self.project_id = project_id or os.environ.get("ANTHROPIC_VERTEX_PROJECT_ID")
        self.access_token = access_token
        self._credentials = credentials
        if access_token is None and credentials is None:
            _google_auth()  # the extra is needed: say so at Client(...), not at the first request

    def url(self, model: str) -> str:
        """The endpoint for ``model`` (needs the project: given, or from ADC on the first
        request)."""
        if not self.project_id:
            raise ValueError(
                "platform='vertex' needs a project: pass project_id=... or set "
                "ANTHROPIC_VERTEX_PROJECT_ID"
            )
        parts = [urllib.parse.quote(p, safe="") for p in (self.project_id, self.region)]
        name = urllib.parse.quote(model, safe="@")
        return (
            f"{self.root}/projects/{parts[0]}/locations/{parts[1]}/publishers/anthropic/models/"
            f"{name}:streamRawPredict"
        )

    def body(self, body: dict[str, Any], headers: Mapping[str, str]) -> dict[str, Any]:
        """The Messages body as Vertex takes it: no ``model``, its ``anthropic_version``."""
        body = {k: v for k, v in body.items() if k != "model"}
        body.setdefault("anthropic_version", VERTEX_VERSION)
        return body

    async def prepare(self) -> None:
        """Before the first URL: the project from ADC when none was given."""
        if not self.project_id and self.access_token is None and self._credentials is None:
            await self._token()

    async def headers(self, url: str, payload: bytes, sent: Mapping[str, str]) -> dict[str, str]:
        """The credential header of one request: ``Authorization: Bearer <token>``."""
        return {"Authorization": f"Bearer {await self._token()}"}

    async def _token(self) -> str:
        if self.access_token is not None:
            return self.access_token
        if self._credentials is None:
            self._credentials = await anyio.to_thread.run_sync(self._default)
        credentials = self._credentials
        if not getattr(credentials, "token", None) or getattr(credentials, "expired", False):
            google = _google_auth()
            await anyio.to_thread.run_sync(
                credentials.refresh, google.auth.transport.requests.Request()
            )
        token = credentials.token
        if not isinstance(token, str) or not token:
            raise ValueError("platform='vertex': the credentials gave no access token")
        return token

    def _default(self) -> Any:
        google = _google_auth()
        credentials, project = google.auth.default(scopes=[_SCOPE])
        if not self.project_id and isinstance(project, str):
            self.project_id = project
        return credentials


def _google_auth() -> Any:
    try:
        import google.auth
        import google.auth.transport.requests
    except ImportError:
        raise ImportError(
            "platform='vertex' reads Application Default Credentials with google-auth: pip "
            "install 'fieldstream[vertex]' (or pass access_token=...)"
        ) from None
    return google
