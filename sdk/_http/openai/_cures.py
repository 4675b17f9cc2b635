"""What a retry changes in a Chat Completions request (``request.cures``), and what the
backend says of the constraint its server applies (sans-I/O; docs/reasoning.md's table).

- ``"no_thinking"``: ``chat_template_kwargs: {"enable_thinking": false}``, merged into any
  ``chat_template_kwargs`` the caller sent, to vLLM and llama.cpp,
  whose chat templates (Qwen3, DeepSeek-R1 distils, GLM...) read it; OpenAI and a server of no
  known flavour are sent nothing (OpenAI refuses unknown fields; ``reasoning_effort`` is the
  caller's).

:func:`chat_policy`: a ``response_format`` JSON Schema or ``json_object`` (and nothing else:
no tools, no other constraint) is masked by the server, so prose at its start is the server's
fault (:class:`~sdk.ConstraintIgnored`, no fix known on these servers: not retried); an answer
in the reasoning is cured by ``"no_thinking"`` where the server takes it.
"""

from __future__ import annotations

from typing import Any

from sdk._backend import GenerationRequest
from sdk._http.openai._flavours import Server
from sdk._server_policy import ServerPolicy

__all__ = ["apply_reasoning_cures", "chat_policy"]

_THINKING_OFF: frozenset[Server | None] = frozenset({"vllm", "llamacpp"})
_NAMES = {"openai": "OpenAI", "vllm": "vLLM", "llamacpp": "llama.cpp"}


def apply_reasoning_cures(
    body: dict[str, Any], request: GenerationRequest, server: Server | None
) -> None:
    """Apply to ``body`` (built, ``request.extra`` merged) the cures ``server`` has."""
    if "no_thinking" in request.cures and server in _THINKING_OFF:
        kwargs = body.get("chat_template_kwargs")
        merged = dict(kwargs) if isinstance(kwargs, dict) else {}
        merged["enable_thinking"] = False
        body["chat_template_kwargs"] = merged


def chat_policy(request: GenerationRequest, server: Server | None) -> ServerPolicy:
    """What ``server`` does with ``request``'s constraint (see the module docstring)."""
    masked = (
        request.constraint is None
        and not request.tools
        and request.mode in ("json_schema", "json_object")
        and "response_format" not in request.extra
    )
    return ServerPolicy(
        server=_NAMES.get(server or "", "the server"),
        masked=masked,
        reasoning_cure="no_thinking" if server in _THINKING_OFF else None,
    )
