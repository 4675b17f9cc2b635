"""Anthropic's Messages API, natively: one folder per provider (see ``docs/architecture.md``).

``_request`` (the body, sans-I/O) over ``_messages`` (Chat-shaped messages -> Anthropic's
``system`` and content blocks) and ``_schema`` (the JSON Schema in the subset Anthropic
applies); ``_events`` (stream events -> deltas, sans-I/O); ``_errors`` (an error event, a status
error's body and ``request-id``, as Anthropic's SDK gives them);
``_backend`` (the httpx backend: URL, headers, credentials, status errors); ``_sdk`` (the
backend over the caller's ``anthropic.AsyncAnthropic``).
"""

from __future__ import annotations

from sdk._http.anthropic._backend import AnthropicBackend

__all__ = ["AnthropicBackend"]
