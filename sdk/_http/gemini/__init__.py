"""Gemini's ``generateContent`` API, natively (streamed with ``?alt=sse``): one folder per
provider (see ``docs/architecture.md``).

``_request`` (the body, sans-I/O) over ``_messages`` (Chat-shaped messages -> ``contents`` and
``systemInstruction``) and ``_schema`` (the JSON Schema in the subset Gemini applies);
``_events`` (stream records -> deltas, sans-I/O); ``_errors`` (Google's error objects);
``_backend`` (the httpx backend: ``x-goog-api-key``, ``GOOGLE_API_KEY`` / ``GEMINI_API_KEY``);
``_sdk`` (the backend over the caller's ``google.genai.Client``).
"""

from __future__ import annotations

from sdk._http.gemini._backend import GeminiBackend

__all__ = ["GeminiBackend"]
