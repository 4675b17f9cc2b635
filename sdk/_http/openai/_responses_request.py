"""The body of one Responses API request (``POST /responses``), streamed (sans-I/O).

The backends (:class:`~sdk._http.openai.ResponsesBackend` over httpx,
:class:`~sdk._http.openai.ResponsesSDKBackend` over the caller's ``openai`` client) send it;
the events that come back become deltas in :mod:`sdk._http.openai._responses_decoder`.

How the schema travels, by ``request.mode``: ``"json_schema"``: ``text.format = {"type":
"json_schema", "name", "schema", "strict"}`` (the strict rewrite of Chat Completions);
``"json_object"``: ``text.format = {"type": "json_object"}``; ``"tool"``: one function tool
(``{"type": "function", "name", "parameters", "strict"}``) forced by ``tool_choice``, or several
tools with ``tool_choice: "required"`` (or as the caller said); ``"none"``: nothing. Constraints
other than JSON Schema go as for Chat Completions (vLLM ``structured_outputs``, llama.cpp
``grammar``). Messages are sent as ``input``, chat-shaped ones translated into the Responses
API's items (:mod:`sdk._http.openai._responses_input`); ``max_tokens`` as ``max_output_tokens``
and the other named parameters as :mod:`sdk._http.openai._parameters` says.

llama.cpp's server serves ``/responses`` by turning the body into a chat request: it ignores
``text.format`` and reads ``tool_choice`` as a string only. With ``server="llamacpp"`` the schema
goes as the ``response_format`` it reads (as for Chat Completions) and a named tool as
``"required"`` with that tool alone. A server not named that writes something no JSON document
begins with (a server that ignored ``text.format``) fails with a
:class:`~sdk.ConstraintIgnored` that says so, not retried
(:func:`sdk._http.openai._cures.openai_policy`).
"""

from __future__ import annotations

from typing import Any

from sdk._backend import GenerationRequest
from sdk._http._cures import apply_cures, openai_cures
from sdk._http.openai._chat_request import response_format
from sdk._http.openai._flavours import (
    Server,
    json_object_format,
    special_fields,
    tool_choice,
)
from sdk._http.openai._parameters import responses_parameters
from sdk._http.openai._responses_input import responses_input
from sdk._http.openai._strict import schema_to_send
from sdk._parameters import check_single_choice
from sdk._schema import schema_name

__all__ = ["responses_body", "responses_request"]


def responses_body(
    request: GenerationRequest, *, model: str | None, strict: bool = True, server: Server | None
) -> dict[str, Any]:
    """The JSON body of ``POST /responses`` for ``request`` (see :func:`responses_request`)."""
    return responses_request(request, model=model, strict=strict, server=server)[0]


def responses_request(
    request: GenerationRequest, *, model: str | None, strict: bool = True, server: Server | None
) -> tuple[dict[str, Any], bool]:
    """The JSON body of ``POST /responses`` for ``request`` (always ``stream: true``), and
    whether the schema's root was wrapped (the output must then be unwrapped), as for Chat
    Completions.

    ``model`` may be ``None`` for a server that serves one model. ``strict``: strict structured
    outputs where the schema allows (:mod:`sdk._http.openai._strict`). ``server``: the flavour
    constraints are written for. Raises :class:`~sdk.StreamUsageError` for ``n > 1``.
    """
    check_single_choice(request.extra)
    fields = {
        "model": model,
        "input": responses_input(request.messages),
        "stream": True,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "seed": request.seed,  # refused before any request where the server has none
    }
    body: dict[str, Any] = {k: v for k, v in fields.items() if v is not None}
    body.update(responses_parameters(request))
    wrapped = False
    if request.tools or request.constraint is not None:
        body.update(special_fields(request, api="responses", server=server, strict=strict))
    elif request.mode in ("json_schema", "tool"):
        name = schema_name(request.schema_name)
        sent = schema_to_send(request.schema, strict)
        wrapped = sent.wrapped
        if request.mode == "json_schema" and server == "llamacpp":
            # llama.cpp's /responses turns the body into a chat request and ignores `text`.
            body["response_format"] = response_format(name, sent)
        elif request.mode == "json_schema":
            body["text"] = {
                "format": {
                    "type": "json_schema",
                    "name": name,
                    "schema": sent.schema,
                    "strict": sent.strict,
                }
            }
        else:
            function: dict[str, Any] = {"type": "function", "name": name}
            description = request.schema.get("description")
            if isinstance(description, str):
                function["description"] = description
            function.update(parameters=sent.schema, strict=sent.strict)
            body["tools"] = [function]
            body["tool_choice"] = tool_choice(request, api="responses", server=server)[0]
    elif request.mode == "json_object" and server == "llamacpp":
        body["response_format"] = json_object_format(request.schema, server)
    elif request.mode == "json_object":
        body["text"] = {"format": {"type": "json_object"}}
    body.update(request.extra)
    penalty, compact = openai_cures(server, "responses")  # a retry's fixes (sdk._http._cures)
    apply_cures(body, request, penalty=penalty, compact=compact)
    return body, wrapped
