"""Anthropic's Messages API, natively: one folder per provider (see ``docs/architecture.md``).

``_request`` (the body, sans-I/O) over ``_messages`` (Chat-shaped messages -> Anthropic's
``system`` and content blocks) and ``_schema`` (the JSON Schema in the subset Anthropic
applies); ``_decoder`` (stream events -> deltas, sans-I/O); ``_errors`` (an error event, a status
error's body and ``request-id``, as Anthropic's SDK gives them);
``_backend`` (the httpx backend: URL, headers, credentials, status errors; ``platform=``
picks Anthropic's API, ``_bedrock`` (Amazon Bedrock: SigV4, the AWS event-stream framing) or
``_vertex`` (Google Vertex AI: an OAuth token)); ``_vendor_client``
(the backend over the caller's ``anthropic.AsyncAnthropic``, and an ``anthropic.Anthropic``'s
settings copied into one).

What the registry (:mod:`sdk._providers`) reads here: ``OPTIONS`` and ``BACKENDS``, and
``async_client``.
"""

from __future__ import annotations

from sdk._http.anthropic._backend import AnthropicBackend, AnthropicOptions
from sdk._http.anthropic._vendor_client import AnthropicSDKBackend, async_client

__all__ = ["BACKENDS", "OPTIONS", "AnthropicBackend", "AnthropicSDKBackend", "async_client"]

OPTIONS = AnthropicOptions
"""The options :class:`AnthropicBackend` takes besides ``base_url``, ``api_key``, ``model``."""

BACKENDS = {"chat": AnthropicBackend}
"""The httpx backend of its one API."""
