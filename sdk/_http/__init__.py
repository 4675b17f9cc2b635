"""The HTTP backends: one folder per provider, over what every provider shares.

Shared (a provider's folder builds on these; none of them names a provider):

- ``_transport``: sending a request over httpx (:class:`~sdk._http._transport.HttpTransport`:
  URL, headers, query, timeouts, the pooled client; each request logged), reading the body as
  it arrives, ending a streamed response however the reader left;
- ``_http_backend``: what every httpx backend shares: the constructor's shared options, checked,
  the transport they make, and one request sent through the read loop;
- ``_errors``: a status to its :class:`~sdk.APIStatusError` class, a failed connection to
  :class:`~sdk.APIConnectionError`, an error that is also a vendor SDK's exception;
- ``_framing``: the body cut into messages, sans-I/O: server-sent events, JSON lines;
- ``_eventstream``: AWS's binary event-stream frames (Bedrock's stream), sans-I/O, CRCs
  checked, sizes bounded;
- ``_read_loop``: an opened response in, deltas out (framing -> the provider's decoder ->
  unwrapping), the one loop every backend runs;
- ``_json_message``: a message's JSON read, or the stream refused;
- ``_chat_messages``: the checks and walks every translation of Chat messages shares;
- ``_request_checks``: what the APIs that take JSON Schema only refuse alike;
- ``_vendor_sdk``: what the backends over a vendor's own SDK client share;
- ``_unwrap``: a document sent wrapped in ``{"value": ...}`` (for servers that need an object
  root) unwrapped as it streams.

Providers: ``openai/`` (Chat Completions and the Responses API, OpenAI and every
OpenAI-compatible server), ``anthropic/`` (the Messages API), ``gemini/`` (``generateContent``),
``ollama/`` (``/api/chat``); the registry, ``sdk/_providers.py``, names them. A provider's
folder holds its request builder, its stream decoder, its error mapping and its schema rewrite,
and its backends; ``docs/architecture.md`` says how to add one.
"""

from __future__ import annotations

from sdk._http._transport import DEFAULT_TIMEOUT

__all__ = ["DEFAULT_TIMEOUT"]
