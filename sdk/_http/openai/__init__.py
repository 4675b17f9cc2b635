"""The OpenAI provider: OpenAI's Chat Completions and Responses APIs, and every server that
speaks them (vLLM, SGLang, llama.cpp, Ollama's ``/v1``), over the shared HTTP layer.

One provider is one folder; this one holds, per wire protocol:

- the request builders, sans-I/O: ``_chat_request`` (``POST /chat/completions``) and
  ``_responses_request`` (``POST /responses``);
- the stream decoders, sans-I/O: ``_chat_decoder`` (chunks -> deltas, tool call ids) and
  ``_responses_decoder`` (Responses API events -> deltas);
- the error mapping of what the server sends inside the stream: ``_errors``;
- the schema rewrite OpenAI's strict mode needs: ``_strict``;
- what each OpenAI-compatible server reads for constraints and several tools: ``_flavours``;
- the backends: ``_backend`` (over httpx, through :class:`~sdk._http._transport.HttpTransport`)
  and ``_vendor_client`` (over the caller's ``openai.AsyncOpenAI`` client, and an
  ``openai.OpenAI``'s settings copied into one).

What every provider shares (sending, framing, the read loop, status errors, unwrapping) is one
level up, in :mod:`sdk._http`. What the registry (:mod:`sdk._providers`) reads here:
``OPTIONS`` and ``BACKENDS``, and ``async_client``.
"""

from __future__ import annotations

from sdk._http.openai._backend import OpenAIBackend, ResponsesBackend, ServerOptions
from sdk._http.openai._flavours import DEFAULT_API, Api, Server
from sdk._http.openai._vendor_client import (
    OpenAISDKBackend,
    ResponsesSDKBackend,
    async_client,
    openai_sdk_backend,
    sync_client_hint,
)

__all__ = [
    "BACKENDS",
    "DEFAULT_API",
    "OPTIONS",
    "Api",
    "OpenAIBackend",
    "OpenAISDKBackend",
    "ResponsesBackend",
    "ResponsesSDKBackend",
    "Server",
    "ServerOptions",
    "async_client",
    "openai_sdk_backend",
    "sync_client_hint",
]

OPTIONS = ServerOptions
"""The options its backends take besides ``base_url``, ``api_key``, ``model``."""

BACKENDS = {kind.api: kind for kind in (OpenAIBackend, ResponsesBackend)}
"""Its httpx backend for each API (``Client(api=...)``), Chat Completions first."""
