"""Which provider's API a :class:`~sdk.Client` speaks: ``Client(provider=...)``.

``"openai"`` (the default) is any OpenAI-compatible server, through Chat Completions or the
Responses API (``api=``), with ``server=`` saying which server it is. Every other provider is
spoken natively, by the backend in its own folder under ``sdk/_http/`` (adding a provider: a
folder there, and a line in :data:`PROVIDERS`). A provider's backend takes ``base_url``,
``api_key``, ``model`` and the transport options it lists; an option it does not take (an
OpenAI-only one such as ``organization`` or ``server``) is a ``TypeError`` that names it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeAlias

from sdk._backend import Backend

__all__ = ["PROVIDERS", "Provider", "provider_backend"]

Provider: TypeAlias = Literal["openai", "anthropic", "ollama", "gemini"]
"""The providers ``Client(provider=...)`` names."""


def _anthropic() -> tuple[Callable[..., Backend], frozenset[str]]:
    from sdk._http.anthropic._backend import AnthropicBackend, AnthropicOptions

    return AnthropicBackend, AnthropicOptions.__optional_keys__


def _ollama() -> tuple[Callable[..., Backend], frozenset[str]]:
    from sdk._http.ollama._backend import OllamaBackend, OllamaOptions

    return OllamaBackend, OllamaOptions.__optional_keys__


def _gemini() -> tuple[Callable[..., Backend], frozenset[str]]:
    from sdk._http.gemini._backend import GeminiBackend, GeminiOptions

    return GeminiBackend, GeminiOptions.__optional_keys__


PROVIDERS: Mapping[str, Callable[[], tuple[Callable[..., Backend], frozenset[str]]]] = {
    "anthropic": _anthropic,
    "ollama": _ollama,
    "gemini": _gemini,
}
"""Each native provider: its backend class and the options it takes (besides ``base_url``,
``api_key``, ``model``)."""


def provider_backend(
    provider: object,
    base_url: str | None,
    api_key: str | None,
    model: str | None,
    api: object,
    options: Mapping[str, Any],
) -> Backend:
    """The backend of a native ``provider`` (``ValueError`` for a name that is none,
    ``TypeError`` for an option it does not take)."""
    if not isinstance(provider, str) or provider not in PROVIDERS:
        names = ", ".join(repr(p) for p in ("openai", *PROVIDERS))
        raise ValueError(f"provider must be one of {names}, not {provider!r}")
    if api != "chat":
        raise ValueError(f"api={api!r} is OpenAI's; provider={provider!r} has one API")
    kind, accepted = PROVIDERS[provider]()
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise TypeError(
            f"Client(provider={provider!r}) got unexpected argument(s) "
            f"{', '.join(map(repr, unknown))} (accepted: base_url, api_key, model, "
            f"max_retries, {', '.join(sorted(accepted))})"
        )
    return kind(base_url=base_url, api_key=api_key, model=model, **options)
