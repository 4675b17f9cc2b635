"""Gemini on Vertex AI: where requests go and the credential each one carries.

``Client(provider="gemini", vertex=True, project=..., location=...)`` (as ``google.genai.Client
(vertexai=True, ...)``) sends the same body (:mod:`._request`, with
``streamFunctionCallArguments``) to Vertex AI's URL::

    https://{location}-aiplatform.googleapis.com/v1/projects/{project}/locations/{location}/
        publishers/google/models/{model}:streamGenerateContent?alt=sse

(``location="global"``: ``https://aiplatform.googleapis.com``; the multi-regions ``us`` and
``eu``: ``https://aiplatform.{location}.rep.googleapis.com``, as google-genai's
``_api_client`` chooses; ``base_url`` replaces the host, ``api_version`` the ``v1``).
``project`` defaults to ``$GOOGLE_CLOUD_PROJECT``, else the project of the application default
credentials; ``location`` to ``$GOOGLE_CLOUD_LOCATION``, else ``"global"``.

The credential, the first of:

- ``access_token="ya29..."``: sent as it is (``Authorization: Bearer``), never refreshed;
- ``credentials=``: a ``google.auth.credentials.Credentials`` (a service account's, a user's...),
  refreshed in a worker thread whenever it is not valid, before the request that needs it;
- ``api_key=`` with no project, location or other credential given: Vertex AI's express mode
  (``x-goog-api-key``, the URL without ``projects/.../locations/...``; a project in the
  environment is not read, as google-genai does);
- else the application default credentials (``google.auth.default`` with the
  ``cloud-platform`` scope), found at the first request.

The last two ways need ``google-auth`` (``pip install 'fieldstream[vertex]'``), imported only
then; without it, a :class:`~sdk.MissingDependencyError` says what to install. A credential's
``quota_project_id`` is sent as ``x-goog-user-project``.
"""

from __future__ import annotations

import importlib
import os
from typing import Any, Final
from urllib.parse import quote

import anyio
import anyio.to_thread

from sdk._errors import MissingDependencyError

__all__ = ["SCOPES", "VERTEX_API_VERSION", "VertexAuth", "vertex_root"]

VERTEX_API_VERSION: Final = "v1"
"""The API version in Vertex AI's URL (``streamFunctionCallArguments`` is in ``v1``)."""

SCOPES: Final = ("https://www.googleapis.com/auth/cloud-platform",)
"""The OAuth scope asked of the application default credentials (google-genai's)."""

_MULTI_REGIONS: Final = frozenset({"us", "eu"})


def vertex_root(location: str) -> str:
    """Vertex AI's host for ``location``."""
    if location == "global":
        return "https://aiplatform.googleapis.com"
    if location in _MULTI_REGIONS:
        return f"https://aiplatform.{location}.rep.googleapis.com"
    return f"https://{location}-aiplatform.googleapis.com"


def _google_auth(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(
            "Vertex AI with credentials or application default credentials needs the "
            "google-auth package: pip install 'fieldstream[vertex]' (or pass access_token=...)"
        ) from exc


class VertexAuth:
    """Where one backend's requests go on Vertex AI and the headers each one carries (see the
    module docstring). ``project`` may stay unknown until the application default credentials
    are read."""

    def __init__(
        self,
        *,
        project: str | None,
        location: str | None,
        api_key: str | None,
        access_token: str | None,
        credentials: Any,
    ) -> None:
        for name, value in (
            ("project", project),
            ("location", location),
            ("access_token", access_token),
        ):
            if value is not None and (not isinstance(value, str) or not value):
                raise TypeError(f"{name} must be a non-empty str, not {value!r}")
        if credentials is not None and not callable(getattr(credentials, "refresh", None)):
            raise TypeError(
                "credentials must be a google.auth.credentials.Credentials, not "
                f"{type(credentials).__name__}"
            )
        # Express mode: an API key, and no project, location or other credential given (as
        # google-genai: the key given wins over a project in the environment).
        express = bool(api_key) and not (project or location or access_token or credentials)
        self.api_key = api_key.strip() if express and api_key else None
        environ = os.environ
        self.project = project or (None if express else environ.get("GOOGLE_CLOUD_PROJECT") or None)
        self.location: str = (
            location or (None if express else environ.get("GOOGLE_CLOUD_LOCATION")) or "global"
        )
        self.access_token = access_token
        self.credentials = credentials
        self._lock: anyio.Lock | None = None

    @property
    def express(self) -> bool:
        """Whether requests carry an API key (Vertex AI's express mode) instead of a token."""
        return self.api_key is not None

    def path(self, model: str) -> str:
        """The model's resource path (``projects/.../publishers/google/models/{model}``); a
        model given as a resource path (``projects/...`` or ``publishers/...``) is kept."""
        if model.startswith("projects/"):
            name = model
        else:
            name = model if model.startswith("publishers/") else f"publishers/google/models/{model}"
            if not self.express:
                if self.project is None:
                    raise ValueError(
                        "Vertex AI needs a project: pass project=... or set GOOGLE_CLOUD_PROJECT"
                    )
                name = f"projects/{self.project}/locations/{self.location}/{name}"
        return quote(name, safe="/")

    async def headers(self) -> dict[str, str]:
        """The credential's headers for the next request (a token refreshed if it expired)."""
        if self.api_key is not None:
            return {"x-goog-api-key": self.api_key}
        if self.access_token is not None:
            return {"Authorization": f"Bearer {self.access_token}"}
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:  # one refresh at a time: concurrent streams share the token
            if self.credentials is None:
                await anyio.to_thread.run_sync(self._default)
            credentials = self.credentials
            if not getattr(credentials, "valid", False):
                await anyio.to_thread.run_sync(self._refresh)
        out = {"Authorization": f"Bearer {credentials.token}"}
        quota = getattr(credentials, "quota_project_id", None)
        if isinstance(quota, str) and quota:
            out["x-goog-user-project"] = quota
        return out

    def _default(self) -> None:
        auth = _google_auth("google.auth")
        credentials, project = auth.default(scopes=list(SCOPES))
        self.credentials = credentials
        if self.project is None and isinstance(project, str) and project:
            self.project = project

    def _refresh(self) -> None:
        requests = _google_auth("google.auth.transport.requests")
        self.credentials.refresh(requests.Request())
