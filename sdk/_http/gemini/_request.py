"""The body of one ``streamGenerateContent`` request to Gemini (sans-I/O).

How the schema travels, by ``request.mode``:

- ``"json_schema"``: ``generationConfig.responseMimeType = "application/json"`` and
  ``responseJsonSchema``, the schema in Gemini's subset (:mod:`._schema`).
- ``"json_object"``: ``responseMimeType = "application/json"`` alone (some JSON; fieldstream
  checks the schema).
- ``"tool"``: ``tools = [{"functionDeclarations": [...]}]``, each with its schema as
  ``parametersJsonSchema`` (in the subset), and ``toolConfig.functionCallingConfig``:
  ``mode`` ``ANY`` with ``allowedFunctionNames`` for a forced call (the schema's own tool, or
  a named one), ``ANY`` for ``"required"`` or several tools unsaid, ``AUTO`` for ``"auto"``,
  ``NONE`` for ``"none"``; with ``stream_arguments`` (Vertex AI), also
  ``streamFunctionCallArguments: true``, so that a call's arguments arrive as they are written
  (:mod:`._partial_args`) instead of whole.
- ``"none"``: nothing (fieldstream checks the output).

``max_tokens`` (or ``max_completion_tokens``), ``temperature``, ``top_p``, ``seed``, ``stop``,
``frequency_penalty``, ``presence_penalty``, ``logprobs``, ``top_logprobs`` go in
``generationConfig`` (``maxOutputTokens``, ``stopSequences``, ``responseLogprobs``,
``logprobs``...); ``stream_options`` sends nothing (the usage always comes); any other named
parameter is refused before sending (``reasoning_effort``: give ``thinkingConfig`` in
``extra={"generationConfig": ...}``). ``request.extra`` is merged into the body last; its
``generationConfig`` is merged into the one built here (``thinkingConfig``, ``topK``...).
"""

from __future__ import annotations

from typing import Any

from sdk._backend import GenerationRequest
from sdk._constraints import chosen_tool
from sdk._http._cures import GEMINI_PENALTY, apply_cures
from sdk._http._request_checks import refuse_constraint, refuse_parameters
from sdk._http.gemini._messages import gemini_contents
from sdk._http.gemini._schema import gemini_schema
from sdk._schema import schema_name

__all__ = ["check_gemini_request", "gemini_body"]

_CONFIG = {
    "max_completion_tokens": "maxOutputTokens",
    "stop": "stopSequences",
    "frequency_penalty": "frequencyPenalty",
    "presence_penalty": "presencePenalty",
    "logprobs": "responseLogprobs",
    "top_logprobs": "logprobs",
}
"""Each named parameter Gemini has, and its ``generationConfig`` field."""


def check_gemini_request(request: GenerationRequest) -> None:
    """Raise :class:`~sdk.UnsupportedConstraint` for a constraint other than JSON Schema
    (unless ``mode="none"``): Gemini takes JSON Schema only."""
    refuse_parameters(
        request,
        {*_CONFIG, "stream_options"},
        "Gemini's generateContent",
        "Gemini's own field in extra=, e.g. extra={'generationConfig': {...}}",
    )
    refuse_constraint(request, "Gemini", "it takes JSON Schema only")


def gemini_body(request: GenerationRequest, *, stream_arguments: bool = False) -> dict[str, Any]:
    """The JSON body of ``POST .../models/{model}:streamGenerateContent?alt=sse``
    (``stream_arguments``: ask for the calls' arguments in parts, which only Vertex AI takes)."""
    system, contents = gemini_contents(request.messages)
    body: dict[str, Any] = {"contents": contents}
    if system is not None:
        body["systemInstruction"] = system
    config: dict[str, Any] = {
        key: value
        for key, value in (
            ("maxOutputTokens", request.max_tokens),
            ("temperature", request.temperature),
            ("topP", request.top_p),
            ("seed", request.seed),
        )
        if value is not None
    }
    for name, field in _CONFIG.items():
        value = request.parameters.get(name)
        if value is not None and field not in config:
            config[field] = [value] if name == "stop" and isinstance(value, str) else value
    if isinstance(config.get("stopSequences"), tuple):
        config["stopSequences"] = list(config["stopSequences"])
    if request.constraint is None:
        if request.mode == "json_schema":
            config["responseMimeType"] = "application/json"
            config["responseJsonSchema"] = gemini_schema(request.schema)
        elif request.mode == "json_object":
            config["responseMimeType"] = "application/json"
        elif request.mode == "tool":
            body.update(_tools(request))
            if stream_arguments and request.tool_choice != "none":
                body["toolConfig"]["functionCallingConfig"]["streamFunctionCallArguments"] = True
    extra = dict(request.extra)
    more = extra.pop("generationConfig", None)
    if isinstance(more, dict):
        config.update(more)
    if config:
        body["generationConfig"] = config
    body.update(extra)
    apply_cures(body, request, penalty=GEMINI_PENALTY)  # a retry's fixes (sdk._http._cures)
    return body


def _tools(request: GenerationRequest) -> dict[str, Any]:
    if request.tools:
        specs = [(t.name, t.compiled.schema_dict(), t.description) for t in request.tools]
    else:
        description = request.schema.get("description")
        specs = [
            (
                schema_name(request.schema_name),
                dict(request.schema),
                description if isinstance(description, str) else None,
            )
        ]
    declarations = []
    for name, schema, description in specs:
        declaration: dict[str, Any] = {"name": name}
        if description is not None:
            declaration["description"] = description
        declaration["parametersJsonSchema"] = gemini_schema(schema)
        declarations.append(declaration)
    choice = request.tool_choice
    named = chosen_tool(choice)
    config: dict[str, Any]
    if named is not None:
        config = {"mode": "ANY", "allowedFunctionNames": [named]}
    elif choice == "auto":
        config = {"mode": "AUTO"}
    elif choice == "none":
        config = {"mode": "NONE"}
    elif choice is None and len(specs) == 1:
        config = {"mode": "ANY", "allowedFunctionNames": [specs[0][0]]}
    else:
        config = {"mode": "ANY"}
    return {
        "tools": [{"functionDeclarations": declarations}],
        "toolConfig": {"functionCallingConfig": config},
    }
