"""The provider registry: the one place a provider is named.

A provider is a folder ``sdk/_http/<name>/`` and one line in :data:`PROVIDERS`; everything that
needs the list reads it: ``Client(provider=...)`` and ``SyncClient(provider=...)`` build their
backend with :func:`provider_backend`, the command line's ``--provider`` offers
:data:`NATIVE_PROVIDERS`, ``SyncClient.from_openai`` / ``from_anthropic`` turn a vendor SDK's
blocking client into its async twin with :func:`async_vendor_client`. A folder is imported
only when its provider is used (an optional vendor SDK is imported later still, by the backend
that needs it).

``"openai"`` (the default) is any OpenAI-compatible server, through Chat Completions or the
Responses API (``api=``), with ``server=`` saying which server it is. Every other provider is
spoken natively, by the backend in its own folder. A provider's backend takes ``base_url``,
``api_key``, ``model`` and the options its folder lists (:attr:`ProviderFace.OPTIONS`); an
option it does not take (an OpenAI-only one such as ``organization`` or ``server``) is a
``TypeError`` that names it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, Protocol, TypeAlias, cast

from sdk._backend import Backend

__all__ = [
    "DEFAULT_PROVIDER",
    "NATIVE_PROVIDERS",
    "PROVIDERS",
    "Provider",
    "ProviderFace",
    "async_vendor_client",
    "provider_backend",
    "provider_face",
]

Provider: TypeAlias = Literal["openai", "anthropic", "ollama", "gemini"]
"""The providers ``Client(provider=...)`` names, for the type checker (a test holds it equal to
:data:`PROVIDERS`)."""

PROVIDERS: Final[tuple[Provider, ...]] = (
    "openai",  # the default: Chat Completions and the Responses API, every compatible server
    "anthropic",
    "ollama",
    "gemini",
)
"""The registry: each provider's name, which is also its folder's (``sdk/_http/<name>/``)."""

DEFAULT_PROVIDER: Final[Provider] = PROVIDERS[0]
"""The provider ``Client()`` speaks when none is named."""

NATIVE_PROVIDERS: Final[tuple[Provider, ...]] = PROVIDERS[1:]
"""The providers spoken natively (the command line's ``--provider`` choices)."""


_PLATFORM_HINTS = {
    "bedrock": " (Claude on Amazon Bedrock: provider='anthropic', platform='bedrock')",
    "vertex": " (Claude on Vertex AI: provider='anthropic', platform='vertex')",
}  # a name a newcomer guesses for a platform Claude is reached on


class ProviderFace(Protocol):
    """What each provider folder's ``__init__`` exposes to the registry (a test checks that
    every folder does)."""

    OPTIONS: Any
    """The ``TypedDict`` of the options its httpx backends take besides ``base_url``,
    ``api_key`` and ``model``."""

    BACKENDS: Mapping[str, Callable[..., Backend]]
    """Its httpx backend for each API it speaks (``Client(api=...)``), the default first."""


def provider_face(provider: Provider) -> ProviderFace:
    """The folder of ``provider`` (imported now), as the registry reads it."""
    return cast(ProviderFace, importlib.import_module(f"sdk._http.{provider}"))


def provider_backend(
    provider: object,
    base_url: str | None,
    api_key: str | None,
    model: str | None,
    api: object,
    options: Mapping[str, Any],
) -> Backend:
    """The httpx backend of ``provider`` (``ValueError`` for a name that is none or an API it
    does not speak, ``TypeError`` for an option it does not take)."""
    if not isinstance(provider, str) or provider not in PROVIDERS:
        names = ", ".join(repr(p) for p in PROVIDERS)
        hint = _PLATFORM_HINTS.get(provider) if isinstance(provider, str) else None
        raise ValueError(f"provider must be one of {names}, not {provider!r}" + (hint or ""))
    face = provider_face(provider)
    accepted = face.OPTIONS.__optional_keys__
    unknown = sorted(set(options) - accepted)
    if provider == DEFAULT_PROVIDER:
        if unknown:
            named = ["base_url", "api_key", "model", "max_retries", "api", "provider"]
            raise TypeError(
                f"Client() got unexpected argument(s) {', '.join(map(repr, unknown))} "
                f"(accepted: {', '.join(sorted([*named, *accepted]))})"
            )
        if api not in face.BACKENDS:
            raise ValueError(f"api must be {' or '.join(map(repr, face.BACKENDS))}, not {api!r}")
    else:
        if api not in face.BACKENDS:
            raise ValueError(f"api={api!r} is OpenAI's; provider={provider!r} has one API")
        if unknown:
            raise TypeError(
                f"Client(provider={provider!r}) got unexpected argument(s) "
                f"{', '.join(map(repr, unknown))} (accepted: base_url, api_key, model, "
                f"max_retries, {', '.join(sorted(accepted))})"
            )
    return face.BACKENDS[str(api)](base_url=base_url, api_key=api_key, model=model, **options)


def async_vendor_client(client: Any) -> Any:
    """``client`` as the async client of its vendor's SDK when it is a blocking one that a
    provider folder knows (its ``async_client``: ``openai.OpenAI`` and ``openai.AzureOpenAI``,
    ``anthropic.Anthropic``, their settings copied into a new async client); anything else as
    it is."""
    for provider in PROVIDERS:
        convert = getattr(provider_face(provider), "async_client", None)
        converted = client if convert is None else convert(client)
        if converted is not client:
            return converted
    return client
