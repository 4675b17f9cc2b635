"""Ollama's native API (``POST /api/chat``, JSON lines), one folder per provider (see
``docs/architecture.md``).

``_request`` (the body, sans-I/O) over ``_messages`` (Chat-shaped messages -> Ollama's);
``_lines`` (stream lines -> deltas, sans-I/O, and an error line); ``_backend`` (the httpx
backend: ``OLLAMA_HOST``, an optional bearer key).
"""

from __future__ import annotations

from sdk._http.ollama._backend import OllamaBackend

__all__ = ["OllamaBackend"]
