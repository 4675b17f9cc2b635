"""What a retry changes in a Chat Completions request (``request.cures``), and what the
backend says of the constraint its server applies (sans-I/O; docs/reasoning.md's table).

- ``"no_thinking"``: ``chat_template_kwargs: {"enable_thinking": false}``, merged into any
  ``chat_template_kwargs`` the caller sent, to vLLM and llama.cpp,
  whose chat templates (Qwen3, DeepSeek-R1 distils, GLM...) read it; OpenAI and a server of no
  known flavour are sent nothing (OpenAI refuses unknown fields; ``reasoning_effort`` is the
  caller's).

:func:`openai_policy`: on Chat Completions, a ``response_format`` JSON Schema or
``json_object`` (and nothing else: no tools, no other constraint) is masked by the server; on
the Responses API, ``text.format`` (``json_schema`` or ``json_object``; to llama.cpp, the
``response_format`` it reads instead). Prose at its start is the server's fault
(:class:`~sdk.ConstraintIgnored`), with no fix known on these servers: not retried. One cause
is known and named in the message: a server not named on the Responses API may have ignored
``text.format``, as llama.cpp's ``/responses`` does (``server="llamacpp"`` sends the schema
the way it reads it). An answer in the reasoning is cured by ``"no_thinking"`` where the
server takes it (Chat Completions).
"""

from __future__ import annotations

from typing import Any

from sdk._backend import GenerationRequest
from sdk._http.openai._flavours import Api, Server
from sdk._server_policy import ServerPolicy

__all__ = ["IGNORED_FORMAT", "apply_reasoning_cures", "openai_policy"]

_THINKING_OFF: frozenset[Server | None] = frozenset({"vllm", "llamacpp"})
_NAMES = {
    "openai": "OpenAI",
    "vllm": "vLLM",
    "llamacpp": "llama.cpp",
    "sglang": "SGLang",
    "tgi": "TGI",
}


def apply_reasoning_cures(
    body: dict[str, Any], request: GenerationRequest, server: Server | None
) -> None:
    """Apply to ``body`` (built, ``request.extra`` merged) the cures ``server`` has."""
    if "no_thinking" in request.cures and server in _THINKING_OFF:
        kwargs = body.get("chat_template_kwargs")
        merged = dict(kwargs) if isinstance(kwargs, dict) else {}
        merged["enable_thinking"] = False
        body["chat_template_kwargs"] = merged


IGNORED_FORMAT = (
    "it may have ignored text.format, as llama.cpp's /responses does: say "
    "Client(..., server='llamacpp') to send the schema the way it reads it"
)
"""The known cause of prose under ``text.format`` on a server not named (Responses API)."""


def openai_policy(request: GenerationRequest, server: Server | None, api: Api) -> ServerPolicy:
    """What ``server`` does with ``request``'s constraint on ``api`` (``"chat"``,
    ``"responses"``; see the module docstring)."""
    chat = api == "chat"
    overridden = (
        "response_format" if chat or server == "llamacpp" else "text"
    ) in request.extra  # the caller's own format: what it asks is theirs to know
    masked = (
        request.constraint is None
        and not request.tools
        and request.mode in ("json_schema", "json_object")
        and not overridden
    )
    return ServerPolicy(
        server=_NAMES.get(server or "", "the server"),
        masked=masked,
        reasoning_cure="no_thinking" if chat and server in _THINKING_OFF else None,
        detail=IGNORED_FORMAT if masked and not chat and server is None else "",
    )
