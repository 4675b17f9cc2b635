"""The body of one Messages API request (sans-I/O): what ``POST /v1/messages`` is sent.

:func:`anthropic_body` turns a :class:`~sdk._backend.GenerationRequest` into the JSON body,
``stream: true``, the messages written as the API reads them (:mod:`._messages`). How the
schema travels, by ``request.mode``:

- ``"json_schema"``: ``output_config = {"format": {"type": "json_schema", "schema": ...}}``,
  the schema in Anthropic's subset (:mod:`._schema`); the answer is the message's text.
- ``"tool"``: one tool whose ``input_schema`` is the schema, ``strict: true``, forced by
  ``tool_choice = {"type": "tool", "name": ...}``; the document streams as the tool_use
  block's ``input_json_delta`` pieces. Several tools (``request.tools``): each its own tool,
  ``tool_choice`` from the caller's (``"auto"`` -> ``auto``, ``"none"`` -> ``none``,
  ``"required"`` or unsaid -> ``any``, a named tool -> ``tool``).
- Every tool fieldstream defines (the schema's in ``"tool"`` mode, each of ``request.tools``)
  is sent ``eager_input_streaming: true`` (Anthropic's fine-grained tool streaming; the SDK's
  ``ToolParam.eager_input_streaming``): without it Claude may buffer a tool's whole input and
  send it in one or a few ``input_json_delta`` pieces, so no field is final before the end.
  Anthropic's stated trade-off, that the input is then not validated by the server as it
  streams (it may be invalid or cut off), is what fieldstream checks anyway, at the first
  wrong byte. ``eager=False`` sends ``false`` (buffered even under the
  ``fine-grained-tool-streaming-2025-05-14`` beta header), ``eager=None`` leaves the field
  out (for a server that does not know it).
- ``"json_object"`` and ``"none"``: no format (the Messages API has no JSON mode); the client
  checks the output.

A schema the subset cannot hold without narrowing it is sent without ``output_config`` (a tool
without ``strict``, its schema as given); fieldstream checks it either way. ``max_tokens`` is
required by the API: :data:`DEFAULT_MAX_TOKENS` when the request does not say.
The parameters named as openai-python names them (``request.parameters``):

=========================  ==============================================================
given                      sent
=========================  ==============================================================
``max_completion_tokens``  ``max_tokens``
``stop``                   ``stop_sequences``
``user``                   ``metadata.user_id``
``parallel_tool_calls``    ``False``: ``tool_choice.disable_parallel_tool_use``
``reasoning_effort``       ``output_config.effort`` (``low`` ... ``max``; ``none`` and
                           ``minimal`` refused)
``service_tier``           ``auto`` as it is (another refused)
``stream_options``         nothing (the usage always comes)
anything else              refused before sending (``logprobs``, ``metadata``, ``store``,
                           penalties, ``prediction``, ``reasoning_summary``)
=========================  ==============================================================

``request.extra`` is merged into the body last (``thinking``, ``stop_sequences``,
``metadata``...), so it can add or replace any key built here. A retry's cures
(``request.cures``) are applied after it: an instruction appended to ``system``
(:mod:`._cures`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from sdk._backend import GenerationRequest
from sdk._constraints import chosen_tool
from sdk._errors import UnsupportedConstraint
from sdk._http._request_checks import refuse_constraint, refuse_effort, refuse_parameters
from sdk._http._unwrap import WRAPPER_KEY
from sdk._http.anthropic._cures import apply_anthropic_cures
from sdk._http.anthropic._messages import anthropic_messages
from sdk._http.anthropic._schema import anthropic_schema
from sdk._schema import schema_name

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "anthropic_body",
    "anthropic_request",
    "anthropic_shows_schema",
    "check_anthropic_request",
]

_PARAMETERS = frozenset(
    {
        "max_completion_tokens",
        "stop",
        "user",
        "parallel_tool_calls",
        "reasoning_effort",
        "service_tier",
        "stream_options",
    }
)
_EFFORTS = ("low", "medium", "high", "xhigh", "max")

DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` when a request does not say (the Messages API requires one)."""


def check_anthropic_request(request: GenerationRequest) -> None:
    """Raise :class:`~sdk.UnsupportedConstraint` for what the Messages API cannot be sent: a
    constraint other than JSON Schema (unless ``mode="none"``), a ``seed`` (it has none), and
    ``temperature`` / ``top_p`` (not in the API's current request type; a model that still
    reads them can be sent them in ``extra=``)."""
    refuse_constraint(request, "Anthropic's Messages API", "it takes JSON Schema only")
    refuse_parameters(
        request, _PARAMETERS, "Anthropic's Messages API", "the Messages API's own field in extra="
    )
    refuse_effort(request, _EFFORTS, "Anthropic's output_config.effort")
    tier = request.parameters.get("service_tier")
    if tier not in (None, "auto"):
        raise UnsupportedConstraint(
            f"service_tier={tier!r} has no equivalent in the Messages API ('auto' has; for "
            "'standard_only' pass extra={'service_tier': 'standard_only'})"
        )
    for name in ("seed", "temperature", "top_p"):
        if getattr(request, name) is not None and name not in request.extra:
            raise UnsupportedConstraint(
                f"Anthropic's Messages API takes no {name}; leave it unset"
                + (
                    ""
                    if name == "seed"
                    else f" (or pass extra={{'{name}': ...}} for a model that reads it)"
                )
            )


