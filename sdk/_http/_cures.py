"""What a retry changes in a request body to cure the error of the attempt before (sans-I/O).

An error can name a cure (:attr:`sdk.StreamError.cure`, one of :data:`sdk._backend.CURES`);
every later attempt's request carries the cures named so far
(:attr:`~sdk._backend.GenerationRequest.cures`), and each provider's request builder calls
:func:`apply_cures` on the body it built, last, saying where its server takes each setting
(:data:`GEMINI_PENALTY`, :func:`openai_cures`...). What each server has (the table is
``docs/retries.md``, tested against the bodies each builder writes):

=====================  ===============================================  ===========================
wire                   ``compact_whitespace``                           ``less_repetition``
=====================  ===============================================  ===========================
vLLM (Chat)            ``structured_outputs.disable_any_whitespace``    ``frequency_penalty``
llama.cpp (Chat and    a user ``grammar`` (``extra``) is replaced by    ``frequency_penalty``
Responses)             the schema as ``response_format``: llama.cpp's
                       converter bounds each gap (a schema sent by the
                       client is bounded already: nothing to change)
OpenAI, unnamed        (no setting)                                     ``frequency_penalty``
server (Chat)                                                           (Chat only)
Gemini                 (no setting)                                     ``generationConfig.
                                                                        frequencyPenalty``
Ollama                 (no setting)                                     ``options.repeat_penalty``
Anthropic              :data:`INSTRUCTIONS` ``compact_whitespace``,     :data:`INSTRUCTIONS`
                       appended to ``system``                           ``less_repetition``,
                                                                        appended to ``system``
local engine           (its mask bounds layout whitespace already)      a frequency penalty in its
                                                                        sampler
                                                                        (:mod:`sdk._local._sampling`)
=====================  ===============================================  ===========================

Anthropic's Messages API has no sampling setting left (no penalty; ``temperature``, ``top_p``
and ``top_k`` are deprecated on its current models, and its request type names none), so its
cure is an instruction in the system prompt
(:func:`sdk._http.anthropic._cures.apply_anthropic_cures`).
Where a server has no setting at all, the retry's feedback is the cure: it tells the model what
went wrong and asks for compact JSON, or for each value once (:func:`sdk._feedback.describe_error`).
A value the caller set (a ``frequency_penalty`` of their own, in the parameters or ``extra``)
is never replaced.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, Literal, TypeAlias

from sdk._backend import GenerationRequest
from sdk._schema import schema_name

__all__ = [
    "CHAT_PENALTY",
    "FREQUENCY_PENALTY",
    "GEMINI_PENALTY",
    "INSTRUCTIONS",
    "OLLAMA_PENALTY",
    "REPEAT_PENALTY",
    "Compact",
    "Penalty",
    "apply_cures",
    "openai_cures",
]

Compact: TypeAlias = Literal["disable_any_whitespace", "schema_for_grammar"]
"""How a server is asked for compact JSON: vLLM's ``structured_outputs.disable_any_whitespace``,
or (llama.cpp) the schema sent in place of a grammar of the caller's."""

Penalty: TypeAlias = tuple[tuple[str, ...], float]
"""Where a server reads a repetition penalty (the keys down to it) and the value asked for."""

FREQUENCY_PENALTY: Final = 0.5
"""The frequency penalty a retry asks for after a repetition (OpenAI's range: -2 to 2): enough
to push a small model off a loop, mild enough not to bend a normal answer."""

REPEAT_PENALTY: Final = 1.3
"""Ollama's ``repeat_penalty`` after a repetition (its default is 1.1)."""

CHAT_PENALTY: Final[Penalty] = (("frequency_penalty",), FREQUENCY_PENALTY)
"""Chat Completions' (OpenAI, vLLM, llama.cpp, any compatible server)."""
GEMINI_PENALTY: Final[Penalty] = (("generationConfig", "frequencyPenalty"), FREQUENCY_PENALTY)
"""Gemini's ``generateContent``."""
OLLAMA_PENALTY: Final[Penalty] = (("options", "repeat_penalty"), REPEAT_PENALTY)
"""Ollama's ``/api/chat``."""

_COMPACT, _LESS = "compact_whitespace", "less_repetition"

INSTRUCTIONS: Final[Mapping[str, str]] = MappingProxyType(
    {
        _COMPACT: "Write the JSON compactly: no newlines, no indentation and no spaces between "
        "its tokens.",
        _LESS: "Write each value once: do not repeat a phrase, a sentence or an item you have "
        "already written.",
    }
)
"""The instruction a server with no setting for a cure is sent in its system prompt, by cure
(Anthropic: :func:`sdk._http.anthropic._cures.apply_anthropic_cures`)."""


def openai_cures(server: str | None, api: str) -> tuple[Penalty | None, Compact | None]:
    """What an OpenAI-compatible server has, by flavour (``None``: unnamed) and API
    (``"chat"``, ``"responses"``): the Responses API has no frequency penalty, and only vLLM's
    and llama.cpp's Chat (llama.cpp turns a Responses request into a Chat one) a whitespace
    setting."""
    if server == "llamacpp":
        return CHAT_PENALTY, "schema_for_grammar"
    if api == "responses":
        return None, None
    return CHAT_PENALTY, "disable_any_whitespace" if server == "vllm" else None


def apply_cures(
    body: dict[str, Any],
    request: GenerationRequest,
    *,
    penalty: Penalty | None = None,
    compact: Compact | None = None,
) -> None:
    """Change ``body`` (built for ``request``) for each cure the request asks for that the
    server has a setting for (``penalty``: where its repetition penalty goes; ``compact``: how
    it is asked for compact JSON; ``None``: no such setting); nothing when it asks for none."""
    cures = request.cures
    if not cures:
        return
    if _COMPACT in cures:
        if compact == "disable_any_whitespace":
            outputs = body.get("structured_outputs")
            outputs = dict(outputs) if isinstance(outputs, dict) else {}
            outputs.setdefault("disable_any_whitespace", True)
            body["structured_outputs"] = outputs
        elif compact == "schema_for_grammar" and _user_grammar_over_a_schema(body, request):
            del body["grammar"]
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name(request.schema_name), "schema": request.schema},
            }
    if _LESS in cures and penalty is not None:
        keys, value = penalty
        node = body
        for key in keys[:-1]:
            inner = node.get(key)
            node[key] = node = dict(inner) if isinstance(inner, dict) else {}
        node.setdefault(keys[-1], value)


def _user_grammar_over_a_schema(body: dict[str, Any], request: GenerationRequest) -> bool:
    """The body carries a grammar the caller wrote (``extra``) while the client tracks a JSON
    Schema it sends nothing of (``mode="none"``): the grammar may let whitespace run free, and
    the schema, sent instead, is bounded by llama.cpp's own converter."""
    return (
        "grammar" in request.extra
        and "grammar" in body
        and request.mode == "none"
        and request.constraint is None
        and not request.tools
        and bool(request.schema)
        and "response_format" not in body
        and "json_schema" not in body
    )
