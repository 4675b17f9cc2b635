"""Gemini's ``generateContent`` API, natively (streamed with ``?alt=sse``): one folder per
provider (see ``docs/architecture.md``), and the one to copy for a new provider.

``_request`` (the body, sans-I/O) over ``_messages`` (Chat-shaped messages -> ``contents`` and
``systemInstruction``) and ``_schema`` (the JSON Schema in the subset Gemini applies);
``_decoder`` (stream records -> deltas, sans-I/O); ``_errors`` (Google's error objects);
``_backend`` (the httpx backend: ``x-goog-api-key``, ``GOOGLE_API_KEY`` / ``GEMINI_API_KEY``);
``_vendor_client`` (the backend over the caller's ``google.genai.Client``).

What the registry (:mod:`sdk._providers`) reads here: ``OPTIONS`` and ``BACKENDS``.
"""

from __future__ import annotations

from sdk._http.gemini._backend import GeminiBackend, GeminiOptions
from sdk._http.gemini._vendor_client import GenaiSDKBackend

__all__ = ["BACKENDS", "OPTIONS", "GeminiBackend", "GenaiSDKBackend"]

OPTIONS = GeminiOptions
"""The options :class:`GeminiBackend` takes besides ``base_url``, ``api_key``, ``model``."""

BACKENDS = {"chat": GeminiBackend}
"""The httpx backend of its one API."""
