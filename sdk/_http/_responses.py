"""The Responses API (``POST /responses``), streamed: the request body (sans-I/O) and the two
backends, over httpx (:class:`ResponsesBackend`) or the caller's ``openai`` client
(:class:`ResponsesSDKBackend`).

Everything but the wire format is the Chat Completions backends': the same read loop
(:func:`~sdk._http._deltas.stream_deltas`), HTTP errors, abort (closing the iterator drops the
connection) and no retries of their own (the stream's :class:`~sdk.Retry` decides). The events
become deltas in :mod:`sdk._http._responses_events`.

How the schema travels, by ``request.mode``: ``"json_schema"``: ``text.format = {"type":
"json_schema", "name", "schema", "strict"}`` (the strict rewrite of Chat Completions);
``"json_object"``: ``text.format = {"type": "json_object"}``; ``"tool"``: one function tool
(``{"type": "function", "name", "parameters", "strict"}``) forced by ``tool_choice``, or several
tools with ``tool_choice: "required"``; ``"none"``: nothing. Constraints other than JSON Schema
go as for Chat Completions (vLLM ``structured_outputs``, llama.cpp ``grammar``). Messages are
sent as ``input`` (chat messages are valid input items); ``max_tokens`` as
``max_output_tokens``. llama.cpp's server reads ``/responses`` but not ``text.format``: give it
its own ``json_schema`` in ``extra_body``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from sdk._backend import Delta, GenerationRequest
from sdk._http._deltas import stream_deltas
from sdk._http._flavours import Api, Server, special_fields
from sdk._http._openai import OpenAIBackend, encode_body
from sdk._http._openai_sdk import OpenAISDKBackend, per_request
from sdk._http._request import check_single_choice
from sdk._http._responses_events import ResponsesDecoder
from sdk._http._strict import schema_to_send
from sdk._schema import schema_name

__all__ = ["ResponsesBackend", "ResponsesSDKBackend", "responses_body", "responses_request"]


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
    outputs where the schema allows (:mod:`sdk._http._strict`). ``server``: the flavour
    constraints are written for. Raises :class:`~sdk.StreamUsageError` for ``n > 1``.
    """
    check_single_choice(request.extra)
    fields = {
        "model": model,
        "input": [dict(m) for m in request.messages],
        "stream": True,
        "max_output_tokens": request.max_tokens,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "seed": request.seed,  # refused before any request where the server has none
    }
    body: dict[str, Any] = {k: v for k, v in fields.items() if v is not None}
    wrapped = False
    if request.tools or request.constraint is not None:
        body.update(special_fields(request, api="responses", server=server, strict=strict))
    elif request.mode in ("json_schema", "tool"):
        name = schema_name(request.schema_name)
        sent = schema_to_send(request.schema, strict)
        wrapped = sent.wrapped
        if request.mode == "json_schema":
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
            body["tool_choice"] = {"type": "function", "name": name}
    elif request.mode == "json_object":
        body["text"] = {"format": {"type": "json_object"}}
    body.update(request.extra)
    return body, wrapped


class ResponsesBackend(OpenAIBackend):
    """An :class:`~sdk._http.OpenAIBackend` that streams ``POST {base_url}/responses``
    (``Client(..., api="responses")``); its options are the same."""

    path = "/responses"
    api: Api = "responses"

    def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        """Stream one response; errors as for :meth:`sdk._http.OpenAIBackend.generate`, and
        ``response.failed`` / ``error`` events as :class:`~sdk.TransportError`."""
        body, wrapped = responses_request(
            request, model=request.model or self.model, strict=self.strict, server=self.server
        )
        decoder = ResponsesDecoder(tools=request.mode == "tool")
        payload = encode_body(body)
        return stream_deltas(lambda: self._open(payload, request), decoder, unwrap=wrapped)


class ResponsesSDKBackend(OpenAISDKBackend):
    """An :class:`~sdk._http.OpenAISDKBackend` that streams through the ``openai`` client's
    ``responses`` resource (``Client.from_openai(..., api="responses")``)."""

    api: Api = "responses"

    def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        """Stream one response; errors as for :class:`ResponsesBackend`."""
        body, wrapped = responses_request(
            request, model=request.model or self.model, strict=self.strict, server=self.server
        )
        model, items = body.pop("model"), body.pop("input")
        del body["stream"]
        return self._stream(
            lambda: self._client.responses.with_streaming_response.create(
                model=model, input=items, stream=True, extra_body=body, **per_request(request)
            ),
            ResponsesDecoder(tools=request.mode == "tool"),
            unwrap=wrapped,
        )
