"""The HTTP backends: OpenAI-compatible servers over httpx, or through the caller's ``openai``
client.

Modules: ``_request`` (the request body, sans-I/O), ``_eventstream`` (the event-stream format,
bytes -> events, sans-I/O), ``_chunks`` (stream chunks -> deltas, sans-I/O), ``_sse`` (reading
the event stream, HTTP status errors, ``Retry-After``), ``_openai`` (the httpx backend),
``_openai_sdk`` (the backend over an ``openai.AsyncOpenAI`` client).
"""

from __future__ import annotations

from sdk._http._openai import DEFAULT_TIMEOUT, OpenAIBackend
from sdk._http._openai_sdk import OpenAISDKBackend

__all__ = ["DEFAULT_TIMEOUT", "OpenAIBackend", "OpenAISDKBackend"]
