"""Azure OpenAI, as openai-python's ``AzureOpenAI`` reads its settings (sans-I/O but for the
token provider's call).

:func:`azure_settings` resolves, from the arguments and then the environment as
``openai.lib.azure`` does: the credential (``api_key``, else ``azure_ad_token``, else
``azure_ad_token_provider``, at most one given; with none, ``$AZURE_OPENAI_AD_TOKEN``, else
``$AZURE_OPENAI_API_KEY``), the ``api_version`` (else ``$OPENAI_API_VERSION``; sent as the
``api-version`` query parameter of every request), and the root (``base_url`` as given, or
``{azure_endpoint}/openai``, ``azure_endpoint`` else ``$AZURE_OPENAI_ENDPOINT``; the two are
mutually exclusive). Where each API goes, as openai-python sends it:

- Chat Completions: ``{root}/deployments/{deployment}/chat/completions``, the deployment being
  ``azure_deployment``, else the request's ``model`` (unless ``base_url`` already names one);
- the Responses API: ``{root}/responses`` (the deployment is the body's ``model``).

The key goes as the ``api-key`` header; an Entra ID token as ``Authorization: Bearer``; a
token provider (a function returning the token, or an awaitable of it) is called for every
request, and must give a non-empty string. Anything missing or contradictory is a
``ValueError`` (a wrong kind a ``TypeError``) naming the argument and the variable.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

__all__ = ["AzureSettings", "azure_settings"]

TokenProvider = Callable[[], "str | Awaitable[str]"]


@dataclass(frozen=True, slots=True)
class AzureSettings:
    """What an Azure OpenAI backend sends every request with."""

    root: str
    """``{azure_endpoint}/openai`` (or ``…/openai/deployments/{azure_deployment}``), or the
    ``base_url`` given."""
    endpoint: str | None
    """The resource's endpoint, when given (the Responses API goes under it)."""
    deployment: str | None
    """``azure_deployment``, when given."""
    api_version: str
    """Sent as ``?api-version=`` on every request."""
    api_key: str | None
    ad_token: str | None
    token_provider: TokenProvider | None

    def url(self, api: str, model: str | None) -> str:
        """Where a request of ``api`` (``"chat"`` or ``"responses"``) for ``model`` goes."""
        if api == "responses":
            base = f"{self.endpoint.rstrip('/')}/openai" if self.endpoint else self.root
            return f"{base}/responses"
        if self.deployment is not None or "/deployments" in self.root:
            return f"{self.root}/chat/completions"
        if not model:
            raise ValueError(
                "Azure OpenAI needs the deployment: pass azure_deployment=... or model=... "
                "(the deployment's name)"
            )
        return f"{self.root}/deployments/{quote(model, safe='')}/chat/completions"

    @property
    def static_headers(self) -> dict[str, str]:
        """The credential's header when it does not change between requests."""
        if self.ad_token is not None:
            return {"Authorization": f"Bearer {self.ad_token}"}
        if self.api_key:
            return {"api-key": self.api_key}
        return {}

    async def fresh_headers(self) -> dict[str, str]:
        """The token provider's token, asked for this request (nothing without a provider)."""
        provider = self.token_provider
        if provider is None:
            return {}
        token: Any = provider()
        if inspect.isawaitable(token):
            token = await token
        if not isinstance(token, str) or not token:
            raise ValueError(
                "azure_ad_token_provider must return a non-empty string (an Entra ID token), "
                f"not {token!r}"
            )
        return {"Authorization": f"Bearer {token}"}


def azure_settings(
    *,
    base_url: str | None,
    api_key: str | None,
    api_version: str | None,
    azure_endpoint: str | None,
    azure_deployment: str | None,
    azure_ad_token: str | None,
    azure_ad_token_provider: TokenProvider | None,
) -> AzureSettings:
    """The settings of an Azure OpenAI backend (see the module docstring)."""
    for name, value in (
        ("api_version", api_version),
        ("azure_endpoint", azure_endpoint),
        ("azure_deployment", azure_deployment),
        ("azure_ad_token", azure_ad_token),
    ):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if azure_ad_token_provider is not None and not callable(azure_ad_token_provider):
        raise TypeError("azure_ad_token_provider must be a function that returns a token")
    given = [
        name
        for name, value in (
            ("api_key", api_key),
            ("azure_ad_token", azure_ad_token),
            ("azure_ad_token_provider", azure_ad_token_provider),
        )
        if value is not None
    ]
    if len(given) > 1:
        raise ValueError(
            f"{' and '.join(given)} were given: api_key, azure_ad_token and "
            "azure_ad_token_provider are mutually exclusive (pass one)"
        )
    if not given:
        azure_ad_token = os.environ.get("AZURE_OPENAI_AD_TOKEN")
        if azure_ad_token is None:
            api_key = os.environ.get("AZURE_OPENAI_API_KEY")
    if api_key is None and azure_ad_token is None and azure_ad_token_provider is None:
        raise ValueError(
            "Missing credentials: pass one of api_key, azure_ad_token, azure_ad_token_provider, "
            "or set the AZURE_OPENAI_API_KEY or AZURE_OPENAI_AD_TOKEN environment variable"
        )
    api_version = api_version or os.environ.get("OPENAI_API_VERSION")
    if not api_version:
        raise ValueError(
            "Azure OpenAI needs an API version: pass api_version=... or set the "
            "OPENAI_API_VERSION environment variable"
        )
    if base_url is not None:
        if azure_endpoint is not None:
            raise ValueError("base_url and azure_endpoint are mutually exclusive (pass one)")
        root = base_url.rstrip("/")
    else:
        azure_endpoint = azure_endpoint or os.environ.get("AZURE_OPENAI_ENDPOINT")
        if not azure_endpoint:
            raise ValueError(
                "Azure OpenAI needs the resource's endpoint: pass azure_endpoint=... (e.g. "
                "https://my-resource.openai.azure.com), base_url=..., or set the "
                "AZURE_OPENAI_ENDPOINT environment variable"
            )
        if not azure_endpoint.startswith(("http://", "https://")):
            raise ValueError(f"azure_endpoint must be an http(s) URL, not {azure_endpoint!r}")
        root = f"{azure_endpoint.rstrip('/')}/openai"
        if azure_deployment is not None:
            root = f"{root}/deployments/{quote(azure_deployment, safe='')}"
    return AzureSettings(
        root=root,
        endpoint=azure_endpoint if base_url is None else None,
        deployment=azure_deployment if base_url is None else None,
        api_version=api_version,
        api_key=api_key,
        ad_token=azure_ad_token,
        token_provider=azure_ad_token_provider,
    )
