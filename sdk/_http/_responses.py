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
tools with ``tool_choice: "required"`` (or as the caller said); ``"none"``: nothing. Constraints
other than JSON Schema go as for Chat Completions (vLLM ``structured_outputs``, llama.cpp
``grammar``). Messages are sent as ``input`` (chat messages are valid input items);
``max_tokens`` as ``max_output_tokens``.

llama.cpp's server serves ``/responses`` by turning the body into a chat request: it ignores
``text.format`` and reads ``tool_choice`` as a string only. With ``server="llamacpp"`` the schema
goes as the ``response_format`` it reads (as for Chat Completions) and a named tool as
``"required"`` with that tool alone. A server not named that writes something no JSON document
begins with (a server that ignored ``text.format``) fails with an
:class:`~sdk.OutputSyntaxError` that says so (:class:`_FormatIgnored`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from sdk._backend import Delta, GenerationRequest
from sdk._errors import OutputSyntaxError
from sdk._http._deltas import stream_deltas
from sdk._http._flavours import (
    Api,
    Server,
    calls_forced,
    json_object_format,
    special_fields,
    tool_choice,
)
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
        if request.mode == "json_schema" and server == "llamacpp":
            # llama.cpp's /responses turns the body into a chat request and ignores `text`.
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": sent.schema, "strict": sent.strict},
            }
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
    return body, wrapped


# What a JSON document may begin with (after whitespace).
_JSON_STARTS = frozenset('{["-0123456789tfn')


class _FormatIgnored:
    """A :class:`~sdk._http._responses_events.ResponsesDecoder` for a JSON document from a
    server not named: when the output's first character is one no JSON document begins with,
    the server most likely ignored ``text.format`` (llama.cpp's does), and the
    :class:`~sdk.OutputSyntaxError` says so, instead of the parser's bare "found 'R'"."""

    def __init__(self, decoder: ResponsesDecoder) -> None:
        self._decoder = decoder
        self._seen = 0  # characters of message text before the first that is not whitespace
        self._checked = False

    @property
    def done(self) -> bool:
        return self._decoder.done

    def decode(self, event: str, data: str) -> str | list[Delta]:
        out = self._decoder.decode(event, data)
        if not self._checked:
            for text in (
                [out] if isinstance(out, str) else [d.text for d in out if d.tool_call is None]
            ):
                self._check(text)
        return out

    def end(self) -> list[Delta]:
        return self._decoder.end()

    def _check(self, text: str) -> None:
        stripped = text.lstrip()
        if not stripped:
            self._seen += len(text)
            return
        self._checked = True
        if stripped[0] in _JSON_STARTS:
            return
        offset = self._seen + len(text) - len(stripped)
        raise OutputSyntaxError(
            f"the output is not JSON: it begins {stripped[:40]!r}. The server may have ignored "
            "the format the Responses API sends (text.format); llama.cpp's does: say "
            "Client(..., server='llamacpp') to send the schema the way it reads it",
            offset=offset,
        )


def _decoder(
    request: GenerationRequest, server: Server | None
) -> ResponsesDecoder | _FormatIgnored:
    decoder = ResponsesDecoder(tools=calls_forced(request))
    json_document = request.mode in ("json_schema", "json_object") and not request.tools
    # A lenient stream skips prose before the document itself: nothing to say there.
    if server is None and json_document and request.constraint is None and not request.lenient:
        return _FormatIgnored(decoder)
    return decoder


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
        decoder = _decoder(request, self.server)
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
            _decoder(request, self.server),
            unwrap=wrapped,
        )
