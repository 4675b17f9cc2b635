"""What a retry changes in an Ollama ``/api/chat`` body (``request.cures``), and what the
backend says of the constraint Ollama applies (sans-I/O; docs/reasoning.md's table).

- ``"no_thinking"``: ``think: false`` (the answer in ``thinking``, ``content`` empty).
- ``"allow_thinking"``: no ``think: false`` (Ollama ignores ``format`` for some thinking models
  when ``think`` is ``false``: qwen3.5, gemma4; ollama #14645, #15260); it wins over
  ``"no_thinking"`` when both were asked for (the constraint matters more).

:func:`ollama_policy`: a ``format`` sent is a mask (Ollama turns the schema into a grammar);
prose at its start under ``think: false`` is cured by ``"allow_thinking"``, and with no fix
known otherwise (not retried).
"""

from __future__ import annotations

from typing import Any

from sdk._backend import GenerationRequest
from sdk._server_policy import ServerPolicy

__all__ = ["apply_reasoning_cures", "ollama_policy"]


def apply_reasoning_cures(body: dict[str, Any], request: GenerationRequest) -> None:
    """Apply to ``body`` (built, ``request.extra`` merged) the cures Ollama has."""
    if "no_thinking" in request.cures:
        body["think"] = False
    if "allow_thinking" in request.cures and body.get("think") is False:
        del body["think"]


def ollama_policy(body: dict[str, Any]) -> ServerPolicy:
    """What Ollama does with the constraint of ``body`` (as sent)."""
    unthinking = body.get("think") is False
    return ServerPolicy(
        server="Ollama",
        masked="format" in body,
        ignored_cure="allow_thinking" if unthinking else None,
        reasoning_cure=None if unthinking else "no_thinking",
        detail="format sent with think=false" if unthinking else "",
    )