def anthropic_body(
    request: GenerationRequest, *, model: str | None, eager: bool | None = True
) -> dict[str, Any]:
    """The JSON body of ``POST /v1/messages`` for ``request`` (see :func:`anthropic_request`)."""
    return anthropic_request(request, model=model, eager=eager)[0]


def anthropic_request(
    request: GenerationRequest, *, model: str | None, eager: bool | None = True
) -> tuple[dict[str, Any], bool]:
    """The JSON body of ``POST /v1/messages`` for ``request`` (see the module docstring), and
    whether the schema's root was wrapped: a tool's input is an object, so under
    ``mode="tool"`` a root of another type is sent as ``{"value": <the schema>}``, and the
    backend unwraps the output (:mod:`sdk._http._unwrap`). ``eager``: each tool's
    ``eager_input_streaming`` (``None``: not sent). Raises
    :class:`~sdk.StreamUsageError` for messages the API cannot be sent."""
    system, messages = anthropic_messages(request.messages)
    body: dict[str, Any] = {}
    if model is not None:
        body["model"] = model
    given = request.parameters
    limit = request.max_tokens
    if limit is None:
        limit = given.get("max_completion_tokens")
    body["max_tokens"] = limit if limit is not None else DEFAULT_MAX_TOKENS
    body["messages"] = messages
    if system:
        body["system"] = system
    body["stream"] = True
    wrapped = False
    if request.tools:
        body["tools"] = [
            _tool(t.name, t.compiled.schema_dict(), t.description, eager) for t in request.tools
        ]
        body["tool_choice"] = _tool_choice(request)
    elif request.mode == "tool" and request.constraint is None:
        name = schema_name(request.schema_name)
        description = request.schema.get("description")
        schema: Mapping[str, Any] = request.schema
        if schema.get("type") != "object":
            wrapped = True
            defs = {k: schema[k] for k in ("$defs", "definitions") if k in schema}
            inner = {k: v for k, v in schema.items() if k not in defs}
            schema = {
                "type": "object",
                "properties": {WRAPPER_KEY: inner},
                "required": [WRAPPER_KEY],
                "additionalProperties": False,
                **defs,
            }
        told = description if isinstance(description, str) else None
        body["tools"] = [_tool(name, schema, told, eager)]
        body["tool_choice"] = _tool_choice(request)
    elif request.mode == "json_schema" and request.constraint is None:
        sent = anthropic_schema(request.schema)
        if sent is not None:
            body["output_config"] = {"format": {"type": "json_schema", "schema": sent}}
    _parameters(body, given)
    body.update(request.extra)
    apply_anthropic_cures(body, request)  # a retry's fixes, in the system prompt (_cures.py)
    return body, wrapped


def anthropic_shows_schema(request: GenerationRequest) -> bool:
    """Whether the Messages API shows ``request.schema`` to Claude (for ``show_schema=None``):
    a tool's definition goes into the prompt (the ``tools`` parameter and the tool-use system
    prompt are counted in the input tokens), and so does ``output_config.format``'s schema;
    ``json_object``, ``none``, and a schema the subset cannot hold (sent without
    ``output_config``) send none."""
    if request.mode == "tool":
        return True
    return request.mode == "json_schema" and anthropic_schema(request.schema) is not None


def _parameters(body: dict[str, Any], given: Mapping[str, Any]) -> None:
    """The named parameters other than the token limit (see the module docstring)."""
    stop = given.get("stop")
    if stop is not None:
        body["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    if given.get("user") is not None:
        body["metadata"] = {"user_id": given["user"]}
    choice = body.get("tool_choice", {})
    if given.get("parallel_tool_calls") is False and choice and choice["type"] != "none":
        body["tool_choice"] = {**body["tool_choice"], "disable_parallel_tool_use": True}
    if given.get("reasoning_effort") is not None:
        body.setdefault("output_config", {})["effort"] = given["reasoning_effort"]
    if given.get("service_tier") is not None:
        body["service_tier"] = given["service_tier"]


def _tool(
    name: str, schema: Mapping[str, Any], description: str | None, eager: bool | None
) -> dict[str, Any]:
    """One custom tool: strict with the schema in the subset, else the schema as given;
    ``eager_input_streaming`` as ``eager`` says (left out when ``None``)."""
    sent = anthropic_schema(schema) if schema.get("type") == "object" else None
    tool: dict[str, Any] = {"name": name}
    if description is not None:
        tool["description"] = description
    if sent is not None:
        tool["input_schema"] = sent
        tool["strict"] = True
    else:
        tool["input_schema"] = copy.deepcopy(dict(schema))
    if eager is not None:
        tool["eager_input_streaming"] = eager
    return tool


def _tool_choice(request: GenerationRequest) -> dict[str, Any]:
    choice = request.tool_choice
    name = chosen_tool(choice)
    if name is not None:
        return {"type": "tool", "name": name}
    if choice == "auto":
        return {"type": "auto"}
    if choice == "none":
        return {"type": "none"}
    if not request.tools:
        return {"type": "tool", "name": schema_name(request.schema_name)}
    if choice is None and len(request.tools) == 1:
        return {"type": "tool", "name": request.tools[0].name}
    return {"type": "any"}
