"""The request parameters a caller names (:mod:`sdk._parameters`), written the way each OpenAI
API reads them (sans-I/O).

Token limits. ``max_completion_tokens`` is OpenAI's current name on Chat Completions; OpenAI
deprecated ``max_tokens`` and its reasoning models (o-series, GPT-5) refuse it with HTTP 400.
vLLM and SGLang read both (each marks ``max_tokens`` deprecated), and llama.cpp's server reads
both (``max_completion_tokens`` first). So:

=====================================  ===========================  ======================
given                                  Chat Completions             Responses API
=====================================  ===========================  ======================
``max_completion_tokens=N``            ``max_completion_tokens``    ``max_output_tokens``
``max_tokens=N``, ``server="openai"``  ``max_completion_tokens``    ``max_output_tokens``
``max_tokens=N``, any other server     ``max_tokens``               ``max_output_tokens``
=====================================  ===========================  ======================

``max_tokens`` stays ``max_tokens`` where the server was not named ``"openai"``: an older
server, or a proxy that checks the body, may know only that name.

Chat Completions takes every parameter under its own name. ``stream_options`` is
``{"include_usage": true}`` by default, merged under what the caller gives; ``{}`` sends none
(for proxies and older Azure API versions that refuse the key; the usage is then counted by
the client). ``reasoning_summary`` has no equivalent there (refused).

The Responses API: ``reasoning_effort`` and ``reasoning_summary`` become ``reasoning.effort`` and
``reasoning.summary``; ``logprobs=True`` asks for
them the Responses way (``include: ["message.output_text.logprobs"]``, and ``top_logprobs``);
``stream_options.include_usage`` is left out (a response always reports its usage). ``stop``,
``frequency_penalty``, ``presence_penalty`` and ``prediction`` have no equivalent there:
:func:`check_for` refuses them before any request.
"""

from __future__ import annotations

from typing import Any

from sdk._backend import GenerationRequest
from sdk._errors import UnsupportedConstraint

__all__ = ["chat_parameters", "check_for", "responses_parameters"]

_NOT_IN_RESPONSES = ("stop", "frequency_penalty", "presence_penalty", "prediction")
_LOGPROBS_INCLUDE = "message.output_text.logprobs"


def check_for(request: GenerationRequest, api: str) -> None:
    """Raise :class:`~sdk.UnsupportedConstraint` for a parameter ``api`` has no equivalent
    for (named, with what to do instead)."""
    given = request.parameters
    if api == "responses":
        for name in _NOT_IN_RESPONSES:
            if name in given:
                raise UnsupportedConstraint(
                    f"{name}= has no equivalent in the Responses API; leave it out, or use "
                    "api='chat'"
                )
    elif "reasoning_summary" in given:
        raise UnsupportedConstraint(
            "reasoning_summary= has no equivalent in Chat Completions (only the effort: "
            "reasoning_effort=); use api='responses' for reasoning summaries"
        )


def chat_parameters(request: GenerationRequest, *, server: str | None) -> dict[str, Any]:
    """The body fields of ``request``'s token limit, ``stream_options`` and named parameters
    for ``POST /chat/completions`` (see the module docstring)."""
    given = dict(request.parameters)
    body: dict[str, Any] = {}
    options = given.pop("stream_options", None)
    if options is None:
        body["stream_options"] = {"include_usage": True}
    elif options:
        body["stream_options"] = {"include_usage": True, **options}
    if request.max_tokens is not None:
        limit = "max_completion_tokens" if server == "openai" else "max_tokens"
        body[limit] = request.max_tokens
    if "stop" in given and not isinstance(given["stop"], str):
        given["stop"] = list(given["stop"])
    if "metadata" in given:
        given["metadata"] = dict(given["metadata"])
    body.update(given)
    return body


def responses_parameters(request: GenerationRequest) -> dict[str, Any]:
    """The body fields of ``request``'s token limit and named parameters for
    ``POST /responses`` (see the module docstring; :func:`check_for` refused the others)."""
    given = dict(request.parameters)
    body: dict[str, Any] = {}
    limit = given.pop("max_completion_tokens", request.max_tokens)
    if limit is not None:
        body["max_output_tokens"] = limit
    options = {k: v for k, v in (given.pop("stream_options", None) or {}).items()}
    options.pop("include_usage", None)
    if options:
        body["stream_options"] = options
    reasoning = {
        key: given.pop(name)
        for key, name in (("effort", "reasoning_effort"), ("summary", "reasoning_summary"))
        if name in given
    }
    if reasoning:
        body["reasoning"] = reasoning
    if given.pop("logprobs", False):
        body["include"] = [_LOGPROBS_INCLUDE]
    if "metadata" in given:
        given["metadata"] = dict(given["metadata"])
    body.update(given)
    return body
