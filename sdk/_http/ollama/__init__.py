"""Ollama's native API (``POST /api/chat``, JSON lines), one folder per provider (see
``docs/architecture.md``).

``_request`` (the body, sans-I/O) over ``_messages`` (Chat-shaped messages -> Ollama's);
``_decoder`` (stream lines -> deltas, sans-I/O, and an error line); ``_backend`` (the httpx
backend: ``OLLAMA_HOST``, an optional bearer key).

What the registry (:mod:`sdk._providers`) reads here: ``OPTIONS`` and ``BACKENDS``.
"""

from __future__ import annotations

from sdk._http.ollama._backend import OllamaBackend, OllamaOptions

__all__ = ["BACKENDS", "OPTIONS", "OllamaBackend"]

OPTIONS = OllamaOptions
"""The options :class:`OllamaBackend` takes besides ``base_url``, ``api_key``, ``model``."""

BACKENDS = {"chat": OllamaBackend}
"""The httpx backend of its one API."""
