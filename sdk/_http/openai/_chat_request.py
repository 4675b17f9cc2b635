"""The body of one Chat Completions request (sans-I/O): what an OpenAI-compatible server is sent.

:func:`chat_body` turns a :class:`~sdk._backend.GenerationRequest` into the JSON body of
``POST /chat/completions``, with the schema made strict where it can be
(:func:`sdk._http.openai._strict.strict_schema`: what OpenAI's structured outputs accept, never
wider; a root that is not an object is wrapped, and :func:`chat_request` says so, for the backend to
unwrap the output).

How the schema travels, by ``request.mode``:

- ``"json_schema"``: ``response_format = {"type": "json_schema", "json_schema": {"name",
  "schema", "strict"}}`` (OpenAI, vLLM, SGLang, llama.cpp, Ollama); to TGI ``{"type":
  "json", "value": schema}``, its own form.
- ``"json_object"``: ``response_format = {"type": "json_object"}`` (some JSON object; the
  client checks the schema); to llama.cpp ``{"type": "json_object", "schema": ...}``, the
  variant its server reads (OpenAI refuses the ``schema`` key).
- ``"tool"``: one function tool whose ``parameters`` are the schema, forced by ``tool_choice``
  (by name; ``"required"`` to llama.cpp, which reads only a string there); the document
  streams as ``delta.tool_calls[i].function.arguments``.
- ``"none"``: no constraint is sent (a plain prompt, or a constraint given in ``extra``, such as
  vLLM's ``structured_outputs={"choice": [...]}`` / ``{"regex": ...}`` / ``{"grammar": ...}``).

Several tools (``request.tools``) and constraints other than JSON Schema
(``request.constraint``) are written per server flavour by :mod:`sdk._http.openai._flavours`.

``request.extra`` is merged into the body last, at the top level, so it can add any parameter a
server understands and can replace any key built here (e.g. a hand-written ``response_format``).
The cures a retry asks for (``request.cures``) are applied after it
(:mod:`sdk._http.openai._cures`).
"""

from __future__ import annotations

from typing import Any

from sdk._backend import GenerationRequest
from sdk._http._cures import apply_cures, openai_cures
from sdk._http.openai._cures import apply_reasoning_cures
from sdk._http.openai._flavours import (
    Server,
    emulated_call,
    json_object_format,
    schema_format,
    special_fields,
    tool_choice,
)
from sdk._http.openai._parameters import chat_parameters
from sdk._http.openai._strict import StrictSchema, schema_to_send
from sdk._parameters import check_single_choice
from sdk._schema import schema_name

__all__ = ["chat_body", "chat_request", "response_format"]


def response_format(name: str, sent: StrictSchema) -> dict[str, Any]:
    """Chat Completions' ``response_format`` for a JSON Schema (as sent) named ``name``."""
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": sent.schema, "strict": sent.strict},
    }


def chat_body(
    request: GenerationRequest,
    *,
    model: str | None,
    strict: bool = True,
    include_usage: bool = True,
    server: Server | None = None,
) -> dict[str, Any]:
    """The JSON body of ``POST /chat/completions`` for ``request`` (see :func:`chat_request`)."""
    return chat_request(
        request, model=model, strict=strict, include_usage=include_usage, server=server
    )[0]


def chat_request(
    request: GenerationRequest,
    *,
    model: str | None,
    strict: bool = True,
    include_usage: bool = True,
    server: Server | None = None,
) -> tuple[dict[str, Any], bool]:
    """The JSON body of ``POST /chat/completions`` for ``request`` (always ``stream: true``),
    and whether the schema's root was wrapped (the output must then be unwrapped).

    ``model`` may be ``None`` for servers that serve one model and ignore the field (it is then
    left out). ``strict`` asks for strict structured outputs when the schema allows it (see
    :mod:`sdk._http.openai._strict`). ``include_usage`` adds ``stream_options.include_usage`` so the
    last chunk reports token usage. The token limit and the named parameters are written by
    :func:`sdk._http.openai._parameters.chat_parameters`. Raises :class:`~sdk.StreamUsageError`
    for ``n > 1``.
    ``server`` is the flavour a constraint or several tools are written for
    (:mod:`sdk._http.openai._flavours`).
    """
    check_single_choice(request.extra)
    body: dict[str, Any] = {}
    if model is not None:
        body["model"] = model
    body["messages"] = [dict(m) for m in request.messages]
    body["stream"] = True
    fields = chat_parameters(request, server=server)
    if not include_usage:
        fields.pop("stream_options", None)
    for key in ("stream_options", "max_tokens", "max_completion_tokens"):  # the usual order
        if key in fields:
            body[key] = fields.pop(key)
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.top_p is not None:
        body["top_p"] = request.top_p
    if request.seed is not None:
        body["seed"] = request.seed

    wrapped = False
    call = emulated_call(request, api="chat", server=server)
    if call is not None:  # llama.cpp forces no tool call: the arguments are the answer
        tool = next((t for t in request.tools if t.name == call), None)
        sent = schema_to_send(tool.compiled.schema_dict() if tool else request.schema, strict)
        wrapped = sent.wrapped
        body["response_format"] = response_format(call, sent)
    elif request.tools or request.constraint is not None:
        body.update(special_fields(request, api="chat", server=server, strict=strict))
    elif request.mode in ("json_schema", "tool"):
        name = schema_name(request.schema_name)
        sent = schema_to_send(request.schema, strict)
        wrapped = sent.wrapped
        if request.mode == "json_schema" and server == "tgi":
            body["response_format"] = schema_format(sent.schema)
        elif request.mode == "json_schema":
            body["response_format"] = response_format(name, sent)
        else:
            function: dict[str, Any] = {
                "name": name,
                "parameters": sent.schema,
                "strict": sent.strict,
            }
            description = request.schema.get("description")
            if isinstance(description, str):
                function["description"] = description
            body["tools"] = [{"type": "function", "function": function}]
            body["tool_choice"] = tool_choice(request, api="chat", server=server)[0]
    elif request.mode == "json_object":
        body["response_format"] = json_object_format(request.schema, server)
    body.update(fields)
    body.update(request.extra)
    apply_reasoning_cures(
        body, request, server
    )  # what a retry asks for (sdk/_http/openai/_cures.py)
    penalty, compact = openai_cures(server, "chat")  # a retry's fixes (sdk._http._cures)
    apply_cures(body, request, penalty=penalty, compact=compact)
    return body, wrapped
