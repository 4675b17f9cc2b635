"""The HTTP backends: one folder per provider, over what every provider shares.

Shared (a provider's folder builds on these):

- ``_transport``: sending a request over httpx (:class:`~sdk._http._transport.HttpTransport`:
  URL, headers, query, timeouts, the pooled client), reading the body as it arrives, ending a
  streamed response however the reader left;
- ``_errors``: a status to its :class:`~sdk.APIStatusError` class, a failed connection to
  :class:`~sdk.APIConnectionError`, an error that is also a vendor SDK's exception;
- ``_framing``: the body cut into messages, sans-I/O: server-sent events, JSON lines;
- ``_read_loop``: an opened response in, deltas out (framing -> the provider's decoder ->
  unwrapping), the one loop every backend runs;
- ``_unwrap``: a document sent wrapped in ``{"value": ...}`` (for servers that need an object
  root) unwrapped as it streams.

Providers: ``openai/`` (Chat Completions and the Responses API, OpenAI and every
OpenAI-compatible server), ``anthropic/`` (the Messages API), ``gemini/`` (``generateContent``),
``ollama/`` (``/api/chat``); ``sdk/_providers.py`` names them for ``Client(provider=...)``.
A provider's folder holds its request builder, its stream decoder,
its error mapping and its schema rewrite, and its backends; ``docs/architecture.md`` says how
to add one.
"""

from __future__ import annotations

from sdk._http._transport import DEFAULT_TIMEOUT
from sdk._http.openai import (
    OpenAIBackend,
    OpenAISDKBackend,
    ResponsesBackend,
    ResponsesSDKBackend,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "OpenAIBackend",
    "OpenAISDKBackend",
    "ResponsesBackend",
    "ResponsesSDKBackend",
]
