"""The HTTP backends: OpenAI-compatible servers over httpx, or through the caller's ``openai``
client.

Modules: ``_request`` (the request body, sans-I/O), ``_strict`` / ``_unwrap`` (strict schemas,
a wrapped root unwrapped), ``_eventstream`` (the event-stream format, bytes -> events,
sans-I/O), ``_chunks`` (stream chunks -> deltas, sans-I/O; ``_tool_ids`` adds tool call ids),
``_sse`` (reading the event stream, HTTP status errors), ``_deltas`` (the read
loop), ``_openai`` (the httpx backend), ``_openai_sdk`` (the backend over an
``openai.AsyncOpenAI`` client), ``_flavours`` (how each server is sent constraints and several
tools, written by ``sdk._grammars``), ``_responses`` and ``_responses_events`` (the Responses
API: body, backends, events -> deltas).
"""

from __future__ import annotations

from sdk._http._openai import DEFAULT_TIMEOUT, OpenAIBackend
from sdk._http._openai_sdk import OpenAISDKBackend
from sdk._http._responses import ResponsesBackend, ResponsesSDKBackend

__all__ = [
    "DEFAULT_TIMEOUT",
    "OpenAIBackend",
    "OpenAISDKBackend",
    "ResponsesBackend",
    "ResponsesSDKBackend",
]
